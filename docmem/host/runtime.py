"""What a host framework calls: tool specs, dispatch, per-call recall, and the turn lifecycle.

A runtime is built once per application, from its slots. Frameworks that
call the model several times per turn and keep their own history inject
memory into each model request only::

    runtime = docmem.MemoryRuntime([user_slot, channel_slot])
    specs = runtime.tool_specs()                  # build the framework's tools once
    prompt = runtime.prepare_model_call(messages, trusted)   # before every model call
    result = runtime.dispatch(trusted, "user__save_memory", arguments,
                              call_id=call_id, session_id=f"{thread_id}/{run_id}")

Hosts that keep recalled records beside their stored history use the turn
lifecycle and a ledger per conversation (passed per call, or one per
session id in a bounded :class:`~docmem.LedgerCache`)::

    runtime = docmem.MemoryRuntime([user_slot, channel_slot])
    turn = runtime.turn_started(docmem.TurnContext(operation_id=turn_id, history=history,
                                                   scope_context=trusted, node="support"))
    prompt = turn.messages + [user_input]       # recalled memory sits before the input
    result = turn.dispatch("user__save_memory", {"text": "..."}, call_id=call_id)
    runtime.turn_completed(...)

A recall failure fails the whole turn and applies nothing for any slot. A
provider whose ``tools`` raises loses its tools for that turn (a content-free
diagnostic is logged); a failing ``capture`` is a diagnostic too. Every log
line names slots, boundaries and error codes or types, never content.

A turn whose :attr:`ScopeContext.cancel` is set was abandoned by the host:
every boundary raises :class:`~docmem.Cancelled` before any resolver or
provider runs, and the turn's tool calls answer with an error result, so
nothing of an abandoned turn reaches the store. Every context handed to a
provider carries the same event, for a provider to stop mid-way.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextvars
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import Cancelled, DocmemError, InvalidArgument, RecallBatchInvalid
from ..provider.protocol import (
    Boundary,
    CaptureBoundary,
    CaptureContext,
    RecallContext,
    ToolsContext,
)
from ..provider.threads import in_thread
from ..provider.tools import Tool, ToolResult, ToolSpec, dispatch_call, error_result
from .injection import Position, ProjectedRecall, message_role, place_recalls, user_text
from .recall import LedgerCache, RecallLedger, projected_batch, split_recalls
from .slot import MemorySlot, ScopeContext, SlotLock

__all__ = ["MemoryRuntime", "TurnContext", "TurnMemory"]

logger = logging.getLogger("docmem")

_M = TypeVar("_M")


@dataclass(frozen=True)
class TurnContext:
    """What the host knows at a boundary.

    ``operation_id`` is replay-stable (the same when a turn is retried);
    ``history`` is the host's own history before the turn's input, without
    recalled records; ``scope_context`` carries only trusted data.
    """

    operation_id: str
    history: Sequence[Any] = ()
    scope_context: ScopeContext = field(default_factory=ScopeContext)
    node: str = "agent"
    app_root: str = field(default_factory=os.getcwd)
    session_id: str | None = None


@dataclass(frozen=True)
class TurnMemory:
    """One turn's memory: the projected history, the locks and the turn's tool set."""

    messages: list[Any]
    locks: tuple[SlotLock, ...]
    tools: dict[str, Tool]
    session_id: str | None = None
    cancel: threading.Event | None = None

    def dispatch(self, name: str, arguments: object, *, call_id: str | None = None) -> ToolResult:
        """Run a tool call of this turn by qualified name (see :class:`docmem.ToolDispatcher`).

        Name and arguments are the model's: whatever they are (JSON text
        nested past the parser's limit, a mapping with keys of mixed types),
        the answer is a :class:`ToolResult`, never an exception. Once the
        turn's ``cancel`` is set, every call is refused without running.
        """
        if self.cancel is not None and self.cancel.is_set():
            return error_result(_cancelled())
        return dispatch_call(
            self.tools, name, arguments, call_id=call_id, session_id=self.session_id
        )

    async def adispatch(
        self, name: str, arguments: object, *, call_id: str | None = None
    ) -> ToolResult:
        """Async :meth:`dispatch` (the tool runs in a worker thread)."""
        return await in_thread(self.dispatch, name, arguments, call_id=call_id)


class MemoryRuntime:
    """The memory slots of one application, and where its conversations' ledgers live.

    The boundary methods use, in this order: the ``ledger`` passed to the
    call; the ledger of the context's session id in ``sessions``, when given;
    the runtime's own ``ledger`` (one conversation's, for a host that builds
    one runtime per conversation). Tool specs, :meth:`dispatch` and
    :meth:`prepare_model_call` use no ledger at all.
    """

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        ledger: RecallLedger | None = None,
        sessions: LedgerCache | None = None,
    ) -> None:
        names = [slot.name for slot in slots]
        if len(set(names)) != len(names):
            raise InvalidArgument("two memory slots share a name")
        self.slots = sorted(slots, key=lambda slot: slot.name)
        self.ledger = ledger if ledger is not None else RecallLedger()
        self.sessions = sessions

    def _ledger(self, session_id: str | None, ledger: RecallLedger | None) -> RecallLedger:
        if ledger is not None:
            return ledger
        if self.sessions is not None and session_id is not None:
            return self.sessions.get(session_id)
        return self.ledger

    # -- for frameworks: specs, dispatch and per-call recall -------------------

    def tool_specs(self) -> dict[str, ToolSpec]:
        """Every slot's tools as the model sees them (qualified, described). No scope, no I/O.

        A slot is listed whatever its scope resolves to in a given context;
        :meth:`dispatch` answers a disabled slot's tool as unknown.
        """
        specs: dict[str, ToolSpec] = {}
        for slot in self.slots:
            specs.update(slot.qualified_specs())
        return specs

    def tool_specs_for(
        self,
        scope_context: ScopeContext | None,
        *,
        node: str = "agent",
        app_root: str | None = None,
    ) -> dict[str, ToolSpec]:
        """The specs a model should see for this trusted context: disabled slots left out. No I/O.

        ``None`` has none. A slot that cannot be resolved (no
        ``DOCMEM_ENVIRONMENT``, a resolver that raises) keeps its tools, so a
        call answers with docmem's sentence instead of the tools vanishing
        without a word.
        """
        scope_context = checked_context(scope_context)
        if scope_context is None:
            return {}
        root = app_root if app_root is not None else os.getcwd()
        specs: dict[str, ToolSpec] = {}
        for slot in self.slots:
            try:
                if slot.lock(scope_context, app_root=root, node=node) is None:
                    continue
            except Exception:  # dispatch answers with the reason
                pass
            specs.update(slot.qualified_specs())
        return specs

    def dispatch(
        self,
        scope_context: ScopeContext | None,
        name: object,
        arguments: object,
        *,
        call_id: str | None = None,
        session_id: str | None = None,
        node: str = "agent",
        app_root: str | None = None,
    ) -> ToolResult:
        """Run one model tool call for a trusted context, without a recall. Never raises.

        Only the called tool's slot is resolved (no I/O). Every failure comes
        back as an error :class:`ToolResult` with docmem's sentence: a scope or
        namespace that cannot be resolved (a missing ``DOCMEM_ENVIRONMENT``),
        bad arguments, a refusal, a store that is down. ``scope_context=None``
        (memory is off for this context) and a disabled slot have no tools.
        The mutation id is ``session_id/call_id``: give a run-scoped
        ``session_id`` (e.g. ``thread/run``) when the model may reuse call ids
        across runs.
        """
        try:
            checked_context(scope_context)
        except InvalidArgument as error:  # a host bug: logged, and the model told memory is off
            logger.warning("docmem: %s", error.message)
            return error_result(error)
        cancel = scope_context.cancel if scope_context is not None else None
        if cancel is not None and cancel.is_set():
            return error_result(_cancelled())
        root = app_root if app_root is not None else os.getcwd()
        operation = f"dispatch/{call_id}" if call_id else "dispatch"
        if scope_context is None:
            return dispatch_call({}, name, arguments)
        target = name.partition("__")[0] if isinstance(name, str) else None
        slot = next((slot for slot in self.slots if slot.name == target), None)
        tools: dict[str, Tool] = {}
        if slot is not None:
            try:
                lock = slot.lock(scope_context, app_root=root, node=node)
            except DocmemError as error:
                return error_result(error)
            except Exception as error:  # a resolver bug: never the model's, never raised
                logger.warning(
                    "docmem: scope of slot %s could not be resolved (%s)",
                    slot.name,
                    type(error).__name__,
                )
                return ToolResult(
                    "Memory is unavailable: its scope could not be resolved.", is_error=True
                )
            if lock is not None:
                tools = self._slot_tools(lock, operation, (), cancel)
        if not isinstance(name, str) or name not in tools:  # name the tools it does have
            tools = self._active_tools(scope_context, operation, root, node)
        return dispatch_call(tools, name, arguments, call_id=call_id, session_id=session_id)

    async def adispatch(
        self,
        scope_context: ScopeContext | None,
        name: object,
        arguments: object,
        *,
        call_id: str | None = None,
        session_id: str | None = None,
        node: str = "agent",
        app_root: str | None = None,
    ) -> ToolResult:
        """Async :meth:`dispatch` (the tool runs in a worker thread)."""
        return await in_thread(
            self.dispatch,
            scope_context,
            name,
            arguments,
            call_id=call_id,
            session_id=session_id,
            node=node,
            app_root=app_root if app_root is not None else os.getcwd(),
        )

    def recall(
        self,
        scope_context: ScopeContext | None,
        *,
        messages: Sequence[Any] = (),
        node: str = "agent",
        app_root: str | None = None,
    ) -> list[ProjectedRecall]:
        """A fresh copy of every active slot's memory, for one model request, in slot order.

        The slots are read concurrently; one failure fails the whole call,
        with the error (never an empty memory). ``None`` recalls nothing and
        reads nothing. ``messages`` is what providers see as the conversation.
        Nothing is kept: the copies belong to this request only.
        """
        scope_context = checked_context(scope_context)
        if scope_context is None:
            return []
        if scope_context.cancel is not None and scope_context.cancel.is_set():
            raise _cancelled()
        root = app_root if app_root is not None else os.getcwd()
        locks = self._locks(scope_context, root, node)
        operation = f"model_call/{uuid.uuid4()}"
        batches = self._recall_slots("model_call", operation, messages, locks, scope_context.cancel)
        return projected_batch([(lock.slot, items) for lock, items in batches])

    async def arecall(
        self,
        scope_context: ScopeContext | None,
        *,
        messages: Sequence[Any] = (),
        node: str = "agent",
        app_root: str | None = None,
    ) -> list[ProjectedRecall]:
        """Async :meth:`recall`."""
        return await in_thread(
            self.recall,
            scope_context,
            messages=messages,
            node=node,
            app_root=app_root if app_root is not None else os.getcwd(),
        )

    def prepare_model_call(
        self,
        messages: Sequence[_M],
        scope_context: ScopeContext | None,
        *,
        position: Position = "after_system",
        text_of: Callable[[Any], str | None] = user_text,
        role_of: Callable[[Any], str | None] = message_role,
        node: str = "agent",
        app_root: str | None = None,
    ) -> list[_M | ProjectedRecall]:
        """``messages`` for one model request: every earlier copy out, one current copy in.

        Copies are recognised as :class:`ProjectedRecall` objects or by
        ``text_of`` (default: the text of user messages only) and
        :func:`docmem.is_recalled`, so one persisted by another process is
        found too; the fresh ones go where ``position`` says
        (:func:`docmem.place_recalls`). A save made after one call shows in
        the next. The result is for the request only: never store it.
        """
        conversation, _ = split_recalls(messages, text_of=text_of)
        recalls = self.recall(scope_context, messages=conversation, node=node, app_root=app_root)
        return place_recalls(conversation, recalls, position=position, role_of=role_of)

    async def aprepare_model_call(
        self,
        messages: Sequence[_M],
        scope_context: ScopeContext | None,
        *,
        position: Position = "after_system",
        text_of: Callable[[Any], str | None] = user_text,
        role_of: Callable[[Any], str | None] = message_role,
        node: str = "agent",
        app_root: str | None = None,
    ) -> list[_M | ProjectedRecall]:
        """Async :meth:`prepare_model_call` (the slots are read in worker threads)."""
        return await in_thread(
            self.prepare_model_call,
            messages,
            scope_context,
            position=position,
            text_of=text_of,
            role_of=role_of,
            node=node,
            app_root=app_root if app_root is not None else os.getcwd(),
        )

    def lock(self, context: TurnContext) -> tuple[SlotLock, ...]:
        """Resolve every slot's scope, then namespace; disabled slots are left out."""
        if checked_context(context.scope_context) is None:
            raise InvalidArgument("a turn needs a docmem.ScopeContext, not None")
        return self._locks(context.scope_context, context.app_root, context.node)

    def _locks(self, scope_context: ScopeContext, app_root: str, node: str) -> tuple[SlotLock, ...]:
        """Every active slot's lock; ``scope_context`` was checked where it entered."""
        locks = []
        for slot in self.slots:
            lock = slot.lock(scope_context, app_root=app_root, node=node)
            if lock is not None:
                locks.append(lock)
        return tuple(locks)

    def turn_started(
        self, context: TurnContext, *, ledger: RecallLedger | None = None
    ) -> TurnMemory:
        """Recall every active slot, apply the batch atomically, then resolve tools once.

        The slots are read concurrently; one failure applies nothing for any slot.
        """
        _check_cancel(context)
        locks = self.lock(context)
        ledger = self._ledger(context.session_id, ledger)
        if not ledger.committed(context.operation_id):  # a retried turn reuses its batch
            self._recall(
                ledger, "turn_started", context.operation_id, len(context.history), context, locks
            )
        messages = ledger.project(context.history, locks)
        return TurnMemory(
            messages,
            locks,
            self._tools(context, locks, messages),
            context.session_id,
            context.scope_context.cancel,
        )

    def compaction_requested(self, context: TurnContext) -> list[Any]:
        """Run captures, then return the conversation to summarize: no memory record in it."""
        _check_cancel(context)
        locks = self.lock(context)
        self._capture("compaction_requested", context, locks)
        conversation, _ = split_recalls(context.history)
        return conversation

    def compaction_completed(
        self, context: TurnContext, *, ledger: RecallLedger | None = None
    ) -> list[Any]:
        """Reattach memory to the compacted ``history`` at position 0 and recall afresh.

        Every compaction recalls afresh, even the second of one turn: memory
        saved after the first must not show in its old version. Only the same
        compaction delivered again (same turn, same compacted history) is a
        replay, and reuses the batch its first delivery committed.
        """
        _check_cancel(context)
        locks = self.lock(context)
        ledger = self._ledger(context.session_id, ledger)
        ledger.compacted()
        operation = _compaction_operation(context)
        if not ledger.committed(operation):
            self._recall(ledger, "compaction_completed", operation, 0, context, locks)
        return ledger.project(context.history, locks)

    def turn_completed(self, context: TurnContext) -> None:
        """Run captures after a completed turn; their failures are diagnostics only."""
        _check_cancel(context)
        self._capture("turn_completed", context, self.lock(context))

    def context_cleared(
        self, *, session_id: str | None = None, ledger: RecallLedger | None = None
    ) -> None:
        """The host cleared the conversation: the next turn recalls the store afresh."""
        self._ledger(session_id, ledger).clear()

    async def aturn_started(
        self, context: TurnContext, *, ledger: RecallLedger | None = None
    ) -> TurnMemory:
        """Async :meth:`turn_started` (providers run in a worker thread)."""
        return await in_thread(self.turn_started, context, ledger=ledger)

    async def acompaction_requested(self, context: TurnContext) -> list[Any]:
        """Async :meth:`compaction_requested`."""
        return await in_thread(self.compaction_requested, context)

    async def acompaction_completed(
        self, context: TurnContext, *, ledger: RecallLedger | None = None
    ) -> list[Any]:
        """Async :meth:`compaction_completed`."""
        return await in_thread(self.compaction_completed, context, ledger=ledger)

    async def aturn_completed(self, context: TurnContext) -> None:
        """Async :meth:`turn_completed`."""
        await in_thread(self.turn_completed, context)

    async def acontext_cleared(
        self, *, session_id: str | None = None, ledger: RecallLedger | None = None
    ) -> None:
        """Async :meth:`context_cleared`."""
        self.context_cleared(session_id=session_id, ledger=ledger)

    # -- the pieces ----------------------------------------------------------

    def _slot(self, name: str) -> MemorySlot:
        return next(slot for slot in self.slots if slot.name == name)

    def _recall(
        self,
        ledger: RecallLedger,
        boundary: Boundary,
        operation: str,
        position: int,
        context: TurnContext,
        locks: Sequence[SlotLock],
    ) -> None:
        # Every slot recalls against the same pre-recall view; the batch commits at once.
        view = ledger.project(context.history, locks)
        batches = self._recall_slots(boundary, operation, view, locks, context.scope_context.cancel)
        ledger.apply(operation, position, batches)

    def _recall_slots(
        self,
        boundary: Boundary,
        operation: str,
        view: Sequence[Any],
        locks: Sequence[SlotLock],
        cancel: threading.Event | None,
    ) -> list[tuple[SlotLock, list[Any]]]:
        """Every active slot's recall, read concurrently; the first failure (slot order) raises.

        Three slots on S3 then cost about one round trip. The caller's thread
        reads the first slot itself; every read finishes before anything is
        raised, so no read outlives the call.
        """

        def one(lock: SlotLock) -> list[Any]:
            context = RecallContext(boundary, lock.slot, lock.scope, operation, view, cancel=cancel)
            try:
                return _items(lock.slot, self._slot(lock.slot).provider.recall(context))
            except Exception as error:
                logger.warning(
                    "docmem: recall failed for slot %s at %s (%s); nothing applied",
                    lock.slot,
                    boundary,
                    _code(error),
                )
                raise

        if len(locks) < 2 or _in_pool.active:  # a provider recalling from a worker: inline
            return [(lock, one(lock)) for lock in locks]
        rest = [_pool().submit(contextvars.copy_context().run, one, lock) for lock in locks[1:]]
        try:
            first = one(locks[0])
        finally:
            concurrent.futures.wait(rest)
        return [(locks[0], first)] + [
            (lock, future.result()) for lock, future in zip(locks[1:], rest, strict=True)
        ]

    def _active_tools(
        self, scope_context: ScopeContext, operation: str, app_root: str, node: str
    ) -> dict[str, Tool]:
        """The tools of every slot that resolves for this context (for an unknown name's answer)."""
        tools: dict[str, Tool] = {}
        for slot in self.slots:
            try:
                lock = slot.lock(scope_context, app_root=app_root, node=node)
            except Exception:  # an unresolvable slot offers no tools; its own calls say why
                continue
            if lock is not None:
                tools.update(self._slot_tools(lock, operation, (), scope_context.cancel))
        return tools

    def _tools(
        self, context: TurnContext, locks: Sequence[SlotLock], messages: list[Any]
    ) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        for lock in locks:
            tools.update(
                self._slot_tools(lock, context.operation_id, messages, context.scope_context.cancel)
            )
        return tools

    def _slot_tools(
        self,
        lock: SlotLock,
        operation: str,
        messages: Sequence[Any],
        cancel: threading.Event | None,
    ) -> dict[str, Tool]:
        """One slot's tools for a locked scope; a provider that fails offers none (logged)."""
        tools_context = ToolsContext(lock.slot, lock.scope, operation, messages, cancel=cancel)
        try:
            return self._slot(lock.slot).qualified_tools(tools_context)
        except Exception as error:
            logger.warning(
                "docmem: tools of slot %s omitted this turn (%s)", lock.slot, _code(error)
            )
            return {}

    def _capture(
        self, boundary: CaptureBoundary, context: TurnContext, locks: Sequence[SlotLock]
    ) -> None:
        conversation, _ = split_recalls(context.history)
        for lock in locks:
            capture: Callable[[CaptureContext], Any] | None = getattr(
                self._slot(lock.slot).provider, "capture", None
            )
            if capture is None:
                continue
            try:
                capture(
                    CaptureContext(
                        boundary,
                        lock.slot,
                        lock.scope,
                        context.operation_id,
                        conversation,
                        cancel=context.scope_context.cancel,
                    )
                )
            except Exception as error:
                logger.warning(
                    "docmem: capture failed for slot %s at %s (%s)",
                    lock.slot,
                    boundary,
                    _code(error),
                )


