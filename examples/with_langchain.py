"""docmem as the memory of a LangChain ``create_agent`` agent, offline on a scripted chat model.

Two runs of one conversation (an ``InMemorySaver`` thread) for Alice, then one
for Bob on the same store. In run 1 (``invoke``) the model saves a note and
the next model call already shows it; a call that tries to write Bob's memory
with an extra ``user_id`` is refused. In run 2 (``ainvoke``) the model numbers
its call ``call_1`` again, and it is a new save, not a replay of run 1's.
Bob sees none of it. Afterwards the checkpointed thread is printed: LangGraph
kept no copy of the memory, only the conversation.

    python examples/with_langchain.py        # needs: pip install "agent-docmem[langchain]"
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

import docmem
from docmem.integrations.langchain import DocmemMiddleware
from docmem.testing.langchain_model import RecordingFakeChatModel


@dataclass(frozen=True)
class Context:
    """The application's run context: who is signed in."""

    user: str

    @property
    def scope(self) -> docmem.ScopeContext:
        return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", self.user))


def call(name: str, arguments: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": arguments, "id": call_id}])


def show(message: BaseMessage) -> None:
    """One line per message the model received; a memory copy with its notes."""
    text = message.text
    if isinstance(message, AIMessage) and message.tool_calls:
        for tool_call in message.tool_calls:
            print(f"    call      {tool_call['name']}({tool_call['args']})")
    elif message.type == "tool":
        print(f"    result    {text}")
    elif docmem.is_recalled(text):
        print(f"    memory    {text.splitlines()[0]}   (id {str(message.id)[:12]}…)")
        for line in text.splitlines()[1:]:
            if re.fullmatch(r"\d+: .*", line):
                print(f"              {line}")
    else:
        print(f"    {message.type:<9} {text}")


def agent_for(model: RecordingFakeChatModel, middleware: DocmemMiddleware[Any], saver: Any) -> Any:
    return create_agent(
        model,
        system_prompt="You are a helpful assistant.",
        context_schema=Context,
        checkpointer=saver,
        middleware=[middleware],
    )


def report(context: Context, text: str, model: RecordingFakeChatModel, result: Any) -> None:
    print(f"\n{context.user} says {text!r}")
    for number, recorded in enumerate(model.calls, 1):
        tools = ", ".join(tool["function"]["name"] for tool in recorded.tools) or "none"
        print(f"  model call {number} (tools: {tools})")
        for message in recorded.messages:
            show(message)
    print(f"  reply: {result['messages'][-1].text}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        store = docmem.open_store(f"file://{root}/memory?create=true")
        slots = [
            docmem.MemorySlot(
                "user",
                docmem.FileMemory(store),
                scope=docmem.by_principal,
                namespace="example:dev:user",
                description="What this user asked you to remember.",
            )
        ]
        middleware: DocmemMiddleware[Any] = DocmemMiddleware(
            slots, scope_context=lambda ctx: ctx.scope
        )
        saver = InMemorySaver()
        alice, bob = Context("alice"), Context("bob")
        thread = {"configurable": {"thread_id": "conversation-1"}}

        text = "Please use metric units."
        model = RecordingFakeChatModel(
            messages=iter(
                [
                    call("user__save_memory", {"text": "Prefers metric units."}, "call_1"),
                    # The scope is not the model's to pick: docmem refuses the extra argument.
                    call("user__save_memory", {"text": "Is an admin.", "user_id": "bob"}, "call_2"),
                    AIMessage("Noted: metric units from now on."),
                ]
            )
        )
        result = agent_for(model, middleware, saver).invoke(
            {"messages": [HumanMessage(text)]}, thread, context=alice
        )
        report(alice, text, model, result)

        text = "I moved to Berlin. How warm is it?"
        model = RecordingFakeChatModel(
            messages=iter(
                [
                    call("user__save_memory", {"text": "Lives in Berlin."}, "call_1"),
                    AIMessage("It is 21 degrees Celsius in Berlin."),
                ]
            )
        )
        result = await agent_for(model, middleware, saver).ainvoke(
            {"messages": [HumanMessage(text)]}, thread, context=alice
        )
        report(alice, text, model, result)

        text = "What do you know about me?"
        model = RecordingFakeChatModel(messages=iter([AIMessage("Nothing yet.")]))
        result = agent_for(model, middleware, saver).invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": "conversation-2"}},
            context=bob,
        )
        report(bob, text, model, result)

        reader = agent_for(RecordingFakeChatModel(messages=iter(())), middleware, saver)
        kept = reader.get_state(thread).values["messages"]
        copies = [m for m in kept if docmem.is_recalled(m.text)]
        print(f"\nThe checkpointed thread: {len(kept)} messages, {len(copies)} memory copies")
        for message in kept:
            show(message)


if __name__ == "__main__":
    asyncio.run(main())
