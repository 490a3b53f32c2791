"""A scripted Google ADK model that records every request it was sent, tools included.

ADK ships no offline model that imports without pytest (``MockModel`` lives
under ``google.adk.cli`` and records requests by reference, so a later edit
shows in an earlier record). :class:`ScriptedLlm` answers each model call
with the next step of its script and keeps a snapshot of what the call was
sent: the contents, the config (system instruction, function declarations)
and the Interactions chain id, so a test sees exactly what the model saw::

    from google.genai import types
    from docmem.testing.adk_model import ScriptedLlm

    model = ScriptedLlm(script=[
        types.FunctionCall(name="user__save_memory", args={"text": "Likes tea."}, id="call_1"),
        "Noted.",
    ])
    agent = LlmAgent(name="assistant", model=model, tools=[...])
    ...  # run it through a Runner
    model.requests[1].contents, model.requests[1].tools, model.requests[1].system_instruction

A step is a string (a text answer), a ``types.FunctionCall`` (one tool call;
without an ``id`` ADK mints ``adk-<uuid>``, as it does for Gemini), a
``types.Part`` or a list of them (several tool calls in one answer), or a
whole ``LlmResponse``. Every answer carries zero token usage, so ADK does not
log a warning per call about missing usage metadata.

Import it explicitly; ``docmem.testing`` does not, so that importing the
conformance suite never needs ADK. It needs only the ``google-adk`` extra:
importing it loads neither pytest nor hypothesis.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Union

try:
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from pydantic import PrivateAttr
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'docmem.testing.adk_model needs Google ADK: pip install "agent-docmem[google-adk]"'
    ) from error

__all__ = ["RecordedRequest", "ScriptedLlm", "Step"]

#: One scripted answer: text, one tool call, parts, or a whole response.
Step = Union[str, types.FunctionCall, types.Part, Sequence[types.Part], LlmResponse]  # noqa: UP007


@dataclass
class RecordedRequest:
    """One model call, as sent: copies taken when the call arrived.

    ``contents`` and ``config`` are deep copies (``config`` without
    ``http_options``, which may hold a live HTTP client), so nothing ADK or
    a callback changes afterwards shows here.
    """

    contents: list[types.Content]
    config: types.GenerateContentConfig
    previous_interaction_id: str | None = None

    @property
    def system_instruction(self) -> str | None:
        """The system instruction as text (ADK builds it as one string)."""
        instruction = self.config.system_instruction
        if instruction is None or isinstance(instruction, str):
            return instruction
        if isinstance(instruction, types.Content):
            return "\n".join(part.text for part in instruction.parts or [] if part.text)
        return str(instruction)

    @property
    def tools(self) -> dict[str, types.FunctionDeclaration]:
        """The function declarations the model was offered, by name."""
        found: dict[str, types.FunctionDeclaration] = {}
        for tool in self.config.tools or []:
            if isinstance(tool, types.Tool):
                for declaration in tool.function_declarations or []:
                    found[declaration.name or ""] = declaration
        return found


class ScriptedLlm(BaseLlm):
    """A ``BaseLlm`` that answers from ``script`` and records each request in ``requests``.

    One instance may serve concurrent runs (an async run and ``Runner.run``'s
    thread included): the script is answered in call order. A call past its
    end raises ``RuntimeError`` naming the call.
    """

    model: str = "scripted"
    script: list[Step] = []  # noqa: RUF012 - pydantic copies field defaults

    _requests: list[RecordedRequest] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request answered so far, in order."""
        return self._requests

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        """The next step of the script, as one complete (non-partial) response."""
        record = _snapshot(llm_request)
        with self._lock:
            number = len(self._requests)
            self._requests.append(record)
            if number >= len(self.script):
                raise RuntimeError(f"ScriptedLlm: the script has no answer for call {number}")
            step = self.script[number]
        yield _response(step)


def _snapshot(request: LlmRequest) -> RecordedRequest:
    """Deep copies of what a model call was sent (``model_copy(deep=True)`` fails on tools)."""
    config = request.config.model_copy()
    config.http_options = None
    return RecordedRequest(
        contents=[content.model_copy(deep=True) for content in request.contents],
        config=config.model_copy(deep=True),
        previous_interaction_id=request.previous_interaction_id,
    )


_NO_USAGE = types.GenerateContentResponseUsageMetadata(
    prompt_token_count=0, candidates_token_count=0, total_token_count=0
)


def _response(step: Step) -> LlmResponse:
    if isinstance(step, LlmResponse):
        return step
    if isinstance(step, str):
        parts = [types.Part.from_text(text=step)]
    elif isinstance(step, types.FunctionCall):
        parts = [types.Part(function_call=step.model_copy(deep=True))]
    elif isinstance(step, types.Part):
        parts = [step.model_copy(deep=True)]
    else:
        parts = [part.model_copy(deep=True) for part in step]
    return LlmResponse(
        content=types.Content(role="model", parts=parts),
        usage_metadata=_NO_USAGE.model_copy(),
    )
