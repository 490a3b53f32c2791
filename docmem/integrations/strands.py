"""docmem in Strands Agents: one plugin with the memory tools and memory in every model call.

::

    from docmem.integrations.strands import DocmemPlugin

    memory = DocmemPlugin(slots, scope_context=lambda state: state["ctx"].scope)
    agent = Agent(model, plugins=[memory])
    agent("Hello", invocation_state={"ctx": ctx})      # or await agent.invoke_async(...)

``invocation_state`` is what the application passes to ``agent(...)``,
``invoke_async``, ``stream_async`` or a multi-agent ``Graph``/``Swarm``:
Strands never sends it to the model, so the scope comes from it and from
nothing the model says.

Before every model call, an ``InvokeModelStage.Input`` middleware drops every
earlier copy of a memory from the call's messages, reads each active slot
afresh and folds one text block per document into a user message. Strands
hands the middleware a deep copy of ``agent.messages`` and sends what it
returns without storing it, so ``agent.messages``, a session manager's files
and the conversation manager never hold a copy, and a save made in one model
call shows in the next, the call right after the tool result included.
Copies are content blocks, not messages of their own: Strands keeps the
Bedrock Converse shape, where user and assistant turns alternate and a
``toolResult`` opens its turn. So copies are also dropped block by block, by
docmem's marker (:func:`docmem.is_recalled`): a copy another process
persisted inside a user message goes, the user's own blocks stay.

Strands logs every tool call it runs, input included, at DEBUG
(``strands.tools.executors._executor``). The plugin adds a filter to that
logger which blanks the input of docmem's own tool calls, so no memory text
reaches a log; other tools' records are left as they are. Strands' traces
record model input and tool input as its tracer is configured, copies of
memory included, like any other prompt text.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

try:
    from strands.agent.agent import Agent
    from strands.hooks import BeforeInvocationEvent
    from strands.middleware import InvokeModelContext, InvokeModelStage
    from strands.plugins import Plugin
    from strands.tools.tools import PythonAgentTool
    from strands.types.content import (
        ContentBlock,
        Message,
        Messages,
        SystemContentBlock,
        SystemPrompt,
    )
    from strands.types.tools import ToolResult, ToolSpec, ToolUse
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.strands needs Strands Agents: pip install "agent-docmem[strands]"'
    ) from error

from docmem.errors import InvalidArgument
from docmem.host import injection
from docmem.host.injection import ProjectedRecall, is_recalled
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext
from docmem.provider import tools

__all__ = ["DocmemPlugin", "Placement", "Position"]

#: Where the documents go: text blocks in a user message, or the end of the system prompt.
Placement = Literal["messages", "instructions"]
#: Where among the messages the copies go (as :func:`docmem.place_recalls` places them).
Position = injection.Position

#: What the application's resolver receives: the invocation's ``invocation_state``.
InvocationState = dict[str, Any]

_STATEFUL = (
    "placement='messages' cannot be used with a stateful model: the server would keep "
    "every copy; use placement='instructions'"
)


#: The logger Strands announces each tool call on, its input in the record's arguments.
_EXECUTOR_LOGGER = "strands.tools.executors._executor"


class _RedactMemoryInput(logging.Filter):
    """Blanks the input of docmem's tool calls in Strands' log records: it is memory text."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        # ``logger.debug("... %s", tool_use)``: logging keeps a lone mapping as the args.
        tool_use = record.args
        if isinstance(tool_use, Mapping) and tool_use.get("name") in self.names:
            record.args = {**tool_use, "input": "<docmem: not logged>"}
        return True


_REDACT = _RedactMemoryInput()


class _Run:
    """The run identity of one agent: drawn afresh when each invocation starts."""

    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id: str | None = None

    def start(self, event: BeforeInvocationEvent) -> None:
        self.id = uuid.uuid4().hex


