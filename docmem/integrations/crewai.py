"""docmem in CrewAI: memory tools for agents, and memory in every model call of theirs.

::

    from docmem.integrations.crewai import DocmemMemory

    memory = DocmemMemory(slots)
    agent = Agent(role="...", goal="...", backstory="...", tools=[*memory.tools])
    ...
    with memory.scope(ctx.scope):           # the signed-in user's docmem.ScopeContext
        crew.kickoff()                       # or: await crew.akickoff()

CrewAI has no run context that stays out of the model's sight (``inputs`` are
written into the task prompt), so the application names the scope itself,
around the run: :meth:`DocmemMemory.scope` sets it in a context variable,
which CrewAI copies into every thread and task it runs the crew in (flow
steps, parallel tool calls, ``async_execution`` tasks, ``kickoff_async``),
and which concurrent runs (threads, ``asyncio`` tasks) never share. Nothing
the model says selects the scope.

CrewAI's model-call hooks receive the agent executor's own message list, not
a per-call copy: an edit there stays in the conversation. So the hooks, which
:meth:`DocmemMemory.scope` registers for the block only (CrewAI's
``scoped_hooks``, never process-wide), strip every earlier copy of this
memory's slots and place one fresh copy per document before each model call
of an agent carrying these tools, and remove them again as soon as the call
is answered: after a text answer, and before the first tool of a tool-call
answer runs. So the executor's messages, the task output's messages, what
CrewAI's own memory extracts from (a task and its result) and the
conversation state in a checkpoint never keep a copy. A checkpoint taken while
a model call is in flight (another task's event, in a crew that runs tasks
concurrently) may catch one; a copy that comes back (a restored executor, a
history the application passes in) is dropped before the next model call by
docmem's marker (:func:`docmem.is_recalled`). Checkpoints also hold CrewAI's
event record, which logs each model call's input as sent, copies included,
as a trace records prompt text.

A hook that raises is swallowed by CrewAI. So a recall that fails (a store
that is down) puts docmem's error sentence in place of that slot's copy, and
the model sees memory is unavailable, never that it is empty. An
OpenAI Responses model with ``auto_chain`` or ``previous_response_id`` keeps
every message it was sent on the server, so a copy there could never be
replaced: the first model call of such an agent is aborted (``HookAborted``).

CrewAI turns tool names into ``[a-z0-9_]`` with single underscores, so
``user__save_memory`` is offered as ``user_save_memory`` (a model that uses
docmem's spelling, as the recall's text does, reaches the same tool) and
mapped back to docmem's name for dispatch. The schemas are docmem's
(CrewAI only wraps them with ``"strict": true``), the arguments reach docmem
as sent, extra ones included, and CrewAI's tool-result cache never stores a
memory tool's answer. Errors come back as CrewAI ``ToolFailure`` records with
docmem's sentence: the model reads the sentence, the run goes on.

A tool call's mutation id is ``<run>/<agent id>/<task id>/<call id>``,
where ``<run>`` is drawn when a crew (or a standalone agent, or a flow)
starts. CrewAI does not hand tools the model's call id, so the adapter finds
it in the executor's newest assistant message: the one unanswered call of
that tool with those arguments. Where no single call matches (one response
calling the same tool twice with the same arguments) or the id is one
CrewAI invented from a Python object id (Gemini-style responses), the call
gets a fresh mutation id: it is applied once, but a replay of it would be
applied again.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
import threading
import uuid
import weakref
from collections.abc import Iterator, Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from crewai.hooks.dispatch import (
        HookAborted,
        InterceptionPoint,
        get_scoped_hooks,
        scoped_hooks,
    )
    from crewai.hooks.llm_hooks import LLMCallHookContext
    from crewai.hooks.tool_hooks import ToolCallHookContext
    from crewai.tools import BaseTool
    from crewai.tools.tool_failure import ToolFailure, ToolFailurePolicy
    from crewai.utilities.string_utils import sanitize_tool_name
    from pydantic import BaseModel, ConfigDict, PrivateAttr
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.crewai needs CrewAI: pip install "agent-docmem[crewai]"'
    ) from error

from docmem.errors import DocmemError, InvalidArgument
from docmem.host.injection import (
    Position,
    ProjectedRecall,
    checked_position,
    mark_recalled,
    place_recalls,
    recalled_slot,
    user_text,
)
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext
from docmem.host.slot_set import checked_context
from docmem.provider.tools import ToolSpec, error_result

__all__ = ["DocmemMemory", "Position", "crewai_tool_name"]

logger = logging.getLogger("docmem")

_STATEFUL = (
    "docmem cannot give memory to a model with auto_chain or previous_response_id: "
    "the server would keep every copy of memory it was sent"
)

#: The ids CrewAI makes up from ``id(tool_call)`` when a provider sends none: an
#: address can come back for another call once the first is freed.
_MINTED_ID = re.compile(r"call_\d{9,}")


def crewai_tool_name(name: str) -> str:
    """The name CrewAI offers a tool as (its ``sanitize_tool_name``), e.g. ``user_save_memory``.

    CrewAI maps the names a model calls through the same function, so a call
    to docmem's own spelling (``user__save_memory``) reaches the tool too.
    """
    return sanitize_tool_name(name)


def _never_cache(arguments: object = None, result: object = None) -> bool:
    """CrewAI's ``cache_function`` for memory tools: an answer depends on memory, never cached.

    Module-level, so CrewAI can serialize it into checkpoints.
    """
    return False


@dataclass(frozen=True)
class _Active:
    """What :meth:`DocmemMemory.scope` set for the code inside its block."""

    scope: ScopeContext | None


@dataclass(frozen=True)
class _Pending:
    """A call id found by the tool hook, for the tool call that follows it in this context."""

    tool: _DocmemTool
    arguments: dict[str, Any]
    call_id: str | None
    session_id: str


#: Set by the tool hook, read by the tool: CrewAI runs both in one context per call.
_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
    "docmem_crewai_pending", default=None
)


class DocmemMemory:
    """docmem's slots for CrewAI: :attr:`tools` for agents, :meth:`scope` around each run.

    Build one per application and give its :attr:`tools` to every agent
    that should have memory (``Agent(tools=[*memory.tools, ...])``); only
    those agents get the recall, whatever else runs in the crew. ``runtime``
    is the one :class:`docmem.MemoryRuntime` it builds from ``slots``. Two
    slots whose tool names CrewAI would spell the same (``a-b`` and ``a_b``)
    are refused.

    ``position`` is where the copies go among the executor's messages:
    ``"after_system"`` (the default: after the agent's system prompt, ahead
    of the conversation; the prefix stays cache-stable while memory is
    unchanged) or ``"before_last_user"`` (just before the newest user
    message: a crew task's prompt, or the newest ask of
    ``agent.kickoff(messages)``). A copy is a user message of its own, as
    OpenAI-style chat and CrewAI's Anthropic provider send consecutive user
    messages.

    There is no ``placement="instructions"``: CrewAI sends the whole message
    list with every call, so a copy in the messages is replaced every call;
    the server-side-state case that needs it elsewhere (OpenAI Responses
    ``auto_chain``) is refused instead.
    """

    def __init__(self, slots: Sequence[MemorySlot], *, position: Position = "after_system") -> None:
        self.runtime = MemoryRuntime(slots)
        self._position: Position = checked_position(position)
        self._slot_names = frozenset(slot.name for slot in self.runtime.slots)
        self._active: contextvars.ContextVar[_Active | None] = contextvars.ContextVar(
            "docmem_crewai_scope", default=None
        )
        self._run: contextvars.ContextVar[str | None] = contextvars.ContextVar(
            "docmem_crewai_run", default=None
        )
        self._executors: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        self._executors_lock = threading.Lock()
        specs = self.runtime.tool_specs()
        by_name: dict[str, str] = {}
        for name in specs:
            exposed = crewai_tool_name(name)
            if exposed in by_name:
                raise InvalidArgument(
                    f"CrewAI would name both {by_name[exposed]} and {name} {exposed}: "
                    "rename one of their slots"
                )
            by_name[exposed] = name
        #: The memory tools, one per tool of every slot, named as CrewAI keeps them.
        self.tools: list[BaseTool] = [_DocmemTool.of(self, spec) for spec in specs.values()]
        self._tool_names = {tool.name: tool for tool in self.tools}

    def __repr__(self) -> str:
        return f"DocmemMemory(tools={sorted(self._tool_names)!r})"

    @contextlib.contextmanager
    def scope(self, scope_context: ScopeContext | None) -> Iterator[None]:
        """Give the runs started inside the block this trusted scope (``None``: memory off).

        Enter it around ``crew.kickoff()``, ``await crew.akickoff()``,
        ``agent.kickoff()`` or a flow's kickoff, in the code that knows the
        signed-in user. Memory is off (no recall, no store read, the tools
        left out of each model call and a call to one answered as unknown)
        with ``None`` and outside any block. Nested blocks: the inner one
        wins until it exits. The block also holds the model-call and tool
        hooks, registered in CrewAI's ``scoped_hooks`` on top of any already
        registered there, so nothing outside the block sees them.
        """
        active = _Active(checked_context(scope_context))
        points = {
            InterceptionPoint.EXECUTION_START: self._start,
            InterceptionPoint.PRE_MODEL_CALL: self._before_model_call,
            InterceptionPoint.POST_MODEL_CALL: self._after_model_call,
            InterceptionPoint.PRE_TOOL_CALL: self._before_tool_call,
        }
        # Keep the hooks an enclosing block registered, this memory's own once (they read
        # the scope the innermost block set).
        hooks = {point: get_scoped_hooks(point) for point in InterceptionPoint}
        for point, hook in points.items():
            hooks[point] = [*(other for other in hooks[point] if other != hook), hook]
        active_token = self._active.set(active)
        run_token = self._run.set(uuid.uuid4().hex)
        try:
            with scoped_hooks(hooks):
                yield
        finally:
            self._run.reset(run_token)
            self._active.reset(active_token)

    def run_id(self) -> str | None:
        """The run identity mutation ids hold in this context (``None`` outside a scope).

        Drawn when a :meth:`scope` block is entered and again when a crew
        starts in it (so after ``crew.kickoff()`` it is that run's). A
        standalone ``agent.kickoff()`` or a flow draws its own where it runs,
        in a context its caller does not see.
        """
        return self._run.get() if self._active.get() is not None else None

    # -- hooks ---------------------------------------------------------------

    def _start(self, context: Any) -> None:
        """A crew, standalone agent or flow starts: a new run identity for its mutation ids."""
        self._run.set(uuid.uuid4().hex)

    def _carries_tools(self, executor: Any) -> bool:
        tools = getattr(executor, "original_tools", None) or ()
        return any(isinstance(tool, _DocmemTool) and tool._memory is self for tool in tools)

    def _before_model_call(self, context: LLMCallHookContext) -> None:
        """This model call's messages without earlier copies and with one fresh copy per document.

        Edits the executor's list in place, as CrewAI requires; the copies
        leave it again when the call is answered.
        """
        executor = context.executor
        if executor is None or not self._carries_tools(executor):
            return  # a direct model call (planning, conversion), or an agent without memory
        llm = context.llm
        if getattr(llm, "auto_chain", False) is True or getattr(llm, "previous_response_id", None):
            raise HookAborted(_STATEFUL)
        with self._executors_lock:
            self._executors[id(executor)] = executor
        active = self._active.get()
        scope = active.scope if active is not None else None
        self._offer_tools(executor, scope)
        messages = context.messages
        conversation = self._strip(messages)
        recalls: list[ProjectedRecall]
        try:
            recalls = self.runtime.recall(scope, messages=conversation)
        except DocmemError as error:  # the model is told, never shown an empty memory
            logger.warning("docmem: recall for a CrewAI model call failed (%s)", error.code)
            recalls = self._unavailable(scope, error_result(error).text)
        except Exception as error:  # a resolver bug: CrewAI swallows it unless it aborts
            logger.error("docmem: recall for a CrewAI model call failed (%s)", type(error).__name__)
            raise HookAborted(f"docmem: recall failed ({type(error).__name__})") from error
        placed = place_recalls(conversation, recalls, position=self._position)
        messages[:] = [_message(item) for item in placed]

    def _after_model_call(self, context: LLMCallHookContext) -> None:
        """The answered call's copies out of the executor's messages (after a text answer)."""
        if context.executor is not None and self._carries_tools(context.executor):
            self._strip_in_place(context.messages)

    def _before_tool_call(self, context: ToolCallHookContext) -> None:
        """Before a tool of a memory-carrying agent runs: copies out, a memory tool's call id found.

        CrewAI runs no after-call hook for an answer of tool calls, so this is
        the first point after such an answer; it runs in the context the tool
        runs in, so the call id reaches exactly that tool call.
        """
        executor = self._executor_of(context.tool, context.agent)
        if executor is not None:
            self._strip_in_place(executor.messages)
        tool = getattr(context.tool, "_original_tool", None)
        if not isinstance(tool, _DocmemTool) or tool._memory is not self:
            return
        arguments = dict(context.tool_input)
        call_id = _call_id(executor.messages, context.tool_name, arguments) if executor else None
        agent = getattr(getattr(context, "agent", None), "id", None)
        task = getattr(getattr(context, "task", None), "id", None)
        session = f"{self._run.get()}/{agent or '-'}/{task or '-'}"
        _PENDING.set(_Pending(tool, arguments, call_id, session))

    # -- messages ------------------------------------------------------------

    def _is_copy(self, message: object) -> bool:
        return recalled_slot(user_text(message)) in self._slot_names

    def _strip(self, messages: Sequence[Any]) -> list[Any]:
        return [message for message in messages if not self._is_copy(message)]

    def _strip_in_place(self, messages: MutableSequence[Any]) -> None:
        if any(self._is_copy(message) for message in messages):
            messages[:] = self._strip(messages)

    def _unavailable(self, scope: ScopeContext | None, sentence: str) -> list[ProjectedRecall]:
        """One marked notice per slot the scope enables, where its copy would have gone."""
        shown = self.runtime.tool_specs_for(scope)
        slots = [slot.name for slot in self.runtime.slots]
        active = [name for name in slots if any(tool.startswith(f"{name}__") for tool in shown)]
        notice = (
            "# Memory: {slot}\n\nMemory could not be read: {sentence} "
            "It is not empty; do not assume anything about its contents."
        )
        return [
            ProjectedRecall(
                mark_recalled(notice.format(slot=name, sentence=sentence), name), name, None
            )
            for name in sorted(active)
        ]

    def _offer_tools(self, executor: Any, scope: ScopeContext | None) -> None:
        """Leave the memory tools the scope does not enable out of this call's tool list.

        CrewAI rebuilds the list when each task starts, so a tool left out
        here is back for a run whose scope enables it.
        """
        offered = getattr(executor, "_openai_tools", None)
        if not isinstance(offered, list):
            return  # text (ReAct) tool calling: a call to a hidden tool is answered as unknown
        shown = {crewai_tool_name(name) for name in self.runtime.tool_specs_for(scope)}
        hidden = set(self._tool_names) - shown
        if hidden:
            offered[:] = [tool for tool in offered if _function_name(tool) not in hidden]

    def _executor_of(self, structured_tool: object, agent: object) -> Any:
        """The executor whose tools include ``structured_tool`` (CrewAI builds them per task).

        One a model-call hook met, else the agent's own (a crew agent's executor
        that runs a tool before any model call, as a resumed one may).
        """
        if structured_tool is None:
            return None
        with self._executors_lock:
            executors = list(self._executors.values())
        for executor in [*executors, getattr(agent, "agent_executor", None)]:
            if any(tool is structured_tool for tool in getattr(executor, "tools", None) or ()):
                return executor
        return None

    # -- the tool call -------------------------------------------------------

    def _call(self, tool: _DocmemTool, arguments: dict[str, Any]) -> str | ToolFailure:
        active = self._active.get()
        if active is None:  # a host bug: the run was started outside memory.scope(...)
            logger.warning("docmem: a CrewAI memory tool was called outside memory.scope()")
        pending = _PENDING.get()
        _PENDING.set(None)
        call_id = session_id = None
        if pending is not None and pending.tool is tool and pending.arguments == arguments:
            call_id, session_id = pending.call_id, pending.session_id
        result = self.runtime.dispatch(
            active.scope if active is not None else None,
            tool._docmem_name,
            arguments,
            call_id=call_id,
            session_id=session_id,
        )
        return ToolFailure(message=result.text) if result.is_error else result.text


def _message(item: Any) -> Any:
    """A placed copy as the user message CrewAI's providers send; a message as it was."""
    if isinstance(item, ProjectedRecall):
        return {"role": "user", "content": item.content}
    return item