_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


class _InPool(threading.local):
    active = False


#: Set in the pool's own threads, which never wait on the pool themselves.
_in_pool = _InPool()


def _mark_worker() -> None:
    _in_pool.active = True


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's worker threads for concurrent slot reads, started on first use.

    Each read runs in a copy of the caller's context (contextvars: a host's
    tracing context goes along), and a pool thread that reaches here again
    reads inline, so the pool never waits on itself.
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=16, thread_name_prefix="docmem-recall", initializer=_mark_worker
            )
        return _POOL


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's pool threads: it starts its own pool."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def checked_context(scope_context: object) -> ScopeContext | None:
    """``scope_context`` if it is a :class:`ScopeContext` or ``None``, else InvalidArgument.

    A host's resolver is checked where its answer enters docmem, so that a
    wrong type (a bare ``Principal``, say) is named there, not met as a missing
    attribute deep in a turn.
    """
    if scope_context is None or isinstance(scope_context, ScopeContext):
        return scope_context
    raise InvalidArgument(
        f"the scope context is a {type(scope_context).__name__}, not a docmem.ScopeContext "
        "or None; a resolver returns e.g. docmem.ScopeContext(principal=docmem.Principal(...))"
    )


def _cancelled() -> Cancelled:
    return Cancelled("the turn was cancelled; nothing was changed", outcome="not_committed")