class DocmemPlugin(Plugin):
    """docmem's slots as a Strands plugin: the memory tools and per-call recall.

    Build one per application (it holds one :class:`docmem.MemoryRuntime`,
    ``runtime``) and pass it to every agent that should have memory,
    ``Agent(model, plugins=[memory])``, concurrent invocations included: it
    keeps nothing but each agent's run identity. Registering it refuses an
    agent that already has a tool of a memory tool's name.

    ``scope_context`` maps the invocation's ``invocation_state`` to a
    :class:`docmem.ScopeContext` (``None``: memory is off for that
    invocation: the memory tools are left out of every model call, a call to
    one anyway is answered as an unknown tool, and nothing is read). Strands
    hands tools a copy of ``invocation_state``; the resolver only reads it.
    A resolver that raises fails the model call: that is a bug in the host,
    never hidden.

    ``placement="messages"`` (the default) folds one text block per document
    into a user message, at ``position``: ``"after_system"`` (into the first
    message, ahead of the user's own blocks: the prompt prefix stays
    cache-stable while memory is unchanged) or ``"before_last_user"`` (ahead
    of the newest user ask that is not a tool result). A copy never goes
    before a ``toolResult`` block, and when it ends up as the trailing blocks
    of the last user message (a conversation with no plain user ask), the
    call's ``dynamic_trailing_blocks`` counts it, so providers keep their
    prompt-cache point ahead of it.

    ``placement="instructions"`` appends the documents to the system prompt
    instead (after its blocks, cache points included). Use it with a
    ``stateful`` model (``OpenAIResponsesModel(stateful=True)``): the server
    keeps every message it was sent, so a copy there could never be
    replaced, while the system prompt is sent afresh with every call.
    ``placement="messages"`` with a stateful model fails the model call
    rather than store copies server-side. The price: memory then speaks with
    the system prompt's authority, and any change to it changes the prompt
    from its start for the provider's cache. ``position`` does not apply.

    A tool call's mutation id is
    ``<agent.session_id>/<agent.agent_id>/<run>/<toolUseId>``, where ``<run>``
    is drawn when an invocation starts (:meth:`run_id`): a model that numbers
    its calls ``call_1`` in every invocation makes a new mutation each time,
    while the same call id within one invocation is one entry. Strands runs
    one invocation of an agent at a time (unless
    ``ConcurrentInvocationMode.UNSAFE_REENTRANT``, under which concurrent
    invocations of one agent share a run identity). Tool results and errors
    (memory full, a credential, bad arguments, a store that is down) reach
    the model as docmem's sentence, with status ``"error"`` for errors; a
    tool call never ends the run. A failed recall fails the model call with
    docmem's error: memory is never silently empty.

    Agents as tools (``agent.as_tool()``) are invoked by Strands without the
    outer ``invocation_state``, so an inner agent with this plugin has no
    scope unless its resolver finds one elsewhere: memory is the outer
    agent's. ``Graph`` and ``Swarm`` pass the same ``invocation_state`` to
    every node, so every node agent with the plugin has the invocation's
    memory, each with its own run identity.
    """

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        scope_context: Callable[[InvocationState], ScopeContext | None],
        placement: Placement = "messages",
        position: Position = "after_system",
    ) -> None:
        if placement not in ("messages", "instructions"):
            raise InvalidArgument("placement must be 'messages' or 'instructions'")
        if not callable(scope_context):
            raise InvalidArgument("scope_context must be a callable of the invocation state")
        self.runtime = MemoryRuntime(slots)
        self._scope_context = scope_context
        self._placement: Placement = placement
        self._position: Position = injection.checked_position(position)
        self._specs = self.runtime.tool_specs()
        self._runs: weakref.WeakKeyDictionary[Agent, _Run] = weakref.WeakKeyDictionary()
        super().__init__()

    def __repr__(self) -> str:
        return f"DocmemPlugin(tools={sorted(self._specs)!r}, placement={self._placement!r})"

    @property
    def name(self) -> str:
        """The plugin's name in the agent: one docmem plugin per agent."""
        return "docmem"

    def init_agent(self, agent: Agent) -> None:
        """Register the memory tools, the run identity and the model-call middleware."""
        if self._placement == "messages" and agent.model.stateful:
            raise InvalidArgument(_STATEFUL)
        taken = sorted(set(self._specs) & set(agent.tool_names))
        if taken:
            raise InvalidArgument(f"the agent already has a tool named {taken[0]}")
        _REDACT.names.update(self._specs)
        logging.getLogger(_EXECUTOR_LOGGER).addFilter(_REDACT)  # once: filters are a set
        run = _Run()
        self._runs[agent] = run
        for spec in self._specs.values():
            agent.tool_registry.register_tool(self._tool(spec, agent, run))
        agent.add_hook(run.start, BeforeInvocationEvent)
        agent.add_middleware(InvokeModelStage.Input, self._before_model_call)

    def run_id(self, agent: Agent) -> str | None:
        """The run identity of ``agent``'s current (or last) invocation, as mutation ids hold it."""
        run = self._runs.get(agent)
        return run.id if run is not None else None

    def _scope(self, state: InvocationState) -> ScopeContext | None:
        return self._scope_context(state)

    # -- tools ---------------------------------------------------------------

    def _tool(self, spec: tools.ToolSpec, agent: Agent, run: _Run) -> PythonAgentTool:
        """One docmem tool for ``agent``: its schema as docmem wrote it, its input as sent."""
        name = spec.name

        async def call(tool_use: ToolUse, /, **state: Any) -> ToolResult:
            result = await self.runtime.adispatch(
                self._scope(state),
                name,
                tool_use["input"],
                call_id=tool_use["toolUseId"] or None,
                session_id=f"{agent.session_id}/{agent.agent_id}/{run.id}" if run.id else None,
            )
            return {
                "toolUseId": tool_use["toolUseId"],
                "status": "error" if result.is_error else "success",
                "content": [{"text": result.text}],
            }

        tool_spec: ToolSpec = {
            "name": name,
            "description": spec.description,
            "inputSchema": {"json": spec.json_schema()},
        }
        return PythonAgentTool(name, tool_spec, call)

    # -- the model call ------------------------------------------------------

    async def _before_model_call(self, context: InvokeModelContext) -> InvokeModelContext:
        """This call's input without earlier copies, with one fresh copy per document.

        Only the memory tools of the slots active for the scope are offered.
        """
        scope = self._scope(context.invocation_state)
        shown = self.runtime.tool_specs_for(scope)
        tool_specs = [
            spec
            for spec in context.tool_specs
            if spec["name"] not in self._specs or spec["name"] in shown
        ]
        messages = _strip(context.messages)
        if self._placement == "instructions":
            recalls = await self.runtime.arecall(scope, messages=messages)
            return context.replace(
                messages=messages,
                tool_specs=tool_specs,
                system_prompt=_with_documents(context.system_prompt, recalls),
            )
        if context.model.stateful:
            raise InvalidArgument(_STATEFUL)
        recalls = await self.runtime.arecall(scope, messages=messages)
        placed, trailing = _place(messages, [{"text": r.content} for r in recalls], self._position)
        return context.replace(
            messages=placed,
            tool_specs=tool_specs,
            dynamic_trailing_blocks=context.dynamic_trailing_blocks + trailing,
        )


