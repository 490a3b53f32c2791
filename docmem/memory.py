"""FileMemory: the bounded-document memory provider.

Each mutation is an optimistic-concurrency loop: read the document, decide
what it calls for (:mod:`docmem.mutation`), write it back on the condition
that nobody else wrote meanwhile, and on a lost race back off (full jitter)
and try again within a bounded budget (:mod:`docmem.retry`). There is never
an unconditional write. The journal in the document header makes every
mutation idempotent under its ``mutation_id`` and lets an ambiguous write be
settled by reading instead of guessing (docs/design.md, section 5).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, Union

from . import fencing, journal, telemetry
from ._threads import in_thread
from .backend import Backend, LruCache, Stored
from .document import MemoryDocument, parse, render_recall
from .errors import (
    Cancelled,
    DocmemError,
    InvalidArgument,
    MutationAmbiguous,
    StoreBusy,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from .keys import LockedScope, item_key
from .mutation import (
    Decision,
    Done,
    Erase,
    EraseResult,
    Mutation,
    NoOp,
    Refused,
    Remove,
    RemoveResult,
    Save,
    SaveResult,
    Write,
)
from .provider import RecallContext, ToolsContext
from .retry import Attempt, Attempts, RetryPolicy
from .secrets import SecretFilter, default_secret_filter
from .tools import REMOVE_MEMORY, SAVE_MEMORY, Tool, ToolSpec, check_slot_name, qualify_tools

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
#: What a provider operation reports to (docmem.telemetry; a no-op without OpenTelemetry).
Observed = Union[telemetry.Observation, telemetry._Null]  # noqa: UP007


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
        # Documents by their exact stored bytes: ``parse`` is pure and documents
        # are immutable, so an unchanged document read again (every recall, the
        # read before each save) skips the parser. At worst 64 x 64 KiB.
        self._parsed: LruCache[MemoryDocument] = LruCache(64)

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

    def _parse(self, data: bytes) -> MemoryDocument:
        """The document ``data`` holds, from the parse cache when these bytes were seen."""
        document = self._parsed.get(data)
        if document is None:
            document = parse(data)  # a corrupt document raises and is not remembered
            self._parsed.put(data, document)
        return document

    # -- the MemoryProvider protocol (docmem.MemorySlot, docmem.MemoryRuntime) --

    def recall(self, context: RecallContext) -> list[RecallMessage]:
        """The current document as one keyed message, at every boundary (no capture)."""
        return self.bind(context.scope, slot=context.slot, cancel=context.cancel).recall()

    def tool_specs(self, slot: str) -> dict[str, ToolSpec]:
        """``save_memory`` and ``remove_memory`` as the model sees them under ``slot``. No I/O."""
        return {tool.name: tool.spec(slot) for tool in (SAVE_MEMORY, REMOVE_MEMORY)}

    def tools(self, context: ToolsContext) -> dict[str, Tool]:
        """``save_memory`` and ``remove_memory`` bound to the turn's locked scope."""
        bound = self.bind(context.scope, slot=context.slot, cancel=context.cancel)
        return bound.unqualified_tools()


