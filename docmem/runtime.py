"""The turn lifecycle a host framework calls: recall, tools, compaction, clear.

::

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

import asyncio
import base64
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import Cancelled, DocmemError, InvalidArgument, RecallBatchInvalid
from .provider import Boundary, CaptureBoundary, CaptureContext, RecallContext, ToolsContext
from .recall import RecallLedger, split_recalls
from .slot import MemorySlot, ScopeContext, SlotLock
from .tools import Tool, ToolResult, dispatch_call, error_result

__all__ = ["MemoryRuntime", "TurnContext", "TurnMemory"]

logger = logging.getLogger("docmem")


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


class MemoryRuntime:
    """The memory slots of one agent and the recall ledger of one conversation."""

    def __init__(self, slots: Sequence[MemorySlot], *, ledger: RecallLedger | None = None) -> None:
        names = [slot.name for slot in slots]
        if len(set(names)) != len(names):
            raise InvalidArgument("two memory slots share a name")
        self.slots = sorted(slots, key=lambda slot: slot.name)
        self.ledger = ledger if ledger is not None else RecallLedger()

    # -- boundaries ----------------------------------------------------------

    def lock(self, context: TurnContext) -> tuple[SlotLock, ...]:
        """Resolve every slot's scope, then namespace; disabled slots are left out."""
        locks = []
        for slot in self.slots:
            lock = slot.lock(context.scope_context, app_root=context.app_root, node=context.node)
            if lock is not None:
                locks.append(lock)
        return tuple(locks)

    def turn_started(self, context: TurnContext) -> TurnMemory:
        """Recall every active slot, apply the batch atomically, then resolve tools once."""
        _check_cancel(context)
        locks = self.lock(context)
        if not self.ledger.committed(context.operation_id):  # a retried turn reuses its batch
            self._recall("turn_started", context.operation_id, len(context.history), context, locks)
        messages = self.ledger.project(context.history, locks)
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

    def compaction_completed(self, context: TurnContext) -> list[Any]:
        """Reattach memory to the compacted ``history`` at position 0 and recall afresh.

        Every compaction recalls afresh, even the second of one turn: memory
        saved after the first must not show in its old version. Only the same
        compaction delivered again (same turn, same compacted history) is a
        replay, and reuses the batch its first delivery committed.
        """
        _check_cancel(context)
        locks = self.lock(context)
        self.ledger.compacted()
        operation = _compaction_operation(context)
        if not self.ledger.committed(operation):
            self._recall("compaction_completed", operation, 0, context, locks)
        return self.ledger.project(context.history, locks)

    def turn_completed(self, context: TurnContext) -> None:
        """Run captures after a completed turn; their failures are diagnostics only."""
        _check_cancel(context)
        self._capture("turn_completed", context, self.lock(context))

    def context_cleared(self) -> None:
        """The host cleared the conversation: the next turn recalls the store afresh."""
        self.ledger.clear()

    async def aturn_started(self, context: TurnContext) -> TurnMemory:
        """Async :meth:`turn_started` (providers run in a worker thread)."""
        return await asyncio.to_thread(self.turn_started, context)

    async def acompaction_requested(self, context: TurnContext) -> list[Any]:
        """Async :meth:`compaction_requested`."""
        return await asyncio.to_thread(self.compaction_requested, context)

    async def acompaction_completed(self, context: TurnContext) -> list[Any]:
        """Async :meth:`compaction_completed`."""
        return await asyncio.to_thread(self.compaction_completed, context)

    async def aturn_completed(self, context: TurnContext) -> None:
        """Async :meth:`turn_completed`."""
        await asyncio.to_thread(self.turn_completed, context)

    async def acontext_cleared(self) -> None:
        """Async :meth:`context_cleared`."""
        self.context_cleared()

    # -- the pieces ----------------------------------------------------------

    def _slot(self, name: str) -> MemorySlot:
        return next(slot for slot in self.slots if slot.name == name)

    def _recall(
        self,
        boundary: Boundary,
        operation: str,
        position: int,
        context: TurnContext,
        locks: Sequence[SlotLock],
    ) -> None:
        # Every slot recalls against the same pre-recall view; the batch commits at once.
        view = self.ledger.project(context.history, locks)
        batches: list[tuple[SlotLock, Sequence[Any]]] = []
        cancel = context.scope_context.cancel
        for lock in locks:
            slot = self._slot(lock.slot)
            recall_context = RecallContext(
                boundary, lock.slot, lock.scope, operation, view, cancel=cancel
            )
            try:
                messages = _items(lock.slot, slot.provider.recall(recall_context))
            except Exception as error:
                logger.warning(
                    "docmem: recall failed for slot %s at %s (%s); nothing applied",
                    lock.slot,
                    boundary,
                    _code(error),
                )
                raise
            batches.append((lock, messages))
        self.ledger.apply(operation, position, batches)

    def _tools(
        self, context: TurnContext, locks: Sequence[SlotLock], messages: list[Any]
    ) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        for lock in locks:
            slot = self._slot(lock.slot)
            tools_context = ToolsContext(
                lock.slot,
                lock.scope,
                context.operation_id,
                messages,
                cancel=context.scope_context.cancel,
            )
            try:
                tools.update(slot.qualified_tools(tools_context))
            except Exception as error:
                logger.warning(
                    "docmem: tools of slot %s omitted this turn (%s)", lock.slot, _code(error)
                )
        return tools

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
