"""One model call through an agent framework, with docmem's adapter hook or the hook doing nothing.

Each framework runs for real (its agent loop, its own offline fake model, as
``tests/integrations/`` drive them), one run per call: a user prompt in, the
model answering with text at once, so the run makes exactly one model call.
The adapter is either docmem's own or a subclass whose hook hands its input
back unchanged; both register docmem's tools, so the two runs differ in the
hook alone:

* ``openai-agents``: ``Runner.run`` on ``agents.testing.ScriptedModel``, the
  ``call_model_input_filter`` of ``DocmemMemory.run_config()``;
* ``pydantic-ai``: ``Agent.run`` on ``FunctionModel``, ``DocmemCapability``'s
  ``before_model_request``;
* ``langchain``: ``create_agent(...).invoke`` on ``RecordingFakeChatModel``,
  ``DocmemMiddleware.wrap_model_call``; and the same agent through
  ``ainvoke``, whose hook is ``awrap_model_call``;
* ``google-adk``: ``Runner.run_async`` on ``docmem.testing.adk_model.ScriptedLlm``,
  ``DocmemToolset.process_llm_request`` (a fresh session per run, made
  before the clock starts, so every run is one call on an empty history);
* ``strands``: ``Agent.invoke_async`` on ``docmem.testing.strands_model.ScriptedModel``,
  ``DocmemPlugin``'s ``InvokeModelStage.Input`` middleware (the agent's
  messages cleared before each run, untimed);
* ``llama-index``: ``DocmemFunctionAgent.run`` on LlamaIndex's
  ``MockFunctionCallingLLM``, its ``take_step`` (a fresh ``Context`` with the
  trusted user and a fresh ``ChatMemoryBuffer`` per run, made before the
  clock starts);
* ``crewai``: a standalone ``Agent.kickoff`` on ``docmem.testing.crewai_model.ScriptedLLM``
  inside ``DocmemMemory.scope``, its ``before_llm_call`` hook. CrewAI runs
  in a venv of its own (``make bench`` runs this script there too, where
  the other frameworks' rows are skipped as not installed).

The async runs share one event loop (and so its worker threads, as in a
long-lived application). Each framework is imported only when its call is
built: a missing one is an :class:`ImportError` for that row alone.

:func:`conversation` drives a whole scripted conversation through the same
frameworks for ``prompt_cache.py``: one agent (or one per turn, where the
framework's idiom is that) on the same fake models, the history kept the
way the framework keeps it (an ``SQLiteSession``, ``all_messages()``, an
``InMemorySaver`` checkpointer, an ADK session, the Strands agent's messages
with no conversation manager trimming them, a ``ChatMemoryBuffer`` or
``Memory``, CrewAI's output messages passed back in), memory injected as an
:class:`Injection` says (docmem's adapter in one of its placements, no
memory, or a naive way), and every request the fake model receives written
down as a canonical :class:`Request`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import io
import itertools
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, Union

import docmem

from .timing import Sample

__all__ = [
    "APP_TOOL",
    "FRAMEWORKS",
    "INJECTIONS",
    "NATIVE_SKIPPED",
    "PROMPT",
    "REPLY",
    "WITHOUT_MEMORY",
    "Conversation",
    "Framework",
    "Injection",
    "OneCall",
    "Request",
    "Say",
    "Step",
    "Trusted",
    "Use",
    "conversation",
    "lookup_order",
    "one_call",
    "request_of",
    "rotate",
    "scope_of",
]


@dataclasses.dataclass(frozen=True)
class Framework:
    """One way of running a framework: how the rows name it, what it runs, where it comes from."""

    key: str
    #: The entry point the run goes through (``"langchain ainvoke"``): the rows' name.
    label: str
    #: The adapter hook that runs once per model call.
    hook: str
    #: The distribution whose version the report gives.
    distribution: str


#: The frameworks, in report order. LangChain's sync and async entry points run
#: different hooks (``wrap_model_call``, ``awrap_model_call``), so both are measured.
FRAMEWORKS = (
    Framework(
        "openai-agents", "openai-agents Runner.run", "call_model_input_filter", "openai-agents"
    ),
    Framework("pydantic-ai", "pydantic-ai Agent.run", "before_model_request", "pydantic-ai-slim"),
    Framework("langchain", "langchain invoke", "wrap_model_call", "langchain"),
    Framework("langchain-async", "langchain ainvoke", "awrap_model_call", "langchain"),
    Framework("google-adk", "google-adk Runner.run_async", "process_llm_request", "google-adk"),
    Framework("strands", "strands Agent.invoke_async", "InvokeModelStage.Input", "strands-agents"),
    Framework("llama-index", "llama-index FunctionAgent.run", "take_step", "llama-index-core"),
    Framework("crewai", "crewai Agent.kickoff", "before_llm_call", "crewai"),
)

INSTRUCTIONS = "You are the support agent."
PROMPT = "What do I prefer?"
REPLY = "Metric units and short answers."


@dataclasses.dataclass(frozen=True)
class Trusted:
    """The application's run context: the authenticated user (never sent to the model)."""

    user: str


def scope_of(context: Trusted) -> docmem.ScopeContext:
    """The adapters' ``scope_context``: the run context's user as the principal."""
    return docmem.ScopeContext(principal=docmem.Principal("user", "bench", context.user))


class OneCall(Protocol):
    """A framework set up for one-call runs: :meth:`run` times one, :meth:`copies` checks it."""

    def run(self) -> float:
        """Seconds of one run (one model call); raises when the run did not answer."""
        ...

    def copies(self) -> int:
        """How many recalled copies the model was sent in the last run's call."""
        ...


def rotate(rounds: int, *sides: Sample) -> list[list[float]]:
    """Run every side once per round, each round starting one side later (ABC, BCA, CAB, ...).

    :func:`harness.timing.interleave` for more than two sides (for two it is
    the same A/B, B/A): over any ``len(sides)`` consecutive rounds each side
    takes every place in the order once. Returns each side's times, in order.
    """
    times: list[list[float]] = [[] for _ in sides]
    for round_number in range(rounds):
        shift = round_number % len(sides)
        for index in (*range(shift, len(sides)), *range(shift)):
            times[index].append(sides[index]())
    return times


def _count(texts: Sequence[str | None]) -> int:
    return sum(docmem.is_recalled(text) for text in texts if text is not None)


def _timed(loop: asyncio.AbstractEventLoop, run: Callable[[], Awaitable[str]]) -> float:
    """Seconds of one awaited run on ``loop``, checking it answered with :data:`REPLY`."""

    async def timed() -> tuple[float, str]:
        start = time.perf_counter_ns()
        output = await run()
        return (time.perf_counter_ns() - start) / 1e9, output

    elapsed, output = loop.run_until_complete(timed())
    _check_reply(output)
    return elapsed


def _check_reply(output: object) -> None:
    if output != REPLY:
        raise RuntimeError(f"the run answered {output!r}, not the model's reply")


# -- each adapter with its per-call hook doing nothing ------------------------------
#
# docmem's tools stay registered (so the model can still save), and the request goes
# to the model exactly as the framework built it: the "no hook" side of adapters.py and
# the conversation without memory of prompt_cache.py. Each imports its framework when
# called.


