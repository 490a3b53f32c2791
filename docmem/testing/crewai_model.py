"""A scripted CrewAI ``BaseLLM`` that records what every call was sent, tools included.

CrewAI ships no offline model. :class:`ScriptedLLM` answers each call with the
next step of its script and keeps a deep copy of what the agent handed it:
the messages (after every ``before_llm_call`` hook, so exactly what a provider
would have formatted and sent) and the tool schemas in the OpenAI shape CrewAI
builds them in::

    from docmem.testing.crewai_model import ScriptedLLM, tool_call

    llm = ScriptedLLM(script=[
        tool_call("user_save_memory", {"text": "Likes tea."}, "call_1"),
        "Noted.",
    ])
    agent = Agent(role="...", goal="...", backstory="...", llm=llm, tools=[...])
    ...  # a Crew, then crew.kickoff() or await crew.akickoff()
    llm.calls[1].messages, llm.calls[1].tool_names

A step is the assistant's answer: a string (a text reply that ends the
agent's task), one tool call as :func:`tool_call` builds it (an OpenAI-style
dict), or a list of tool calls (one response with several, which CrewAI runs
in parallel). Like a real provider it emits CrewAI's ``LLMCallStartedEvent``
and ``LLMCallCompletedEvent``, so listeners and checkpoints triggered on
them fire. ``function_calling=False`` makes it report no native tool
calling, so CrewAI falls back to its text (ReAct) tool protocol.

Import it explicitly; ``docmem.testing`` does not, so that importing the
conformance suite never needs CrewAI. It needs only the ``crewai`` extra:
importing it loads neither pytest nor hypothesis.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

try:
    from crewai.events.types.llm_events import LLMCallType
    from crewai.llms.base_llm import BaseLLM, llm_call_context
    from pydantic import PrivateAttr
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'docmem.testing.crewai_model needs CrewAI: pip install "agent-docmem[crewai]"'
    ) from error

__all__ = ["RecordedCall", "ScriptedLLM", "Step", "tool_call"]

#: One scripted answer: text, one tool call, or the several tool calls of one response.
Step = Union[str, Mapping[str, Any], Sequence[Mapping[str, Any]]]  # noqa: UP007


def tool_call(name: str, arguments: Mapping[str, Any], call_id: str) -> dict[str, Any]:
    """One tool call as an OpenAI-style provider returns it (arguments as a JSON text)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(dict(arguments))},
    }


@dataclass
class RecordedCall:
    """One model call as the model received it (deep copies: later edits do not show)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools this call offered the model, in order."""
        return [tool["function"]["name"] for tool in self.tools]


class ScriptedLLM(BaseLLM):
    """A ``BaseLLM`` that answers from ``script`` and records every call in ``calls``.

    One instance may serve concurrent runs (``akickoff`` and CrewAI's worker
    threads included): the script is answered in call order. A call past its
    end raises ``RuntimeError`` naming the call.
    """

    model: str = "scripted"
    script: list[Any] = []  # noqa: RUF012 - pydantic copies field defaults
    function_calling: bool = True

    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        data.setdefault("model", "scripted")  # BaseLLM refuses a call without a model name
        super().__init__(**data)

    @property
    def calls(self) -> list[RecordedCall]:
        """Every call answered so far, in order."""
        return self._calls

    def add(self, *steps: Step) -> None:
        """Append ``steps`` to the script (for a test that scripts turn by turn)."""
        with self._lock:
            self.script.extend(steps)

    def supports_function_calling(self) -> bool:
        """What the constructor was told: native tool calls, or CrewAI's text protocol."""
        return self.function_calling

    def supports_stop_words(self) -> bool:
        """No stop words: the script is the whole answer."""
        return False

    def get_context_window_size(self) -> int:
        """A large window, so CrewAI never summarizes a scripted conversation."""
        return 1_000_000

    def get_input_tokens_count(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        response_model: Any | None = None,
    ) -> int:
        """One token per four characters, as CrewAI estimates, without its per-call warning."""
        listed = [messages] if isinstance(messages, str) else messages
        text = "".join(m if isinstance(m, str) else str(m.get("content") or "") for m in listed)
        return (len(text) + 3) // 4

    def call(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any | None = None,
        from_agent: Any | None = None,
        response_model: Any | None = None,
    ) -> str | Any:
        """Record the call and answer with the next step of the script."""
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages, tools=tools, from_task=from_task, from_agent=from_agent
            )
            answer = self._answer(messages, tools)
            kind = LLMCallType.LLM_CALL if isinstance(answer, str) else LLMCallType.TOOL_CALL
            self._emit_call_completed_event(
                response=answer,
                call_type=kind,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
            )
            return answer

    async def acall(
        self,
        messages: str | list[Any],
        tools: list[dict[str, Any]] | None = None,
        callbacks: list[Any] | None = None,
        available_functions: dict[str, Any] | None = None,
        from_task: Any | None = None,
        from_agent: Any | None = None,
        response_model: Any | None = None,
    ) -> str | Any:
        """:meth:`call`, for ``akickoff``."""
        return self.call(
            messages,
            tools,
            callbacks,
            available_functions,
            from_task,
            from_agent,
            response_model,
        )

    def _answer(self, messages: str | list[Any], tools: list[dict[str, Any]] | None) -> Any:
        listed = [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        record = RecordedCall(copy.deepcopy(list(listed)), copy.deepcopy(list(tools or [])))
        with self._lock:  # one script, answered in call order even from threads
            number = len(self._calls)
            self._calls.append(record)
            if number >= len(self.script):
                raise RuntimeError(f"ScriptedLLM: the script has no answer for call {number}")
            step = self.script[number]
        if isinstance(step, str):
            return step
        if isinstance(step, Mapping):
            return [copy.deepcopy(dict(step))]
        return [copy.deepcopy(dict(item)) for item in step]
