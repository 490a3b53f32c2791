"""A scripted multi-turn conversation through MemoryRuntime, with two memory slots.

No LLM is needed: the "model" is a script of tool calls. The host keeps its
own history; docmem keeps what it recalled in a RecallLedger and projects it
into the prompt before every model call. Watch the printed prompts:

- ``user`` memory follows the person (scope: the authenticated principal);
- ``channel`` memory is private to one person in one Slack channel
  (scope: principal + team + channel);
- each memory shows once per slot, and a change *replaces* the old copy
  and moves it next to the newest turn instead of piling up.

    python examples/conversation.py
"""

from __future__ import annotations

import os
import sys
from typing import Any

import docmem

STORE_URL = os.environ.get("DOCMEM_STORE", "memory://")

ALICE = docmem.Principal(
    kind="user", authenticator="slack", issuer="https://slack.com", id="U_ALICE"
)
TRUSTED = docmem.ScopeContext(
    principal=ALICE, channel="slack", channel_metadata={"team": "T_ACME", "channel": "C_BILLING"}
)


def channel_scope(context: docmem.ScopeContext) -> tuple[str, ...] | None:
    """Principal + team + channel: memory that stays in this channel, for this person."""
    person = docmem.by_principal(context)
    if person is None or context.channel != "slack":
        return None
    meta = context.channel_metadata
    return (*person, meta["team"], meta["channel"])


# What the scripted model does each turn: (user input, tool calls).
SCRIPT: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
    (
        "Hi! I'm moving the invoices to the new system. Use kilometres, please.",
        [
            ("user__save_memory", {"text": "Prefers metric units."}),
            ("channel__save_memory", {"text": "Alice is migrating invoices to the new system."}),
        ],
    ),
    (
        "What's the status of batch 7?",
        [],
    ),
    (
        "Batch 7 is done; I'm on batch 8 now. Also, I work from Lisbon.",
        [
            ("channel__remove_memory", {"index": 0}),
            ("channel__save_memory", {"text": "Alice finished batch 7; batch 8 is in progress."}),
            ("user__save_memory", {"text": "Works from Lisbon."}),
        ],
    ),
    (
        "Thanks, that's all for today.",
        [],
    ),
]


def render(message: Any) -> str:
    if isinstance(message, docmem.ProjectedRecall):
        first, _, rest = message.content.partition("\n")
        lines = [line for line in rest.splitlines() if line[:1].isdigit() or line.startswith("No")]
        return f"[memory {message.slot}] {first} | " + " | ".join(lines)
    return f"[{message['role']}] {message['content']}"


def run(store_url: str = STORE_URL) -> list[list[str]]:
    """Play the script; returns the prompt the model saw each turn, one line per message."""
    memory = docmem.FileMemory(docmem.open_store(store_url))
    runtime = docmem.MemoryRuntime(
        [
            docmem.MemorySlot(
                "user",
                memory,
                scope=docmem.by_principal,
                namespace="example:assistant:user",
                description="Personal memory about the person you are talking to.",
            ),
            docmem.MemorySlot(
                "channel",
                memory,
                scope=channel_scope,
                namespace="example:assistant:channel",
                description="Memory of this person's work in this Slack channel only.",
            ),
        ]
    )
    history: list[dict[str, str]] = []  # the host's own history: never holds recalled memory
    prompts: list[list[str]] = []
    for turn, (user_input, calls) in enumerate(SCRIPT):
        context = docmem.TurnContext(
            operation_id=f"turn-{turn}",
            history=history,
            scope_context=TRUSTED,
            node="assistant",
            session_id="session-1",
        )
        memory_turn = runtime.turn_started(context)
        prompt = [render(message) for message in memory_turn.messages]
        prompt.append(f"[user] {user_input}")
        prompts.append(prompt)
        history.append({"role": "user", "content": user_input})
        results = []
        for number, (name, arguments) in enumerate(calls):
            result = memory_turn.dispatch(name, arguments, call_id=f"t{turn}c{number}")
            results.append(f"{name} -> {result.text}")
        reply = "; ".join(results) if results else "(answers without touching memory)"
        history.append({"role": "assistant", "content": reply})
        runtime.turn_completed(context)
    return prompts


def main() -> None:
    for turn, prompt in enumerate(run()):
        print(f"=== prompt of turn {turn} " + "=" * 40)
        for line in prompt:
            print("  " + line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
