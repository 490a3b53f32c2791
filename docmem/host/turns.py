"""The turn lifecycle, for hosts that keep recalled records beside their own history.

Each boundary of a turn (its start, a compaction, its end, a cleared
context) is a call here, with a ledger per conversation: the one passed to
the call, else the session's in a bounded :class:`~docmem.LedgerCache`, else
the runtime's own (docs/design.md, section 6). A recall failure fails the
whole turn and applies nothing for any slot; a failing ``capture`` is a
diagnostic only.

A turn whose :attr:`ScopeContext.cancel` is set was abandoned by the host:
every boundary raises :class:`~docmem.Cancelled` before any resolver or
provider runs, and the turn's tool calls answer with an error result, so
nothing of an abandoned turn reaches the store. Every context handed to a
provider carries the same event, for a provider to stop mid-way.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgument
from ..provider.protocol import Boundary, CaptureBoundary, CaptureContext
from ..provider.threads import in_thread
from ..provider.tools import Tool, ToolResult, dispatch_call, error_result
from .recall import LedgerCache, RecallLedger, split_recalls
from .slot import ScopeContext, SlotLock
from .slot_set import SlotSet, cancelled, checked_context, error_code

__all__ = ["TurnContext", "TurnLifecycle", "TurnMemory"]

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
            return error_result(cancelled())
        return dispatch_call(
            self.tools, name, arguments, call_id=call_id, session_id=self.session_id
        )

    async def adispatch(
        self, name: str, arguments: object, *, call_id: str | None = None
    ) -> ToolResult:
        """Async :meth:`dispatch` (the tool runs in a worker thread)."""
        return await in_thread(self.dispatch, name, arguments, call_id=call_id)


class TurnLifecycle:
    """The boundaries of a turn over the slots, and where each conversation's ledger lives."""

    def __init__(
        self,
        slot_set: SlotSet,
        *,
        ledger: RecallLedger | None = None,
        sessions: LedgerCache | None = None,
    ) -> None:
        self._slot_set = slot_set
        self.ledger = ledger if ledger is not None else RecallLedger()
        self.sessions = sessions

    def _ledger(self, session_id: str | None, ledger: RecallLedger | None) -> RecallLedger:
        if ledger is not None:
            return ledger
        if self.sessions is not None and session_id is not None:
            return self.sessions.get(session_id)
        return self.ledger

    def lock(self, context: TurnContext) -> tuple[SlotLock, ...]:
        """Resolve every slot's scope, then namespace; disabled slots are left out."""
        if checked_context(context.scope_context) is None:
            raise InvalidArgument("a turn needs a docmem.ScopeContext, not None")
        return self._slot_set.locks(context.scope_context, context.app_root, context.node)

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
        cancel = context.scope_context.cancel
        batches = self._slot_set.recall(boundary, operation, view, locks, cancel)
        ledger.apply(operation, position, batches)

    def _tools(
        self, context: TurnContext, locks: Sequence[SlotLock], messages: list[Any]
    ) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        cancel = context.scope_context.cancel
        for lock in locks:
            tools.update(self._slot_set.tools(lock, context.operation_id, messages, cancel))
        return tools

    def _capture(
        self, boundary: CaptureBoundary, context: TurnContext, locks: Sequence[SlotLock]
    ) -> None:
        conversation, _ = split_recalls(context.history)
        for lock in locks:
            capture: Callable[[CaptureContext], Any] | None = getattr(
                self._slot_set.slot(lock.slot).provider, "capture", None
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
                    error_code(error),
                )


def _check_cancel(context: TurnContext) -> None:
    """Refuse a boundary of an abandoned turn before any resolver, provider or store runs."""
    cancel = context.scope_context.cancel
    if cancel is not None and cancel.is_set():
        raise cancelled()


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
