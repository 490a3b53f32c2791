"""docmem as the memory of a CrewAI crew, offline on docmem's scripted CrewAI model.

Two runs for Alice, then one for Bob, on one store. In the first
(``crew.kickoff()``) the model saves a note and the next model call already
shows it, as a user message of its own after the system prompt; a call that
tries to write Bob's memory with an extra ``user_id`` is refused. The second
(``await crew.akickoff()``) is a new run: the model numbers its call ``call_1``
again, and it is a new save, not a replay of the first run's. Bob sees none of
it. Afterwards the agent's executor and the task's output are searched: they
hold the conversation, no copy of the memory.

CrewAI offers docmem's ``user__save_memory`` as ``user_save_memory`` (it allows
no double underscore); docmem's sentences keep docmem's spelling.

    python examples/with_crewai.py        # needs: pip install "agent-docmem[crewai]"
"""

from __future__ import annotations

import asyncio
import os
import re
import tempfile
import warnings
from typing import Any

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # offline: nothing to upload
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
warnings.filterwarnings("ignore", category=DeprecationWarning)  # CrewAI's own

from crewai import Agent, Crew, CrewOutput, Task  # noqa: E402

import docmem  # noqa: E402
from docmem.integrations.crewai import DocmemMemory  # noqa: E402
from docmem.testing.crewai_model import ScriptedLLM, Step, tool_call  # noqa: E402


def scope_of(user: str) -> docmem.ScopeContext:
    """The application's trusted context: who is signed in. Never sent to the model."""
    return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", user))


def show(llm: ScriptedLLM) -> None:
    """Every model call: its tools, and one line per message it was sent."""
    for number, recorded in enumerate(llm.calls, 1):
        print(f"  model call {number} (tools: {', '.join(recorded.tool_names) or 'none'})")
        for message in recorded.messages:
            text = message.get("content")
            if message.get("tool_calls"):
                for call in message["tool_calls"]:
                    function = call["function"]
                    print(f"    call      {function['name']}({function['arguments']})")
            elif message["role"] == "tool":
                print(f"    result    {text}")
            elif isinstance(text, str) and docmem.is_recalled(text):
                print(f"    memory    {text.splitlines()[0]}   (a user message of its own)")
                for line in text.splitlines()[1:]:
                    if re.fullmatch(r"\d+: .*", line):
                        print(f"              {line}")
            elif isinstance(text, str) and text:
                print(f"    {message['role']:<9} {text.strip().splitlines()[0][:60]}")


def crew_for(memory: DocmemMemory, llm: ScriptedLLM, request: str) -> Crew:
    agent = Agent(
        role="Assistant",
        goal="Help the user and remember what matters to them.",
        backstory="You are a careful assistant.",
        llm=llm,
        tools=[*memory.tools],
    )
    task = Task(description=request, expected_output="A short answer.", agent=agent)
    return Crew(agents=[agent], tasks=[task])


def count_copies(messages: list[Any]) -> int:
    return sum(1 for message in messages if docmem.is_recalled(message.get("content")))


def kickoff(memory: DocmemMemory, crew: Crew, user: str) -> CrewOutput:
    """One run for a signed-in user: the scope set around ``crew.kickoff()``."""
    with memory.scope(scope_of(user)):
        result = crew.kickoff()
    assert isinstance(result, CrewOutput)  # not streamed
    return result


async def akickoff(memory: DocmemMemory, crew: Crew, user: str) -> CrewOutput:
    """The asynchronous entry point: the same block around ``await crew.akickoff()``."""
    with memory.scope(scope_of(user)):
        result = await crew.akickoff()
    assert isinstance(result, CrewOutput)
    return result


def main() -> None:
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
        memory = DocmemMemory(slots)

        text = "Please use metric units."
        script: list[Step] = [
            tool_call("user_save_memory", {"text": "Prefers metric units."}, "call_1"),
            # The scope is not the model's to pick: docmem refuses the extra argument.
            tool_call("user_save_memory", {"text": "Is an admin.", "user_id": "bob"}, "call_2"),
            "Noted: metric units from now on.",
        ]
        llm = ScriptedLLM(script=script)
        result = kickoff(memory, crew_for(memory, llm, text), "alice")
        print(f"alice says {text!r} (crew.kickoff())")
        show(llm)
        print(f"  reply: {result.raw}")

        text = "I moved to Berlin. How warm is it?"
        llm = ScriptedLLM(
            script=[
                tool_call("user_save_memory", {"text": "Lives in Berlin."}, "call_1"),
                "It is 21 degrees Celsius in Berlin.",
            ]
        )
        crew = crew_for(memory, llm, text)
        result = asyncio.run(akickoff(memory, crew, "alice"))
        print(f"\nalice says {text!r} (await crew.akickoff(), a new run)")
        show(llm)
        print(f"  reply: {result.raw}")
        executor = crew.agents[0].agent_executor
        held = count_copies(executor.messages if executor is not None else [])
        output = count_copies(result.tasks_output[0].messages)

        text = "What do you know about me?"
        llm = ScriptedLLM(script=["Nothing yet."])
        result = kickoff(memory, crew_for(memory, llm, text), "bob")
        print(f"\nbob says {text!r}")
        show(llm)
        print(f"  reply: {result.raw}")

        print(
            f"\nalice's executor after the run: {held} copies of memory; "
            f"the task output's messages: {output} copies"
        )
        store.close()


if __name__ == "__main__":
    main()
