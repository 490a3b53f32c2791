"""Cache safety in every framework: what each way of injecting memory sends the model, call by call.

``python benchmarks/prompt_cache.py`` runs one scripted conversation through
each framework (its real agent loop, its own offline fake model, as
:mod:`harness.frameworks` drives them) once per way of getting memory into
the prompt, and records every request the fake model receives. The
conversation (:func:`scenario`): 20 user turns (``--quick``: 8) with two
memory slots, ``team`` and ``user``, each holding a few entries when it
starts; the model saves to ``user`` on one turn and to ``team`` on another
(memory changes there and nowhere else), calls the application's own
``lookup_order`` tool on every fourth turn (twice in a row on the last of
them) and answers with text otherwise. The history is kept the way each
framework keeps it (a session, ``all_messages()``, a checkpointer, the
agent's messages, a chat memory, the messages passed back in).

The ways, side by side in the same run and on the same fake model:

* docmem's adapter, in each placement it offers (``after_system``, the
  default; ``before_last_user``; ``placement="instructions"``;
  LangChain's ``persist=True``);
* naive: the application appends the recall (docmem's rendered documents)
  to the history at the start of every turn, as user messages;
* naive: a system prompt rebuilt with the recall before every model call
  (the framework's dynamic instructions: a callable ``instructions``,
  ``@dynamic_prompt``, an ``InstructionProvider``, a hook);
* the framework's own memory injection, where one ships and runs offline,
  fed docmem's documents (Google ADK's ``PreloadMemoryTool``, Strands'
  ``ContextInjector``, LlamaIndex's ``Memory`` blocks).

Each request is written in one canonical form (:class:`harness.frameworks.Request`:
a JSON line for the tools offered, then per message a line naming its role
and a line per content block: text, tool call, tool result), and the rows
report, per framework and way:

* copies of each slot per model call (docmem's marker counted in every text,
  system prompt included; the goal is exactly 1), and the calls whose
  request lacks a slot's current document (stale);
* the share of calls whose request is a byte-for-byte extension of the
  previous call's request up to that request's newest user message or tool
  result (the previous request cut after its last tool result or user text
  holding no docmem marker, which must be a prefix of this one: what a
  provider's prompt cache can reuse), over all calls after the first and
  over those whose memory did not change since the previous call (the
  goal, for the default placement: 100%);
* the bytes of the longest common prefix of the two (line by line), summed,
  as a share of all request bytes: the cache's hit rate in bytes;
* total request bytes over the conversation, and their ratio to the ideal:
  for each call, the same framework's request for that call with no memory
  at all (the adapter's tools registered, its hook doing nothing), plus one
  user message holding each slot's current document once. Goal: at most
  1.05x.

These are counts, not timings: one run each, deterministic. ``--json``
prints the report as one JSON object. A framework that is not installed is
skipped with a note (CrewAI runs in a venv of its own: ``make bench`` runs
this script there too). Benchmarks never fail a build: the exit status is 0
whether a goal is met (PASS) or not (MISS).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import difflib
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from harness.arguments import add_output_arguments, override
from harness.frameworks import (
    APP_TOOL,
    FRAMEWORKS,
    INJECTIONS,
    NATIVE_SKIPPED,
    WITHOUT_MEMORY,
    Framework,
    Injection,
    Request,
    Say,
    Step,
    Trusted,
    Use,
    conversation,
    request_of,
    scope_of,
)
from harness.report import describe, json_report, layout
from harness.timing import log

import docmem

NAMESPACE = "bench:prompt-cache"
#: The two slots, in the order docmem places them (by name).
SLOTS = ("team", "user")
CONTEXT = Trusted("alice")
#: Each slot's entries when the conversation starts.
SEEDS = {
    "team": (
        "The team is the Lisbon support desk.",
        "Escalations go to the on-call lead after 18:00.",
        "Refunds above 200 EUR need a manager's approval.",
    ),
    "user": (
        "Prefers metric units and short answers.",
        "Lives in Porto; ships to the office address on weekdays.",
        "Has a standing order of printer paper every month.",
        "Asked not to be contacted on Sundays.",
    ),
}
#: What the two saves add: memory changes on these turns only.
SAVES = (
    ("user", "Prefers email over phone calls."),
    ("team", "The team ships releases on Fridays."),
)
#: The goal for total request bytes, against the ideal.
BYTES_TARGET = 1.05

_ASKS = (
    "Where is my parcel, and what does the delivery window look like this week?",
    "Can you summarise what we discussed so far in two sentences?",
    "Is there anything I should do before the courier arrives?",
    "What are your opening hours on public holidays?",
    "Thanks. One more question about invoices: where do I find last month's?",
)
_ANSWERS = (
    "Your parcel is on its way; the delivery window is Thursday between 9:00 and 13:00.",
    "We looked at your order and its delivery; nothing else is open.",
    "Nothing to do: someone at the address should sign for it.",
    "We are closed on public holidays and open the next working day at 9:00.",
    "Invoices are under Account, then Billing; each month has its own PDF.",
)


@dataclasses.dataclass(frozen=True)
class Settings:
    """How long the conversation is; see :data:`FULL` and :data:`QUICK`."""

    turns: int


FULL = Settings(turns=20)
QUICK = Settings(turns=8)


@dataclasses.dataclass(frozen=True)
class Turn:
    """One user turn: what the user says, and the model's answer to each call of the turn."""

    text: str
    steps: tuple[Step, ...]


