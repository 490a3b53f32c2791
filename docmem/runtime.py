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
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import DocmemError, InvalidArgument
from .formats import ToolDispatcher
from .recall import RecallLedger, split_recalls
from .slot import (
    Boundary,
    CaptureBoundary,
    CaptureContext,
    MemorySlot,
    RecallContext,
    ScopeContext,
    SlotLock,
    ToolsContext,
)
from .tools import Tool, ToolResult

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

    def dispatch(self, name: str, arguments: object, *, call_id: str | None = None) -> ToolResult:
        """Run a tool call of this turn by qualified name (see :class:`docmem.ToolDispatcher`)."""
        return ToolDispatcher(self.tools, session_id=self.session_id).dispatch(
            name, arguments, call_id=call_id
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
        locks = self.lock(context)
        if not self.ledger.committed(context.operation_id):  # a retried turn reuses its batch
            self._recall("turn_started", context.operation_id, len(context.history), context, locks)
        messages = self.ledger.project(context.history, locks)
        return TurnMemory(
            messages, locks, self._tools(context, locks, messages), context.session_id
        )

    def compaction_requested(self, context: TurnContext) -> list[Any]:
        """Run captures, then return the conversation to summarize: no memory record in it."""
        locks = self.lock(context)
        self._capture("compaction_requested", context, locks)
        conversation, _ = split_recalls(context.history)
        return conversation

    def compaction_completed(self, context: TurnContext) -> list[Any]:
        """Reattach memory to the compacted ``history`` at position 0 and recall afresh."""
        locks = self.lock(context)
        self.ledger.compacted()
        operation = f"{context.operation_id}/compaction_completed"
        if not self.ledger.committed(operation):
            self._recall("compaction_completed", operation, 0, context, locks)
        return self.ledger.project(context.history, locks)

    def turn_completed(self, context: TurnContext) -> None:
        """Run captures after a completed turn; their failures are diagnostics only."""
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

    def _provider(self, name: str) -> MemorySlot:
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
        for lock in locks:
            slot = self._provider(lock.slot)
            recall_context = RecallContext(boundary, lock.slot, lock.scope, operation, view)
            try:
                messages = slot.provider.recall(recall_context)
            except Exception as error:
                logger.warning(
                    "docmem: recall failed for slot %s at %s (%s); nothing applied",
                    lock.slot,
                    boundary,
                    _code(error),
                )
                raise
            batches.append((lock, list(messages or ())))
        self.ledger.apply(operation, position, batches)

    def _tools(
        self, context: TurnContext, locks: Sequence[SlotLock], messages: list[Any]
    ) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        for lock in locks:
            slot = self._provider(lock.slot)
            tools_context = ToolsContext(lock.slot, lock.scope, context.operation_id, messages)
            try:
                tools.update(slot.provider_tools(tools_context))
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
                self._provider(lock.slot).provider, "capture", None
            )
            if capture is None:
                continue
            try:
                capture(
                    CaptureContext(
                        boundary, lock.slot, lock.scope, context.operation_id, conversation
                    )
                )
            except Exception as error:
                logger.warning(
                    "docmem: capture failed for slot %s at %s (%s)",
                    lock.slot,
                    boundary,
                    _code(error),
                )


def _code(error: BaseException) -> str:
    """A content-free name for an error: its docmem code, else its type."""
    return error.code if isinstance(error, DocmemError) else type(error).__name__
