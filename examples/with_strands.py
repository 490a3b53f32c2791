"""docmem as the memory of a Strands agent, offline on docmem's scripted Strands model.

Two invocations of one conversation for Alice (a ``FileSessionManager``
session), then one for Bob on the same store. In the first (``agent(...)``)
the model saves a note and the next model call already shows it, folded into
the first user message as a text block of its own; a call that tries to
write Bob's memory with an extra ``user_id`` is refused. The second
(``await agent.invoke_async(...)``) runs on a new Agent restored from the
session: the model numbers its call ``call_1`` again, and it is a new save,
not a replay of the first invocation's. Bob sees none of it. Afterwards the
session's files are searched: Strands stored the conversation, no copy of the
memory.

    python examples/with_strands.py        # needs: pip install "agent-docmem[strands]"
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strands import Agent
from strands.session.file_session_manager import FileSessionManager

import docmem
from docmem.integrations.strands import DocmemPlugin
from docmem.testing.strands_model import ScriptedModel, Step


@dataclass(frozen=True)
class Context:
    """The application's trusted context: who is signed in. Never sent to the model."""

    user: str

    @property
    def scope(self) -> docmem.ScopeContext:
        return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", self.user))


def call(name: str, arguments: dict[str, Any], call_id: str) -> Step:
    return {"name": name, "input": arguments, "toolUseId": call_id}


def show(model: ScriptedModel) -> None:
    """Every model call: its tools, and one line per block it was sent."""
    for number, recorded in enumerate(model.calls, 1):
        print(f"  model call {number} (tools: {', '.join(recorded.tool_names) or 'none'})")
        for message in recorded.messages:
            for block in message["content"]:
                text = block.get("text")
                if "toolUse" in block:
                    use = block["toolUse"]
                    print(f"    call      {use['name']}({use['input']})")
                elif "toolResult" in block:
                    for item in block["toolResult"]["content"]:
                        print(f"    result    {item.get('text')}")
                elif text is not None and docmem.is_recalled(text):
                    print(f"    memory    {text.splitlines()[0]}   (a block of a user message)")
                    for line in text.splitlines()[1:]:
                        if re.fullmatch(r"\d+: .*", line):
                            print(f"              {line}")
                elif text is not None:
                    print(f"    {message['role']:<9} {text}")


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
        memory = DocmemPlugin(slots, scope_context=lambda state: state["ctx"].scope)
        sessions = str(Path(root) / "sessions")
        alice, bob = Context("alice"), Context("bob")

        def agent_for(model: ScriptedModel, session: str) -> Agent:
            return Agent(
                model,
                system_prompt="You are a helpful assistant.",
                plugins=[memory],
                session_manager=FileSessionManager(session_id=session, storage_dir=sessions),
                callback_handler=None,
            )

        text = "Please use metric units."
        model = ScriptedModel(
            [
                call("user__save_memory", {"text": "Prefers metric units."}, "call_1"),
                # The scope is not the model's to pick: docmem refuses the extra argument.
                call("user__save_memory", {"text": "Is an admin.", "user_id": "bob"}, "call_2"),
                "Noted: metric units from now on.",
            ]
        )
        result = agent_for(model, "conversation-1")(text, invocation_state={"ctx": alice})
        print(f"alice says {text!r} (agent(...))")
        show(model)
        print(f"  reply: {str(result).strip()}")

        text = "I moved to Berlin. How warm is it?"
        model = ScriptedModel(
            [
                call("user__save_memory", {"text": "Lives in Berlin."}, "call_1"),
                "It is 21 degrees Celsius in Berlin.",
            ]
        )
        agent = agent_for(model, "conversation-1")
        result = await agent.invoke_async(text, invocation_state={"ctx": alice})
        print(f"\nalice says {text!r} (await agent.invoke_async(...), a restored agent)")
        show(model)
        print(f"  reply: {str(result).strip()}")

        text = "What do you know about me?"
        model = ScriptedModel(["Nothing yet."])
        result = agent_for(model, "conversation-2")(text, invocation_state={"ctx": bob})
        print(f"\nbob says {text!r}")
        show(model)
        print(f"  reply: {str(result).strip()}")

        files = [path for path in Path(sessions).rglob("*") if path.is_file()]
        holding = [path for path in files if "docmem:recall" in path.read_text()]
        print(
            f"\nalice's agent: {len(agent.messages)} messages; the session's files: "
            f"{len(files)}, {len(holding)} holding a memory copy"
        )
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