def scenario(turns: int) -> list[Turn]:
    """The conversation: saves at 30% and 70% of the way, ``lookup_order`` every fourth turn.

    20 turns: ``user`` saved on turn 6, ``team`` on turn 14, ``lookup_order``
    on turns 3, 7, 11, 15 and 19 (twice in a row on 19); 8 turns: saves on 2
    and 6, ``lookup_order`` on 3 and 7.
    """
    saves = {max(2, round(turns * 0.3)): SAVES[0], max(3, round(turns * 0.7)): SAVES[1]}
    tools = [number for number in range(1, turns + 1) if number % 4 == 3 and number not in saves]
    found = []
    for number in range(1, turns + 1):
        answer = Say(f"{_ANSWERS[number % len(_ANSWERS)]} (turn {number})")
        steps: list[Step] = []
        if number in saves:
            slot, fact = saves[number]
            text = f"Please remember this: {fact}"
            steps.append(Use(f"{slot}__save_memory", {"text": fact}, f"call_{number}_1"))
        else:
            text = f"{_ASKS[number % len(_ASKS)]} (turn {number})"
            lookups = 2 if tools and number == tools[-1] else 1 if number in tools else 0
            for call in range(1, lookups + 1):
                order = str(1040 + number + call)
                steps.append(Use(APP_TOOL, {"order_id": order}, f"call_{number}_{call}"))
        found.append(Turn(text, (*steps, answer)))
    return found


# -- memory -----------------------------------------------------------------------


def make_slots(store: docmem.Backend) -> list[docmem.MemorySlot]:
    return [
        docmem.MemorySlot(
            name,
            docmem.FileMemory(store),
            scope=docmem.by_principal,
            namespace=f"{NAMESPACE}:{name}",
            description=f"The {name} memory.",
        )
        for name in SLOTS
    ]


def seeded_store() -> docmem.Backend:
    """A fresh in-process store where each slot holds its :data:`SEEDS`."""
    store = docmem.open_store("memory://")
    runtime = docmem.MemoryRuntime(make_slots(store))
    scope = scope_of(CONTEXT)
    for slot, entries in SEEDS.items():
        for number, entry in enumerate(entries):
            result = runtime.dispatch(
                scope, f"{slot}__save_memory", {"text": entry}, call_id=f"{slot}-{number}"
            )
            if result.is_error:
                raise RuntimeError(f"seeding {slot} failed: {result.text}")
    return store


def documents(store: docmem.Backend) -> dict[str, str]:
    """Each slot's current document, as docmem renders it into the prompt."""
    runtime = docmem.MemoryRuntime(make_slots(store))
    return {recall.slot: recall.content for recall in runtime.recall(scope_of(CONTEXT))}