def _function_name(tool: object) -> object:
    function = tool.get("function") if isinstance(tool, Mapping) else None
    return function.get("name") if isinstance(function, Mapping) else None


def _call_id(messages: Sequence[Any], name: str, arguments: Mapping[str, Any]) -> str | None:
    """The id of the one unanswered call of ``name`` with ``arguments`` in the newest answer.

    ``None`` when no single call matches, or when its id is one CrewAI made
    up (a Gemini-style answer, or a call without an id).
    """
    for at in range(len(messages) - 1, -1, -1):
        message = messages[at]
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            calls = message.get("tool_calls")
            if calls:
                break
    else:
        return None
    if message.get("raw_tool_call_parts"):
        return None
    answered = {
        later.get("tool_call_id")
        for later in messages[at + 1 :]
        if isinstance(later, Mapping) and later.get("role") == "tool"
    }
    found = [
        call["id"]
        for call in calls
        if isinstance(call, Mapping)
        and call.get("id") not in answered
        and _function_name(call) == name
        and _arguments(call) == arguments
    ]
    if len(found) != 1 or not isinstance(found[0], str) or _MINTED_ID.fullmatch(found[0]):
        return None
    return found[0]


def _arguments(call: Mapping[str, Any]) -> object:
    function = call.get("function")
    raw = function.get("arguments") if isinstance(function, Mapping) else None
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


