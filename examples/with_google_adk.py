"""docmem as the memory of a Google ADK agent, offline on docmem's scripted ADK model.

Two runs of one conversation (an ADK session) for Alice, then one for Bob on
the same store. In run 1 (``Runner.run``) the model saves a note without a
call id, as Gemini often does, so ADK names the call ``adk-<uuid>``; the next
model call already shows the note, and a call that tries to write Bob's
memory with an extra ``user_id`` is refused. In run 2 (``Runner.run_async``)
the model saves another note. Bob sees none of it. Afterwards the session is
printed: ADK kept no copy of the memory, only the conversation.

    python examples/with_google_adk.py        # needs: pip install "agent-docmem[google-adk]"
"""

from __future__ import annotations

import asyncio
import re
import tempfile

from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

import docmem
from docmem.integrations.google_adk import DocmemToolset
from docmem.testing.adk_model import ScriptedLlm, Step

APP = "support"


def scope(ctx: ReadonlyContext) -> docmem.ScopeContext:
    """The user the application authenticated and passed as ``user_id``; never the model's."""
    return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", ctx.user_id))


def call(name: str, arguments: dict[str, object], call_id: str | None = None) -> Step:
    return types.FunctionCall(name=name, args=arguments, id=call_id)


def show(content: types.Content) -> None:
    """One line per part the model received; a memory copy with its notes."""
    for part in content.parts or []:
        if part.function_call is not None:
            named = part.function_call
            print(f"    call      {named.name}({named.args})")
        elif part.function_response is not None:
            answer = part.function_response.response or {}
            print(f"    result    {answer.get('result', answer.get('error'))}")
        elif part.text is not None and docmem.is_recalled(part.text):
            print(f"    memory    {part.text.splitlines()[0]}")
            for line in part.text.splitlines()[1:]:
                if re.fullmatch(r"\d+: .*", line):
                    print(f"              {line}")
        elif part.text is not None:
            print(f"    {content.role:<9} {part.text}")


def report(user: str, text: str, model: ScriptedLlm, events: list[Event]) -> None:
    print(f"\n{user} says {text!r}")
    for number, request in enumerate(model.requests, 1):
        print(f"  model call {number} (tools: {', '.join(request.tools) or 'none'})")
        for content in request.contents:
            show(content)
    ids = [str(c.id) for event in events for c in event.get_function_calls()]
    if ids:  # adk-<uuid>: the model sent no id, so ADK made one up and stored it
        print("  call ids:", ", ".join("adk-…" if i.startswith("adk-") else i for i in ids))
    texts = [part.text for e in events if e.content for part in e.content.parts or [] if part.text]
    print(f"  reply: {texts[-1]}")


def runner(model: ScriptedLlm, memory: DocmemToolset, sessions: InMemorySessionService) -> Runner:
    agent = LlmAgent(
        name="assistant", model=model, instruction="You are a helpful assistant.", tools=[memory]
    )
    return Runner(agent=agent, app_name=APP, session_service=sessions)


def ask(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part.from_text(text=text)])


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
        memory = DocmemToolset(slots, scope_context=scope)
        sessions = InMemorySessionService()
        for user, session in (("alice", "conversation-1"), ("bob", "conversation-2")):
            await sessions.create_session(app_name=APP, user_id=user, session_id=session)

        text = "Please use metric units."
        model = ScriptedLlm(
            script=[
                call("user__save_memory", {"text": "Prefers metric units."}),  # no id: ADK's
                # The scope is not the model's to pick: docmem refuses the extra argument.
                call("user__save_memory", {"text": "Is an admin.", "user_id": "bob"}, "call_2"),
                "Noted: metric units from now on.",
            ]
        )
        events = list(  # Runner.run: ADK's sync entry point, a thread running asyncio.run
            runner(model, memory, sessions).run(
                user_id="alice", session_id="conversation-1", new_message=ask(text)
            )
        )
        report("alice", text, model, events)

        text = "I moved to Berlin. How warm is it?"
        model = ScriptedLlm(
            script=[
                call("user__save_memory", {"text": "Lives in Berlin."}, "call_1"),
                "It is 21 degrees Celsius in Berlin.",
            ]
        )
        events = [
            event
            async for event in runner(model, memory, sessions).run_async(
                user_id="alice", session_id="conversation-1", new_message=ask(text)
            )
        ]
        report("alice", text, model, events)

        text = "What do you know about me?"
        model = ScriptedLlm(script=["Nothing yet."])
        events = [
            event
            async for event in runner(model, memory, sessions).run_async(
                user_id="bob", session_id="conversation-2", new_message=ask(text)
            )
        ]
        report("bob", text, model, events)

        kept = await sessions.get_session(
            app_name=APP, user_id="alice", session_id="conversation-1"
        )
        assert kept is not None
        contents = [event.content for event in kept.events if event.content]
        texts = [part.text for content in contents for part in content.parts or [] if part.text]
        copies = sum(map(docmem.is_recalled, texts))
        print(f"\nconversation-1's session: {len(kept.events)} events, {copies} copies of memory")
        for content in contents:
            show(content)
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