@dataclass(frozen=True)
class _Read:
    """One attempt's read: what the store answered, parsed, and whether from its cache."""

    stored: Stored | None
    document: MemoryDocument | None
    from_cache: bool = False

    @property
    def version(self) -> str | None:
        """The version a write over this read expects (``None``: create)."""
        return self.stored.version if self.stored is not None else None


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
        self._cancel = cancel
        self._scheme = self._store.url.partition(":")[0]

    def __repr__(self) -> str:
        return f"BoundMemory(slot={self.slot!r}, key={self._key!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A cancel event is process-local (and unpicklable): the copy has none.
        return (BoundMemory, (self._memory, self.scope, self.slot))

    # -- reading -----------------------------------------------------------

    def _observe(self, op: str) -> telemetry.Observation | telemetry._Null:
        return telemetry.operation(op, slot=self.slot, scheme=self._scheme, key=self._key)

    def _load(self, observation: Observed, *, recent: bool = False) -> _Read:
        with observation.request("read"):
            found = self._store.read_recent(self._key) if recent else self._store.read(self._key)
        stored = _checked_stored(found)
        if stored is None:
            return _Read(None, None, from_cache=recent)
        document = self._memory._parse(stored.data)
        observation.document(
            len(stored.data), len(document.entries), document.revision, written=False
        )
        return _Read(stored, document, from_cache=recent)

    def _read_now(self, observation: Observed) -> MemoryDocument | None:
        if self._cancel is not None and self._cancel.is_set():
            raise Cancelled("the turn was cancelled; memory was not read")
        return self._load(observation).document

    def read(self) -> MemoryDocument | None:
        """The stored document, or ``None`` when the scope has none."""
        with self._observe("read") as observation:
            return self._read_now(observation)

    def recall(self) -> list[RecallMessage]:
        """``[]`` without a document, else exactly one message with id ``"document"``."""
        with self._observe("recall") as observation:
            document = self._read_now(observation)
            if document is None:
                return []
            content = render_recall(document, self.slot)
            observation.set("docmem.recall.characters", len(content))
            return [
                RecallMessage(
                    id=DOCUMENT_ID,
                    item_key=DOCUMENT_ITEM_KEY,
                    slot=self.slot,
                    namespace_key=self.scope.namespace_key,
                    scope_key=self.scope.scope_key,
                    content=content,
                    revision=document.revision,
                )
            ]

    def inspect(self, mutation_id: str) -> MutationRecord | None:
        """The recorded outcome of a mutation, or ``None``: not among the last 32 writes."""
        with self._observe("inspect") as observation:
            return self._inspect(mutation_id, observation)

    def _inspect(self, mutation_id: str, observation: Observed) -> MutationRecord | None:
        document = self._read_now(observation)
        if document is None:
            return None
        digest = journal.id_digest(journal.checked_mutation_id(mutation_id))
        record = journal.find(document.journal, digest)
        if record is None:
            return None
        return MutationRecord(record.op, record.outcome, record.index, record.rev)

    # -- mutations ---------------------------------------------------------

    def save(self, text: str, *, mutation_id: str | None = None) -> SaveResult:
        """Save one entry; an identical entry already present is a successful no-op.

        Without a ``mutation_id`` the save gets a fresh one: a retry of it (after
        a timeout, say) is then a new request, which for a save is harmless (the
        duplicate is a no-op) but cannot be told from the first by :meth:`inspect`.
        """
        memory = self._memory
        with self._observe("save") as observation:
            with _outcome_reported():
                mutation = Save(
                    text,
                    _mutation_id(mutation_id),
                    slot=self.slot,
                    max_characters=memory.max_characters,
                    secret_filter=memory.secret_filter,
                )
            return self._mutate(mutation, observation)

    def remove(self, index: int, *, mutation_id: str | None = None) -> RemoveResult:
        """Remove entry ``index``; an index with no entry is a successful no-op.

        Without a ``mutation_id`` the removal gets a fresh one (see :meth:`save`).
        """
        with self._observe("remove") as observation:
            with _outcome_reported():
                mutation = Remove(index, _mutation_id(mutation_id))
            return self._mutate(mutation, observation)

    def erase(self, *, mutation_id: str | None = None) -> EraseResult:
        """Empty the scope's document (right to be forgotten), then purge old versions.

        The document is rewritten header-only, so the next recall supersedes
        every copy already in a conversation and indexes are never reused.
        """
        with self._observe("erase") as observation:
            with _outcome_reported():
                mutation = Erase(_mutation_id(mutation_id))
            result = self._mutate(mutation, observation)
            if result.status == "erased":
                with _outcome_reported(committed=True), observation.request("delete"):
                    self._store.purge_history(self._key)  # stored; only the purge may fail
            return result

    # -- the conflict loop (docs/design.md, section 5) ------------------------

    def _mutate(self, mutation: Mutation[_R], observation: Observed) -> _R:
        """Read, decide, write; again after a lost race, until the policy's budget is spent."""
        pending = _PendingWrite(observation)
        attempts = self._memory.retry.attempts(cancel=self._cancel)
        try:
            with _outcome_reported(pending):
                for attempt in attempts:
                    observation.attempt(attempt.number)
                    read = self._read_for(attempt, observation)
                    decision = mutation.decide(read.document)
                    result = self._carry_out(decision, read, attempt, pending, observation)
                    if result is not None:
                        return result
                return self._give_up(mutation, attempts, pending, observation)
        finally:
            observation.backed_off(attempts.slept)

    def _read_for(self, attempt: Attempt, observation: Observed) -> _Read:
        """The document an attempt decides on; the first may come from the store's cache.

        That is one round trip when nobody else wrote; what is decided on a
        cached copy is confirmed (see :meth:`_carry_out`).
        """
        recent = attempt.number == 0 and self._store.recent_reads_may_be_stale
        return self._load(observation, recent=recent)

    def _carry_out(
        self,
        decision: Decision[_R],
        read: _Read,
        attempt: Attempt,
        pending: _PendingWrite,
        observation: Observed,
    ) -> _R | None:
        """What a decision on ``read`` comes to: a result, an error, or ``None`` to try again.

        A no-op or a refusal decided on a cached copy is confirmed on a fresh
        read, at once: a stale cache is no sign of contention.
        """
        if isinstance(decision, Done):
            if pending.revision is not None:
                observation.settled("committed")  # our record is in it: the lost write landed
                if pending.revision == 1:  # a create whose answer was lost: fenced meanwhile?
                    self._confirm_created(observation)
            return decision.result
        pending.settle(read.document)  # our record is not in it: what does that prove?
        if read.from_cache and isinstance(decision, (NoOp, Refused)):
            attempt.retry_at_once()
            return None
        if isinstance(decision, Refused):
            raise decision.error
        if isinstance(decision, NoOp):
            return decision.result
        return self._write(decision, read, attempt, pending, observation)

    def _write(
        self,
        write: Write[_R],
        read: _Read,
        attempt: Attempt,
        pending: _PendingWrite,
        observation: Observed,
    ) -> _R | None:
        """The conditional write over ``read``: its result, or ``None`` to try again.

        A create (no version read) first asks whether the store is fenced for
        a migration, and again once it is made (:mod:`docmem.fencing`).
        """
        created = read.version is None
        if created:
            with observation.request("read"):
                fencing.refuse_create_if_fenced(self._store)
        try:
            with observation.request("write"):
                self._store.write(self._key, write.data, expected=read.version)
        except VersionConflict:
            observation.lost_race()
            logger.debug("docmem: version conflict on %s, attempt %d", self._key, attempt.number)
            if read.from_cache:
                attempt.retry_at_once()  # a stale cache is no sign of contention
            return None
        except WriteOutcomeUnknown:
            logger.info(
                "docmem: write outcome unknown on %s at rev %d, reconciling",
                self._key,
                write.document.revision,
            )
            observation.unknown()
            pending.wrote(write.document.revision)
            return None
        self._memory._parsed.put(write.data, write.document)
        observation.settled("not_committed")  # a lost write of ours would have made this conflict
        written = write.document
        observation.document(len(write.data), len(written.entries), written.revision, written=True)
        if created:
            self._confirm_created(observation)
        return write.result

    def _confirm_created(self, observation: Observed) -> None:
        """After this scope's document was created: ScopeFenced (unknown) if a fence went up."""
        with observation.request("read"):
            fencing.confirm_create(self._store, self._key)

    def _give_up(
        self,
        mutation: Mutation[_R],
        attempts: Attempts,
        pending: _PendingWrite,
        observation: Observed,
    ) -> _R:
        """No attempt left (budget spent or turn cancelled): settle a pending write, then raise.

        The budget, or a cancel, stops new writes, not the read that settles the last.
        """
        if attempts.cancelled:
            logger.info("docmem: mutation on %s cancelled", self._key)
        else:
            logger.warning("docmem: retry budget exhausted on %s", self._key)
        if pending.revision is not None:
            document = self._load(observation).document
            mine = mutation.own_record(document)
            if mine is not None:
                observation.settled("committed")
                if pending.revision == 1:
                    self._confirm_created(observation)
                return mutation.replay(mine)
            pending.settle(document)
        raise _unmade(cancelled=attempts.cancelled, pending=pending.revision is not None)

    # -- tools -------------------------------------------------------------

    def tools(self) -> dict[str, Tool]:
        """``{"<slot>__save_memory": Tool, "<slot>__remove_memory": Tool}``. No I/O."""
        return qualify_tools(self.slot, self.unqualified_tools())

    def unqualified_tools(self) -> dict[str, Tool]:
        """The two tools under their unqualified names, for a runtime to qualify."""

        def save(text: str, mutation_id: str) -> SaveResult:
            return self.save(text, mutation_id=mutation_id)

        def remove(index: int, mutation_id: str) -> RemoveResult:
            return self.remove(index, mutation_id=mutation_id)

        return {
            SAVE_MEMORY.name: SAVE_MEMORY.bind(self.slot, save),
            REMOVE_MEMORY.name: REMOVE_MEMORY.bind(self.slot, remove),
        }

    # -- async twins -------------------------------------------------------
    # Backends are synchronous; these run in a worker thread. Cancelling the
    # awaiting task does not cancel a write that was already sent.

    async def aread(self) -> MemoryDocument | None:
        """Async :meth:`read`."""
        return await in_thread(self.read)

    async def arecall(self) -> list[RecallMessage]:
        """Async :meth:`recall`."""
        return await in_thread(self.recall)

    async def ainspect(self, mutation_id: str) -> MutationRecord | None:
        """Async :meth:`inspect`."""
        return await in_thread(self.inspect, mutation_id)

    async def asave(self, text: str, *, mutation_id: str | None = None) -> SaveResult:
        """Async :meth:`save`."""
        return await in_thread(self.save, text, mutation_id=mutation_id)

    async def aremove(self, index: int, *, mutation_id: str | None = None) -> RemoveResult:
        """Async :meth:`remove`."""
        return await in_thread(self.remove, index, mutation_id=mutation_id)

    async def aerase(self, *, mutation_id: str | None = None) -> EraseResult:
        """Async :meth:`erase`."""
        return await in_thread(self.erase, mutation_id=mutation_id)