def versions(turns: Sequence[Turn]) -> tuple[list[dict[str, str]], list[int]]:
    """Every version of the documents the conversation goes through, and each call's version.

    The saves are applied to a scratch store as the model's tool calls apply
    them; a call sees the version made by the saves of the calls before it.
    """
    store = seeded_store()
    runtime = docmem.MemoryRuntime(make_slots(store))
    found = [documents(store)]
    of_call = []
    for turn in turns:
        for step in turn.steps:
            of_call.append(len(found) - 1)
            if isinstance(step, Use) and step.name.endswith("__save_memory"):
                result = runtime.dispatch(
                    scope_of(CONTEXT), step.name, step.arguments, call_id=step.call_id
                )
                if result.is_error:
                    raise RuntimeError(f"the scripted save failed: {result.text}")
                found.append(documents(store))
    return found, of_call


def ideal_copy_bytes(document: str) -> int:
    """One copy of a document in the ideal request: a user message holding it as one text."""
    return request_of([], [("user", [{"text": document}])]).size - request_of([], []).size


# -- one conversation, and its figures ------------------------------------------------


@dataclasses.dataclass
class Recorded:
    """The requests of one conversation, and the documents in the store at its end."""

    requests: list[Request]
    final: dict[str, str]


def record(
    framework: Framework,
    injection: Injection,
    turns: Sequence[Turn],
    loop: asyncio.AbstractEventLoop,
) -> Recorded:
    store = seeded_store()
    try:
        talk = conversation(framework, make_slots(store), CONTEXT, injection, loop)
        for turn in turns:
            talk.turn(turn.text, turn.steps)
        return Recorded(talk.requests, documents(store))
    finally:
        store.close()


def marker(slot: str) -> str:
    return f"<!-- docmem:recall {slot} -->"


def common_prefix(one: Sequence[str], two: Sequence[str]) -> int:
    """How many leading lines ``one`` and ``two`` share."""
    shared = 0
    for left, right in zip(one, two, strict=False):
        if left != right:
            break
        shared += 1
    return shared


def line_bytes(lines: Sequence[str]) -> int:
    return sum(len(line.encode()) + 1 for line in lines)


@dataclasses.dataclass
class Figures:
    """What one conversation sent, counted."""

    calls: int
    copies: dict[str, list[int]]
    stale: int
    compared: int
    extending: int
    unchanged: int
    unchanged_extending: int
    reused_bytes: int
    request_bytes: int
    ideal_bytes: int
    #: Of ``request_bytes``, and of ``ideal_bytes``: the tool definitions.
    tools_bytes: int
    ideal_tools_bytes: int
    #: Calls whose memory did not change and whose request does not extend the previous one:
    #: ``(call number, first line of the previous request that differs, its replacement)``.
    breaks: list[tuple[int, str, str]]

    @property
    def ratio(self) -> float:
        return self.request_bytes / self.ideal_bytes

    @property
    def messages_ratio(self) -> float:
        """The same ratio without the tool definitions, which every request repeats alike."""
        messages = self.request_bytes - self.tools_bytes
        return messages / (self.ideal_bytes - self.ideal_tools_bytes)

    def one_copy(self) -> bool:
        return all(count == 1 for counts in self.copies.values() for count in counts)


