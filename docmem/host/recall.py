"""The recall ledger: what was recalled into one conversation, kept beside its history.

Recalled memory lives here, not in the host framework's history, so that a
changed memory *replaces* its old copy in the prompt instead of piling up,
one participant's memory never shows in another's turn, and compaction never
launders memory into a summary. The rules (docs/design.md, section 6):

- A turn's batch (all slots together) validates completely before anything
  applies; a rejected batch applies nothing, for any slot.
- A keyed message inserts or replaces its identity (slot, namespace key,
  scope key, item key): identical content is a no-op, changed content
  supersedes the old copy and moves to the new batch's position. Unkeyed
  messages append and are never deduplicated. Omission never removes.
- A record's position is the number of host messages before the turn's input
  when its batch was accepted; :meth:`RecallLedger.project` interleaves
  visible records there.
- An operation id commits once: replaying the same batch changes nothing, a
  different batch under the same id is an error that changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec

from ..errors import DocumentCorrupt, InvalidArgument, RecallBatchInvalid
from ..provider.keys import MAX_ITEM_ID_BYTES, item_key
from .injection import ProjectedRecall, mark_recalled, split_recalls
from .slot import SlotLock

__all__ = [
    "EARLIER_PARTICIPANT",
    "LedgerCache",
    "ProjectedRecall",
    "RecallLedger",
    "Recalled",
    "projected_batch",
    "split_recalls",
]

#: The label on a record of an earlier scope shown under ``visibility="session"``.
EARLIER_PARTICIPANT = (
    "Earlier participant's memory; its indexes do not work with the current tools."
)
#: Raw records (superseded versions included) past which the ledger canonicalizes.
MAX_RAW_RECORDS = 512
MAX_RAW_BYTES = 256 * 1024
#: Committed operation ids remembered for replay detection (the newest ones).
MAX_OPERATIONS = 1024
FORMAT_VERSION = 1

_M = TypeVar("_M")


@dataclass(frozen=True)
class Recalled:
    """One recalled message as a provider returns it: ``id`` keys it, ``None`` appends."""

    content: str
    id: str | None = None


class _Record(msgspec.Struct, frozen=True, array_like=True):
    seq: int
    operation: str
    position: int
    slot: str
    namespace_key: str
    scope_key: str
    item_key: str | None
    content: str
    superseded: bool = False


class _State(msgspec.Struct):
    version: int
    next_seq: int
    records: list[_Record]
    operations: dict[str, str]


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_State)


def _batch_digest(position: int, batches: Sequence[tuple[SlotLock, Sequence[Recalled]]]) -> str:
    canonical = [
        [
            lock.slot,
            lock.scope.namespace_key,
            lock.scope.scope_key,
            [[message.id, message.content] for message in messages],
        ]
        for lock, messages in batches
    ]
    raw = hashlib.sha256(_encoder.encode([position, canonical])).digest()[:16]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: What a recall item is, for the message that refuses one that is not.
ITEM_SHAPE = (
    "a recall item is an object with a str 'content' and an optional str 'id' "
    "(docmem.Recalled), or a mapping with those keys"
)


def _fields(message: object) -> tuple[object, object] | None:
    """``(content, id)`` of a recall item, or ``None`` when it has no ``content`` at all.

    Providers written against plain JSON hand back dicts as naturally as
    objects, so a mapping's ``"content"`` and ``"id"`` keys count like the
    attributes of the same names.
    """
    if isinstance(message, Mapping):
        if "content" not in message:
            return None
        return message["content"], message.get("id")
    if not hasattr(message, "content"):
        return None
    return message.content, getattr(message, "id", None)


def _validate(slot: str, messages: Sequence[Any]) -> list[Recalled]:
    seen: set[str] = set()
    checked: list[Recalled] = []
    for number, message in enumerate(messages):
        where = f"slot {slot!r}, message {number}"
        fields = _fields(message)
        if fields is None:
            raise RecallBatchInvalid(
                f"recall batch rejected: {where} is a {type(message).__name__} without "
                f"content; {ITEM_SHAPE}"
            )
        content, message_id = fields
        if not isinstance(content, str):
            raise RecallBatchInvalid(
                f"recall batch rejected: {where} has content of type "
                f"{type(content).__name__}; {ITEM_SHAPE}"
            )
        if not content.strip():
            raise RecallBatchInvalid(f"recall batch rejected: {where} has blank content")
        if not _is_utf8(content):
            raise RecallBatchInvalid(f"recall batch rejected: {where} has text that is not UTF-8")
        if message_id is not None:
            if not isinstance(message_id, str):
                raise RecallBatchInvalid(
                    f"recall batch rejected: {where} has an id of type "
                    f"{type(message_id).__name__}; {ITEM_SHAPE}"
                )
            if not message_id:
                raise RecallBatchInvalid(f"recall batch rejected: {where} has an empty id")
            if not _is_utf8(message_id):
                raise RecallBatchInvalid(
                    f"recall batch rejected: {where} has an id that is not UTF-8"
                )
            if len(message_id.encode("utf-8", "surrogatepass")) > MAX_ITEM_ID_BYTES:
                raise RecallBatchInvalid(
                    f"recall batch rejected: {where} has an id over {MAX_ITEM_ID_BYTES:,} bytes"
                )
            if message_id in seen:
                raise RecallBatchInvalid(f"recall batch rejected: {where} repeats an id")
            seen.add(message_id)
        checked.append(Recalled(content=content, id=message_id))
    return checked


class RecallLedger:
    """The recalled records of one conversation; thread-safe, serializable.

    Create one per conversation (or restore it with :meth:`from_bytes`),
    :meth:`apply` each turn's recall batch, and :meth:`project` the host's
    history before every model call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = _State(version=FORMAT_VERSION, next_seq=0, records=[], operations={})

    # -- applying ------------------------------------------------------------

    def committed(self, operation_id: str) -> bool:
        """Whether a batch under ``operation_id`` was already applied."""
        with self._lock:
            return operation_id in self._state.operations

    def apply(
        self,
        operation_id: str,
        position: int,
        batches: Sequence[tuple[SlotLock, Sequence[Any]]],
    ) -> bool:
        """Apply one turn's recall for every slot at once; ``False`` for a replay.

        ``batches`` pairs each active slot's lock with the messages its
        provider returned (objects with ``content`` and an optional ``id``,
        or mappings with those keys).
        Raises :class:`~docmem.RecallBatchInvalid`, applying nothing, when any
        message is invalid or the operation id was used for a different batch.
        """
        if not isinstance(operation_id, str) or not operation_id:
            raise RecallBatchInvalid("recall batch rejected: the operation id is empty")
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise RecallBatchInvalid("recall batch rejected: position must be an int >= 0")
        slots = [lock.slot for lock, _ in batches]
        if len(set(slots)) != len(slots):
            raise RecallBatchInvalid("recall batch rejected: a slot appears twice")
        checked = sorted(
            ((lock, _validate(lock.slot, messages)) for lock, messages in batches),
            key=lambda pair: pair[0].slot,
        )
        digest = _batch_digest(position, checked)
        with self._lock:
            known = self._state.operations.get(operation_id)
            if known is not None:
                if known != digest:
                    raise RecallBatchInvalid(
                        "recall batch rejected: this operation id was committed with another batch"
                    )
                return False
            for lock, messages in checked:
                for message in messages:
                    self._add(operation_id, position, lock, message)
            operations = self._state.operations
            operations[operation_id] = digest
            while len(operations) > MAX_OPERATIONS:  # oldest first: dicts keep insertion order
                del operations[next(iter(operations))]
            if self._oversized():
                self._canonicalize()
            return True

    def _add(self, operation_id: str, position: int, lock: SlotLock, message: Recalled) -> None:
        records = self._state.records
        key = item_key(message.id) if message.id is not None else None
        if key is not None:
            for number, record in enumerate(records):
                if (
                    not record.superseded
                    and record.item_key == key
                    and record.slot == lock.slot
                    and record.scope_key == lock.scope.scope_key
                    and record.namespace_key == lock.scope.namespace_key
                ):
                    if record.content == message.content:
                        return  # identical keyed content: a no-op, it keeps its place
                    records[number] = msgspec.structs.replace(record, superseded=True)
                    break
        records.append(
            _Record(
                seq=self._state.next_seq,
                operation=operation_id,
                position=position,
                slot=lock.slot,
                namespace_key=lock.scope.namespace_key,
                scope_key=lock.scope.scope_key,
                item_key=key,
                content=message.content,
            )
        )
        self._state.next_seq += 1

    def _oversized(self) -> bool:
        records = self._state.records
        if len(records) > MAX_RAW_RECORDS:
            return True
        return sum(len(record.content) for record in records) * 4 > MAX_RAW_BYTES and (
            sum(len(record.content.encode("utf-8")) for record in records) > MAX_RAW_BYTES
        )

    def _canonicalize(self) -> None:
        """Drop superseded versions; every live keyed record and every unkeyed one stays."""
        self._state.records = [r for r in self._state.records if not r.superseded]

    # -- reading -------------------------------------------------------------

    def project(
        self, messages: Sequence[_M], locks: Sequence[SlotLock]
    ) -> list[_M | ProjectedRecall]:
        """The host's ``messages`` with the visible recalled records interleaved.

        A record shows only while its slot is active (has a lock this turn) and
        its namespace is the lock's; it shows when its scope is the lock's, or
        for ``visibility="session"`` when it is an earlier scope (labelled).
        Records sit before the host message at their position (clamped to the
        end), several at one position in slot-name order, then acceptance order.
        """
        active = {lock.slot: lock for lock in locks}
        placed: list[tuple[int, str, int, ProjectedRecall]] = []
        with self._lock:
            records = list(self._state.records)
        for record in records:
            lock = active.get(record.slot)
            if record.superseded or lock is None:
                continue
            if record.namespace_key != lock.scope.namespace_key:
                continue
            content = record.content
            if record.scope_key != lock.scope.scope_key:
                if lock.visibility != "session":
                    continue
                content = f"{EARLIER_PARTICIPANT}\n\n{content}"
            position = min(record.position, len(messages))
            placed.append(
                (
                    position,
                    record.slot,
                    record.seq,
                    ProjectedRecall(
                        mark_recalled(content, record.slot), record.slot, record.item_key
                    ),
                )
            )
        placed.sort(key=lambda item: item[:3])
        projected: list[_M | ProjectedRecall] = []
        cursor = 0
        for position, _, _, recall in placed:
            projected.extend(messages[cursor:position])
            cursor = max(cursor, position)
            projected.append(recall)
        projected.extend(messages[cursor:])
        return projected

    def __len__(self) -> int:
        """The number of live records (superseded versions not counted)."""
        with self._lock:
            return sum(1 for record in self._state.records if not record.superseded)

    # -- compaction, clear, persistence ----------------------------------------

    def compacted(self) -> None:
        """After the host compacted its history: canonicalize and re-base every record to 0.

        Records of scopes hidden right now are kept: they are still the
        conversation's, for another participant's turn.
        """
        with self._lock:
            self._canonicalize()
            self._state.records = [
                msgspec.structs.replace(record, position=0) for record in self._state.records
            ]

    def clear(self) -> None:
        """Forget everything: the host cleared its context, the next turn recalls afresh."""
        with self._lock:
            self._state = _State(version=FORMAT_VERSION, next_seq=0, records=[], operations={})

    def to_bytes(self) -> bytes:
        """The ledger as versioned JSON, for a host to store with its session."""
        with self._lock:
            return _encoder.encode(self._state)

    @classmethod
    def from_bytes(cls, data: bytes) -> RecallLedger:
        """Restore a ledger saved by :meth:`to_bytes`.

        The refusal is raised after the ``except`` block, so that no
        ``__context__`` keeps msgspec's error (it can quote stored text).
        """
        try:
            state = _decoder.decode(data)
        except msgspec.DecodeError:
            state = None
        if state is None:
            raise DocumentCorrupt("the stored recall ledger is not valid ledger JSON")
        if state.version != FORMAT_VERSION:
            raise DocumentCorrupt(f"recall ledger format {state.version} is not supported")
        ledger = cls()
        ledger._state = state
        return ledger


