"""A scripted Strands ``Model`` that records what every call was sent, tools included.

Strands ships no offline model (its ``MockedModelProvider`` lives in its own
test suite, not the wheel). :class:`ScriptedModel` answers each call with the
next step of its script, streamed as the Converse-style events a provider
yields, and records a deep copy of what the agent handed it: the messages
(after every ``InvokeModelStage`` middleware, so exactly what a provider would
have sent), the system prompt and the tool specs::

    from docmem.testing.strands_model import ScriptedModel

    model = ScriptedModel([
        {"name": "user__save_memory", "input": {"text": "Likes tea."}, "toolUseId": "call_1"},
        "Noted.",
    ])
    agent = Agent(model, plugins=[...], callback_handler=None)
    agent("Remember that I like tea.", invocation_state={...})
    model.calls[1].messages, model.calls[1].tool_names

A step is the assistant's answer: a string (a text reply that ends the turn),
a Strands ``ToolUse`` dict (one tool call), or a list of those (one response
with several blocks, e.g. parallel tool calls). ``stateful=True`` makes the
model report :attr:`Model.stateful`, as a provider that keeps the
conversation server-side does (the agent then clears its messages after
every invocation).

Import it explicitly; ``docmem.testing`` does not, so that importing the
conformance suite never needs Strands. It needs only the ``strands`` extra:
importing it loads neither pytest nor hypothesis.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, Union

try:
    from pydantic import BaseModel
    from strands.models.model import Model
    from strands.types.content import ContentBlockStartToolUse, Messages, SystemContentBlock
    from strands.types.event_loop import StopReason
    from strands.types.streaming import StreamEvent
    from strands.types.tools import ToolChoice, ToolSpec, ToolUse
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'docmem.testing.strands_model needs Strands Agents: pip install "agent-docmem[strands]"'
    ) from error

if TYPE_CHECKING:
    from strands.agent.agent_metadata import AgentMetadata

__all__ = ["RecordedCall", "ScriptedModel", "Step"]

T = TypeVar("T", bound=BaseModel)

#: One scripted answer: text, one tool call, or several blocks of one response.
Step = Union[str, ToolUse, Sequence[Union[str, ToolUse]]]  # noqa: UP007


@dataclass
class RecordedCall:
    """One model call as the model received it (deep copies: later edits do not show).

    ``dynamic_trailing_blocks`` is how many trailing blocks of the last user
    message the agent marked as rebuilt per call (providers keep their prompt
    cache point ahead of them).
    """

    messages: Messages
    system_prompt: str | None = None
    system_prompt_content: list[SystemContentBlock] | None = None
    tool_specs: list[ToolSpec] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    dynamic_trailing_blocks: int = 0

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools this call offered the model, in order."""
        return [spec["name"] for spec in self.tool_specs]


class ScriptedModel(Model):
    """A Strands model that answers from a script and records every call it answers.

    A call past the end of the script raises ``RuntimeError`` naming the
    call. Calls are answered in order, from any thread or event loop.
    """

    def __init__(self, script: Iterable[Step] = (), *, stateful: bool = False) -> None:
        self._script = list(script)
        self._stateful = stateful
        self._lock = threading.Lock()
        self.config: dict[str, Any] = {"model_id": "scripted"}
        #: Every call answered so far, in order.
        self.calls: list[RecordedCall] = []

    @property
    def stateful(self) -> bool:
        """What the constructor was told: whether the server would keep the conversation."""
        return self._stateful

    def update_config(self, **model_config: Any) -> None:
        """Merge ``model_config`` into :meth:`get_config`."""
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        """The configuration (``model_id`` is ``"scripted"`` unless updated)."""
        return dict(self.config)

    def add(self, *steps: Step) -> None:
        """Append ``steps`` to the script (for a test that scripts turn by turn)."""
        with self._lock:
            self._script.extend(steps)

    def _answer(self, call: RecordedCall) -> Step:
        with self._lock:  # one script, answered in call order even from threads
            number = len(self.calls)
            self.calls.append(call)
            if not self._script:
                raise RuntimeError(f"ScriptedModel: the script has no answer for call {number}")
            return self._script.pop(0)

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        invocation_state: dict[str, Any] | None = None,
        cancel_signal: threading.Event | None = None,
        agent_metadata: AgentMetadata | None = None,
        structured_output_model: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Record the call, then stream the next step as Converse-style events."""
        step = self._answer(
            RecordedCall(
                messages=copy.deepcopy(messages),
                system_prompt=system_prompt,
                system_prompt_content=copy.deepcopy(system_prompt_content),
                tool_specs=copy.deepcopy(list(tool_specs or [])),
                tool_choice=copy.deepcopy(tool_choice),
                dynamic_trailing_blocks=int(kwargs.get("dynamic_trailing_blocks", 0)),
            )
        )
        blocks = [step] if isinstance(step, (str, Mapping)) else list(step)
        stop: StopReason = "end_turn"
        yield {"messageStart": {"role": "assistant"}}
        for block in blocks:
            if isinstance(block, str):
                yield {"contentBlockDelta": {"delta": {"text": block}}}
            else:
                stop = "tool_use"
                start: ContentBlockStartToolUse = {
                    "name": block["name"],
                    "toolUseId": block["toolUseId"],
                }
                arguments = json.dumps(block["input"])
                yield {"contentBlockStart": {"start": {"toolUse": start}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
            yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": stop}}
        yield {
            "metadata": {
                "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
                "metrics": {"latencyMs": 0},
            }
        }

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Record the call and parse the next step, a JSON text, as ``output_model``."""
        step = self._answer(RecordedCall(copy.deepcopy(prompt), system_prompt))
        if not isinstance(step, str):
            raise TypeError("ScriptedModel: structured output needs a JSON text step")
        yield {"output": output_model.model_validate_json(step)}
