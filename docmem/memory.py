"""FileMemory: the bounded-document memory provider.

Each mutation is an optimistic-concurrency loop: read the document, apply the
change, write it back on the condition that nobody else wrote meanwhile, and
on a lost race back off (full jitter) and try again within a bounded budget.
There is never an unconditional write. The journal in the document header
makes every mutation idempotent under its ``mutation_id`` and lets an
ambiguous write be settled by reading instead of guessing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from . import journal
from .backend import Backend, Stored
from .document import (
    MAX_DOCUMENT_BYTES,
    MAX_INDEX,
    MemoryDocument,
    new_document,
    normalize_entry,
    parse,
    render_recall,
    serialize,
    serialize_shrinking,
)
from .errors import (
    Cancelled,
    DocmemError,
    IndexExhausted,
    InvalidArgument,
    LimitExceeded,
    MutationAmbiguous,
    MutationConflict,
    ScopeFenced,
    SecretDetected,
    StoreBusy,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from .journal import JournalRecord, Op
from .keys import LockedScope, item_key
from .retry import RetryPolicy
from .secrets import SecretFilter, default_secret_filter
from .slot import RecallContext, ToolsContext
from .tools import Tool, check_slot_name, qualify_tools

__all__ = [
    "BoundMemory",
    "EraseResult",
    "FileMemory",
    "MutationRecord",
    "RecallMessage",
    "RemoveResult",
    "SaveResult",
]

logger = logging.getLogger("docmem")

DOCUMENT_ID = "document"
DOCUMENT_ITEM_KEY = item_key(DOCUMENT_ID)

_R = TypeVar("_R")


@dataclass(frozen=True)
class SaveResult:
    """A committed save (``"saved"``) or an entry that was already there (``"duplicate"``)."""

    status: Literal["saved", "duplicate"]
    index: int
    revision: int


@dataclass(frozen=True)
class RemoveResult:
    """A committed removal (``"removed"``) or an index with no entry (``"absent"``)."""

    status: Literal["removed", "absent"]
    index: int
    revision: int


@dataclass(frozen=True)
class EraseResult:
    """A committed erase (``"erased"``) or a scope with no document (``"absent"``)."""

    status: Literal["erased", "absent"]
    revision: int


@dataclass(frozen=True)
class MutationRecord:
    """What the journal says a mutation did: op, outcome, entry index, revision."""

    op: str
    outcome: str
    index: int | None
    revision: int


@dataclass(frozen=True)
class RecallMessage:
    """The keyed message a turn shows the model: the same ``id`` every turn.

    ``item_key`` is the opaque identity under which a host replaces the older
    copy; ``revision`` tells copies apart.
    """

    id: str
    item_key: str
    slot: str
    namespace_key: str
    scope_key: str
    content: str
    revision: int


_parse_caches: weakref.WeakSet[_ParseCache] = weakref.WeakSet()


def _reset_parse_caches_after_fork() -> None:
    for cache in list(_parse_caches):
        cache.reset_lock()


class _ParseCache:
    """Documents by their exact stored bytes, newest last, at most ``size`` of them.

    ``parse`` is pure and documents are immutable, so an unchanged document
    read again (every recall, the read before each save) skips the parser.
    Bounded: ``size`` x 64 KiB at worst.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._documents: collections.OrderedDict[bytes, MemoryDocument] = collections.OrderedDict()
        self._lock = threading.Lock()
        _parse_caches.add(self)

    def reset_lock(self) -> None:
        """In a forked child: a lock held by another thread at fork would never be released."""
        self._lock = threading.Lock()

    def parse(self, data: bytes) -> MemoryDocument:
        with self._lock:
            document = self._documents.get(data)
            if document is not None:
                self._documents.move_to_end(data)
                return document
        document = parse(data)  # a corrupt document raises and is not remembered
        self.remember(data, document)
        return document

    def remember(self, data: bytes, document: MemoryDocument) -> None:
        with self._lock:
            self._documents[data] = document
            self._documents.move_to_end(data)
            while len(self._documents) > self._size:
                self._documents.popitem(last=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_parse_caches_after_fork)