def projected_batch(batches: Sequence[tuple[str, Sequence[Any]]]) -> list[ProjectedRecall]:
    """One model call's recall, checked as a whole, as marked copies in slot-name order.

    ``batches`` pairs each active slot with what its provider returned. The
    same checks as :meth:`RecallLedger.apply` run first on every slot: one
    invalid item refuses the whole call's recall (:class:`~docmem.RecallBatchInvalid`).
    """
    checked = [(slot, _validate(slot, messages)) for slot, messages in batches]
    return [
        ProjectedRecall(
            mark_recalled(message.content, slot),
            slot,
            item_key(message.id) if message.id is not None else None,
        )
        for slot, messages in sorted(checked, key=lambda pair: pair[0])
        for message in messages
    ]


class LedgerCache:
    """Recall ledgers by session id, the least recently used dropped past ``max_sessions``.

    For a host that keeps its runtime app-wide and its conversations'
    ledgers in memory: the set stays bounded however many conversations
    come and go. A dropped session recalls afresh on its next turn, which
    is always safe.
    """

    def __init__(self, max_sessions: int = 1024) -> None:
        if isinstance(max_sessions, bool) or not isinstance(max_sessions, int) or max_sessions < 1:
            raise InvalidArgument("max_sessions must be a positive integer")
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._ledgers: OrderedDict[str, RecallLedger] = OrderedDict()

    def get(self, session_id: str) -> RecallLedger:
        """The session's ledger, created empty the first time (or after it was dropped)."""
        with self._lock:
            ledger = self._ledgers.get(session_id)
            if ledger is None:
                ledger = self._ledgers[session_id] = RecallLedger()
                while len(self._ledgers) > self.max_sessions:
                    self._ledgers.popitem(last=False)
            else:
                self._ledgers.move_to_end(session_id)
            return ledger

    def discard(self, session_id: str) -> None:
        """Forget one session's ledger (its conversation ended or was cleared)."""
        with self._lock:
            self._ledgers.pop(session_id, None)

    def __len__(self) -> int:
        """The number of sessions held."""
        with self._lock:
            return len(self._ledgers)