def _is_copy(block: ContentBlock) -> bool:
    text = block.get("text")
    return isinstance(text, str) and is_recalled(text)


def _is_tool_turn(message: Message) -> bool:
    return any("toolResult" in block for block in message["content"])


def _strip(messages: Messages) -> Messages:
    """``messages`` without copies, block by block, in user messages only (new message dicts).

    A user message left empty is dropped, and the messages it separated are
    joined if they share a role, so the turns still alternate.
    """
    kept: Messages = []
    for message in messages:
        if message["role"] == "user" and any(_is_copy(block) for block in message["content"]):
            content = [block for block in message["content"] if not _is_copy(block)]
            if not content:
                continue
            message = {**message, "content": content}
        kept.append(message)
    return _joined(kept) if len(kept) < len(messages) else kept


def _joined(messages: Messages) -> Messages:
    """``messages`` with each run of same-role messages joined into one."""
    joined: Messages = []
    for message in messages:
        if joined and joined[-1]["role"] == message["role"]:
            joined[-1] = {**joined[-1], "content": [*joined[-1]["content"], *message["content"]]}
        else:
            joined.append(message)
    return joined


def _place(
    messages: Messages, copies: list[ContentBlock], position: Position
) -> tuple[Messages, int]:
    """``messages`` with ``copies`` folded in at ``position``, and how many trail the last one.

    The count is what the call's ``dynamic_trailing_blocks`` grows by: the
    copies, when they are the last blocks of a last message of role user.
    """
    if not copies:
        return messages, 0
    if position == "before_last_user":
        for number in range(len(messages) - 1, -1, -1):
            message = messages[number]
            if message["role"] == "user" and not _is_tool_turn(message):
                return _insert(messages, number, 0, copies), 0
        # No user ask (a conversation trimmed to its tool loop): at the end.
        number = len(messages) - 1
        if number < 0 or messages[number]["role"] != "user":
            return [*messages, {"role": "user", "content": copies}], len(copies)
        return _insert(messages, number, len(messages[number]["content"]), copies), len(copies)
    if not messages or messages[0]["role"] != "user":
        placed: Messages = [{"role": "user", "content": copies}, *messages]
        return placed, len(copies) if len(placed) == 1 else 0
    content = messages[0]["content"]
    at = max((n + 1 for n, block in enumerate(content) if "toolResult" in block), default=0)
    trailing = len(copies) if len(messages) == 1 and at == len(content) and at else 0
    return _insert(messages, 0, at, copies), trailing


def _insert(messages: Messages, number: int, at: int, copies: list[ContentBlock]) -> Messages:
    message = messages[number]
    content = [*message["content"][:at], *copies, *message["content"][at:]]
    return [*messages[:number], {**message, "content": content}, *messages[number + 1 :]]


def _with_documents(
    system_prompt: SystemPrompt, recalls: Sequence[ProjectedRecall]
) -> SystemPrompt:
    """The system prompt with each document appended (a block each, after any cache point).

    Each document follows the prompt's text after a blank line.
    """
    documents = [recall.content for recall in recalls]
    if not documents:
        return system_prompt
    if isinstance(system_prompt, list):
        # Providers that take the prompt as one string join its blocks with a newline.
        lead = "\n" if any("text" in block for block in system_prompt) else ""
        blocks: list[SystemContentBlock] = [{"text": f"{lead}{doc}"} for doc in documents]
        return [*system_prompt, *blocks]
    return "\n\n".join([system_prompt, *documents] if system_prompt else documents)