def measure(
    recorded: Recorded, bare: Recorded, expected: list[dict[str, str]], of_call: list[int]
) -> Figures:
    requests = recorded.requests
    copies = {
        slot: [sum(text.count(marker(slot)) for text in r.texts) for r in requests]
        for slot in SLOTS
    }
    stale = sum(
        1
        for request, version in zip(requests, of_call, strict=False)  # see check()
        if not all(any(doc in text for text in request.texts) for doc in expected[version].values())
    )
    compared = extending = unchanged = unchanged_extending = reused = 0
    breaks: list[tuple[int, str, str]] = []
    for number in range(1, len(requests)):
        previous, current = requests[number - 1], requests[number]
        cut = previous.lines[: previous.anchor]
        shared = common_prefix(cut, current.lines)
        extends = shared == len(cut)
        same_memory = of_call[number] == of_call[number - 1]
        compared += 1
        extending += extends
        unchanged += same_memory
        unchanged_extending += extends and same_memory
        reused += line_bytes(cut[:shared])
        if same_memory and not extends:
            replaced = current.lines[shared] if shared < len(current.lines) else "(nothing)"
            breaks.append((number + 1, cut[shared], replaced))
    ideal = sum(
        request.size + sum(ideal_copy_bytes(doc) for doc in expected[version].values())
        for request, version in zip(bare.requests, of_call, strict=False)
    )
    return Figures(
        calls=len(requests),
        copies=copies,
        stale=stale,
        compared=compared,
        extending=extending,
        unchanged=unchanged,
        unchanged_extending=unchanged_extending,
        reused_bytes=reused,
        request_bytes=sum(request.size for request in requests),
        ideal_bytes=ideal,
        tools_bytes=sum(request.tools_size for request in requests),
        ideal_tools_bytes=sum(request.tools_size for request in bare.requests),
        breaks=breaks,
    )


# -- rows ----------------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    """One framework and one way of injecting memory: its figures and goals."""

    framework: Framework
    injection: Injection
    figures: Figures
    #: Correctness of the run itself: every step answered, the saves applied.
    checked: bool
    notes: list[str]

    @property
    def name(self) -> str:
        return f"{self.framework.label}, {self.injection.label}"

    @property
    def goals(self) -> dict[str, bool] | None:
        """Each goal that applies and whether it is met; ``None`` for the other ways' rows."""
        if self.injection.kind != "docmem":
            return None
        figures = self.figures
        goals = {
            "one_copy": figures.one_copy() and figures.stale == 0,
            "bytes": figures.ratio <= BYTES_TARGET,
        }
        if self.injection.default:
            goals["extends"] = figures.unchanged_extending == figures.unchanged
        return goals

    @property
    def passed(self) -> bool | None:
        goals = self.goals
        return None if goals is None else self.checked and all(goals.values())


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def copies_cell(figures: Figures) -> str:
    counts = [count for counts in figures.copies.values() for count in counts]
    low, high = min(counts), max(counts)
    if low == high:
        return str(low)
    return f"{low}-{high} (mean {statistics.mean(counts):.1f})"


def cells(row: Row) -> tuple[str, ...]:
    figures = row.figures
    passed = row.passed
    return (
        row.framework.label,
        row.injection.label,
        str(figures.calls),
        copies_cell(figures),
        str(figures.stale),
        share(figures.extending, figures.compared),
        share(figures.unchanged_extending, figures.unchanged),
        f"{100 * figures.reused_bytes / figures.request_bytes:.0f}%",
        f"{figures.request_bytes - figures.reused_bytes:,}",
        f"{figures.request_bytes:,}",
        f"{figures.ratio:.2f}x",
        f"{figures.messages_ratio:.2f}x",
        "-" if passed is None else "PASS" if passed else "MISS",
    )


HEADER = (
    "framework",
    "memory injection",
    "calls",
    "copies/slot/call",
    "stale",
    "extends previous",
    "extends, memory unchanged",
    "prefix reused",
    "uncached bytes",
    "request bytes",
    "/ ideal",
    "without tools",
    "goals",
)


def row_json(row: Row) -> dict[str, Any]:
    figures = row.figures
    return {
        "name": row.name,
        "framework": row.framework.key,
        "injection": row.injection.kind,
        "placement": row.injection.label,
        "default": row.injection.default,
        "calls": figures.calls,
        "copies": {
            slot: {"min": min(counts), "max": max(counts), "mean": statistics.mean(counts)}
            for slot, counts in figures.copies.items()
        },
        "stale_calls": figures.stale,
        "compared_calls": figures.compared,
        "extending_calls": figures.extending,
        "unchanged_calls": figures.unchanged,
        "unchanged_extending_calls": figures.unchanged_extending,
        "prefix_reused_bytes": figures.reused_bytes,
        "uncached_bytes": figures.request_bytes - figures.reused_bytes,
        "request_bytes": figures.request_bytes,
        "ideal_bytes": figures.ideal_bytes,
        "ratio": figures.ratio,
        "tools_bytes": figures.tools_bytes,
        "messages_ratio": figures.messages_ratio,
        "target": BYTES_TARGET if row.goals is not None else None,
        "goals": row.goals,
        "passed": row.passed,
        "checked": row.checked,
        "notes": list(row.notes),
    }


