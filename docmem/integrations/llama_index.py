"""docmem in LlamaIndex workflow agents: a FunctionAgent with the memory tools and per-call memory.

::

    from docmem.integrations.llama_index import DocmemFunctionAgent, set_trusted

    agent = DocmemFunctionAgent(slots, scope_context=lambda user: scope_for(user),
                                llm=llm, tools=[...], system_prompt="...")
    ctx = Context(agent)
    await set_trusted(ctx, user_id)       # before the run: never shown to the model
    result = await agent.run("Hello", ctx=ctx, memory=chat_memory)

The agent is LlamaIndex's ``FunctionAgent`` and runs wherever one does, in an
``AgentWorkflow`` too. Workflow agents are **async only** (``agent.run(...)``
returns a handler to await; LlamaIndex has no synchronous entry point), and so
is this adapter.

**The scope.** :func:`set_trusted` puts the application's trusted value (the
authenticated user, a session: anything the workflow's serializer can store)
into the run's ``Context`` store under :data:`TRUSTED_KEY`, before the run
starts; ``scope_context`` maps it to a :class:`docmem.ScopeContext` at every
model call and tool call. LlamaIndex renders the store's ``"state"`` into the
user's message, model-visible, and never shows the model any other key, so
the scope comes from that key and from nothing the model says. A context
without the key, or with ``None`` under it (``agent.run(...)`` without a
``ctx``), has no memory: no tools offered, no recall, no store read. The value
lives in the store: a reused ``Context`` keeps it for its next run, and
``ctx.to_dict()`` carries it (a context restored from storage runs as the user
it was saved for).

**Request-only.** A FunctionAgent builds each model call's input in
``take_step`` as the history from its memory (``memory.aget()``, after the
system prompt) followed by the run's scratchpad, and stores only the model's
answers and the tool results. This agent's ``take_step`` drops every earlier
copy of a memory from that input (recognised by docmem's marker, text block
by text block, so a copy another process left in the stored history goes
too), reads each active slot afresh and adds one user message per document,
before handing the input to FunctionAgent's own step. That input is never
stored: the agent's memory and chat store never hold a copy, and a save made
in one model call shows in the next (LlamaIndex reads the memory again after
every tool result). The copies are model input like any other: the
``AgentInput`` events of the handler's stream and LlamaIndex's
instrumentation show them, as they show the whole prompt.

**Why not a memory block.** LlamaIndex's ``Memory`` can hold a
``BaseMemoryBlock`` whose text it renders into every ``aget()``: that is one
fresh copy per call, but a block only adds; it cannot remove a stale copy that
sits in the stored history, it sees the memory's ``session_id`` rather than
the run's trusted context, and it cannot offer or answer tools. docmem is an
agent step instead, and coexists with any blocks the application's ``Memory``
has (a block's system message stays ahead of the copies).

**Tools.** ``user__save_memory`` and its kin are ``FunctionTool`` objects
whose metadata returns docmem's JSON schema verbatim (LlamaIndex's own
``ToolMetadata`` keeps only ``type``, ``properties``, ``required`` and
``$defs``, which drops ``additionalProperties``), from
``get_parameters_dict()`` and from the ``fn_schema`` model that some LLM
integrations read instead. The arguments
reach docmem as the model sent them, so an extra ``user_id`` gets docmem's
"Invalid call ..." sentence. Results and errors (memory full, a credential,
bad arguments, a store that is down) reach the model as docmem's sentence,
errors with ``is_error``; a tool call never ends the run. A failed recall
fails the model call with docmem's error: memory is never silently empty.

**Mutation ids.** LlamaIndex hands a tool its arguments, not the model's
call id. This agent's step adds, to each docmem tool call it returns, one
argument the model never sees (``__docmem_call__``: the ``tool_id`` and the
run identity); the tool takes it out before docmem sees the arguments, and
the model's own message keeps them as sent. The handler's ``ToolCall`` and
``ToolCallResult`` events show it among the ``tool_kwargs``. A mutation id is
``<agent name>/<run>/<call id>``, where ``<run>`` is drawn at the first model
call of each ``agent.run(...)`` and kept in the ``Context`` store: a model
that numbers its calls ``call_1`` in every run makes a new mutation each
run, while the same call id within a run is one entry (a tool call that
LlamaIndex runs again from its stored event, in a run resumed from its
serialized ``Context``, carries the same id and run).

**Telemetry.** LlamaIndex's own instrumentation (dispatcher spans and
events) is not OpenTelemetry unless an extra package bridges it. docmem's
spans (``docmem.recall`` per model call, ``docmem.save`` per tool call) are
children of whatever OpenTelemetry span is current where ``agent.run(...)``
was called: the workflow's tasks inherit the caller's context.
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

try:
    from llama_index.core.agent.workflow import AgentOutput, FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
    from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, PrivateAttr
    from llama_index.core.llms import LLM
    from llama_index.core.memory import BaseMemory
    from llama_index.core.tools import (
        AsyncBaseTool,
        BaseTool,
        FunctionTool,
        ToolMetadata,
        ToolOutput,
        ToolSelection,
    )
    from llama_index.core.workflow import Context
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.llama_index needs LlamaIndex: pip install "agent-docmem[llama-index]"'
    ) from error

if TYPE_CHECKING:  # the step's ctx: a workflow Context (a protocol of it since 0.14.x)
    from llama_index.core.agent.workflow.agent_context import AgentContext

from docmem.errors import InvalidArgument
from docmem.host import injection
from docmem.host.injection import ProjectedRecall, is_recalled, place_recalls
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext
from docmem.provider.tools import ToolSpec

__all__ = ["TRUSTED_KEY", "DocmemFunctionAgent", "Position", "set_trusted"]

#: Where among the messages the copies go (as :func:`docmem.place_recalls` places them).
Position = injection.Position

#: The ``Context`` store key of the application's trusted value (never shown to the model).
TRUSTED_KEY = "docmem_trusted"
#: The ``Context`` store key of the run identity mutation ids are built from.
_RUN_KEY = "docmem_run"
#: FunctionAgent's count of model calls in the current run, reset as each run starts.
_ITERATIONS_KEY = "num_iterations"
#: The tool argument this agent's step adds to a docmem tool call: call id and run.
_CALL = "__docmem_call__"
#: The tool argument LlamaIndex passes the run's ``Context`` in.
_CTX = "__docmem_ctx__"

_STATEFUL = (
    "an LLM with track_previous_responses keeps every earlier request on the server, "
    "copies of memory included: docmem cannot keep one current copy there; turn it off"
)

logger = logging.getLogger("docmem")


async def set_trusted(ctx: Context, value: Any) -> None:
    """Give the run of ``ctx`` the application's trusted ``value``, before the run starts.

    ``value`` is what ``scope_context`` receives (``None``: memory is off).
    It sits in the ``Context`` store under :data:`TRUSTED_KEY`, which
    LlamaIndex never shows the model (unlike ``"state"``), so it must be a
    value the workflow's serializer can store: a string, a dict, a pydantic
    model. A running context is refused: its first model call may already
    have run without it.
    """
    if not isinstance(ctx, Context):
        raise InvalidArgument(f"set_trusted needs a workflow Context, not {type(ctx).__name__}")
    if ctx.is_running:
        raise InvalidArgument("set_trusted needs a Context whose run has not started")
    await ctx.store.set(TRUSTED_KEY, value)


class _Memory:
    """What the agent and its tools share: the runtime, the resolver, the placement."""

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        scope_context: Callable[[Any], ScopeContext | None],
        position: Position,
    ) -> None:
        self.runtime = MemoryRuntime(slots)
        self.scope_context = scope_context
        self.position: Position = injection.checked_position(position)
        self.specs = self.runtime.tool_specs()

    async def scope(self, ctx: AgentContext) -> ScopeContext | None:
        """The run's scope: its trusted value through the resolver; ``None`` without one."""
        value = await ctx.store.get(TRUSTED_KEY, default=None)
        return None if value is None else self.scope_context(value)


