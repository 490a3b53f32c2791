"""FileMemory: the bounded-document memory provider.

Each mutation is an optimistic-concurrency loop: read the document, decide
what it calls for (:mod:`docmem.mutation`), write it back on the condition
that nobody else wrote meanwhile, and on a lost race back off (full jitter)
and try again within a bounded budget (:mod:`docmem.retry`,
:mod:`docmem.commit`). There is never an unconditional write. Mutations of
one key that this process makes at once share one read and one write
(group commit, :mod:`docmem.grouping`). The journal in the document header
makes every mutation idempotent under its ``mutation_id`` and lets an
ambiguous write be settled by reading instead of guessing (docs/design.md,
section 5). A recall, a read and an inspect only read
(:mod:`docmem.provider.reading`), never through the loop.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import telemetry
from ..backend import Backend, LruCache
from ..errors import Cancelled, DocmemError, InvalidArgument
from . import journal
from .commit import KeyIO, Work, commit_batch
from .document import MemoryDocument, render_recall
from .grouping import CommitQueue, Member
from .history import EntryChanges, KeptRevision, changes, kept_revisions, revision_document
from .keys import LockedScope, item_key
from .mutation import (
    Erase,
    EraseResult,
    Mutation,
    Remove,
    RemoveResult,
    Revert,
    RevertResult,
    Save,
    SaveResult,
    check_revert,
)
from .protocol import RecallContext, ToolsContext
from .provenance import Provenance
from .reading import KeyReader, Observed
from .retry import RetryPolicy
from .secrets import SecretFilter, default_secret_filter
from .threads import in_thread
from .tools import (
    REMOVE_MEMORY,
    SAVE_MEMORY,
    Tool,
    ToolSpec,
    check_slot_name,
    qualify_tools,
    session_of,
)

__all__ = [
    "BoundMemory",
    "EraseResult",
    "FileMemory",
    "MutationRecord",
    "RecallMessage",
    "RemoveResult",
    "RevertPlan",
    "RevertResult",
    "SaveResult",
]

logger = logging.getLogger("docmem")

DOCUMENT_ID = "document"
DOCUMENT_ITEM_KEY = item_key(DOCUMENT_ID)

_R = TypeVar("_R")


@dataclass(frozen=True)
class MutationRecord:
    """What the journal says a mutation did: op, outcome, entry index, revision.

    ``provenance`` is the record of the entry a save made, while that entry
    is still there and was saved under this id (docs/design.md, section 3.1);
    records compare by what the journal says, without it.
    """

    op: str
    outcome: str
    index: int | None
    revision: int
    provenance: Provenance | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RevertPlan:
    """What a revert to ``to_revision`` would change now: a dry run, nothing written.

    ``changes`` holds the entries it would take out and bring back, with
    their text (for the operator who asked, never for a log). Pass
    ``revision`` as ``expected_revision`` to :meth:`BoundMemory.revert` so
    that a change made after this plan refuses the revert instead of being
    undone unseen.
    """

    to_revision: int
    revision: int
    changes: EntryChanges


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
    ``group_commit`` (the default) lets mutations of one scope made at once
    through this provider share one read and one conditional write, instead
    of racing each other; ``False`` runs each alone.
    """

    def __init__(
        self,
        store: Backend,
        *,
        max_characters: int = 4000,
        retry: RetryPolicy | None = None,
        secret_filter: SecretFilter = default_secret_filter,
        group_commit: bool = True,
    ) -> None:
        if not isinstance(store, Backend):
            raise InvalidArgument("FileMemory needs a store from docmem.open_store()")
        if isinstance(max_characters, bool) or not isinstance(max_characters, int):
            raise InvalidArgument("max_characters must be an integer")
        if max_characters < 1:
            raise InvalidArgument("max_characters must be positive")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidArgument("retry must be a docmem.RetryPolicy")
        if not isinstance(group_commit, bool):
            raise InvalidArgument("group_commit must be True or False")
        self.store = store
        self.max_characters = max_characters
        self.retry = retry or RetryPolicy()
        self.secret_filter = secret_filter
        # Documents by their exact stored bytes: ``parse`` is pure and documents
        # are immutable, so an unchanged document read again (every recall, the
        # read before each save) skips the parser. At worst 64 x 64 KiB.
        self._parsed: LruCache[MemoryDocument] = LruCache(64)
        self._queue = CommitQueue() if group_commit else None

    @property
    def group_commit(self) -> bool:
        """Whether mutations of one scope made at once share one write."""
        return self._queue is not None

    def __reduce__(self) -> tuple[Any, ...]:
        # The store pickles as (URL, options); the copy gets its own caches and queue.
        arguments = (self.store, self.max_characters, self.retry, self.secret_filter)
        return (_rebuild_memory, (*arguments, self.group_commit))

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

    def tool_specs(self, slot: str) -> dict[str, ToolSpec]:
        """``save_memory`` and ``remove_memory`` as the model sees them under ``slot``. No I/O."""
        return {tool.name: tool.spec(slot) for tool in (SAVE_MEMORY, REMOVE_MEMORY)}

    def tools(self, context: ToolsContext) -> dict[str, Tool]:
        """``save_memory`` and ``remove_memory`` bound to the turn's locked scope."""
        bound = self.bind(context.scope, slot=context.slot, cancel=context.cancel)
        return bound.unqualified_tools()

    def tool_for_call(self, context: ToolsContext, name: str) -> Tool | None:
        """The one tool of :meth:`tools` named ``name`` (unqualified), for one call. No I/O.

        A runtime running a single tool call builds that tool alone, with no
        copy of any schema (:meth:`BoundMemory.unqualified_tool`). A subclass
        that overrides :meth:`tools` is asked through it, so its tools stay its own.
        """
        if type(self).tools is not FileMemory.tools:
            found = self.tools(context)
            return found.get(name) if found else None
        bound = self.bind(context.scope, slot=context.slot, cancel=context.cancel)
        return bound.unqualified_tool(name)


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

    def _observe(self, op: str) -> telemetry.Observer:
        return telemetry.operation(op, slot=self.slot, scheme=self._scheme, key=self._key)

    def _read_now(self, observation: Observed) -> MemoryDocument | None:
        self._check_cancel()
        return KeyReader(self._store, self._key, self._memory._parsed).load(observation).document

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
        made = None if record.index is None else document.provenance.get(record.index)
        if made is not None and made.mutation != mutation_id:
            made = None  # a removed entry's index is never reused, but be strict
        return MutationRecord(record.op, record.outcome, record.index, record.rev, made)

    # -- mutations ---------------------------------------------------------

    def save(
        self,
        text: str,
        *,
        mutation_id: str | None = None,
        made_by: str = "api",
        session_id: str | None = None,
    ) -> SaveResult:
        """Save one entry; an identical entry already present is a successful no-op.

        Without a ``mutation_id`` the save gets a fresh one: a retry of it (after
        a timeout, say) is then a new request, which for a save is harmless (the
        duplicate is a no-op) but cannot be told from the first by :meth:`inspect`.
        The entry's provenance records the time, the mutation id, ``made_by``
        (``"api"``, ``"cli"``, or ``"model"`` for a tool call) and the host's
        ``session_id`` (docs/design.md, section 3.1).
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
                    at=_now(),
                    made_by=made_by,
                    session_id=session_id,
                )
            return self._mutate(mutation, observation)

    def remove(
        self,
        index: int,
        *,
        mutation_id: str | None = None,
        expected_revision: int | None = None,
    ) -> RemoveResult:
        """Remove entry ``index``; an index with no entry is a successful no-op.

        Without a ``mutation_id`` the removal gets a fresh one (see :meth:`save`).
        ``expected_revision`` (the revision an operator was shown) refuses the
        removal with :class:`~docmem.errors.StaleRevision`, nothing written, if
        the memory moved on since.
        """
        with self._observe("remove") as observation:
            with _outcome_reported():
                if expected_revision is not None:
                    _check_revision(expected_revision)
                mutation = Remove(
                    index, _mutation_id(mutation_id), expected_revision=expected_revision
                )
            return self._mutate(mutation, observation)

    def erase(
        self, *, mutation_id: str | None = None, expected_revision: int | None = None
    ) -> EraseResult:
        """Empty the scope's document (right to be forgotten), then purge old versions.

        The document is rewritten header-only, so the next recall supersedes
        every copy already in a conversation and indexes are never reused.
        ``expected_revision`` refuses the erase with
        :class:`~docmem.errors.StaleRevision` if the memory moved on from it,
        so that an erase never takes a save its caller did not see.
        """
        with self._observe("erase") as observation:
            with _outcome_reported():
                if expected_revision is not None:
                    _check_revision(expected_revision)
                mutation = Erase(_mutation_id(mutation_id), expected_revision=expected_revision)
            result = self._mutate(mutation, observation)
            if result.status == "erased":
                with _outcome_reported(committed=True), observation.request("delete"):
                    self._store.purge_history(self._key)  # stored; only the purge may fail
            return result

    # -- history and revert (docs/design.md, section 3.1) ----------------------

    def history(self) -> list[KeptRevision]:
        """The versions the store keeps of this scope, oldest first, the current one last.

        Raises :class:`~docmem.errors.HistoryNotKept` on a store that keeps none.
        """
        with self._observe("history"):
            self._check_cancel()
            return kept_revisions(self._store, self._key)

    def plan_revert(self, to_revision: int) -> RevertPlan:
        """What :meth:`revert` to ``to_revision`` would change now; nothing is written.

        Raises :class:`~docmem.errors.RevertRefused` when the revert would be
        refused (not kept, before an erase, newer than the memory).
        """
        with self._observe("read") as observation:
            target = self._revision(to_revision)
            current = self._read_now(observation)
            check_revert(to_revision, current)
            assert current is not None, "check() refuses a scope with no document"
            return RevertPlan(to_revision, current.revision, changes(current, target))

    def revert(
        self,
        to_revision: int,
        *,
        mutation_id: str | None = None,
        expected_revision: int | None = None,
    ) -> RevertResult:
        """Make the entries those of ``to_revision`` again, as a new revision.

        A conditional write like every mutation, retried on a lost race; the
        journal records it and each entry that comes back keeps its index
        and provenance, marked as restored. ``expected_revision`` (from
        :meth:`plan_revert`) refuses the revert if the memory changed since.
        Refused with :class:`~docmem.errors.RevertRefused` (nothing written)
        for a revision not kept, before an erase, or newer than the memory.
        """
        with self._observe("revert") as observation:
            with _outcome_reported():
                if expected_revision is not None:
                    _check_revision(expected_revision)
                target = self._revision(to_revision)
                mutation = Revert(
                    target,
                    _mutation_id(mutation_id),
                    at=_now(),
                    expected_revision=expected_revision,
                )
            return self._mutate(mutation, observation)

    def _revision(self, revision: int) -> MemoryDocument:
        _check_revision(revision)
        self._check_cancel()
        return revision_document(self._store, self._key, revision)

    def _check_cancel(self) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise Cancelled("the turn was cancelled; memory was not read")

    # -- the conflict loop (docs/design.md, section 5) ------------------------

    def _mutate(self, mutation: Mutation[_R], observation: Observed) -> _R:
        """Run ``mutation`` in a batch with this key's other mutations in this process.

        A lone mutation is a batch of one; with ``group_commit=False`` it is
        always alone (:mod:`docmem.grouping`, :mod:`docmem.commit`).
        """
        memory = self._memory
        member: Member[Work[_R], _R] = Member(Work(mutation, observation, self._cancel))
        io = KeyIO(self._store, self._key, memory._parsed)

        def run_batch(batch: list[Member[Any, Any]]) -> list[Member[Any, Any]]:
            return commit_batch(batch, io, memory.retry)

        if memory._queue is None:
            run_batch([member])
            return member.answer()
        return memory._queue.submit(self._key, member, run_batch)

    # -- tools -------------------------------------------------------------

    def tools(self) -> dict[str, Tool]:
        """``{"<slot>__save_memory": Tool, "<slot>__remove_memory": Tool}``. No I/O."""
        return qualify_tools(self.slot, self.unqualified_tools())

    def unqualified_tools(self) -> dict[str, Tool]:
        """The two tools under their unqualified names, for a runtime to qualify."""
        return {
            SAVE_MEMORY.name: SAVE_MEMORY.bind(self.slot, self._save_call),
            REMOVE_MEMORY.name: REMOVE_MEMORY.bind(self.slot, self._remove_call),
        }

    def unqualified_tool(self, name: str) -> Tool | None:
        """One of :meth:`unqualified_tools` alone, sharing its read-only schema; ``None``: no such.

        For a tool that runs one call and is dropped: building the other
        tool and copying both schemas would be work for nothing.
        """
        if name == SAVE_MEMORY.name:
            return SAVE_MEMORY.bind_for_call(self.slot, self._save_call)
        if name == REMOVE_MEMORY.name:
            return REMOVE_MEMORY.bind_for_call(self.slot, self._remove_call)
        return None

    def _save_call(self, text: str, mutation_id: str) -> SaveResult:
        # The tool made ``mutation_id`` from the host's session and call ids.
        return self.save(
            text, mutation_id=mutation_id, made_by="model", session_id=session_of(mutation_id)
        )

    def _remove_call(self, index: int, mutation_id: str) -> RemoveResult:
        return self.remove(index, mutation_id=mutation_id)

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

    async def asave(
        self,
        text: str,
        *,
        mutation_id: str | None = None,
        made_by: str = "api",
        session_id: str | None = None,
    ) -> SaveResult:
        """Async :meth:`save`."""
        return await in_thread(
            self.save, text, mutation_id=mutation_id, made_by=made_by, session_id=session_id
        )

    async def aremove(self, index: int, *, mutation_id: str | None = None) -> RemoveResult:
        """Async :meth:`remove`."""
        return await in_thread(self.remove, index, mutation_id=mutation_id)

    async def aerase(self, *, mutation_id: str | None = None) -> EraseResult:
        """Async :meth:`erase`."""
        return await in_thread(self.erase, mutation_id=mutation_id)

    async def ahistory(self) -> list[KeptRevision]:
        """Async :meth:`history`."""
        return await in_thread(self.history)

    async def aplan_revert(self, to_revision: int) -> RevertPlan:
        """Async :meth:`plan_revert`."""
        return await in_thread(self.plan_revert, to_revision)

    async def arevert(
        self,
        to_revision: int,
        *,
        mutation_id: str | None = None,
        expected_revision: int | None = None,
    ) -> RevertResult:
        """Async :meth:`revert`."""
        return await in_thread(
            self.revert,
            to_revision,
            mutation_id=mutation_id,
            expected_revision=expected_revision,
        )


@contextlib.contextmanager
def _outcome_reported(*, committed: bool = False) -> Iterator[None]:
    """Give a DocmemError raised outside the conflict loop its ``outcome``.

    ``committed`` when the change is stored and only a follow-up failed (an
    erase's purge); else the error's own, if it has one; else ``not_committed``
    (a refused argument: nothing was written). The loop gives its own errors
    theirs (:mod:`docmem.commit`).
    """
    try:
        yield
    except DocmemError as exc:
        if committed:
            exc.outcome = "committed"
        elif exc.outcome is None:
            exc.outcome = "not_committed"
        raise


def _rebuild_memory(
    store: Backend,
    max_characters: int,
    retry: RetryPolicy,
    secret_filter: SecretFilter,
    group_commit: bool = True,
) -> FileMemory:
    return FileMemory(
        store,
        max_characters=max_characters,
        retry=retry,
        secret_filter=secret_filter,
        group_commit=group_commit,
    )


def _now() -> int:
    """The time a provenance record holds: milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def _check_revision(revision: object) -> None:
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        raise InvalidArgument("a revision is a non-negative integer")


def _mutation_id(given: str | None) -> str:
    """The caller's mutation id, or a fresh one when it gave none (an empty one stays refused)."""
    return journal.fresh_mutation_id() if given is None else given