# -- the run -------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    rows: list[Row] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)


def check(recorded: Recorded, steps: int, expected: dict[str, str]) -> list[str]:
    """What went wrong with the run itself (a call too many or too few, a save not applied)."""
    problems = []
    if len(recorded.requests) != steps:
        problems.append(f"{len(recorded.requests)} model calls for {steps} scripted steps")
    if recorded.final != expected:
        problems.append("the store's documents at the end are not the scripted saves' result")
    return problems


def break_notes(figures: Figures) -> list[str]:
    notes = []
    for number, before, after in figures.breaks[:3]:
        diff = difflib.ndiff([before[:300]], [after[:300]])
        notes.append(f"call {number} does not extend call {number - 1}, memory unchanged:")
        notes.extend(f"      {line}" for line in diff if not line.startswith("?"))
    if len(figures.breaks) > 3:
        notes.append(f"... and {len(figures.breaks) - 3} more such calls")
    return notes


def run_framework(
    run: Run,
    framework: Framework,
    turns: Sequence[Turn],
    expected: list[dict[str, str]],
    of_call: list[int],
    loop: asyncio.AbstractEventLoop,
) -> None:
    phase = time.monotonic()
    try:
        bare = record(framework, WITHOUT_MEMORY, turns, loop)
    except ImportError as error:
        reason = f"skipped: {framework.label.split()[0]} not installed ({error})"
        run.skipped.append(f"{framework.label}: {reason}")
        log(f"{framework.label}: {reason}")
        return
    except Exception as error:  # reported; the other frameworks still run
        run.errors.append(
            f"{framework.label}, {WITHOUT_MEMORY.label}: {type(error).__name__}: {error}"
        )
        log(f"{framework.label}: FAILED ({type(error).__name__}: {error})")
        return
    steps = sum(len(turn.steps) for turn in turns)
    bare_problems = check(bare, steps, expected[-1])
    if any(marker(slot) in text for r in bare.requests for text in r.texts for slot in SLOTS):
        bare_problems.append("the conversation without memory holds a copy")
    # A framework that rewrites its own history (trims it, say) breaks the prefix whatever
    # memory does: said under each of its rows.
    rewritten = [number for number, _, _ in measure(bare, bare, expected, of_call).breaks]
    history_note = (
        f"without memory too, calls {', '.join(map(str, rewritten))} do not extend the "
        "previous request: the framework changed its own history"
        if rewritten
        else None
    )
    for injection in INJECTIONS[framework.key]:
        try:
            recorded = record(framework, injection, turns, loop)
        except Exception as error:  # reported; the other rows still run
            label = f"{framework.label}, {injection.label}"
            run.errors.append(f"{label}: {type(error).__name__}: {error}")
            log(f"{label}: FAILED ({type(error).__name__}: {error})")
            continue
        problems = check(recorded, steps, expected[-1]) + [
            f"without memory: {problem}" for problem in bare_problems
        ]
        figures = measure(recorded, bare, expected, of_call)
        notes = [*problems]
        if history_note is not None:
            notes.append(history_note)
        if injection.default:
            notes.extend(break_notes(figures))
        run.rows.append(Row(framework, injection, figures, not problems, notes))
    if framework.key in NATIVE_SKIPPED:
        run.skipped.append(
            f"{framework.label}, its own memory injection: {NATIVE_SKIPPED[framework.key]}"
        )
    log(f"{framework.label}: {time.monotonic() - phase:.1f} s")


def installed(*distributions: str) -> dict[str, str]:
    found = {"docmem": docmem.__version__}
    for name in distributions:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    found["python"] = platform.python_version()
    return found