class FileMemory:
    """The reference provider: one bounded Markdown document per scope.

    ``max_characters`` bounds the rendered recall message (code points,
    inclusive). ``retry`` bounds the conflict loop. ``secret_filter`` rejects
    text that looks like a credential; pass your own callable to replace it.
    """

    def __init__(
        self,
        store: Backend,
        *,
        max_characters: int = 4000,
        retry: RetryPolicy | None = None,
        secret_filter: SecretFilter = default_secret_filter,
    ) -> None:
        if not isinstance(store, Backend):
            raise InvalidArgument("FileMemory needs a store from docmem.open_store()")
        if isinstance(max_characters, bool) or not isinstance(max_characters, int):
            raise InvalidArgument("max_characters must be an integer")
        if max_characters < 1:
            raise InvalidArgument("max_characters must be positive")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidArgument("retry must be a docmem.RetryPolicy")
        self.store = store
        self.max_characters = max_characters
        self.retry = retry or RetryPolicy()
        self.secret_filter = secret_filter
        self._parsed = _ParseCache()

    def __reduce__(self) -> tuple[Any, ...]:
        # The store pickles as (URL, options); the copy gets its own cache.
        return (_rebuild_memory, (self.store, self.max_characters, self.retry, self.secret_filter))

    def bind(
        self, scope: LockedScope, *, slot: str, cancel: threading.Event | None = None
    ) -> BoundMemory:
        """The memory of one locked scope, shown under one slot name. No I/O.

        Once ``cancel`` is set (the turn was abandoned), every call raises
        :class:`~docmem.errors.Cancelled` instead of touching the store, and a
        mutation stops retrying.
        """
        if not isinstance(scope, LockedScope):
            raise InvalidArgument("bind() needs a LockedScope from docmem.lock_scope()")
        check_slot_name(slot)
        if cancel is not None and not callable(getattr(cancel, "is_set", None)):
            raise InvalidArgument("cancel must be a threading.Event or None")
        return BoundMemory(self, scope, slot, cancel)

    # -- the MemoryProvider protocol (docmem.MemorySlot, docmem.MemoryRuntime) --

    def recall(self, context: RecallContext) -> list[RecallMessage]:
        """The current document as one keyed message, at every boundary (no capture)."""
        return self.bind(context.scope, slot=context.slot, cancel=context.cancel).recall()

    def tools(self, context: ToolsContext) -> dict[str, Tool]:
        """``save_memory`` and ``remove_memory`` bound to the turn's locked scope."""
        return self.bind(context.scope, slot=context.slot, cancel=context.cancel).provider_tools()