class DocmemFunctionAgent(FunctionAgent):
    """A ``FunctionAgent`` with docmem's slots: the memory tools and memory in every model call.

    ``slots`` are docmem's memory slots (the agent holds one
    :class:`docmem.MemoryRuntime` of them, ``docmem_runtime``); every other keyword
    is ``FunctionAgent``'s (``llm``, ``tools``, ``system_prompt``, ``name``,
    ...). The memory tools join ``tools``; a tool of one of their names is
    refused. The agent keeps no per-run state, so one agent serves
    concurrent runs, each with its own ``Context``.

    ``scope_context`` maps the value :func:`set_trusted` put into the run's
    ``Context`` to a :class:`docmem.ScopeContext` (``None``: memory is off
    for that run: the memory tools are left out of every model call, a call
    to one anyway is answered as an unknown tool, and nothing is read). A
    resolver that raises fails the model call: that is a bug in the host,
    never hidden.

    ``position`` says where the copies go: ``"after_system"`` (the default:
    after the system prompt and any system message of the memory's blocks,
    before the conversation, so the prompt prefix stays cache-stable while
    memory is unchanged) or ``"before_last_user"`` (just before the newest
    user message; tool results are role ``tool``, so a call and its result
    are never split). Each copy is a user message of its own. There is no
    instructions placement: every model call sends the whole conversation
    from the agent's memory, the system prompt included, so nothing is kept
    server-side, except with an LLM that chains its requests
    (``OpenAIResponses(track_previous_responses=True)``), where no placement
    keeps a copy off the server: such an LLM is refused.

    Model calls LlamaIndex makes outside the agent's step
    (``early_stopping_method="generate"``, the structured answer of
    ``output_cls``) carry no memory.
    """

    _docmem: _Memory = PrivateAttr()

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        scope_context: Callable[[Any], ScopeContext | None],
        position: Position = "after_system",
        **kwargs: Any,
    ) -> None:
        if not callable(scope_context):
            raise InvalidArgument("scope_context must be a callable of the trusted value")
        memory = _Memory(slots, scope_context, position)
        mine = [_DocmemTool(memory, spec) for spec in memory.specs.values()]
        theirs = list(kwargs.pop("tools", None) or [])
        super().__init__(tools=[*theirs, *mine], **kwargs)
        taken = {
            tool.metadata.name
            for tool in self.tools or []
            if isinstance(tool, BaseTool) and not isinstance(tool, _DocmemTool)
        }
        clash = sorted(name for name in memory.specs if name in taken)
        if clash:
            raise InvalidArgument(f"the agent already has a tool named {clash[0]}")
        _refuse_stateful(self.llm)
        self._docmem = memory

    @property
    def docmem_runtime(self) -> MemoryRuntime:
        """This agent's :class:`docmem.MemoryRuntime` (``runtime`` is the workflow's own)."""
        return self._docmem.runtime

    async def take_step(
        self,
        ctx: AgentContext,
        llm_input: list[ChatMessage],
        tools: Sequence[AsyncBaseTool],
        memory: BaseMemory,
    ) -> AgentOutput:
        """One model call with one fresh copy per document; tool calls carry the call id.

        Only the memory tools of the slots active for the scope are offered.
        A store that cannot be read fails the call (a :class:`docmem.DocmemError`).
        """
        _refuse_stateful(self.llm)
        docmem = self._docmem
        scope = await docmem.scope(ctx)
        run = await _run_identity(ctx)
        shown = docmem.runtime.tool_specs_for(scope)
        offered = [
            tool for tool in tools if not _is_mine(tool, docmem) or tool.metadata.name in shown
        ]
        conversation = _strip(llm_input)
        recalls = await docmem.runtime.arecall(scope, messages=conversation)
        placed = place_recalls(conversation, recalls, position=docmem.position, role_of=_role)
        output = await super().take_step(ctx, [_message(item) for item in placed], offered, memory)
        output.tool_calls = [
            _with_call(call, f"{self.name}/{run}") if call.tool_name in docmem.specs else call
            for call in output.tool_calls
        ]
        return output


