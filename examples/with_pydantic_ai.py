"""docmem in a Pydantic AI agent, offline: a FunctionModel plays the LLM.

Turn 1: Alice asks the agent to remember something; the model calls
``user__save_memory`` and the next model request already shows the saved
note. Turn 2 runs on the persisted history (``all_messages()`` as JSON, the
way an application stores it): the model reads the note from the one fresh
copy in its request, and the stored history holds no copy at all. Bob, run
concurrently under ``asyncio``, sees none of Alice's memory.

    python examples/with_pydantic_ai.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from dataclasses import dataclass

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import docmem
from docmem.integrations.pydantic_ai import DocmemCapability


@dataclass
class Deps:
    """What the application knows and trusts about the caller; never sent to the model."""

    user: str

    @property
    def scope(self) -> docmem.ScopeContext:
        return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", self.user))


def texts(message: ModelMessage) -> list[str]:
    """The user-visible texts of a message's parts."""
    found = []
    for part in message.parts:
        content = getattr(part, "content", None)
        if isinstance(content, list):
            found += [item.content for item in content if isinstance(item, TextContent)]
        elif isinstance(content, str):
            found.append(content)
    return found


def fake_llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Stands in for an LLM: saves what it is asked to remember, answers from memory."""
    memory = [text for m in messages for text in texts(m) if docmem.is_recalled(text)]
    notes = [line for copy in memory for line in copy.splitlines() if line[:1].isdigit()]
    tools = [tool.name for tool in info.function_tools]
    print(f"  model request: {len(messages)} messages, tools {tools}")
    for copy in memory:
        print(f"    one memory copy, {copy.splitlines()[0]!r}, notes {notes}")
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"Noted ({last.content})")])
    assert isinstance(last, UserPromptPart)
    assert isinstance(last.content, str)
    if last.content.startswith("Remember: "):
        arguments = {"text": last.content.removeprefix("Remember: ")}
        call = ToolCallPart("user__save_memory", json.dumps(arguments), tool_call_id="call_1")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"From memory: {notes or 'nothing'}")])


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        store = docmem.open_store(f"file://{root}/memory?create=true")
        slots = [
            docmem.MemorySlot(
                "user",
                docmem.FileMemory(store),
                scope=docmem.by_principal,
                namespace="example:dev:user",
                description="What you know about the user you are talking to.",
            )
        ]
        agent = Agent(
            FunctionModel(fake_llm),
            deps_type=Deps,
            system_prompt="You are a helpful assistant.",
            capabilities=[DocmemCapability(slots, scope_context=lambda deps: deps.scope)],
        )

        print("=== Alice, turn 1 (run_sync)")
        alice = Deps("alice")
        first = agent.run_sync("Remember: Prefers metric units.", deps=alice)
        print("  answer:", first.output)
        stored = first.all_messages_json()  # what the application keeps

        print("=== Alice, turn 2 (run_sync, on the stored history)")
        history = ModelMessagesTypeAdapter.validate_json(stored)
        second = agent.run_sync("Which units do I like?", deps=alice, message_history=history)
        print("  answer:", second.output)
        persisted = [t for m in second.all_messages() for t in texts(m)]
        print("  copies in the stored history:", sum(map(docmem.is_recalled, persisted)))

        print("=== Alice and Bob at once (asyncio.gather)")

        async def both() -> list[str]:
            runs = await asyncio.gather(
                agent.run("What do you know about me?", deps=alice, message_history=history),
                agent.run("What do you know about me?", deps=Deps("bob")),
            )
            return [run.output for run in runs]

        for who, answer in zip(("alice", "bob"), asyncio.run(both()), strict=True):
            print(f"  {who}: {answer}")
        print("files in the store:", len(list(store.keys())))
        store.close()


if __name__ == "__main__":
    main()