def _noop_openai_agents() -> type[Any]:
    from agents.run_config import CallModelData, ModelInputData

    from docmem.integrations.openai_agents import DocmemMemory

    class NoopMemory(DocmemMemory[Trusted]):
        """docmem's tools, and an input filter that hands the request back unchanged."""

        async def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
            return data.model_data

    return NoopMemory


def _noop_pydantic_ai() -> type[Any]:
    from pydantic_ai import RunContext
    from pydantic_ai.models import ModelRequestContext

    from docmem.integrations.pydantic_ai import DocmemCapability

    class NoopCapability(DocmemCapability[Trusted]):
        """docmem's toolset, and a ``before_model_request`` that changes nothing."""

        async def before_model_request(
            self, ctx: RunContext[Trusted], request_context: ModelRequestContext
        ) -> ModelRequestContext:
            return request_context

    return NoopCapability


def _noop_langchain() -> type[Any]:
    from langchain.agents.middleware import ModelRequest
    from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
    from langchain_core.messages import AIMessage

    from docmem.integrations.langchain import DocmemMiddleware

    class NoopMiddleware(DocmemMiddleware[Trusted]):
        """docmem's tools and hooks, and a ``wrap_model_call`` that passes the request on."""

        def wrap_model_call(
            self,
            request: ModelRequest[Trusted],
            handler: Callable[[ModelRequest[Trusted]], ModelResponse[Any]],
        ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
            return handler(request)

        async def awrap_model_call(
            self,
            request: ModelRequest[Trusted],
            handler: Callable[[ModelRequest[Trusted]], Awaitable[ModelResponse[Any]]],
        ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
            return await handler(request)

    return NoopMiddleware


def _noop_google_adk() -> type[Any]:
    from google.adk.models.llm_request import LlmRequest
    from google.adk.tools.tool_context import ToolContext

    from docmem.integrations.google_adk import DocmemToolset

    class NoopToolset(DocmemToolset):
        """docmem's tools, and a ``process_llm_request`` that leaves the request as it is."""

        async def process_llm_request(
            self, *, tool_context: ToolContext, llm_request: LlmRequest
        ) -> None:
            return None

    return NoopToolset


def _noop_strands() -> type[Any]:
    from strands.middleware import InvokeModelContext

    from docmem.integrations.strands import DocmemPlugin

    class NoopPlugin(DocmemPlugin):
        """docmem's tools and run identity, and a middleware that passes the call on."""

        async def _before_model_call(self, context: InvokeModelContext) -> InvokeModelContext:
            return context

    return NoopPlugin


def _noop_llama_index() -> type[Any]:
    from llama_index.core.agent.workflow import AgentOutput, FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import BaseMemory
    from llama_index.core.tools import AsyncBaseTool

    from docmem.integrations.llama_index import DocmemFunctionAgent

    class NoopAgent(DocmemFunctionAgent):
        """docmem's tools, and FunctionAgent's own step: the input goes out as it is."""

        async def take_step(
            self,
            ctx: Any,
            llm_input: list[ChatMessage],
            tools: Sequence[AsyncBaseTool],
            memory: BaseMemory,
        ) -> AgentOutput:
            return await FunctionAgent.take_step(self, ctx, llm_input, tools, memory)

    return NoopAgent


def _quiet_crewai(suppress: Callable[[bool], object]) -> None:
    """No CrewAI panels on stdout, for the rest of this process (the benchmark's).

    CrewAI prints a panel as each standalone kickoff ends, from its event
    handlers' threads, after a ``redirect_stdout`` around the kickoff has
    ended: it would land in the report (and break ``--json``).
    """
    suppress(True)


def _noop_crewai() -> type[Any]:
    from docmem.integrations.crewai import DocmemMemory

    class NoopMemory(DocmemMemory):
        """docmem's tools and scope, and model-call hooks doing nothing.

        The hooks after a call (and before a tool runs) take the copies out of the
        executor's messages again; here there are none of docmem's to take out, and
        what an application put there itself (a naive recall) stays.
        """

        def _before_model_call(self, context: Any) -> None:
            return None

        def _strip_in_place(self, messages: Any) -> None:
            return None

    return NoopMemory


# -- openai-agents ------------------------------------------------------------------


class _OpenAIAgents:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from agents import Agent, RunConfig, Runner
        from agents.testing import ScriptedModel, assistant_message

        from docmem.integrations.openai_agents import DocmemMemory

        kind = DocmemMemory if hook else _noop_openai_agents()
        memory: DocmemMemory[Trusted] = kind(slots, scope_context=scope_of)
        self._model = ScriptedModel()
        self._step = assistant_message
        agent = Agent[Trusted](
            name="support", instructions=INSTRUCTIONS, tools=[*memory.tools()], model=self._model
        )
        config = memory.run_config(RunConfig(tracing_disabled=True))

        async def once() -> str:
            result = await Runner.run(
                agent, PROMPT, context=context, run_config=config, max_turns=1
            )
            return str(result.final_output)

        self._once = once
        self._loop = loop

    def run(self) -> float:
        self._model.enqueue([self._step(REPLY)])  # untimed: this run's one answer
        return _timed(self._loop, self._once)

    def copies(self) -> int:
        call = self._model.last_call
        items = call.input if call is not None else []
        if isinstance(items, str):
            return _count([items])
        return _count([docmem.message_text(item) for item in items])


# -- pydantic-ai --------------------------------------------------------------------


class _PydanticAI:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import (
            ModelMessage,
            ModelRequest,
            ModelResponse,
            TextContent,
            TextPart,
            UserPromptPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        from docmem.integrations.pydantic_ai import DocmemCapability

        sent: list[list[ModelMessage]] = [[]]

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            sent[0] = messages
            return ModelResponse(parts=[TextPart(REPLY)])

        def texts() -> list[str | None]:
            found: list[str | None] = []
            for message in sent[0]:
                if not isinstance(message, ModelRequest):
                    continue
                for part in message.parts:
                    if not isinstance(part, UserPromptPart):
                        continue
                    if isinstance(part.content, str):
                        found.append(part.content)
                        continue
                    pieces = [
                        item.content for item in part.content if isinstance(item, TextContent)
                    ]
                    found.append("\n".join(pieces))
            return found

        kind = DocmemCapability if hook else _noop_pydantic_ai()
        capability: DocmemCapability[Trusted] = kind(slots, scope_context=scope_of)
        agent = Agent(
            FunctionModel(respond),
            deps_type=Trusted,
            system_prompt=INSTRUCTIONS,
            capabilities=[capability],
        )

        async def once() -> str:
            result = await agent.run(PROMPT, deps=context)
            return result.output

        self._once = once
        self._texts = texts
        self._loop = loop

    def run(self) -> float:
        return _timed(self._loop, self._once)

    def copies(self) -> int:
        return _count(self._texts())


# -- langchain ----------------------------------------------------------------------


class _LangChain:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage, HumanMessage

        from docmem.integrations.langchain import DocmemMiddleware
        from docmem.testing.langchain_model import RecordingFakeChatModel

        kind = DocmemMiddleware if hook else _noop_langchain()
        middleware: DocmemMiddleware[Trusted] = kind(slots, scope_context=scope_of)
        self._model = RecordingFakeChatModel(messages=itertools.cycle([AIMessage(REPLY)]))
        self._agent = create_agent(
            self._model,
            system_prompt=INSTRUCTIONS,
            context_schema=Trusted,
            middleware=[middleware],
        )
        self._input = HumanMessage
        self._context = context
        self._loop = loop

    def run(self) -> float:
        self._model.calls.clear()  # untimed: keep only this run's call
        start = time.perf_counter_ns()
        result = self._agent.invoke({"messages": [self._input(PROMPT)]}, context=self._context)
        elapsed = (time.perf_counter_ns() - start) / 1e9
        _check_reply(result["messages"][-1].text)
        return elapsed

    def copies(self) -> int:
        calls = self._model.calls
        messages = calls[-1].messages if calls else []
        return _count([message.text for message in messages])


class _LangChainAsync(_LangChain):
    """The same agent through ``ainvoke``, so the hook is ``awrap_model_call``."""

    def run(self) -> float:
        self._model.calls.clear()

        async def once() -> str:
            result = await self._agent.ainvoke(
                {"messages": [self._input(PROMPT)]}, context=self._context
            )
            return str(result["messages"][-1].text)

        return _timed(self._loop, once)


# -- google-adk ---------------------------------------------------------------------


class _GoogleADK:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from google.adk.agents import LlmAgent
        from google.adk.apps import App
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService
        from google.genai import types

        from docmem.integrations.google_adk import DocmemToolset
        from docmem.testing.adk_model import ScriptedLlm

        kind = DocmemToolset if hook else _noop_google_adk()
        toolset = kind(slots, scope_context=lambda ctx: scope_of(Trusted(ctx.user_id)))
        self._model = ScriptedLlm(script=[REPLY])
        agent = LlmAgent(
            name="support", model=self._model, instruction=INSTRUCTIONS, tools=[toolset]
        )
        self._sessions = InMemorySessionService()
        self._runner = Runner(
            app=App(name="bench", root_agent=agent), session_service=self._sessions
        )
        self._prompt = types.Content(role="user", parts=[types.Part.from_text(text=PROMPT)])
        self._user = context.user
        self._loop = loop

    def run(self) -> float:
        # Untimed: a fresh session (one call on an empty history) and a fresh script.
        self._model.requests.clear()
        session = self._loop.run_until_complete(
            self._sessions.create_session(app_name="bench", user_id=self._user)
        )

        async def once() -> str:
            reply = ""
            async for event in self._runner.run_async(
                user_id=self._user, session_id=session.id, new_message=self._prompt
            ):
                if event.content is not None and event.content.parts:
                    reply = "".join(part.text or "" for part in event.content.parts)
            return reply

        return _timed(self._loop, once)

    def copies(self) -> int:
        requests = self._model.requests
        contents = requests[-1].contents if requests else []
        return _count([part.text for content in contents for part in content.parts or []])


# -- strands ------------------------------------------------------------------------


class _Strands:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from strands import Agent

        from docmem.integrations.strands import DocmemPlugin
        from docmem.testing.strands_model import ScriptedModel

        kind = DocmemPlugin if hook else _noop_strands()
        plugin = kind(slots, scope_context=lambda state: scope_of(state["trusted"]))
        self._model = ScriptedModel()
        self._agent = Agent(
            self._model, system_prompt=INSTRUCTIONS, plugins=[plugin], callback_handler=None
        )
        self._state = {"trusted": context}
        self._loop = loop

    def run(self) -> float:
        # Untimed: an empty conversation, this run's one answer, only this run's call kept.
        self._agent.messages.clear()
        self._model.calls.clear()
        self._model.add(REPLY)

        async def once() -> str:
            result = await self._agent.invoke_async(PROMPT, invocation_state=self._state)
            return str(result).strip()

        return _timed(self._loop, once)

    def copies(self) -> int:
        calls = self._model.calls
        messages = calls[-1].messages if calls else []
        return _count([block.get("text") for message in messages for block in message["content"]])


# -- llama-index --------------------------------------------------------------------


class _LlamaIndex:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.llms.mock import MockFunctionCallingLLM
        from llama_index.core.memory import ChatMemoryBuffer
        from llama_index.core.workflow import Context

        from docmem.integrations.llama_index import DocmemFunctionAgent, set_trusted

        sent: list[list[ChatMessage]] = [[]]

        def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
            sent[0] = list(messages)
            return ChatMessage(role="assistant", content=REPLY)

        kind = DocmemFunctionAgent if hook else _noop_llama_index()
        self._agent = kind(
            slots,
            scope_context=lambda user: scope_of(Trusted(user)),
            llm=MockFunctionCallingLLM(response_generator=respond),
            system_prompt=INSTRUCTIONS,
            streaming=False,
        )
        self._sent = sent
        self._new_context = Context
        self._new_memory = ChatMemoryBuffer.from_defaults
        self._set_trusted = set_trusted
        self._user = context.user
        self._loop = loop

    def run(self) -> float:
        # Untimed: this run's Context (the trusted user set in it) and an empty memory.
        ctx = self._new_context(self._agent)
        self._loop.run_until_complete(self._set_trusted(ctx, self._user))
        memory = self._new_memory()

        async def once() -> str:
            result = await self._agent.run(PROMPT, ctx=ctx, memory=memory)
            return str(result).strip()

        return _timed(self._loop, once)

    def copies(self) -> int:
        return _count([message.content for message in self._sent[0]])


# -- crewai -------------------------------------------------------------------------


class _CrewAI:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        hook: bool,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # offline: nothing to upload
        os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
        from crewai import Agent  # type: ignore[import-not-found, unused-ignore]  # its own venv
        from crewai.events.utils.console_formatter import (  # type: ignore[import-not-found, unused-ignore]
            set_suppress_console_output,
        )

        from docmem.integrations.crewai import DocmemMemory
        from docmem.testing.crewai_model import ScriptedLLM

        _quiet_crewai(set_suppress_console_output)
        kind = DocmemMemory if hook else _noop_crewai()
        self._memory = kind(slots)
        self._model = ScriptedLLM()
        self._agent = Agent(
            role="support",
            goal="Answer the user.",
            backstory=INSTRUCTIONS,
            llm=self._model,
            tools=[*self._memory.tools],
        )
        self._scope = scope_of(context)

    def run(self) -> float:
        self._model.calls.clear()  # untimed: keep only this run's call, script its answer
        self._model.add(REPLY)
        # CrewAI prints a panel per standalone kickoff: out of the report, on both sides alike.
        with self._memory.scope(self._scope), contextlib.redirect_stdout(io.StringIO()):
            start = time.perf_counter_ns()
            result = self._agent.kickoff(PROMPT)
            elapsed = (time.perf_counter_ns() - start) / 1e9
        _check_reply(str(result.raw).strip())
        return elapsed

    def copies(self) -> int:
        calls = self._model.calls
        messages = calls[-1].messages if calls else []
        return _count([str(message.get("content") or "") for message in messages])


_BUILDERS: dict[str, Callable[..., OneCall]] = {
    "openai-agents": _OpenAIAgents,
    "pydantic-ai": _PydanticAI,
    "langchain": _LangChain,
    "langchain-async": _LangChainAsync,
    "google-adk": _GoogleADK,
    "strands": _Strands,
    "llama-index": _LlamaIndex,
    "crewai": _CrewAI,
}


def one_call(
    framework: Framework,
    slots: Sequence[docmem.MemorySlot],
    context: Trusted,
    *,
    hook: bool,
    loop: asyncio.AbstractEventLoop,
) -> OneCall:
    """``framework`` set up for one-call runs of ``context`` on ``slots``.

    ``hook=True``: docmem's adapter; ``hook=False``: the adapter with its
    per-call hook doing nothing. Raises :class:`ImportError` when the
    framework is not installed.
    """
    return _BUILDERS[framework.key](slots, context, hook, loop)


# -- a scripted conversation, every request recorded (benchmarks/prompt_cache.py) ----------
#
# The same conversation through each framework: the user's turns, the model's scripted
# answers (text, a memory tool, the application's ``lookup_order``), the history kept
# the way the framework keeps it, and every request the fake model receives written
# down in one canonical form (:class:`Request`), so requests can be compared byte for
# byte within a framework and counted alike across frameworks.

#: The application's own tool, offered beside docmem's in every conversation.
APP_TOOL = "lookup_order"


def lookup_order(order_id: str) -> str:
    """Look up the status of an order by its id."""
    return f"Order {order_id} shipped on Monday and arrives on Thursday."


@dataclasses.dataclass(frozen=True)
class Say:
    """A scripted model step: answer with ``text``, which ends the turn."""

    text: str


@dataclasses.dataclass(frozen=True)
class Use:
    """A scripted model step: call tool ``name`` (docmem's name, or :data:`APP_TOOL`)."""

    name: str
    arguments: Mapping[str, str]
    call_id: str


#: One scripted model step.
Step = Union[Say, Use]  # noqa: UP007


@dataclasses.dataclass(frozen=True)
class Injection:
    """How memory reaches the model in one conversation.

    ``kind``: ``"docmem"`` (the adapter, with ``options``), ``"none"`` (the
    adapter's tools with its per-call hook doing nothing: the conversation
    without memory), ``"append"`` (the application appends the recall to the
    history every turn), ``"system"`` (a system prompt rebuilt with the recall
    before every model call) or ``"native"`` (the framework's own memory
    injection, fed docmem's documents).
    """

    kind: str
    label: str
    options: tuple[tuple[str, Any], ...] = ()
    #: The adapter's default placement (the one the issue's goals are about).
    default: bool = False


@dataclasses.dataclass(frozen=True)
class Request:
    """One model call's request in canonical form: one JSON line per item.

    The first line is the tools offered (name, description, parameters, in
    the order sent); then, per message, a line naming its role followed by
    one line per content block: ``{"text": ...}``, ``{"call": {"id", "name",
    "arguments"}}`` or ``{"result": {"id", "text"}}``. System prompts and
    instructions are a ``system`` message first. Ids, timestamps and other
    metadata a framework keeps but a provider is not sent are left out.
    """

    lines: tuple[str, ...]
    #: How many lines run up to and including the newest user message or tool result
    #: (a text block of role user holding no docmem marker, or a tool result block).
    anchor: int
    #: Every text block's text (system prompts included), for counting copies.
    texts: tuple[str, ...]

    @property
    def size(self) -> int:
        """The request's bytes: its lines, UTF-8, each ending with a newline."""
        return sum(len(line.encode()) + 1 for line in self.lines)

    @property
    def tools_size(self) -> int:
        """The bytes of its first line, the tools offered."""
        return len(self.lines[0].encode()) + 1


#: A message: its role and its blocks (``{"text": ...}``, ``{"call": ...}``, ``{"result": ...}``).
Message = tuple[str, list[dict[str, Any]]]

_MEMORY_MARKER = re.compile(r"<!-- docmem:recall [A-Za-z0-9_-]+ -->")


def _line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _arguments(value: object) -> str:
    """Tool-call arguments as canonical JSON (a JSON text is parsed first)."""
    if not isinstance(value, str):
        return _line(value)
    try:
        return _line(json.loads(value))
    except ValueError:
        return value


def _call(ident: object, name: object, arguments: object) -> dict[str, Any]:
    return {"call": {"id": str(ident or ""), "name": str(name), "arguments": _arguments(arguments)}}


def _result(ident: object, text: object) -> dict[str, Any]:
    body = text if isinstance(text, str) else _line(text)
    return {"result": {"id": str(ident or ""), "text": body}}


def request_of(tools: Sequence[Mapping[str, Any]], messages: Sequence[Message]) -> Request:
    """The canonical :class:`Request` of ``tools`` and ``messages``."""
    lines = [_line({"tools": [dict(tool) for tool in tools]})]
    texts: list[str] = []
    anchor = 0
    for role, blocks in messages:
        lines.append(_line({"role": role}))
        for block in blocks:
            lines.append(_line(block))
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
                if role == "user" and not _MEMORY_MARKER.search(text):
                    anchor = len(lines)
            elif "result" in block:
                anchor = len(lines)
    return Request(tuple(lines), anchor, tuple(texts))


def tool_entry(name: object, description: object, parameters: object) -> dict[str, Any]:
    return {"name": str(name), "description": str(description or ""), "parameters": parameters}


class Conversation(Protocol):
    """A framework holding one conversation; :meth:`turn` runs the next user turn."""

    #: Every request the fake model received, in order.
    requests: list[Request]

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        """One user turn: ``text`` in, the model answering with ``steps`` (one per call)."""
        ...


def _documents(slots: Sequence[docmem.MemorySlot], context: Trusted) -> Callable[[], list[str]]:
    """The current documents as docmem renders them: what the naive ways inject."""
    runtime = docmem.MemoryRuntime(slots)
    scope = scope_of(context)
    return lambda: [recall.content for recall in runtime.recall(scope)]


def _with_documents(instructions: str, documents: Sequence[str]) -> str:
    return "\n\n".join([instructions, *documents])


def _adapter(hook: bool, real: type[Any], noop: Callable[[], type[Any]]) -> type[Any]:
    return real if hook else noop()


# openai-agents: Runner.run on ScriptedModel, the history in an SQLiteSession (in memory).


def _openai_agents_request(call: Any) -> Request:
    messages: list[Message] = []
    if call.system_instructions:
        messages.append(("system", [{"text": call.system_instructions}]))
    items = (
        call.input if not isinstance(call.input, str) else [{"role": "user", "content": call.input}]
    )
    for item in items:
        data = item if isinstance(item, Mapping) else item.model_dump(exclude_none=True)
        kind = data.get("type")
        if kind == "function_call":
            call_block = _call(data.get("call_id"), data.get("name"), data.get("arguments"))
            messages.append(("assistant", [call_block]))
        elif kind == "function_call_output":
            messages.append(("tool", [_result(data.get("call_id"), data.get("output"))]))
        else:
            messages.append((str(data.get("role")), _text_blocks(data.get("content"))))
    tools = [
        tool_entry(tool.name, tool.description, tool.params_json_schema)
        for tool in call.tools
        if hasattr(tool, "params_json_schema")
    ]
    return request_of(tools, messages)


def _text_blocks(content: object) -> list[dict[str, Any]]:
    """A message content (a string, or parts with a ``text``) as text blocks."""
    if isinstance(content, str):
        return [{"text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, Sequence) else ():
        text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
        if isinstance(text, str):
            blocks.append({"text": text})
    return blocks


class _OpenAIAgentsTalk:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
        from agents.testing import ScriptedModel, assistant_message, function_call

        from docmem.integrations.openai_agents import DocmemMemory

        kind = _adapter(injection.kind == "docmem", DocmemMemory, _noop_openai_agents)
        memory = kind(slots, scope_context=scope_of, **dict(injection.options))
        documents = _documents(slots, context)

        def rebuilt(wrapper: Any, agent: Any) -> str:
            return _with_documents(INSTRUCTIONS, documents())

        self._model = ScriptedModel()
        self._agent = Agent[Trusted](
            name="support",
            instructions=rebuilt if injection.kind == "system" else INSTRUCTIONS,
            tools=[*memory.tools(), function_tool(lookup_order)],
            model=self._model,
        )
        self._config = memory.run_config(RunConfig(tracing_disabled=True))
        self._session = SQLiteSession("prompt-cache")
        self._run = Runner.run
        self._say = assistant_message
        self._use = function_call
        self._append = documents if injection.kind == "append" else None
        self._context = context
        self._loop = loop
        self.requests: list[Request] = []

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        for step in steps:
            number = self._model.remaining_steps + len(self._model.calls)
            if isinstance(step, Say):
                self._model.enqueue([self._say(step.text, item_id=f"msg_{number}")])
            else:
                use = self._use(
                    step.name, dict(step.arguments), call_id=step.call_id, item_id=f"fc_{number}"
                )
                self._model.enqueue([use])
        asked: Any = text
        if self._append is not None:
            recalled = [{"role": "user", "content": document} for document in self._append()]
            asked = [*recalled, {"role": "user", "content": text}]
        seen = len(self._model.calls)

        async def run() -> None:
            await self._run(
                self._agent,
                asked,
                context=self._context,
                session=self._session,
                run_config=self._config,
                max_turns=len(steps) + 1,
            )

        self._loop.run_until_complete(run())
        self.requests.extend(_openai_agents_request(c) for c in self._model.calls[seen:])


# pydantic-ai: Agent.run on FunctionModel, the history as all_messages().


def _pydantic_ai_request(messages: Sequence[Any], info: Any) -> Request:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextContent,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    found: list[Message] = []
    if info.instructions:
        found.append(("system", [{"text": info.instructions}]))
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:  # one message per part, as OpenAI's chat API gets them
                if isinstance(part, SystemPromptPart):
                    found.append(("system", [{"text": part.content}]))
                elif isinstance(part, UserPromptPart):
                    content = [part.content] if isinstance(part.content, str) else part.content
                    texts = [
                        item if isinstance(item, str) else item.content
                        for item in content
                        if isinstance(item, (str, TextContent))
                    ]
                    found.append(("user", [{"text": text} for text in texts]))
                elif isinstance(part, ToolReturnPart):
                    found.append(("tool", [_result(part.tool_call_id, part.model_response_str())]))
                elif isinstance(part, RetryPromptPart):
                    found.append(("tool", [_result(part.tool_call_id, part.model_response())]))
        elif isinstance(message, ModelResponse):
            blocks: list[dict[str, Any]] = []
            for item in message.parts:
                if isinstance(item, TextPart):
                    blocks.append({"text": item.content})
                elif isinstance(item, ToolCallPart):
                    blocks.append(_call(item.tool_call_id, item.tool_name, item.args))
            found.append(("assistant", blocks))
    tools = [
        tool_entry(tool.name, tool.description, tool.parameters_json_schema)
        for tool in info.function_tools
    ]
    return request_of(tools, found)


class _PydanticAITalk:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        from docmem.integrations.pydantic_ai import DocmemCapability

        kind = _adapter(injection.kind == "docmem", DocmemCapability, _noop_pydantic_ai)
        capability = kind(slots, scope_context=scope_of, **dict(injection.options))
        documents = _documents(slots, context)
        self.requests: list[Request] = []
        self._steps: list[Step] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.requests.append(_pydantic_ai_request(messages, info))
            step = self._steps.pop(0)
            if isinstance(step, Say):
                return ModelResponse(parts=[TextPart(step.text)])
            arguments = json.dumps(dict(step.arguments))
            return ModelResponse(
                parts=[ToolCallPart(step.name, arguments, tool_call_id=step.call_id)]
            )

        def rebuilt() -> str:
            return _with_documents(INSTRUCTIONS, documents())

        prompt: dict[str, Any] = (
            {"instructions": rebuilt}
            if injection.kind == "system"
            else {"system_prompt": INSTRUCTIONS}
        )
        self._agent = Agent(
            FunctionModel(respond),
            deps_type=Trusted,
            tools=[lookup_order],
            capabilities=[capability],
            **prompt,
        )
        self._history: list[ModelMessage] = []
        self._append = documents if injection.kind == "append" else None
        self._context = context
        self._loop = loop

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        self._steps.extend(steps)
        asked: Any = [*self._append(), text] if self._append is not None else text

        async def run() -> Any:
            return await self._agent.run(asked, deps=self._context, message_history=self._history)

        self._history = self._loop.run_until_complete(run()).all_messages()


# langchain: create_agent(...).invoke on RecordingFakeChatModel, the history in a checkpointer.


def _langchain_request(call: Any) -> Request:
    found: list[Message] = []
    for message in call.messages:
        kind = message.type
        if kind == "tool":
            found.append(("tool", [_result(message.tool_call_id, message.content)]))
        elif kind == "ai":
            blocks = _text_blocks(message.content)
            blocks.extend(_call(c["id"], c["name"], c["args"]) for c in message.tool_calls)
            found.append(("assistant", blocks))
        else:
            role = {"system": "system", "human": "user"}.get(kind, str(kind))
            found.append((role, _text_blocks(message.content)))
    tools = [
        tool_entry(
            tool["function"]["name"],
            tool["function"].get("description"),
            tool["function"].get("parameters"),
        )
        for tool in call.tools
    ]
    return request_of(tools, found)


class _LangChainTalk:
    asynchronous = False

    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from langchain.agents import create_agent
        from langchain.agents.middleware import AgentMiddleware, ModelRequest, dynamic_prompt
        from langchain_core.messages import AIMessage, HumanMessage
        from langchain_core.tools import StructuredTool
        from langgraph.checkpoint.memory import InMemorySaver

        from docmem.integrations.langchain import DocmemMiddleware
        from docmem.testing.langchain_model import RecordingFakeChatModel

        kind = _adapter(injection.kind == "docmem", DocmemMiddleware, _noop_langchain)
        documents = _documents(slots, context)
        middleware: list[AgentMiddleware[Any, Any, Any]] = [
            kind(slots, scope_context=scope_of, **dict(injection.options))
        ]
        if injection.kind == "system":

            @dynamic_prompt
            def rebuilt(request: ModelRequest[Any]) -> str:
                return _with_documents(INSTRUCTIONS, documents())

            middleware.append(rebuilt)
        self._answers: collections.deque[AIMessage] = collections.deque()

        def answers() -> Iterator[AIMessage]:
            while self._answers:
                yield self._answers.popleft()

        self._model = RecordingFakeChatModel(messages=answers())
        self._agent = create_agent(
            self._model,
            tools=[StructuredTool.from_function(lookup_order)],
            system_prompt=INSTRUCTIONS,
            context_schema=Trusted,
            middleware=middleware,
            checkpointer=InMemorySaver(),
        )
        self._ai = AIMessage
        self._human = HumanMessage
        self._append = documents if injection.kind == "append" else None
        self._context = context
        self._loop = loop
        self.requests: list[Request] = []

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        for step in steps:
            if isinstance(step, Say):
                self._answers.append(self._ai(step.text))
            else:
                call = {"name": step.name, "args": dict(step.arguments), "id": step.call_id}
                self._answers.append(self._ai("", tool_calls=[call]))
        recalled = self._append() if self._append is not None else []
        state: Any = {"messages": [*map(self._human, recalled), self._human(text)]}
        config: Any = {"configurable": {"thread_id": "prompt-cache"}}
        seen = len(self._model.calls)
        if self.asynchronous:
            self._loop.run_until_complete(self._agent.ainvoke(state, config, context=self._context))
        else:
            self._agent.invoke(state, config, context=self._context)
        self.requests.extend(_langchain_request(call) for call in self._model.calls[seen:])


class _LangChainAsyncTalk(_LangChainTalk):
    """The same agent through ``ainvoke``, so the hook is ``awrap_model_call``."""

    asynchronous = True


# google-adk: Runner.run_async on ScriptedLlm, one session in an InMemorySessionService.


def _adk_request(record: Any) -> Request:
    found: list[Message] = []
    if record.system_instruction:
        found.append(("system", [{"text": record.system_instruction}]))
    for content in record.contents:
        blocks: list[dict[str, Any]] = []
        for part in content.parts or []:
            if part.function_call is not None:
                call = part.function_call
                blocks.append(_call(call.id, call.name, call.args or {}))
            elif part.function_response is not None:
                response = part.function_response
                blocks.append(_result(response.id, response.response or {}))
            elif part.text is not None:
                blocks.append({"text": part.text})
        found.append((content.role or "", blocks))
    tools = []
    for declaration in record.tools.values():
        parameters = declaration.parameters_json_schema
        if parameters is None and declaration.parameters is not None:
            parameters = declaration.parameters.model_dump(mode="json", exclude_none=True)
        tools.append(tool_entry(declaration.name, declaration.description, parameters))
    return request_of(tools, found)


def _adk_memory_service(documents: Callable[[], list[str]]) -> Any:
    """An ADK memory service whose every search finds docmem's documents."""
    from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
    from google.adk.memory.memory_entry import MemoryEntry
    from google.genai import types

    class DocumentMemory(BaseMemoryService):
        async def add_session_to_memory(self, session: Any) -> None:
            return None

        async def search_memory(
            self, *, app_name: str, user_id: str, query: str
        ) -> SearchMemoryResponse:
            return SearchMemoryResponse(
                memories=[
                    MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=doc)]))
                    for doc in documents()
                ]
            )

    return DocumentMemory()


class _GoogleADKTalk:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from google.adk.agents import LlmAgent
        from google.adk.apps import App
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService
        from google.adk.tools.preload_memory_tool import PreloadMemoryTool
        from google.genai import types

        from docmem.integrations.google_adk import DocmemToolset
        from docmem.testing.adk_model import ScriptedLlm

        kind = _adapter(injection.kind == "docmem", DocmemToolset, _noop_google_adk)
        toolset = kind(
            slots,
            scope_context=lambda ctx: scope_of(Trusted(ctx.user_id)),
            **dict(injection.options),
        )
        documents = _documents(slots, context)

        def rebuilt(ctx: Any) -> str:
            return _with_documents(INSTRUCTIONS, documents())

        tools: list[Any] = [toolset, lookup_order]
        memory = None
        if injection.kind == "native":
            tools.append(PreloadMemoryTool())
            memory = _adk_memory_service(documents)
        self._model = ScriptedLlm()
        agent = LlmAgent(
            name="support",
            model=self._model,
            instruction=rebuilt if injection.kind == "system" else INSTRUCTIONS,
            tools=tools,
        )
        sessions = InMemorySessionService()
        self._runner = Runner(
            app=App(name="bench", root_agent=agent), session_service=sessions, memory_service=memory
        )
        self._session = loop.run_until_complete(
            sessions.create_session(app_name="bench", user_id=context.user)
        ).id
        self._types = types
        self._append = documents if injection.kind == "append" else None
        self._user = context.user
        self._loop = loop
        self.requests: list[Request] = []

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        types = self._types
        for step in steps:
            self._model.script.append(
                step.text
                if isinstance(step, Say)
                else types.FunctionCall(name=step.name, args=dict(step.arguments), id=step.call_id)
            )
        recalled = self._append() if self._append is not None else []
        parts = [types.Part(text=document) for document in [*recalled, text]]
        asked = types.Content(role="user", parts=parts)
        seen = len(self._model.requests)

        async def run() -> None:
            async for _ in self._runner.run_async(
                user_id=self._user, session_id=self._session, new_message=asked
            ):
                pass

        self._loop.run_until_complete(run())
        self.requests.extend(_adk_request(r) for r in self._model.requests[seen:])


# strands: Agent.invoke_async on ScriptedModel, the history in the agent's messages.


def _strands_request(call: Any) -> Request:
    found: list[Message] = []
    system = call.system_prompt
    if system is None and call.system_prompt_content:
        system = "\n".join(block.get("text", "") for block in call.system_prompt_content)
    if system:
        found.append(("system", [{"text": system}]))
    for message in call.messages:
        blocks: list[dict[str, Any]] = []
        for block in message["content"]:
            if "text" in block:
                blocks.append({"text": block["text"]})
            elif "toolUse" in block:
                use = block["toolUse"]
                blocks.append(_call(use["toolUseId"], use["name"], use["input"]))
            elif "toolResult" in block:
                result = block["toolResult"]
                text = "\n".join(
                    item["text"] if "text" in item else _line(item) for item in result["content"]
                )
                found_result = _result(result["toolUseId"], text)
                found_result["result"]["status"] = result.get("status")
                blocks.append(found_result)
            else:
                blocks.append({"other": _line(block)})
        found.append((message["role"], blocks))
    tools = [
        tool_entry(spec["name"], spec.get("description"), spec.get("inputSchema", {}).get("json"))
        for spec in call.tool_specs
    ]
    return request_of(tools, found)


class _StrandsTalk:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from strands import Agent, tool
        from strands.agent.conversation_manager import NullConversationManager
        from strands.hooks import BeforeModelCallEvent
        from strands.vended_plugins.context_injector import ContextInjector

        from docmem.integrations.strands import DocmemPlugin
        from docmem.testing.strands_model import ScriptedModel

        kind = _adapter(injection.kind == "docmem", DocmemPlugin, _noop_strands)
        documents = _documents(slots, context)
        plugins: list[Any] = [
            kind(
                slots,
                scope_context=lambda state: scope_of(state["trusted"]),
                **dict(injection.options),
            )
        ]
        if injection.kind == "native":
            # Strands' own injection, with the trigger that also covers tool-result calls
            # (its default, "userTurn", skips them: the call after a save would have none).
            plugins.append(
                ContextInjector(lambda ctx: "\n\n".join(documents()), trigger="everyTurn")
            )
        self._model = ScriptedModel()
        # The whole history, as every other framework here keeps it: Strands' default
        # manager (a sliding window of 40 messages) drops the conversation's first
        # messages once it is longer, which changes every request from its start.
        self._agent = Agent(
            self._model,
            system_prompt=INSTRUCTIONS,
            tools=[tool(lookup_order)],
            plugins=plugins,
            callback_handler=None,
            conversation_manager=NullConversationManager(),
        )
        if injection.kind == "system":

            def rebuilt(event: BeforeModelCallEvent) -> None:
                event.agent.system_prompt = _with_documents(INSTRUCTIONS, documents())

            self._agent.add_hook(rebuilt, BeforeModelCallEvent)
        self._append = documents if injection.kind == "append" else None
        self._state = {"trusted": context}
        self._loop = loop
        self.requests: list[Request] = []

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        scripted: list[Any] = [
            step.text
            if isinstance(step, Say)
            else {"name": step.name, "input": dict(step.arguments), "toolUseId": step.call_id}
            for step in steps
        ]
        self._model.add(*scripted)
        asked: Any = text
        if self._append is not None:
            asked = [{"text": document} for document in [*self._append(), text]]
        seen = len(self._model.calls)
        self._loop.run_until_complete(self._agent.invoke_async(asked, invocation_state=self._state))
        self.requests.extend(_strands_request(call) for call in self._model.calls[seen:])


# llama-index: DocmemFunctionAgent.run on MockFunctionCallingLLM, the history in a memory.


def _llama_index_request(messages: Sequence[Any], tools: Sequence[Any]) -> Request:
    from llama_index.core.base.llms.types import TextBlock, ToolCallBlock

    found: list[Message] = []
    for message in messages:
        role = message.role.value
        texts = [block.text for block in message.blocks if isinstance(block, TextBlock)]
        if role == "tool":
            ident = message.additional_kwargs.get("tool_call_id")
            found.append(("tool", [_result(ident, "".join(texts))]))
            continue
        blocks: list[dict[str, Any]] = []
        for block in message.blocks:
            if isinstance(block, TextBlock):
                blocks.append({"text": block.text})
            elif isinstance(block, ToolCallBlock):
                blocks.append(_call(block.tool_call_id, block.tool_name, block.tool_kwargs))
        found.append((role, blocks))
    offered = []
    for tool in tools:
        function = tool.metadata.to_openai_tool()["function"]
        offered.append(
            tool_entry(function["name"], function.get("description"), function.get("parameters"))
        )
    return request_of(offered, found)


class _DocumentsBlock:
    """Built on demand: a LlamaIndex memory block rendering docmem's documents (its own import)."""

    @staticmethod
    def make(documents: Callable[[], list[str]]) -> Any:
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.memory.memory import BaseMemoryBlock

        class DocumentsBlock(BaseMemoryBlock[str]):
            async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> str:
                return "\n\n".join(documents())

            async def _aput(self, messages: list[ChatMessage]) -> None:
                return None

        return DocumentsBlock(name="docmem", accept_short_term_memory=False)


class _LlamaIndexTalk:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        from llama_index.core.agent.workflow import AgentOutput
        from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
        from llama_index.core.llms.mock import MockFunctionCallingLLM
        from llama_index.core.memory import BaseMemory, ChatMemoryBuffer, Memory
        from llama_index.core.tools import AsyncBaseTool, FunctionTool
        from llama_index.core.workflow import Context

        from docmem.integrations.llama_index import DocmemFunctionAgent, set_trusted

        base = _adapter(injection.kind == "docmem", DocmemFunctionAgent, _noop_llama_index)
        documents = _documents(slots, context)

        class Rebuilt(base):  # type: ignore[misc, valid-type]
            """The step with its system prompt rebuilt from the documents, every model call."""

            async def take_step(
                self,
                ctx: Any,
                llm_input: list[ChatMessage],
                tools: Sequence[AsyncBaseTool],
                memory: BaseMemory,
            ) -> AgentOutput:
                system = _with_documents(INSTRUCTIONS, documents())
                rebuilt = [
                    ChatMessage(role=MessageRole.SYSTEM, content=system)
                    if number == 0 and message.role == MessageRole.SYSTEM
                    else message
                    for number, message in enumerate(llm_input)
                ]
                output: AgentOutput = await super().take_step(ctx, rebuilt, tools, memory)
                return output

        self.requests: list[Request] = []
        self._steps: list[Step] = []

        def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
            self.requests.append(_llama_index_request(messages, kwargs.get("tools") or []))
            step = self._steps.pop(0)
            if isinstance(step, Say):
                return ChatMessage(role="assistant", content=step.text)
            block = ToolCallBlock(
                tool_call_id=step.call_id, tool_name=step.name, tool_kwargs=dict(step.arguments)
            )
            return ChatMessage(role="assistant", blocks=[block])

        kind = Rebuilt if injection.kind == "system" else base
        self._agent = kind(
            slots,
            scope_context=lambda user: scope_of(Trusted(user)),
            llm=MockFunctionCallingLLM(response_generator=respond),
            tools=[FunctionTool.from_defaults(lookup_order)],
            system_prompt=INSTRUCTIONS,
            streaming=False,
            **dict(injection.options),
        )
        # A limit the conversation never reaches: no message leaves the history.
        self._memory: BaseMemory
        if injection.kind == "native":
            self._memory = Memory.from_defaults(
                session_id="prompt-cache",
                token_limit=1_000_000,
                memory_blocks=[_DocumentsBlock.make(documents)],
            )
        else:
            self._memory = ChatMemoryBuffer.from_defaults(token_limit=1_000_000)
        self._new_context = Context
        self._message = ChatMessage
        self._set_trusted = set_trusted
        self._append = documents if injection.kind == "append" else None
        self._user = context.user
        self._loop = loop

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        self._steps.extend(steps)

        async def run() -> None:
            if self._append is not None:
                recalled = [self._message(role="user", content=doc) for doc in self._append()]
                await self._memory.aput_messages(recalled)
            ctx = self._new_context(self._agent)
            await self._set_trusted(ctx, self._user)
            await self._agent.run(text, ctx=ctx, memory=self._memory)

        self._loop.run_until_complete(run())


# crewai: a standalone Agent.kickoff per turn on ScriptedLLM, the history passed in.


def _crewai_request(call: Any) -> Request:
    found: list[Message] = []
    for message in call.messages:
        role = str(message.get("role"))
        content = message.get("content")
        if role == "tool":
            found.append(("tool", [_result(message.get("tool_call_id"), content or "")]))
            continue
        blocks = _text_blocks(content)
        for item in message.get("tool_calls") or []:
            function = item.get("function") or {}
            blocks.append(_call(item.get("id"), function.get("name"), function.get("arguments")))
        found.append((role, blocks))
    tools = [
        tool_entry(
            tool["function"]["name"],
            tool["function"].get("description"),
            tool["function"].get("parameters"),
        )
        for tool in call.tools
    ]
    return request_of(tools, found)


#: Where the naive CrewAI row's documents start in the system prompt it rebuilds.
_CREWAI_DOCUMENTS = "\n\n# Memory: "


class _CrewAITalk:
    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        context: Trusted,
        injection: Injection,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # offline: nothing to upload
        os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
        from crewai import Agent  # type: ignore[import-not-found, unused-ignore]  # its own venv
        from crewai.events.utils.console_formatter import (  # type: ignore[import-not-found, unused-ignore]
            set_suppress_console_output,
        )
        from crewai.hooks.dispatch import (  # type: ignore[import-not-found, unused-ignore]
            InterceptionPoint,
            get_scoped_hooks,
            scoped_hooks,
        )
        from crewai.tools import BaseTool  # type: ignore[import-not-found, unused-ignore]

        from docmem.integrations.crewai import DocmemMemory, crewai_tool_name
        from docmem.testing.crewai_model import ScriptedLLM, tool_call

        _quiet_crewai(set_suppress_console_output)

        kind = _adapter(injection.kind == "docmem", DocmemMemory, _noop_crewai)
        self._memory = kind(slots, **dict(injection.options))
        documents = _documents(slots, context)

        class LookupOrder(BaseTool):  # type: ignore[misc, unused-ignore]
            name: str = APP_TOOL
            description: str = "Look up the status of an order by its id."

            def _run(self, order_id: str) -> str:
                return lookup_order(order_id)

        self._lookup = LookupOrder()

        def rebuilt(hook: Any) -> None:
            for message in hook.messages:
                if message.get("role") == "system":
                    base = str(message.get("content") or "").split(_CREWAI_DOCUMENTS, 1)[0]
                    message["content"] = _with_documents(base, documents())
                    return

        self._hooks: Any = None
        if injection.kind == "system":
            hooks = {point: get_scoped_hooks(point) for point in InterceptionPoint}
            hooks[InterceptionPoint.PRE_MODEL_CALL] = [
                *hooks[InterceptionPoint.PRE_MODEL_CALL],
                rebuilt,
            ]
            self._hooks = lambda: scoped_hooks(hooks)
        self._agent = Agent
        self._llm = ScriptedLLM
        self._tool_call = tool_call
        self._name = crewai_tool_name
        self._append = documents if injection.kind == "append" else None
        self._scope = scope_of(context)
        self._history: list[dict[str, Any]] = []
        self.requests: list[Request] = []

    def turn(self, text: str, steps: Sequence[Step]) -> None:
        script = [
            step.text
            if isinstance(step, Say)
            else self._tool_call(
                step.name if step.name == APP_TOOL else self._name(step.name),
                step.arguments,
                step.call_id,
            )
            for step in steps
        ]
        llm = self._llm(script=script)
        agent = self._agent(
            role="support",
            goal="Answer the user.",
            backstory=INSTRUCTIONS,
            llm=llm,
            tools=[*self._memory.tools, self._lookup],
        )
        recalled = self._append() if self._append is not None else []
        asked = [
            *self._history,
            *({"role": "user", "content": document} for document in recalled),
            {"role": "user", "content": text},
        ]
        with contextlib.ExitStack() as stack:
            if self._hooks is not None:
                stack.enter_context(self._hooks())
            stack.enter_context(self._memory.scope(self._scope))
            # CrewAI prints a panel per standalone kickoff: out of the report.
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            output = agent.kickoff(asked)
        self._history = [
            {key: value for key, value in message.items() if key != "cache_breakpoint"}
            for message in output.messages
            if message["role"] != "system"
        ]
        self.requests.extend(_crewai_request(call) for call in llm.calls)


_CONVERSATIONS: dict[str, Callable[..., Conversation]] = {
    "openai-agents": _OpenAIAgentsTalk,
    "pydantic-ai": _PydanticAITalk,
    "langchain": _LangChainTalk,
    "langchain-async": _LangChainAsyncTalk,
    "google-adk": _GoogleADKTalk,
    "strands": _StrandsTalk,
    "llama-index": _LlamaIndexTalk,
    "crewai": _CrewAITalk,
}

_AFTER_SYSTEM = "docmem, after_system (default)"
_BEFORE_LAST_USER = "docmem, before_last_user"
_DEFAULT = Injection("docmem", _AFTER_SYSTEM, default=True)
_LAST_USER = Injection("docmem", _BEFORE_LAST_USER, (("position", "before_last_user"),))
_APPEND = Injection("append", "naive: recall appended to the history each turn")
_SYSTEM = Injection("system", "naive: system prompt rebuilt each call")

#: What runs through each framework, in report order: docmem's placements, then the
#: naive ways, then the framework's own memory injection where one ships.
INJECTIONS: dict[str, tuple[Injection, ...]] = {
    "openai-agents": (
        _DEFAULT,
        _LAST_USER,
        Injection("docmem", "docmem, placement=instructions", (("placement", "instructions"),)),
        _APPEND,
        _SYSTEM,
    ),
    "pydantic-ai": (_DEFAULT, _LAST_USER, _APPEND, _SYSTEM),
    "langchain": (
        _DEFAULT,
        _LAST_USER,
        Injection("docmem", "docmem, persist=True", (("persist", True),)),
        _APPEND,
        _SYSTEM,
    ),
    # The async hooks (awrap_model_call, abefore_model) are code of their own: docmem only.
    "langchain-async": (
        _DEFAULT,
        _LAST_USER,
        Injection("docmem", "docmem, persist=True", (("persist", True),)),
    ),
    "google-adk": (
        _DEFAULT,
        _LAST_USER,
        Injection("docmem", "docmem, placement=instructions", (("placement", "instructions"),)),
        _APPEND,
        _SYSTEM,
        Injection("native", "ADK PreloadMemoryTool + a memory service"),
    ),
    "strands": (
        _DEFAULT,
        _LAST_USER,
        Injection("docmem", "docmem, placement=instructions", (("placement", "instructions"),)),
        _APPEND,
        _SYSTEM,
        Injection("native", "Strands ContextInjector (trigger=everyTurn)"),
    ),
    "llama-index": (
        _DEFAULT,
        _LAST_USER,
        _APPEND,
        _SYSTEM,
        Injection("native", "LlamaIndex Memory + a memory block"),
    ),
    "crewai": (_DEFAULT, _LAST_USER, _APPEND, _SYSTEM),
}

#: Why a framework has no row of its own memory injection.
NATIVE_SKIPPED: dict[str, str] = {
    "openai-agents": "ships none: agents.memory is its conversation Session, not long-term memory",
    "pydantic-ai": "ships none per request: its MemoryTool is Anthropic's server-side memory tool, "
    "which needs the Anthropic API",
    "langchain": "ships none: long-term memory is a LangGraph store the application reads itself "
    "(in a @dynamic_prompt, as the naive system row does)",
    "crewai": "its Memory needs an embedder and an LLM to extract and recall (OpenAI by default, "
    "online), and writes the recall into each task's prompt once",
}

#: The conversation without memory, for the ideal: the adapter's tools, its hook doing nothing.
WITHOUT_MEMORY = Injection("none", "no memory (the conversation alone)")


def conversation(
    framework: Framework,
    slots: Sequence[docmem.MemorySlot],
    context: Trusted,
    injection: Injection,
    loop: asyncio.AbstractEventLoop,
) -> Conversation:
    """``framework`` holding one conversation of ``context`` on ``slots``, memory as ``injection``.

    Raises :class:`ImportError` when the framework is not installed.
    """
    return _CONVERSATIONS[framework.key](slots, context, injection, loop)
