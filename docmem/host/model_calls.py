"""Memory for frameworks that call the model several times a turn and keep their own history.

They need no ledger: they build their tool objects once from the specs, run
each tool call through :meth:`ModelCallMemory.dispatch`, and put a fresh copy
of memory into each model request (docs/design.md, section 6.1). Nothing here
is kept between calls. A tool call builds only the tool that was called: the
model calls one tool at a time, and a turn's whole tool set would be built,
schemas copied, for nothing.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import DocmemError, InvalidArgument
from ..provider.threads import in_thread
from ..provider.tools import Tool, ToolResult, ToolSpec, dispatch_call, error_result
from .injection import Position, ProjectedRecall, message_role, place_recalls, user_text
from .recall import projected_batch, split_recalls
from .slot import ScopeContext
from .slot_set import SlotSet, cancelled, checked_context

__all__ = ["ModelCallMemory"]

logger = logging.getLogger("docmem")

_M = TypeVar("_M")


class ModelCallMemory:
    """Tool specs, dispatch of one tool call, and a fresh recall per model request."""

    def __init__(self, slot_set: SlotSet) -> None:
        self._slot_set = slot_set

    def tool_specs(self) -> dict[str, ToolSpec]:
        """Every slot's tools as the model sees them (qualified, described). No scope, no I/O.

        A slot is listed whatever its scope resolves to in a given context;
        :meth:`dispatch` answers a disabled slot's tool as unknown.
        """
        specs: dict[str, ToolSpec] = {}
        for slot in self._slot_set.slots:
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
        for slot in self._slot_set.slots:
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
            return error_result(cancelled())
        root = app_root if app_root is not None else os.getcwd()
        operation = f"dispatch/{call_id}" if call_id else "dispatch"
        if scope_context is None:
            return dispatch_call({}, name, arguments)
        tools = self._called_tool(scope_context, name, operation, root, node)
        if isinstance(tools, ToolResult):
            return tools
        if not tools:  # name the tools it does have
            tools = self._slot_set.active_tools(scope_context, operation, root, node)
        return dispatch_call(tools, name, arguments, call_id=call_id, session_id=session_id)

    def _called_tool(
        self, scope_context: ScopeContext, name: object, operation: str, app_root: str, node: str
    ) -> dict[str, Tool] | ToolResult:
        """The called tool alone, by name; ``{}`` when nothing answers to the name.

        An error result when the slot's scope cannot be resolved: the model
        is told why, not that the tool does not exist.
        """
        if not isinstance(name, str):
            return {}
        slot = self._slot_set.find(name.partition("__")[0])
        if slot is None:
            return {}
        try:
            lock = slot.lock(scope_context, app_root=app_root, node=node)
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
        if lock is None:
            return {}
        tool = self._slot_set.tool(lock, name, operation, scope_context.cancel)
        return {} if tool is None else {name: tool}

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
            raise cancelled()
        root = app_root if app_root is not None else os.getcwd()
        locks = self._slot_set.locks(scope_context, root, node)
        operation = f"model_call/{uuid.uuid4()}"
        batches = self._slot_set.recall(
            "model_call", operation, messages, locks, scope_context.cancel
        )
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
