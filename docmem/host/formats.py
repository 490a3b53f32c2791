"""Tool definitions in the common tool-calling formats, and a dispatcher for the calls.

docmem's tools are plain :class:`~docmem.Tool` objects; these helpers turn a
turn's tool set into what an OpenAI- or Anthropic-style API expects, and run a
call the model made by name, returning the one short result sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..provider.threads import in_thread
from ..provider.tools import Tool, ToolResult, dispatch_call

__all__ = ["ToolDispatcher", "anthropic_tools", "openai_tools"]


def openai_tools(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    """``[{"type": "function", "function": {name, description, parameters}}, ...]``."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
            },
        }
        for tool in tools.values()
    ]


def anthropic_tools(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    """``[{"name", "description", "input_schema"}, ...]``."""
    return [
        {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
        for tool in tools.values()
    ]


class ToolDispatcher:
    """Runs a model's tool call by name against one turn's tool set.

    Arguments may be a mapping or the JSON text some APIs deliver. An unknown
    name or unparsable arguments is an error result, never an exception.
    """

    def __init__(self, tools: Mapping[str, Tool], *, session_id: str | None = None) -> None:
        self.tools = dict(tools)
        self.session_id = session_id

    def dispatch(self, name: str, arguments: object, *, call_id: str | None = None) -> ToolResult:
        """Execute the call; ``call_id`` (with the session id) makes it idempotent."""
        return dispatch_call(
            self.tools, name, arguments, call_id=call_id, session_id=self.session_id
        )

    async def adispatch(
        self, name: str, arguments: object, *, call_id: str | None = None
    ) -> ToolResult:
        """:meth:`dispatch` in a worker thread."""
        return await in_thread(self.dispatch, name, arguments, call_id=call_id)
