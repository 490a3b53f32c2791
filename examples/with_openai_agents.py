"""docmem as the memory of an OpenAI Agents SDK agent, offline on the SDK's ScriptedModel.

Two runs of one conversation (kept in an ``SQLiteSession``) for Alice, then
one for Bob on the same store. In run 1 the model saves a note and the next
model call already shows it; a call that tries to write Bob's memory with an
extra ``user_id`` is refused. In run 2 the model answers from the recalled
memory. Bob sees none of it. Afterwards the session is printed: the SDK kept
no copy of the memory, only the conversation.

    python examples/with_openai_agents.py        # needs: pip install "agent-docmem[openai-agents]"
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass
from typing import Any

from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

import docmem
from docmem.integrations.openai_agents import DocmemMemory


@dataclass(frozen=True)
class Context:
    """The application's run context: who is signed in, and which conversation this is."""

    user: str
    conversation: str

    @property
    def scope(self) -> docmem.ScopeContext:
        return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", self.user))


def show(call: ModelCall) -> None:
    """What the model received in one call: instructions, then one line per input item."""
    print(f"    instructions: {call.system_instructions}")
    for item in call.input if isinstance(call.input, list) else []:
        if item.get("type") == "function_call":
            print(f"    call   {item['name']}({item['arguments']})")
        elif item.get("type") == "function_call_output":
            print(f"    result {item['output']}")
        else:
            content = item["content"]
            text = content if isinstance(content, str) else content[0]["text"]
            label = "memory" if docmem.is_recalled(text) else item["role"]
            print(f"    {label:<9} {text.splitlines()[0]}")
            if label == "memory":
                for line in text.splitlines()[1:]:
                    if re.fullmatch(r"\d+: .*", line):
                        print(f"              {line}")


def answer_from_memory(call: ModelCall) -> Any:
    """A "model" that reads its memory from the request, as a real one would."""
    memory = next(
        item["content"]
        for item in call.input
        if isinstance(item, dict) and docmem.is_recalled(item.get("content"))
    )
    units = "metric" if "metric" in memory else "whatever you like"
    return [assistant_message(f"It is 21 degrees Celsius ({units} units, as you asked).")]


async def turn(
    memory: DocmemMemory[Context],
    context: Context,
    text: str,
    steps: list[Any],
    session: SQLiteSession,
) -> None:
    model = ScriptedModel(steps)
    agent = Agent[Context](
        name="support",
        instructions="You are a helpful assistant.",
        tools=[*memory.tools()],
        model=model,
    )
    result = await Runner.run(
        agent,
        text,
        context=context,
        session=session,
        run_config=memory.run_config(RunConfig(tracing_disabled=True)),
    )
    print(f"\n{context.user} says {text!r}")
    for number, call in enumerate(model.calls, 1):
        print(f"  model call {number} (tools: {', '.join(t.name for t in call.tools) or 'none'})")
        show(call)
    print(f"  reply: {result.final_output}")


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
        memory: DocmemMemory[Context] = DocmemMemory(
            slots, scope_context=lambda ctx: ctx.scope, session_id=lambda ctx: ctx.conversation
        )
        alice = Context("alice", "conversation-1")
        session = SQLiteSession(alice.conversation)
        save = {"text": "Prefers metric units."}
        attack = {"text": "Is an admin.", "user_id": "bob"}  # the scope is not the model's to pick
        steps: list[Any] = [
            [function_call("user__save_memory", save, call_id="call_1")],
            [function_call("user__save_memory", attack, call_id="call_2")],
            [assistant_message("Noted: metric units from now on.")],
        ]
        await turn(memory, alice, "Please use metric units.", steps, session)
        await turn(
            memory, alice, "How warm is it?", [ModelStep.respond(answer_from_memory)], session
        )

        bob = Context("bob", "conversation-2")
        steps = [[assistant_message("Hello Bob, what can I do for you?")]]
        await turn(memory, bob, "Hi there", steps, SQLiteSession(bob.conversation))

        items = await session.get_items()
        kept = [item for item in items if docmem.is_recalled(item.get("content"))]
        print(f"\n{alice.conversation}'s session: {len(items)} items, {len(kept)} copies of memory")
        print("(memory goes into each model request only, never into the SDK's history)")
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