class BoundMemory:
    """One slot's view of one locked scope; thread-safe and cheap to create."""

    def __init__(
        self,
        memory: FileMemory,
        scope: LockedScope,
        slot: str,
        cancel: threading.Event | None = None,
    ) -> None:
        self._memory = memory
        self._store = memory.store
        self.scope = scope
        self.slot = slot
        self._key = scope.storage_key
        self._parsed = memory._parsed
        self._cancel = cancel

    def __repr__(self) -> str:
        return f"BoundMemory(slot={self.slot!r}, key={self._key!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A cancel event is process-local (and unpicklable): the copy has none.
        return (BoundMemory, (self._memory, self.scope, self.slot))

    def _cancelled(self) -> bool:
        return self._cancel is not None and self._cancel.is_set()

    # -- reading -----------------------------------------------------------

    def _load(self, *, recent: bool = False) -> tuple[Stored | None, MemoryDocument | None]:
        stored = _checked_stored(
            self._store.read_recent(self._key) if recent else self._store.read(self._key)
        )
        return stored, (self._parsed.parse(stored.data) if stored is not None else None)

    def read(self) -> MemoryDocument | None:
        """The stored document, or ``None`` when the scope has none."""
        if self._cancelled():
            raise Cancelled("the turn was cancelled; memory was not read")
        return self._load()[1]

    def recall(self) -> list[RecallMessage]:
        """``[]`` without a document, else exactly one message with id ``"document"``."""
        document = self.read()
        if document is None:
            return []
        return [
            RecallMessage(
                id=DOCUMENT_ID,
                item_key=DOCUMENT_ITEM_KEY,
                slot=self.slot,
                namespace_key=self.scope.namespace_key,
                scope_key=self.scope.scope_key,
                content=render_recall(document, self.slot),
                revision=document.revision,
            )
        ]

    def inspect(self, mutation_id: str) -> MutationRecord | None:
        """The recorded outcome of a mutation, or ``None``: not among the last 32 writes."""
        document = self.read()
        if document is None:
            return None
        record = journal.find(document.journal, journal.id_digest(_checked_id(mutation_id)))
        if record is None:
            return None
        return MutationRecord(record.op, record.outcome, record.index, record.rev)

    # -- mutations ---------------------------------------------------------

    def save(self, text: str, *, mutation_id: str) -> SaveResult:
        """Save one entry; an identical entry already present is a successful no-op."""
        with _refused_before_writing():
            normalized = normalize_entry(text)
            kind = self._memory.secret_filter(normalized)
            if kind is not None:
                raise SecretDetected(
                    f"the text looks like a credential ({kind}); secrets are not saved as memory"
                )

        def plan(
            current: MemoryDocument | None, record: Callable[[int | None], JournalRecord]
        ) -> tuple[SaveResult, MemoryDocument | None]:
            doc = current or new_document()
            existing = doc.index_of(normalized)
            if existing is not None:
                return SaveResult("duplicate", existing, doc.revision), None
            updated = doc.with_entry(normalized, record(doc.last + 1))
            self._check_characters(doc, updated)
            return SaveResult("saved", updated.last, updated.revision), updated

        def replay(record: JournalRecord) -> SaveResult:
            return SaveResult("saved", _index(record), record.rev)

        return self._mutate(mutation_id, "save", normalized, plan, replay)

    def remove(self, index: int, *, mutation_id: str) -> RemoveResult:
        """Remove entry ``index``; an index with no entry is a successful no-op."""
        with _refused_before_writing():
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise InvalidArgument("index must be a non-negative integer")

        def plan(
            doc: MemoryDocument | None, record: Callable[[int | None], JournalRecord]
        ) -> tuple[RemoveResult, MemoryDocument | None]:
            if doc is None or index not in doc.entries:
                return RemoveResult("absent", index, doc.revision if doc else 0), None
            updated = doc.without_entry(index, record(index))
            return RemoveResult("removed", index, updated.revision), updated

        def replay(record: JournalRecord) -> RemoveResult:
            return RemoveResult("removed", _index(record), record.rev)

        return self._mutate(mutation_id, "remove", str(index), plan, replay)

    def erase(self, *, mutation_id: str) -> EraseResult:
        """Empty the scope's document (right to be forgotten), then purge old versions.

        The document is rewritten header-only, so the next recall supersedes
        every copy already in a conversation and indexes are never reused.
        """

        def plan(
            doc: MemoryDocument | None, record: Callable[[int | None], JournalRecord]
        ) -> tuple[EraseResult, MemoryDocument | None]:
            if doc is None:
                return EraseResult("absent", 0), None
            updated = doc.erased(record(None))
            return EraseResult("erased", updated.revision), updated

        def replay(record: JournalRecord) -> EraseResult:
            return EraseResult("erased", record.rev)

        result = self._mutate(mutation_id, "erase", "", plan, replay)
        if result.status == "erased":
            try:
                self._store.purge_history(self._key)
            except DocmemError as exc:
                exc.outcome = "committed"
                raise
        return result

    @staticmethod
    def _plan(
        document: MemoryDocument | None,
        plan: Callable[
            [MemoryDocument | None, Callable[[int | None], JournalRecord]],
            tuple[_R, MemoryDocument | None],
        ],
        record_for: Callable[[int | None], JournalRecord],
        *,
        shrinking: bool,
    ) -> tuple[_R, MemoryDocument | None, bytes]:
        """Apply one mutation to ``document``: the result, the new document and its bytes.

        Raises the refusals (fence, limits, exhausted indexes); a no-op gives no document.
        A ``shrinking`` change (remove, erase) never fails a limit: it drops old
        journal records instead, so a full memory can always be made smaller.
        """
        if document is not None and document.fence is not None:
            raise ScopeFenced("this memory is being migrated; changes are refused for now")
        result, updated = plan(document, record_for)
        if updated is None:
            return result, None, b""
        if shrinking:
            updated, data = serialize_shrinking(updated)
        else:
            data = serialize(updated)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise LimitExceeded(
                f"memory is full: the stored document would be {len(data):,} of at most "
                f"{MAX_DOCUMENT_BYTES:,} bytes; remove an entry by index first"
            )
        return result, updated, data

    def _check_characters(self, before: MemoryDocument, after: MemoryDocument) -> None:
        maximum = self._memory.max_characters
        rendered = len(render_recall(after, self.slot))
        if rendered > maximum:
            if not before.entries:
                raise LimitExceeded(
                    f"this note is too long for this memory: it would render to {rendered:,} "
                    f"characters, at most {maximum:,} allowed; save a shorter note"
                )
            used = len(render_recall(before, self.slot))
            raise LimitExceeded(
                f"memory is full: {used:,} of {maximum:,} characters used and this note needs "
                f"{rendered - used:,}; remove an entry by index first or save a shorter note"
            )

    def _mutate(
        self,
        mutation_id: str,
        op: Op,
        arg: str,
        plan: Callable[
            [MemoryDocument | None, Callable[[int | None], JournalRecord]],
            tuple[_R, MemoryDocument | None],
        ],
        replay: Callable[[JournalRecord], _R],
    ) -> _R:
        """The read-modify-write loop shared by every mutation.

        ``pending`` is the revision an ambiguous write of ours would have
        produced; it decides what a later read proves (DESIGN section 5).
        """
        with _refused_before_writing():
            id_digest = journal.id_digest(_checked_id(mutation_id))
        request_digest = journal.request_digest(mutation_id, op, arg)
        policy = self._memory.retry
        deadline = time.monotonic() + policy.max_seconds
        pending: int | None = None

        def recorded(document: MemoryDocument | None) -> JournalRecord | None:
            """Our own record in ``document``: the mutation already happened."""
            mine = journal.find(document.journal, id_digest) if document is not None else None
            if mine is not None and mine.request_digest != request_digest:
                raise MutationConflict("this mutation id was already used for a different request")
            return mine

        # The first attempt may start from the store's cached version (one round trip
        # when nobody else wrote); a no-op decided on it is confirmed on a fresh read.
        use_recent = self._store.recent_reads_may_be_stale
        back_off = True
        cancelled = False
        try:
            for attempt in range(policy.max_attempts):
                if attempt:
                    if time.monotonic() >= deadline:
                        break
                    if back_off:
                        self._sleep(policy.delay(attempt))
                if self._cancelled():  # before every attempt, the first included
                    cancelled = True
                    break
                back_off = True
                from_cache, use_recent = use_recent, False
                stored, document = self._load(recent=from_cache)
                if (mine := recorded(document)) is not None:
                    return replay(mine)
                if pending is not None:
                    pending = _settle(document, pending)
                next_revision = (document.revision if document is not None else 0) + 1
                record_for = functools.partial(
                    JournalRecord,
                    id_digest,
                    request_digest,
                    next_revision,
                    op,
                    journal.OUTCOME_OF[op],
                )
                try:
                    result, updated, data = self._plan(
                        document, plan, record_for, shrinking=op != "save"
                    )
                except (ScopeFenced, LimitExceeded, IndexExhausted):
                    if from_cache:  # a refusal decided on a cached copy is confirmed afresh
                        back_off = False
                        continue
                    raise
                if updated is None:
                    if from_cache:
                        back_off = False  # confirm the no-op on a fresh read, at once
                        continue
                    return result
                expected = stored.version if stored is not None else None
                try:
                    self._store.write(self._key, data, expected=expected)
                except VersionConflict:
                    logger.debug("docmem: version conflict on %s, attempt %d", self._key, attempt)
                    back_off = not from_cache  # a stale cache is no sign of contention
                    continue
                except WriteOutcomeUnknown:
                    logger.info(
                        "docmem: write outcome unknown on %s at rev %d, reconciling",
                        self._key,
                        updated.revision,
                    )
                    pending = updated.revision
                    continue
                self._parsed.remember(data, updated)
                return result
            if cancelled:
                logger.info("docmem: mutation on %s cancelled", self._key)
            else:
                logger.warning("docmem: retry budget exhausted on %s", self._key)
            if pending is not None:
                # The budget (or a cancel) stops new writes, not the read that settles the last.
                document = self._load()[1]
                if (mine := recorded(document)) is not None:
                    return replay(mine)
                pending = _settle(document, pending)
            if cancelled:
                if pending is not None:
                    raise Cancelled(
                        "the turn was cancelled before this change was confirmed; "
                        "it may still be applied"
                    )
                raise Cancelled("the turn was cancelled; this change was not made")
            if pending is not None:
                raise StoreBusy(
                    "memory did not confirm this change in time and it may still be applied; "
                    "try again shortly"
                )
            raise StoreBusy("memory is busy: other writers kept changing it; try again shortly")
        except DocmemError as exc:
            if exc.outcome is None:
                exc.outcome = "unknown" if pending is not None else "not_committed"
            raise

    def _sleep(self, seconds: float) -> None:
        """Back off; a cancel event cuts the wait short (the loop then stops)."""
        if self._cancel is None:
            time.sleep(seconds)
        else:
            self._cancel.wait(seconds)

    # -- tools -------------------------------------------------------------

    def tools(self) -> dict[str, Tool]:
        """``{"<slot>__save_memory": Tool, "<slot>__remove_memory": Tool}``. No I/O."""
        return qualify_tools(self.slot, self.provider_tools())

    def provider_tools(self) -> dict[str, Tool]:
        """The two tools under their unqualified names, for a runtime to qualify."""
        save_name, remove_name = "save_memory", "remove_memory"

        def save(arguments: Mapping[str, Any], mutation_id: str) -> str:
            result = self.save(arguments["text"], mutation_id=mutation_id)
            if result.status == "duplicate":
                return f"Already saved as memory {result.index}."
            return f"Saved as memory {result.index}."

        def remove(arguments: Mapping[str, Any], mutation_id: str) -> str:
            result = self.remove(arguments["index"], mutation_id=mutation_id)
            if result.status == "absent":
                return f"Memory {result.index} does not exist; nothing removed."
            return f"Removed memory {result.index}."

        return {
            save_name: Tool(
                name=save_name,
                description=(
                    f"Save one short, self-contained note to the `{self.slot}` memory, which "
                    "persists across conversations. Save durable facts and preferences worth "
                    "remembering; never secrets. Returns the note's index."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "text": {
                            "type": "string",
                            "minLength": 1,
                            "description": "The note, one line of plain text.",
                        }
                    },
                    "required": ["text"],
                    "additionalProperties": False,
                },
                handler=save,
            ),
            remove_name: Tool(
                name=remove_name,
                description=(
                    f"Remove the note with this index from the `{self.slot}` memory, when it is "
                    "wrong or no longer true. Indexes are shown in the memory message."
                ),
                parameters={
                    "type": "object",
                    "properties": {
                        "index": {
                            "type": "integer",
                            "minimum": 0,
                            "maximum": MAX_INDEX,
                            "description": "The index shown before the note.",
                        }
                    },
                    "required": ["index"],
                    "additionalProperties": False,
                },
                handler=remove,
            ),
        }

    # -- async twins -------------------------------------------------------
    # Backends are synchronous; these run in a worker thread. Cancelling the
    # awaiting task does not cancel a write that was already sent.

    async def aread(self) -> MemoryDocument | None:
        """Async :meth:`read`."""
        return await asyncio.to_thread(self.read)

    async def arecall(self) -> list[RecallMessage]:
        """Async :meth:`recall`."""
        return await asyncio.to_thread(self.recall)

    async def ainspect(self, mutation_id: str) -> MutationRecord | None:
        """Async :meth:`inspect`."""
        return await asyncio.to_thread(self.inspect, mutation_id)

    async def asave(self, text: str, *, mutation_id: str) -> SaveResult:
        """Async :meth:`save`."""
        return await asyncio.to_thread(self.save, text, mutation_id=mutation_id)

    async def aremove(self, index: int, *, mutation_id: str) -> RemoveResult:
        """Async :meth:`remove`."""
        return await asyncio.to_thread(self.remove, index, mutation_id=mutation_id)

    async def aerase(self, *, mutation_id: str) -> EraseResult:
        """Async :meth:`erase`."""
        return await asyncio.to_thread(self.erase, mutation_id=mutation_id)