def _check_cancel(context: TurnContext) -> None:
    """Refuse a boundary of an abandoned turn before any resolver, provider or store runs."""
    cancel = context.scope_context.cancel
    if cancel is not None and cancel.is_set():
        raise _cancelled()


def _items(slot: str, recalled: object) -> list[Any]:
    """A provider's recall answer as a list of items; ``None`` recalls nothing.

    A lone string or mapping would otherwise be taken apart into characters
    or keys, each then refused as an item that is not one, which hides what
    was wrong: refuse the answer itself, naming the shape it must have.
    """
    if recalled is None:
        return []
    if isinstance(recalled, (str, bytes, Mapping)) or not hasattr(recalled, "__iter__"):
        raise RecallBatchInvalid(
            f"recall batch rejected: slot {slot!r} returned a {type(recalled).__name__}; "
            "recall returns a list of items (or None)"
        )
    return list(recalled)


def _compaction_operation(context: TurnContext) -> str:
    """The operation id of one compaction: the turn's id and a digest of the compacted history.

    The turn's id alone would make a second compaction of the same turn a
    replay of the first, showing the memory as it was then. The compacted
    history tells two compactions apart and is the same when one compaction
    is delivered twice. A history whose ``repr`` cannot be taken gets a fresh
    id: recalling again is always safe, reusing a stale batch is not.
    """
    try:
        text = repr(list(context.history))
    except Exception:  # an exotic host message type; recall afresh
        text = str(uuid.uuid4())
    raw = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]
    digest = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
    return f"{context.operation_id}/compaction_completed/{digest}"


def _code(error: BaseException) -> str:
    """A content-free name for an error: its docmem code, else its type."""
    return error.code if isinstance(error, DocmemError) else type(error).__name__