class _PendingWrite:
    """A write of ours whose answer was lost, until a read settles it.

    ``revision`` is the revision it would have made, or ``None``: no such
    write, or a read proved it never landed. While one is pending, a failure
    says ``unknown``, never ``not_committed``.
    """

    def __init__(self, observation: Observed = telemetry.NULL) -> None:
        self.revision: int | None = None
        self._observation = observation

    def wrote(self, revision: int) -> None:
        """A write that would have made ``revision`` has an unknown outcome."""
        self.revision = revision

    def settle(self, document: MemoryDocument | None) -> None:
        """What a read without our own record proves about the pending write.

        Still below its revision: it may yet land, keep it pending (the retry
        reuses the mutation id). Past it: the record at that revision is
        another mutation's, so ours never landed; if the journal no longer
        reaches back that far, nobody can tell, and re-applying could do it twice.
        """
        pending = self.revision
        current = document.revision if document is not None else 0
        if pending is None or current < pending:
            return
        assert document is not None
        if not any(record.rev == pending for record in document.journal):
            self._observation.settled("ambiguous")
            raise MutationAmbiguous(
                f"cannot tell whether the write of revision {pending} landed; "
                "check the memory before retrying"
            )
        self._observation.settled("not_committed")
        self.revision = None


@contextlib.contextmanager
def _outcome_reported(
    pending: _PendingWrite | None = None, *, committed: bool = False
) -> Iterator[None]:
    """Give every DocmemError a mutation raises its ``outcome``: did it take effect?

    ``committed`` when the change is stored and only a follow-up failed (an
    erase's purge); else the error's own, if it has one; else ``unknown`` while
    a write of ours is pending, ``not_committed`` when nothing of ours can land.
    """
    try:
        yield
    except DocmemError as exc:
        if committed:
            exc.outcome = "committed"
        elif exc.outcome is None:
            unknown = pending is not None and pending.revision is not None
            exc.outcome = "unknown" if unknown else "not_committed"
        raise


def _unmade(*, cancelled: bool, pending: bool) -> DocmemError:
    """Why a mutation that ran out of attempts was not made (or not confirmed)."""
    if cancelled and pending:
        return Cancelled(
            "the turn was cancelled before this change was confirmed; it may still be applied"
        )
    if cancelled:
        return Cancelled("the turn was cancelled; this change was not made")
    if pending:
        return StoreBusy(
            "memory did not confirm this change in time and it may still be applied; "
            "try again shortly"
        )
    return StoreBusy("memory is busy: other writers kept changing it; try again shortly")


def _rebuild_memory(
    store: Backend, max_characters: int, retry: RetryPolicy, secret_filter: SecretFilter
) -> FileMemory:
    return FileMemory(
        store, max_characters=max_characters, retry=retry, secret_filter=secret_filter
    )


def _mutation_id(given: str | None) -> str:
    """The caller's mutation id, or a fresh one when it gave none (an empty one stays refused)."""
    return journal.fresh_mutation_id() if given is None else given


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
