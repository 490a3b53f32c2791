"""docmem as LangChain v1 ``create_agent`` middleware: memory tools and a fresh copy per model call.

::

    from docmem.integrations.langchain import DocmemMiddleware

    agent = create_agent(model, tools, context_schema=Ctx, checkpointer=saver,
                         middleware=[DocmemMiddleware(slots, scope_context=lambda ctx: ctx.scope)])
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}}, context=Ctx(...))

The scope comes from LangGraph's run context (``context=`` of ``invoke``,
``Runtime.context`` in hooks, ``ToolRuntime.context`` in tools), never from
the model: the tools hand the model's raw arguments to docmem, whose schema
check refuses anything but its own (an extra ``user_id`` is an error the
model reads).

By default the memory is injected into each model request only
(``wrap_model_call`` with ``request.override``): every earlier copy is
stripped (by the ``docmem:`` message id the adapter stamps, and by docmem's
marker for a copy that lost its id), one fresh copy per slot is placed, and
the checkpointed ``state["messages"]`` never holds one. ``persist=True``
keeps one copy per memory item in graph state instead, under a stable
message id that ``add_messages`` replaces in place: a copy is placed at
``position`` when it first appears, and stays there as the thread grows.

A tool call's mutation id is ``<thread_id>/<run>/<tool_call_id>``: ``<run>``
is an id the middleware draws when an ``invoke`` starts (``before_agent``)
and keeps in graph state, so a model that numbers its calls ``call_1`` in
every run never collides with its previous run, while the same call replayed
within a run, a run resumed from its checkpoint (``invoke(None, config)``,
after an interrupt) included, is recognised and has no second effect. The
``run_id`` of the ``RunnableConfig`` is used only when graph state holds no
such id: invoking a run again, even under the same ``run_id``, draws a new
id, and its tool calls are new mutations.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

from docmem.host.injection import (
    Position,
    ProjectedRecall,
    checked_position,
    is_recalled,
    message_text,
    place_recalls,
)
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext
from docmem.provider.tools import ToolResult, ToolSpec

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
    from langchain.agents.middleware.types import (
        ExtendedModelResponse,
        ModelResponse,
        PrivateStateAttr,
    )
    from langchain.tools import ToolRuntime
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        ToolMessage,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
    from langgraph.typing import ContextT
    from typing_extensions import NotRequired
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'docmem.integrations.langchain needs LangChain: pip install "agent-docmem[langchain]"'
    ) from error

__all__ = ["COPY_ID_PREFIX", "DocmemMiddleware", "DocmemState", "Position", "copy_id", "is_copy"]

logger = logging.getLogger("docmem")

#: The id prefix of every message that carries a recalled copy.
COPY_ID_PREFIX = "docmem:"
_UNRESOLVED = ToolResult("Memory is unavailable: its scope could not be resolved.", is_error=True)


class DocmemState(AgentState[Any]):
    """The agent state with the run id the memory tools scope their mutation ids by."""

    docmem_run: NotRequired[Annotated[str, PrivateStateAttr]]


def copy_id(recall: ProjectedRecall, number: int = 0) -> str:
    """The message id of a copy: ``docmem:<slot>:<item_key>`` (``#<number>`` when unkeyed)."""
    key = recall.item_key if recall.item_key is not None else f"#{number}"
    return f"{COPY_ID_PREFIX}{recall.slot}:{key}"


def is_copy(message: object) -> bool:
    """Whether a LangChain message is a recalled copy: by its ``docmem:`` id, or by its text.

    By text only a human message counts: a model that echoes the marker in its
    own answer (or a tool result that quotes it) stays in the conversation.
    """
    if isinstance(message, ProjectedRecall):
        return True
    message_id = getattr(message, "id", None)
    if isinstance(message_id, str) and message_id.startswith(COPY_ID_PREFIX):
        return True
    return getattr(message, "type", None) == "human" and is_recalled(message_text(message))


def _as_messages(placed: Sequence[AnyMessage | ProjectedRecall]) -> list[AnyMessage]:
    """``placed`` with each :class:`ProjectedRecall` as a ``HumanMessage`` stamped with its id."""
    messages: list[AnyMessage] = []
    number = 0
    for message in placed:
        if isinstance(message, ProjectedRecall):
            messages.append(HumanMessage(content=message.content, id=copy_id(message, number)))
            number += 1
        else:
            messages.append(message)
    return messages


def _persisted_update(
    messages: Sequence[AnyMessage], recalls: Sequence[ProjectedRecall], position: Position
) -> dict[str, Any] | None:
    """The state update that leaves exactly the current copies in ``messages``, or ``None``.

    A copy whose id is already there is replaced in place (``add_messages``)
    and any other copy removed; when a copy is new, the thread is rewritten
    once with every current copy at ``position``.
    """
    wanted = {copy_id(recall, number): recall.content for number, recall in enumerate(recalls)}
    copies = [message for message in messages if is_copy(message)]
    if set(wanted) - {message.id for message in copies}:
        conversation = [message for message in messages if not is_copy(message)]
        placed = place_recalls(conversation, recalls, position=position)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *_as_messages(placed)]}
    update: list[BaseMessage] = []
    for message in copies:
        if message.id in wanted:
            if message.content != wanted[message.id]:
                update.append(HumanMessage(content=wanted[message.id], id=message.id))
        elif isinstance(message.id, str):
            update.append(RemoveMessage(id=message.id))
    return {"messages": update} if update else None