class _Arguments(BaseModel):
    """The ``fn_schema`` of a docmem tool: any arguments, described by docmem's JSON schema."""

    model_config = ConfigDict(extra="allow")


def _arguments_model(spec: ToolSpec) -> type[BaseModel]:
    """A model whose ``model_json_schema()`` is docmem's schema, for LLMs that read that.

    (Some LLM integrations build their tool declaration from ``fn_schema``
    rather than from ``get_parameters_dict()``.)
    """
    schema = spec.json_schema()

    def model_json_schema(cls: type[BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(schema)

    namespace = {"model_json_schema": classmethod(model_json_schema), "__module__": __name__}
    model: type[BaseModel] = type(spec.name, (_Arguments,), namespace)
    return model


@dataclass
class _Metadata(ToolMetadata):
    """``ToolMetadata`` that hands out docmem's schema verbatim (the base one drops keys)."""

    json_schema: dict[str, Any] = field(default_factory=dict)

    def get_parameters_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.json_schema)


class _DocmemTool(FunctionTool):
    """One docmem tool: its schema as docmem wrote it, its arguments passed on as sent."""

    def __init__(self, memory: _Memory, spec: ToolSpec) -> None:
        metadata = _Metadata(
            description=spec.description,
            name=spec.name,
            fn_schema=_arguments_model(spec),
            json_schema=spec.json_schema(),
        )
        super().__init__(async_fn=self.acall, metadata=metadata)
        # LlamaIndex passes a FunctionTool the run's Context when its function's signature
        # asks for one, by annotation; this tool asks under a name a model is unlikely to send
        # (one it does send is kept aside by the agent's step, so docmem still sees it).
        self.requires_context = True
        self.ctx_param_name = _CTX
        self.memory = memory
        self.spec = spec

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Refused: the tool runs inside a workflow agent's (asynchronous) run."""
        return self._output(kwargs, "docmem's memory tools run only inside an agent's run.", True)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """docmem's answer as the tool output; never raises."""
        ctx = kwargs.pop(_CTX, None)
        hidden = kwargs.pop(_CALL, None)
        call: Mapping[str, Any] = hidden if isinstance(hidden, Mapping) else {}
        arguments = {**kwargs, **call.get("shadowed", {})}
        try:
            scope = await self.memory.scope(ctx) if isinstance(ctx, Context) else None
        except Exception as error:  # a resolver bug: the run goes on, the model is told
            logger.warning(
                "docmem: the scope of a tool call could not be resolved (%s)",
                type(error).__name__,
            )
            return self._output(
                arguments, "Memory is unavailable: its scope could not be resolved.", True
            )
        call_id, run = call.get("id"), call.get("run")
        result = await self.memory.runtime.adispatch(
            scope,
            self.spec.name,
            arguments,
            call_id=call_id if isinstance(call_id, str) and call_id else None,
            session_id=run if isinstance(run, str) else None,
        )
        return self._output(arguments, result.text, result.is_error)

    def _output(self, arguments: dict[str, Any], text: str, is_error: bool) -> ToolOutput:
        return ToolOutput(
            tool_name=self.spec.name,
            content=text,
            raw_input={"kwargs": arguments},
            raw_output=text,
            is_error=is_error,
        )


def _is_mine(tool: AsyncBaseTool, memory: _Memory) -> bool:
    return isinstance(tool, _DocmemTool) and tool.memory is memory


def _refuse_stateful(llm: LLM) -> None:
    if getattr(llm, "track_previous_responses", False) is True:
        raise InvalidArgument(_STATEFUL)


async def _run_identity(ctx: AgentContext) -> str:
    """The run's identity: drawn at its first model call, then read from the store.

    FunctionAgent and AgentWorkflow set the store's model-call count to 0 as
    each run starts; a run resumed from a serialized ``Context`` keeps both
    the count and the identity.
    """
    if await ctx.store.get(_ITERATIONS_KEY, default=0) != 0:
        run = await ctx.store.get(_RUN_KEY, default=None)
        if isinstance(run, str):
            return run
    run = uuid.uuid4().hex
    await ctx.store.set(_RUN_KEY, run)
    return run


def _with_call(call: ToolSelection, run: str) -> ToolSelection:
    """``call`` with its call id and run added as an argument the tool takes out again.

    A new selection with a new arguments dict: the model's message, which the
    scratchpad stores, keeps the arguments it sent. An argument the model sent
    under one of this adapter's own names is kept aside and given back.
    """
    sent = dict(call.tool_kwargs)
    hidden: dict[str, Any] = {"id": call.tool_id, "run": run}
    shadowed = {name: sent.pop(name) for name in (_CALL, _CTX) if name in sent}
    if shadowed:
        hidden["shadowed"] = shadowed
    return ToolSelection(
        tool_id=call.tool_id, tool_name=call.tool_name, tool_kwargs={**sent, _CALL: hidden}
    )


def _is_copy(block: object) -> bool:
    return isinstance(block, TextBlock) and is_recalled(block.text)


def _strip(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` without copies, text block by text block, in user messages only.

    A changed message is a new one (the stored history is not touched); one
    left without blocks is dropped.
    """
    kept: list[ChatMessage] = []
    for message in messages:
        if message.role == MessageRole.USER and any(_is_copy(b) for b in message.blocks):
            blocks = [block for block in message.blocks if not _is_copy(block)]
            if not blocks:
                continue
            message = message.model_copy(update={"blocks": blocks})
        kept.append(message)
    return kept


def _role(message: object) -> str | None:
    if isinstance(message, ProjectedRecall):
        return message.role
    assert isinstance(message, ChatMessage)
    return message.role.value


def _message(item: ChatMessage | ProjectedRecall) -> ChatMessage:
    if isinstance(item, ProjectedRecall):
        return ChatMessage(role=MessageRole.USER, content=item.content)
    return item