def _rebuild_memory(
    store: Backend, max_characters: int, retry: RetryPolicy, secret_filter: SecretFilter
) -> FileMemory:
    return FileMemory(
        store, max_characters=max_characters, retry=retry, secret_filter=secret_filter
    )


@contextlib.contextmanager
def _refused_before_writing() -> Iterator[None]:
    """Mark errors raised before any write was attempted as ``not_committed``."""
    try:
        yield
    except DocmemError as exc:
        if exc.outcome is None:
            exc.outcome = "not_committed"
        raise


def _checked_stored(stored: object) -> Stored | None:
    """What a backend's read returned, checked at the provider boundary.

    A backend that answers with something else than bytes and a version token
    is broken, not the document: StoreUnavailable (the store cannot be used
    safely, and a save must not treat it as empty), never DocumentCorrupt, which
    tells an operator to repair stored data. Bytes-like data is accepted as
    bytes (the parse cache keys on hashable bytes).
    """
    if stored is None:
        return None
    if not isinstance(stored, Stored):
        raise StoreUnavailable(
            f"the store's read returned {type(stored).__name__}, not docmem.Stored; "
            "the backend is broken"
        )
    data, version = stored.data, stored.version
    if not isinstance(version, str) or not version:
        raise StoreUnavailable(
            "the store's read returned an empty or non-string version; it cannot be written safely"
        )
    if isinstance(data, bytes):
        return stored
    if isinstance(data, (bytearray, memoryview)):
        return Stored(bytes(data), version)
    raise StoreUnavailable(
        f"the store's read returned {type(data).__name__} data, not bytes; the backend is broken"
    )