def _session(runtime: ToolRuntime[Any, Any]) -> str | None:
    """The run-scoped session id of a tool call: ``<thread_id>/<run>``, parts that exist."""
    info = runtime.execution_info
    thread = info.thread_id if info is not None else None
    if thread is None:
        configurable = runtime.config.get("configurable") or {}
        found = configurable.get("thread_id")
        thread = str(found) if found is not None else None
    # The id before_agent drew is kept across an interrupt and its resume, where a
    # configured run_id (LangGraph Server gives each resume its own) is not.
    stored = runtime.state.get("docmem_run") if isinstance(runtime.state, dict) else None
    run = stored if isinstance(stored, str) else None
    if run is None and info is not None:
        run = info.run_id
    parts = [part for part in (thread, run) if part]
    return "/".join(parts) if parts else None


def _tool_message(result: ToolResult, name: str, call_id: str | None) -> ToolMessage | str:
    """A tool result as the model reads it; an error is ``status="error"``, never an exception."""
    if call_id is None:
        return result.text
    status = "error" if result.is_error else "success"
    return ToolMessage(content=result.text, tool_call_id=call_id, name=name, status=status)


class DocmemMiddleware(AgentMiddleware[DocmemState, ContextT, Any]):
    """docmem's memory slots in a LangChain ``create_agent`` agent.

    ``scope_context`` maps the run context (``invoke(..., context=...)``) to
    a :class:`docmem.ScopeContext`; ``None`` turns memory off for that run
    (no memory tools in the request, no recall, no store read), and a slot
    whose scope resolves to ``None`` shows no tools. ``position`` is where
    request-only copies go (:func:`docmem.place_recalls`); ``persist=True``
    keeps them in graph state instead. ``runtime`` is the one
    :class:`docmem.MemoryRuntime` serving every conversation (the middleware
    keeps no per-conversation state), ``tools`` the memory tools
    ``create_agent`` registers. A recall that fails (a store that is down)
    fails the model call with docmem's error rather than show an empty
    memory; a tool call never raises.
    """

    state_schema = DocmemState

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        scope_context: Callable[[ContextT], ScopeContext | None],
        persist: bool = False,
        position: Position = "after_system",
    ) -> None:
        checked_position(position)
        super().__init__()
        self.runtime = MemoryRuntime(slots)
        self.scope_context = scope_context
        self.persist = persist
        self.position: Position = position
        specs = self.runtime.tool_specs()
        self._names = frozenset(specs)
        self.tools: Sequence[BaseTool] = [self._tool(spec) for spec in specs.values()]

    # -- the memory tools -------------------------------------------------------

    def _resolve(self, context: Any) -> ScopeContext | ToolResult | None:
        try:
            return self.scope_context(context)
        except Exception as error:  # a resolver bug: the model reads an error, the run goes on
            logger.warning("docmem: scope_context failed in a tool call (%s)", type(error).__name__)
            return _UNRESOLVED

    def _tool(self, spec: ToolSpec) -> StructuredTool:
        name = spec.name

        def call(runtime: ToolRuntime[Any, Any], **arguments: Any) -> ToolMessage | str:
            scope = self._resolve(runtime.context)
            result = (
                scope
                if isinstance(scope, ToolResult)
                else self.runtime.dispatch(
                    scope,
                    name,
                    arguments,
                    call_id=runtime.tool_call_id,
                    session_id=_session(runtime),
                )
            )
            return _tool_message(result, name, runtime.tool_call_id)

        async def acall(runtime: ToolRuntime[Any, Any], **arguments: Any) -> ToolMessage | str:
            scope = self._resolve(runtime.context)
            result = (
                scope
                if isinstance(scope, ToolResult)
                else await self.runtime.adispatch(
                    scope,
                    name,
                    arguments,
                    call_id=runtime.tool_call_id,
                    session_id=_session(runtime),
                )
            )
            return _tool_message(result, name, runtime.tool_call_id)

        return StructuredTool.from_function(
            func=call,
            coroutine=acall,
            name=name,
            description=spec.description,
            args_schema=spec.json_schema(),
        )

    # -- hooks ------------------------------------------------------------------

    def before_agent(self, state: DocmemState, runtime: Runtime[ContextT]) -> dict[str, Any] | None:
        """Draw this run's id, which scopes the mutation ids of its tool calls."""
        return {"docmem_run": uuid.uuid4().hex}

    async def abefore_agent(
        self, state: DocmemState, runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_agent`."""
        return self.before_agent(state, runtime)

    def before_model(self, state: DocmemState, runtime: Runtime[ContextT]) -> dict[str, Any] | None:
        """With ``persist=True``: replace the copies in graph state by the current ones."""
        if not self.persist:
            return None
        messages = state["messages"]
        scope = self.scope_context(runtime.context)
        conversation = [message for message in messages if not is_copy(message)]
        recalls = self.runtime.recall(scope, messages=conversation)
        return _persisted_update(messages, recalls, self.position)

    async def abefore_model(
        self, state: DocmemState, runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        if not self.persist:
            return None
        messages = state["messages"]
        scope = self.scope_context(runtime.context)
        conversation = [message for message in messages if not is_copy(message)]
        recalls = await self.runtime.arecall(scope, messages=conversation)
        return _persisted_update(messages, recalls, self.position)

    def _visible_tools(
        self, request: ModelRequest[ContextT], scope: ScopeContext | None
    ) -> list[BaseTool | dict[str, Any]]:
        """The request's tools without the memory tools this scope does not have."""
        shown = self.runtime.tool_specs_for(scope)
        hidden = self._names - shown.keys()
        if not hidden:
            return request.tools
        return [tool for tool in request.tools if getattr(tool, "name", None) not in hidden]

    def _request(
        self,
        request: ModelRequest[ContextT],
        scope: ScopeContext | None,
        messages: list[AnyMessage],
    ) -> ModelRequest[ContextT]:
        return request.override(messages=messages, tools=self._visible_tools(request, scope))

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Send the model one current copy per memory item, and memory tools only when on."""
        scope = self.scope_context(request.runtime.context)
        if self.persist:
            return handler(self._request(request, scope, request.messages))
        conversation = [message for message in request.messages if not is_copy(message)]
        placed = self.runtime.prepare_model_call(conversation, scope, position=self.position)
        return handler(self._request(request, scope, _as_messages(placed)))

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        scope = self.scope_context(request.runtime.context)
        if self.persist:
            return await handler(self._request(request, scope, request.messages))
        conversation = [message for message in request.messages if not is_copy(message)]
        placed = await self.runtime.aprepare_model_call(conversation, scope, position=self.position)
        return await handler(self._request(request, scope, _as_messages(placed)))
