"""docmem in the OpenAI Agents SDK: memory tools, and memory in every model request only.

::

    from docmem.integrations.openai_agents import DocmemMemory

    memory = DocmemMemory(slots, scope_context=lambda ctx: ctx.scope)
    agent = Agent(name="support", instructions="...", tools=[*memory.tools()])
    result = await Runner.run(agent, text, context=ctx, run_config=memory.run_config())

``ctx`` is the application's run context (what ``Runner.run(context=...)``
receives, ``RunContextWrapper.context`` inside the SDK): the SDK never sends
it to the model, so the scope comes from it and from nothing the model says.

Before every model call, the ``call_model_input_filter`` of
:meth:`DocmemMemory.run_config` drops every earlier copy of a memory from the
request (recognised by docmem's marker, so a copy another process persisted
is dropped too), reads each active slot afresh and adds one user message per
document. The filter works on the SDK's copy of the request, so
``result.to_input_list()`` and a session's items never hold a copy, and a
save made in one model call shows in the next.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar

try:
    from agents import FunctionTool, RunConfig, RunContextWrapper
    from agents.agent import AgentBase
    from agents.agent_tool_state import get_agent_tool_state_scope
    from agents.items import TResponseInputItem
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "docmem.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "agent-docmem[openai-agents]"'
    ) from error

from docmem.errors import InvalidArgument
from docmem.host import injection
from docmem.host.injection import ProjectedRecall, is_recalled, message_text
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext
from docmem.provider.tools import ToolSpec

__all__ = ["DocmemMemory", "Placement", "Position"]

ContextT = TypeVar("ContextT")

#: Where the documents go: user messages in ``input``, or the end of ``instructions``.
Placement = Literal["input", "instructions"]
#: Where in ``input`` the copies go (as :func:`docmem.place_recalls` places them).
Position = injection.Position

_MESSAGE_TYPES = (None, "message")


class DocmemMemory(Generic[ContextT]):
    """docmem's slots for OpenAI Agents SDK runs: :meth:`tools` and :meth:`run_config`.

    Build one per application and share it between agents and runs,
    concurrent ones included; ``runtime`` is the one
    :class:`docmem.MemoryRuntime` it builds from ``slots``.

    ``scope_context`` maps the run context to a :class:`docmem.ScopeContext`
    (``None``: memory is off for that run: no tools, no recall, no store
    read). A resolver that raises fails the run: that is a bug in the host,
    never hidden.

    ``session_id`` names the conversation (a thread or session id) for the
    mutation ids of tool calls. Each id is ``<conversation>/<run>/<call id>``,
    where ``<run>`` is the SDK's own identity of one ``Runner.run``: a fresh
    uuid per run, kept while an interrupted run resumes from its ``RunState``
    in the same process (a state restored from JSON gets a new one). So a
    model that numbers its calls ``call_1`` in every run makes a new mutation
    each run, while the same call within one run is one entry. Without
    ``session_id`` the ids are ``<run>/<call id>``. The SDK keeps that
    identity in an attribute of its own; should a version stop doing so,
    every call gets a fresh mutation id (no replay is recognised, and no two
    calls are ever confused).

    ``placement="input"`` (the default) adds one user message per document
    to the request, at ``position``: ``"after_system"`` (before the
    conversation: the prefix stays cache-stable while memory is unchanged) or
    ``"before_last_user"`` (just before the newest user message).

    ``placement="instructions"`` appends the documents to the instructions
    instead. Use it when the server keeps the conversation
    (``previous_response_id``, ``auto_previous_response_id``,
    ``conversation_id``, an ``OpenAIConversationsSession``): there each
    request sends only the new items and the server stores them, so a copy in
    ``input`` would be stored with every call and could never be replaced,
    while the instructions are sent afresh with every request and not carried
    over. The price: memory then speaks with the instructions' authority
    rather than as a user message (it is what users asked to remember, now
    beside the developer's prompt), and any change to memory changes the
    instructions, so the provider's prompt cache misses from the very start
    of the request. ``position`` does not apply there.

    The documents are model input like any other: traces the SDK records with
    sensitive data on include them.
    """

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        scope_context: Callable[[ContextT], ScopeContext | None],
        session_id: Callable[[ContextT], str | None] | None = None,
        placement: Placement = "input",
        position: Position = "after_system",
    ) -> None:
        if placement not in ("input", "instructions"):
            raise InvalidArgument("placement must be 'input' or 'instructions'")
        if not callable(scope_context):
            raise InvalidArgument("scope_context must be a callable of the run context")
        self.runtime = MemoryRuntime(slots)
        self._scope_context = scope_context
        self._session_id = session_id
        self._placement: Placement = placement
        self._position: Position = injection.checked_position(position)
        self._specs = self.runtime.tool_specs()

    def __repr__(self) -> str:
        return f"DocmemMemory(tools={sorted(self._specs)!r}, placement={self._placement!r})"

    # -- tools ---------------------------------------------------------------

    def tools(self) -> list[FunctionTool]:
        """One ``FunctionTool`` per docmem tool, shown only to runs whose scope enables it.

        The model's raw JSON arguments go to docmem, whose own schema check
        refuses extra keys (the SDK's local check does not). Every result,
        refusals and failures included, is docmem's sentence for the model:
        a tool call never ends the run.
        """
        return [self._tool(spec) for spec in self._specs.values()]

    def _tool(self, spec: ToolSpec) -> FunctionTool:
        name = spec.name

        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            result = await self.runtime.adispatch(
                self._scope(context.context),
                name,
                arguments,
                call_id=context.tool_call_id or None,
                session_id=self._run_session(context),
            )
            return result.text

        def enabled(context: RunContextWrapper[Any], agent: AgentBase[Any]) -> bool:
            # An unresolvable slot keeps its tools: a call then says why (no I/O here).
            return name in self.runtime.tool_specs_for(self._scope(context.context))

        return FunctionTool(
            name=name,
            description=spec.description,
            params_json_schema=spec.json_schema(),
            on_invoke_tool=invoke,
            strict_json_schema=True,
            is_enabled=enabled,
        )

    def _scope(self, context: Any) -> ScopeContext | None:
        return self._scope_context(context)

    def _run_session(self, context: ToolContext[Any]) -> str | None:
        """``<conversation>/<run>``, or ``None`` (a fresh mutation id) without a run identity."""
        run = get_agent_tool_state_scope(context)
        if not run:
            return None
        conversation = self._session_id(context.context) if self._session_id else None
        return f"{conversation}/{run}" if conversation else run

    # -- the model input ------------------------------------------------------

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """``base`` (or a default ``RunConfig``) with docmem's model-input filter.

        A filter ``base`` already has runs first, and docmem's on its result.
        ``base`` itself is not changed.
        """
        config = base if base is not None else RunConfig()
        host = config.call_model_input_filter
        if host is None or host == self.input_filter:
            return dataclasses.replace(config, call_model_input_filter=self.input_filter)

        async def composed(data: CallModelData[Any]) -> ModelInputData:
            updated = host(data)
            if inspect.isawaitable(updated):
                updated = await updated
            return await self.input_filter(dataclasses.replace(data, model_data=updated))

        return dataclasses.replace(config, call_model_input_filter=composed)

    async def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The request with every earlier copy dropped and each document recalled afresh.

        A ``call_model_input_filter`` for a host that composes its own; it
        returns a new ``ModelInputData`` and changes nothing it was given.
        A store that cannot be read fails the model call (a
        :class:`docmem.DocmemError`): never a request without its memory.
        """
        scope = self._scope(data.context)
        model = data.model_data
        if self._placement == "input":
            prepared = await self.runtime.aprepare_model_call(
                model.input,
                scope,
                position=self._position,
                text_of=_item_text,
                role_of=_item_role,
            )
            return ModelInputData(
                input=[_input_item(item) for item in prepared], instructions=model.instructions
            )
        conversation = [item for item in model.input if not is_recalled(_item_text(item))]
        recalls = await self.runtime.arecall(scope, messages=conversation)
        return ModelInputData(
            input=conversation, instructions=_with_documents(model.instructions, recalls)
        )


def _field(item: object, name: str) -> object:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _item_role(item: object) -> str | None:
    """The role of an input item; ``None`` for tool calls, their outputs and the like."""
    if isinstance(item, ProjectedRecall):
        return item.role
    role = _field(item, "role")
    return role if isinstance(role, str) and _field(item, "type") in _MESSAGE_TYPES else None


def _item_text(item: object) -> str | None:
    """The text of a user message (a string, or ``input_text`` parts); ``None`` otherwise.

    Only user messages can be copies: an assistant message or a tool output
    that happens to begin with the marker stays in the request.
    """
    if isinstance(item, ProjectedRecall):
        return item.content
    if _item_role(item) != "user":
        return None
    return message_text(item)


def _input_item(item: TResponseInputItem | ProjectedRecall) -> TResponseInputItem:
    """A copy as a plain user message (no key of docmem's own: items go to the API as-is)."""
    if isinstance(item, ProjectedRecall):
        return {"role": "user", "content": item.content}
    return item


def _with_documents(instructions: str | None, recalls: Sequence[ProjectedRecall]) -> str | None:
    """The instructions with each document appended, separated by blank lines."""
    parts = [instructions] if instructions else []
    parts.extend(recall.content for recall in recalls)
    return "\n\n".join(parts) if parts else instructions