@contextlib.contextmanager
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def describe_scenario(turns: Sequence[Turn], of_call: Sequence[int]) -> str:
    saved = [n for n, t in enumerate(turns, 1) if any(_saves(s) for s in t.steps)]
    looked = [n for n, t in enumerate(turns, 1) if any(_looks_up(s) for s in t.steps)]
    return (
        f"{len(turns)} turns, {len(of_call)} model calls, slots {' and '.join(SLOTS)}; "
        f"memory saved on turns {', '.join(map(str, saved))} only; "
        f"{APP_TOOL} on turns {', '.join(map(str, looked))}"
    )


def _saves(step: Step) -> bool:
    return isinstance(step, Use) and step.name.endswith("__save_memory")


def _looks_up(step: Step) -> bool:
    return isinstance(step, Use) and step.name == APP_TOOL


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, bool]:
    parser = argparse.ArgumentParser(
        description="Cache safety: every request a scripted conversation sends the model, "
        "through each framework, with docmem's adapter and with naive ways of injecting memory."
    )
    parser.add_argument("--quick", action="store_true", help="a short conversation (8 turns)")
    parser.add_argument("--turns", type=int, help="user turns in the conversation (at least 4)")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    if settings.turns < 4:
        parser.error("turns must be at least 4")
    return settings, arguments.json


def main(argv: Sequence[str] | None = None) -> int:
    settings, as_json = parse_arguments(argv)
    started = time.monotonic()
    turns = scenario(settings.turns)
    expected, of_call = versions(turns)
    run = Run()
    log(f"prompt cache: {describe_scenario(turns, of_call)}")
    with event_loop() as loop:
        for framework in FRAMEWORKS:
            run_framework(run, framework, turns, expected, of_call, loop)
    found = installed(*sorted({framework.distribution for framework in FRAMEWORKS}))
    if as_json:
        context = {
            "docmem_from": os.path.dirname(docmem.__file__),
            "scenario": describe_scenario(turns, of_call),
            "slots": list(SLOTS),
            "bytes_target": BYTES_TARGET,
        }
        report = json.loads(
            json_report(
                "prompt_cache",
                [],
                settings=settings,
                found=found,
                context=context,
                started=started,
                errors=run.errors,
            )
        )
        report["results"] = [row_json(row) for row in run.rows]
        report["skipped"] = run.skipped
        print(json.dumps(report, indent=2, allow_nan=False))
        return 0
    print(f"{describe(found)}; docmem from {os.path.dirname(docmem.__file__)}")
    print(f"conversation: {describe_scenario(turns, of_call)}")
    print(
        "copies/slot/call: docmem's marker counted in each request (goal: 1); stale: calls "
        "missing a slot's current document;"
    )
    print(
        "extends: the previous request, up to its newest user message or tool result, is a "
        "byte prefix of this one (goal, default placement: 100% where memory is unchanged);"
    )
    print(
        "prefix reused: bytes of each request shared with the previous one's prefix, of all "
        "bytes (a cache's best case); uncached bytes: the rest, read afresh;"
    )
    print(
        f"/ ideal: request bytes over one copy per slot and nothing repeated (goal: <= "
        f"{BYTES_TARGET}x); without tools: the same without the tool definitions"
    )
    print()
    if run.rows:
        print(layout([HEADER, *(cells(row) for row in run.rows)], numeric={2, 4, 7, 8, 9, 10, 11}))
        print()
        noted = [row for row in run.rows if row.notes]
        if noted:
            print("notes:")
            for row in noted:
                print(f"{row.name}:" + ("" if row.checked else "  (check FAILED: a MISS)"))
                print("\n".join(f"    {note}" for note in row.notes))
            print()
    for skipped in run.skipped:
        print(f"not run: {skipped}")
    for error in run.errors:
        print(f"FAILED, no row: {error}")
    if run.skipped or run.errors:
        print()
    graded = [row for row in run.rows if row.passed is not None]
    misses = sum(not row.passed for row in graded)
    print(
        f"{len(graded) - misses} PASS, {misses} MISS (docmem rows; the other ways are reported) "
        f"in {time.monotonic() - started:.0f} s (benchmarks never fail the build)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
