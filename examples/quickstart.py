"""A scripted two-session agent on docmem's default local store.

No LLM is needed: the "model" is a script of tool calls. Session 1 saves what
it learns; session 2 runs in a second process, recalls the same memory,
removes an outdated note and saves a new one. Every turn prints the recalled
message: it has the same id each turn, so a host replaces the old copy in the
prompt instead of piling copies up.

    python examples/quickstart.py                          # store: file://./.docmem
    DOCMEM_STORE=file:///tmp/mem python examples/quickstart.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docmem

# create=true: the first save creates ./.docmem (by default a missing root is an error).
STORE_URL = os.environ.get("DOCMEM_STORE", "file://./.docmem?create=true")
NAMESPACE = "quickstart:dev:assistant"
# Chosen from trusted context (the authenticated user), never by the model.
USER = ("user", "demo-idp", "", "u_123")


ToolCalls = list[tuple[str, dict[str, Any]]]


@dataclass
class ScriptedModel:
    """Stands in for an LLM: returns the tool calls a model would make this turn.

    A turn is either a fixed list of calls or a function of the recalled memory.
    """

    turns: list[ToolCalls | Callable[[str], ToolCalls]]

    def tool_calls(self, recalled: str) -> ToolCalls:
        script = self.turns.pop(0)
        return script(recalled) if callable(script) else script


def index_of(recalled: str, words: str) -> int:
    """Find a note's index the way a model does: by reading the recalled message."""
    for line in recalled.splitlines():
        match = re.fullmatch(r"(\d+): (.*)", line)
        if match and words in match.group(2):
            return int(match.group(1))
    raise LookupError("note not found in the recalled memory")


def run_session(name: str, session_id: str, model: ScriptedModel) -> None:
    store = docmem.open_store(STORE_URL)
    memory = docmem.FileMemory(store, max_characters=4000)
    mem = memory.bind(docmem.lock_scope(namespace=NAMESPACE, scope=USER), slot="user")
    tools = mem.tools()  # {"user__save_memory": Tool, "user__remove_memory": Tool}
    shown_revision: int | None = None
    for turn in range(1, len(model.turns) + 1):
        print(f"\n=== {name}, turn {turn} " + "=" * 40)
        recalled = mem.recall()  # [] when the scope has no document yet
        if not recalled:
            print("(no memory message: nothing is saved for this user yet)")
            content = ""
        else:
            message = recalled[0]
            content = message.content
            if shown_revision is None:
                note = "first copy in this conversation"
            elif message.revision == shown_revision:
                note = "unchanged: the host keeps the copy it already has"
            else:
                note = f"replaces the copy of revision {shown_revision} in the prompt"
            shown_revision = message.revision
            print(f"[memory message id={message.id!r}, revision {message.revision}: {note}]")
            print(textwrap.indent(content, "  | ", lambda line: True))
        for number, (tool_name, arguments) in enumerate(model.tool_calls(content), start=1):
            call_id = f"{name}-turn{turn}-call{number}"
            result = tools[tool_name].call(arguments, call_id=call_id, session_id=session_id)
            flag = "error" if result.is_error else "ok"
            print(f"model -> {tool_name}({arguments}) -> {flag}: {result.text}")


def first_session(session_id: str) -> None:
    model = ScriptedModel(
        [
            [
                ("user__save_memory", {"text": "Prefers metric units."}),
                ("user__save_memory", {"text": "Works at Acme on the billing team."}),
            ],
            [
                ("user__save_memory", {"text": "Is planning a trip to Lisbon in May."}),
                ("user__save_memory", {"text": "Prefers   metric units."}),  # a duplicate
            ],
            [],
        ]
    )
    run_session("session 1", session_id, model)


def second_session(session_id: str) -> None:
    model = ScriptedModel(
        [
            lambda recalled: [
                ("user__remove_memory", {"index": index_of(recalled, "trip to Lisbon")}),
                ("user__save_memory", {"text": "Visited Lisbon in May and loved it."}),
            ],
            [("user__remove_memory", {"index": 999})],  # a note that does not exist
            [],
        ]
    )
    run_session("session 2", session_id, model)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--second-session":
        second_session(sys.argv[2])
        return
    print(f"docmem quickstart: store {STORE_URL}")
    store = docmem.open_store(STORE_URL)
    mem = docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace=NAMESPACE, scope=USER), slot="user"
    )
    if mem.erase(mutation_id=f"quickstart-reset-{uuid.uuid4()}").status == "erased":
        print("(erased what an earlier run of this demo saved: indexes still never repeat)")
    first_session(f"sess-{uuid.uuid4().hex[:8]}")
    print("\n--- session 2 runs in a new process and sees the same memory ---")
    subprocess.run(
        [sys.executable, __file__, "--second-session", f"sess-{uuid.uuid4().hex[:8]}"],
        check=True,
    )


if __name__ == "__main__":
    main()