def _checked_id(mutation_id: str) -> str:
    if not isinstance(mutation_id, str) or not mutation_id:
        raise InvalidArgument("mutation_id must be a non-empty string")
    try:
        size: int | None = len(mutation_id.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate; the error would hold the raw id
        size = None
    if size is None:
        raise InvalidArgument("mutation_id is not valid UTF-8")
    if size > 1024:
        raise InvalidArgument("mutation_id is longer than 1,024 bytes")
    return mutation_id


def _index(record: JournalRecord) -> int:
    assert record.index is not None, "save and remove records always carry an index"
    return record.index


def _settle(document: MemoryDocument | None, pending: int) -> int | None:
    """After an ambiguous write that would have made revision ``pending``.

    Called only when our own record is not in ``document``. Still below
    ``pending``: the write may yet land, keep it pending (the retry reuses the
    mutation id). Past it: the record at ``pending`` belongs to another
    mutation, so ours never landed; if the journal no longer reaches back that
    far, nobody can tell, and re-applying could do it twice.
    """
    current = document.revision if document is not None else 0
    if current < pending:
        return pending
    assert document is not None
    if any(record.rev == pending for record in document.journal):
        return None
    raise MutationAmbiguous(
        f"cannot tell whether the write of revision {pending} landed; "
        "check the memory before retrying"
    )