class _Arguments(BaseModel):
    """A tool's arguments as CrewAI sees them: no fields, so CrewAI hands them over as sent.

    Its JSON schema is docmem's (``json_schema_extra`` replaces what pydantic
    would generate), which is what CrewAI offers the model.
    """

    model_config = ConfigDict(extra="allow")


def _arguments_model(spec: ToolSpec) -> type[BaseModel]:
    def docmem_schema(generated: dict[str, Any]) -> None:
        generated.clear()
        generated.update(spec.json_schema())

    config = ConfigDict(extra="allow", json_schema_extra=docmem_schema)
    return type(f"{crewai_tool_name(spec.name)}_arguments", (_Arguments,), {"model_config": config})


class _DocmemTool(BaseTool):
    """One docmem tool for CrewAI: docmem's schema, its arguments as sent, never cached."""

    _memory: DocmemMemory = PrivateAttr()
    _docmem_name: str = PrivateAttr()

    @classmethod
    def of(cls, memory: DocmemMemory, spec: ToolSpec) -> _DocmemTool:
        tool = cls(
            name=crewai_tool_name(spec.name),
            description=spec.description,
            args_schema=_arguments_model(spec),
            cache_function=_never_cache,
            tool_failure_policy=ToolFailurePolicy.WARN,  # a refusal never ends the run
        )
        tool._memory = memory
        tool._docmem_name = spec.name
        return tool

    def _run(self, **arguments: Any) -> str | ToolFailure:
        """docmem's sentence, or a ``ToolFailure`` holding it; never raises."""
        return self._memory._call(self, arguments)
