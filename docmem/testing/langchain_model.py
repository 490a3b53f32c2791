"""A scripted LangChain chat model that records what it was sent, tools included.

LangChain's ``GenericFakeChatModel`` cannot drive ``create_agent``: the agent
always calls ``bind_tools``, which ``BaseChatModel`` leaves unimplemented.
:class:`RecordingFakeChatModel` binds the tools the way a provider model does
(as keyword arguments of every call, in the OpenAI shape
``convert_to_openai_tool`` gives), answers from its script, and records every
call's messages and tools, so a test sees exactly what the model was sent::

    from docmem.testing.langchain_model import RecordingFakeChatModel

    model = RecordingFakeChatModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "user__save_memory", "args": {"text": "Likes tea."},
                                   "id": "call_1"}]),
        AIMessage("Noted."),
    ]))
    agent = create_agent(model, middleware=[...])
    agent.invoke(...)
    model.calls[0].messages, model.calls[0].tools

Import it explicitly; ``docmem.testing`` does not, so that importing the
conformance suite never needs LangChain. It needs only the ``langchain``
extra: importing it loads neither pytest nor hypothesis.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

try:
    from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
    from langchain_core.language_models import LanguageModelInput
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import Runnable
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from pydantic import Field, PrivateAttr
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'docmem.testing.langchain_model needs LangChain: pip install "agent-docmem[langchain]"'
    ) from error

__all__ = ["RecordedCall", "RecordingFakeChatModel"]


@dataclass
class RecordedCall:
    """One model call: the messages as sent (system message included) and the bound tools.

    ``tools`` are the OpenAI-shaped definitions (``{"type": "function",
    "function": {"name", "description", "parameters"}}``) a provider model
    would have sent with this call.
    """

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)


class RecordingFakeChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` with ``bind_tools``, recording every call it answers.

    ``messages`` is the script (an iterator of ``AIMessage`` or strings, one
    per call); a call past its end raises ``RuntimeError`` naming the call.
    Streaming is off by default (``disable_streaming=True``): the inherited
    streaming path splits text into chunks and drops tool calls.
    """

    disable_streaming: bool | Literal["tool_calling"] = True
    calls: list[RecordedCall] = Field(default_factory=list)
    """Every call answered so far, in order."""

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind ``tools`` as every call's ``tools`` keyword, converted as a provider would."""
        converted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=converted, **kwargs)

    def _answer(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        with self._lock:  # one script, answered in call order even from threads
            number = len(self.calls)
            self.calls.append(RecordedCall(list(messages), list(kwargs.get("tools") or [])))
            try:
                reply = next(self.messages)
            except StopIteration:
                raise RuntimeError(
                    f"RecordingFakeChatModel: the script has no answer for call {number}"
                ) from None
        message = AIMessage(content=reply) if isinstance(reply, str) else reply
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages, kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages, kwargs)

    @property
    def _llm_type(self) -> str:
        return "recording-fake-chat-model"
