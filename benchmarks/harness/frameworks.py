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
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import docmem

from .timing import Sample

__all__ = [
    "FRAMEWORKS",
    "PROMPT",
    "REPLY",
    "Framework",
    "OneCall",
    "Trusted",
    "one_call",
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
        from agents.run_config import CallModelData, ModelInputData
        from agents.testing import ScriptedModel, assistant_message

        from docmem.integrations.openai_agents import DocmemMemory

        class NoopMemory(DocmemMemory[Trusted]):
            """docmem's tools, and an input filter that hands the request back unchanged."""

            async def input_filter(self, data: CallModelData[Any]) -> ModelInputData:
                return data.model_data

        kind = DocmemMemory if hook else NoopMemory
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
        from pydantic_ai import Agent, RunContext
        from pydantic_ai.messages import (
            ModelMessage,
            ModelRequest,
            ModelResponse,
            TextContent,
            TextPart,
            UserPromptPart,
        )
        from pydantic_ai.models import ModelRequestContext
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        from docmem.integrations.pydantic_ai import DocmemCapability

        class NoopCapability(DocmemCapability[Trusted]):
            """docmem's toolset, and a ``before_model_request`` that changes nothing."""

            async def before_model_request(
                self, ctx: RunContext[Trusted], request_context: ModelRequestContext
            ) -> ModelRequestContext:
                return request_context

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

        kind = DocmemCapability if hook else NoopCapability
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
        from langchain.agents.middleware import ModelRequest
        from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
        from langchain_core.messages import AIMessage, HumanMessage

        from docmem.integrations.langchain import DocmemMiddleware
        from docmem.testing.langchain_model import RecordingFakeChatModel

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

        kind = DocmemMiddleware if hook else NoopMiddleware
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
        from google.adk.models.llm_request import LlmRequest
        from google.adk.runners import Runner
        from google.adk.sessions import InMemorySessionService
        from google.adk.tools.tool_context import ToolContext
        from google.genai import types

        from docmem.integrations.google_adk import DocmemToolset
        from docmem.testing.adk_model import ScriptedLlm

        class NoopToolset(DocmemToolset):
            """docmem's tools, and a ``process_llm_request`` that leaves the request as it is."""

            async def process_llm_request(
                self, *, tool_context: ToolContext, llm_request: LlmRequest
            ) -> None:
                return None

        kind = DocmemToolset if hook else NoopToolset
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
        from strands.middleware import InvokeModelContext

        from docmem.integrations.strands import DocmemPlugin
        from docmem.testing.strands_model import ScriptedModel

        class NoopPlugin(DocmemPlugin):
            """docmem's tools and run identity, and a middleware that passes the call on."""

            async def _before_model_call(self, context: InvokeModelContext) -> InvokeModelContext:
                return context

        kind = DocmemPlugin if hook else NoopPlugin
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
        from llama_index.core.agent.workflow import AgentOutput, FunctionAgent
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.llms.mock import MockFunctionCallingLLM
        from llama_index.core.memory import BaseMemory, ChatMemoryBuffer
        from llama_index.core.tools import AsyncBaseTool
        from llama_index.core.workflow import Context

        from docmem.integrations.llama_index import DocmemFunctionAgent, set_trusted

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

        sent: list[list[ChatMessage]] = [[]]

        def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
            sent[0] = list(messages)
            return ChatMessage(role="assistant", content=REPLY)

        kind = DocmemFunctionAgent if hook else NoopAgent
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

        from docmem.integrations.crewai import DocmemMemory
        from docmem.testing.crewai_model import ScriptedLLM

        class NoopMemory(DocmemMemory):
            """docmem's tools and scope, and a ``before_llm_call`` hook doing nothing."""

            def _before_model_call(self, context: Any) -> None:
                return None

        kind = DocmemMemory if hook else NoopMemory
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
