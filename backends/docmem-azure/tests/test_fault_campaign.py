"""Seeded fault campaigns: docmem-azure through docmem.testing.faultproxy, in front of Azurite.

The promises are docmem-s3's (backends/docmem-s3/tests/test_fault_campaign.py
says each): writers (threads, each with its own store, as separate processes
would have) recall, save distinct notes into one scope (by ``save`` and by
the save tool, alternately) and recall again through the proxy, which
resets, drops after forwarding, stalls, answers Azure's XML errors (5xx),
cuts answers and blanks or removes ETags. Then the document is read
straight from Azurite and held to them: a save reported saved is there once,
at its index, and ``inspect`` agrees; every error is a DocmemError with an
outcome; a ``not_committed`` note is absent, an ``unknown`` one present at
most once; nothing is there that nobody saved; and each unsettled save,
retried under its own mutation id without faults, lands exactly once.

Only the campaign's document blobs get faults (``FaultProxy.for_prefix``);
the probe's ``.docmem-probe/`` blobs and the layout listing pass. A few seeds
by default; ``DOCMEM_LONG_CAMPAIGN=1`` runs many more (nightly). A failure
names the plan and the mutation ids involved, never note text.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest
from azure_servers import ACCOUNT, container, store_url, upstream, via

import docmem
from docmem.provider.tools import mutation_id_for
from docmem.testing.faultproxy import FaultPlan, FaultProxy

pytestmark = pytest.mark.integration

LONG = os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1"
SEEDS = tuple(range(1, 41)) if LONG else (1, 2, 3, 4)
ETAG_SEEDS = tuple(range(1, 6)) if LONG else (1,)
# At most 32 saves per document: the journal vouches for the last 32 writing mutations.
WRITERS, SAVES = (4, 8) if LONG else (3, 6)
TARGETED_SAVES = 8 if LONG else 3

CONNECT_TIMEOUT = 0.5
READ_TIMEOUT = 0.6
RETRY = docmem.RetryPolicy(max_attempts=8, max_seconds=1.0, base=0.005, cap=0.05)

MIXED: Mapping[str, float] = {
    "pass": 40,
    "delay": 8,
    "stall": 2,
    "reset": 7,
    "drop": 8,
    "500": 3,
    "503": 3,
    "landed-500": 5,
    "landed-503": 5,
    "cut": 5,
    "cut-reset": 5,
    "blank-etag": 3,
    "empty-etag": 3,
    "no-etag": 4,
}
OUTCOMES = ("not_committed", "unknown", "committed")
_UNSETTLED = ("unknown", "committed", "tool-error", "raw", "no-outcome")
_TOOL_SAVED = re.compile(r"(?:Already saved|Saved) as memory (\d+)\.")
_AZURE_CODES = {403: "AuthenticationFailed", 500: "InternalError", 503: "ServerBusy"}


def azure_error(status: int) -> tuple[str, bytes]:
    """An error answer as the blob service sends one: its XML body."""
    code = _AZURE_CODES.get(status, "InternalError")
    body = (
        '<?xml version="1.0" encoding="utf-8"?>'
        f"<Error><Code>{code}</Code><Message>injected by faultproxy</Message></Error>"
    ).encode()
    return "application/xml", body


@dataclass(frozen=True)
class Result:
    """One save as its writer saw it: ``saved``/``duplicate``, an outcome, ``tool-error``..."""

    mutation_id: str
    text: str
    kind: str
    detail: str = ""
    index: int | None = None
    revision: int | None = None


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _save(memory: docmem.BoundMemory, mutation_id: str, text: str) -> Result:
    try:
        saved = memory.save(text, mutation_id=mutation_id)
    except docmem.DocmemError as exc:
        kind = exc.outcome if exc.outcome in OUTCOMES else "no-outcome"
        return Result(mutation_id, text, str(kind), type(exc).__name__)
    except Exception as exc:  # the defect this campaign exists to catch: recorded, not raised
        return Result(mutation_id, text, "raw", type(exc).__name__)
    return Result(mutation_id, text, saved.status, "", saved.index, saved.revision)


def _save_by_tool(tool: docmem.Tool, session: str, call: str, text: str) -> Result:
    mutation_id = mutation_id_for(call, session)
    try:
        answer = tool.call({"text": text}, call_id=call, session_id=session)
    except Exception as exc:
        return Result(mutation_id, text, "raw", type(exc).__name__)
    match = _TOOL_SAVED.fullmatch(answer.text)
    if answer.is_error or match is None:
        return Result(mutation_id, text, "tool-error", "error result")
    kind = "duplicate" if answer.text.startswith("Already") else "saved"
    return Result(mutation_id, text, kind, "", int(match.group(1)))


def _recall(memory: docmem.BoundMemory, who: str, problems: list[str]) -> None:
    try:
        memory.recall()
    except docmem.DocmemError:
        return  # a typed refusal is a truthful answer under faults
    except Exception as exc:
        problems.append(f"{who}: recall raised {type(exc).__name__}, not a DocmemError")


def _write_through(
    proxy: FaultProxy, prefix: str, scope: docmem.LockedScope, seed: int, saves: int
) -> tuple[list[Result], list[str]]:
    results: list[Result] = []
    problems: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(WRITERS)
    url, options = via(proxy.url, prefix)
    url += f"&connect_timeout={CONNECT_TIMEOUT}&read_timeout={READ_TIMEOUT}&max_attempts=1"
    stores = [docmem.open_store(url, **options) for _ in range(WRITERS)]

    def writer(number: int) -> None:
        memory = docmem.FileMemory(stores[number], retry=RETRY).bind(scope, slot="user")
        tool = memory.tools()["user__save_memory"]
        session = f"s{seed}-w{number}"
        mine: list[Result] = []
        found: list[str] = []
        barrier.wait()
        _recall(memory, session, found)
        for i in range(saves):
            text = f"campaign note {number}.{i}"
            if i % 2:
                mine.append(_save_by_tool(tool, session, f"call-{i}", text))
            else:
                mine.append(_save(memory, f"{session}-{i}", text))
        _recall(memory, session, found)
        with lock:
            results.extend(mine)
            problems.extend(found)

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(WRITERS)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads), "a campaign writer hung"
    finally:
        for store in stores:
            store.close()
    return sorted(results, key=lambda r: r.mutation_id), problems


def _where(document: docmem.MemoryDocument | None) -> dict[str, list[int]]:
    positions: dict[str, list[int]] = collections.defaultdict(list)
    for index, text in (document.entries if document is not None else {}).items():
        positions[text].append(index)
    return positions


def _check_recorded(
    memory: docmem.BoundMemory, results: list[Result], problems: list[str]
) -> dict[str, list[int]]:
    positions = _where(memory.read())
    texts = {r.text for r in results}
    if any(text not in texts for text in positions):
        problems.append("entries nobody saved")
    for r in results:
        found = positions.get(r.text, [])
        record = memory.inspect(r.mutation_id)
        if r.kind in ("raw", "no-outcome"):
            problems.append(f"{r.mutation_id}: {r.kind} ({r.detail})")
        if r.kind in ("saved", "duplicate"):
            if r.kind == "duplicate" or found != [r.index]:
                problems.append(f"{r.mutation_id}: reported {r.kind} at {r.index}, found {found}")
            elif r.kind == "saved" and (
                record is None
                or (record.op, record.outcome, record.index) != ("save", "saved", r.index)
                or (r.revision is not None and record.revision != r.revision)
            ):
                problems.append(f"{r.mutation_id}: saved at {r.index}, inspect says {record}")
            continue
        if r.kind == "not_committed" and found:
            problems.append(f"{r.mutation_id}: not_committed ({r.detail}) but present")
        if r.kind == "committed" and len(found) != 1:
            problems.append(f"{r.mutation_id}: committed but present {len(found)} times")
        if len(found) > 1:
            problems.append(f"{r.mutation_id}: {r.kind} ({r.detail}), present {len(found)} times")
        if found and (record is None or record.index != found[0] or record.op != "save"):
            problems.append(f"{r.mutation_id}: present at {found[0]}, inspect says {record}")
        if not found and record is not None:
            problems.append(f"{r.mutation_id}: absent, inspect says {record}")
    return positions


def _check_retries(
    memory: docmem.BoundMemory,
    results: list[Result],
    before: dict[str, list[int]],
    problems: list[str],
) -> None:
    """Each save whose effect is not known, retried under its own id without faults: once."""
    retried: dict[str, Result] = {}
    for r in (r for r in results if r.kind in _UNSETTLED):
        again = _save(memory, r.mutation_id, r.text)
        landed = before.get(r.text, [])
        if again.kind != "saved" or (landed and again.index != landed[0]):
            problems.append(
                f"{r.mutation_id}: retry without faults gave {again.kind} at {again.index}"
            )
            continue
        retried[r.mutation_id] = again
    document = memory.read()
    after = _where(document)
    for mutation_id, again in retried.items():
        if after.get(again.text, []) != [again.index]:
            problems.append(f"{mutation_id}: after its retry, present {after.get(again.text)}")
        if _save(memory, mutation_id, again.text) != again:
            problems.append(f"{mutation_id}: a second retry answered differently")
    final = memory.read()
    if (final.revision if final else 0) != (document.revision if document else 0):
        problems.append("second retries changed the document")


def run_campaign(plan: FaultPlan, saves: int) -> None:
    """One campaign; fails with the plan, what happened and what broke."""
    prefix = f"fc-{uuid.uuid4().hex[:12]}"
    scope = docmem.lock_scope(namespace="tests:azure-faults", scope=("user", f"seed-{plan.seed}"))
    faultable = FaultProxy.for_prefix(f"{ACCOUNT}/{container()}", prefix)
    with (
        _quiet("urllib3.connection"),
        FaultProxy(upstream(), plan, faultable, error_response=azure_error) as proxy,
    ):
        results, problems = _write_through(proxy, prefix, scope, plan.seed, saves)
    # close() joined every proxy thread: nothing more can land from here on.
    direct = docmem.open_store(store_url(prefix))
    try:
        memory = docmem.FileMemory(direct).bind(scope, slot="user")
        before = _check_recorded(memory, results, problems)
        _check_retries(memory, results, before, problems)
    finally:
        direct.close()
    faulted = sum(proxy.counts().get(name, 0) for name in plan.weights if name != "pass")
    if faulted == 0:
        problems.append("no campaign request got a fault: the proxy is not on the path")
    if problems:
        tally = collections.Counter(
            f"{r.kind}({r.detail})" if r.detail else r.kind for r in results
        )
        pytest.fail(
            f"{len(problems)} broken promises under {proxy.summary()}\n"
            f"results: {dict(sorted(tally.items()))}\n  " + "\n  ".join(problems[:25]),
            pytrace=False,
        )


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_mixed_faults_keep_every_outcome_truthful(seed: int) -> None:
    run_campaign(FaultPlan(seed, MIXED, stall=READ_TIMEOUT + 0.3), SAVES)


# Every answer of one method falsified: GET answers test the read path, PUT answers
# the write whose answer is unusable (unknown, then settled through the journal).
ETAG_PLANS = {
    "empty-etag": ({"empty-etag": 1}, {"GET", "PUT"}),
    "no-etag-GET": ({"no-etag": 1}, {"GET"}),
    "no-etag-PUT": ({"no-etag": 1}, {"PUT"}),
    "blank-etag": ({"blank-etag": 1}, {"GET", "PUT"}),
}


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("name", sorted(ETAG_PLANS))
def test_a_bad_etag_is_a_typed_error_never_a_lost_update(name: str, seed: int) -> None:
    weights, methods = ETAG_PLANS[name]
    run_campaign(FaultPlan(seed, weights, methods=frozenset(methods)), TARGETED_SAVES)


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
def test_answers_cut_midway_and_dropped_writes_are_typed_errors(seed: int) -> None:
    """Every answer cut (closed or reset after half of it), or a write forwarded then dropped."""
    plan = FaultPlan(seed, {"cut": 1, "cut-reset": 1, "drop": 1})
    run_campaign(plan, TARGETED_SAVES)
