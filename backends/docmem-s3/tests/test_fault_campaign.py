"""Seeded fault campaigns: docmem-s3 through faultproxy, in front of LocalStack and SeaweedFS.

Several writers (threads, each with its own store, as separate processes
would have) recall, save distinct notes into one scope (by ``save`` and by
the save tool, alternately) and recall again, all through the proxy, which
resets, drops, delays, stalls, cuts and falsifies answers (``faultproxy``).
Every save's result is recorded; then the document is read straight from
the server, without the proxy, and held to docmem's promises:

- a save reported ``saved`` is in the document exactly once, at its index,
  and ``inspect`` reports it with that index (and revision);
- an error is a ``DocmemError`` (never a raw ``KeyError``, ``ProtocolError``,
  ...) whose ``outcome`` is ``not_committed``, ``unknown`` or ``committed``;
  a recall fails only with a ``DocmemError``; a tool answers, never raises;
- a ``not_committed`` note is absent and unknown to ``inspect``; an
  ``unknown`` one (or a tool's error result) is present at most once, and
  ``inspect`` agrees with whether it is present; nothing is in the document
  that nobody saved;
- retrying each save whose effect is not known under its own mutation id,
  without faults, applies it exactly once (a landed one is replayed at its
  index), and retrying again changes nothing.

Only the campaign's document objects get faults; the first-write probe's
``<prefix>/.docmem-probe/`` objects pass through (``FaultProxy.for_prefix``),
so a campaign measures the data path and never has to tell a refused probe
from a fault. The ETag campaigns put one fault (``ETag: ""``, an empty
``ETag:`` or none at all) on every GET or every PUT answer: typed errors or
correct results, never a lost update. (LocalStack and SeaweedFS refuse
``If-Match: ""`` with a 412, but apply a PUT with an empty ``If-Match``
unconditionally.) A header block cut short makes urllib3 log a parsing
traceback; that logger is quieted during a campaign.

Bounded: a few seeds by default; ``DOCMEM_LONG_CAMPAIGN=1`` runs many more
seeds and saves (nightly). A failure names the server, the seed and the
fault plan, and the mutation ids involved, never note text.
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
from s3_servers import SERVERS, bucket, endpoint_of, store_url

import docmem
from docmem.provider.tools import mutation_id_for
from docmem.testing.faultproxy import FaultPlan, FaultProxy

pytestmark = pytest.mark.integration

LONG = os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1"
SEEDS = tuple(range(1, 41)) if LONG else (1, 2, 3, 4)
ETAG_SEEDS = tuple(range(1, 6)) if LONG else (1,)
# At most 32 saves per document: the journal keeps the last 32 writing mutations,
# so inspect() can vouch for every one of them.
WRITERS, SAVES = (4, 8) if LONG else (3, 6)
TARGETED_SAVES = 8 if LONG else 4  # the ETag and cut campaigns

CONNECT_TIMEOUT = 0.5
READ_TIMEOUT = 0.6
READ_ATTEMPTS = 1
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


@dataclass(frozen=True)
class Result:
    """One save as its writer saw it.

    ``kind``: ``saved``/``duplicate`` (a result), an error's outcome,
    ``tool-error`` (the tool's error result, which does not say whether the
    save landed), ``raw`` (an exception outside docmem's tree) or ``no-outcome``.
    """

    mutation_id: str
    text: str
    kind: str
    detail: str  # the error's class or the raw exception's type name; "" for a result
    index: int | None = None
    revision: int | None = None  # None for a tool's answer, which names only the index


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _url(endpoint: str, prefix: str) -> str:
    return (
        f"{store_url(endpoint, prefix)}&connect_timeout={CONNECT_TIMEOUT}"
        f"&read_timeout={READ_TIMEOUT}&max_attempts={READ_ATTEMPTS}"
    )


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
        messages = memory.recall()
    except docmem.DocmemError:
        return  # a typed refusal is a truthful answer under faults
    except Exception as exc:
        problems.append(f"{who}: recall raised {type(exc).__name__}, not a DocmemError")
        return
    if len(messages) > 1:
        problems.append(f"{who}: recall gave {len(messages)} messages")


def _write_through_proxy(
    proxy: FaultProxy,
    prefix: str,
    scope: docmem.LockedScope,
    seed: int,
    writers: int,
    saves: int,
    problems: list[str],
) -> list[Result]:
    """Each writer recalls, saves (by ``save`` and by the save tool, alternately), recalls."""
    results: list[Result] = []
    lock = threading.Lock()
    barrier = threading.Barrier(writers)
    stores = [docmem.open_store(_url(proxy.url, prefix)) for _ in range(writers)]

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

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(writers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads), "a campaign writer hung"
    finally:
        for store in stores:
            store.close()
    return sorted(results, key=lambda r: r.mutation_id)


def _where(document: docmem.MemoryDocument | None) -> dict[str, list[int]]:
    positions: dict[str, list[int]] = collections.defaultdict(list)
    for index, text in (document.entries if document is not None else {}).items():
        positions[text].append(index)
    return positions


def _check_recorded(
    memory: docmem.BoundMemory, results: list[Result], problems: list[str]
) -> dict[str, list[int]]:
    """The invariants on what each writer saw, against the document as stored."""
    positions = _where(memory.read())
    texts = {r.text for r in results}
    phantoms = sorted(i for text, found in positions.items() if text not in texts for i in found)
    if phantoms:
        problems.append(f"entries nobody saved at indexes {phantoms}")
    for r in results:
        found = positions.get(r.text, [])
        record = memory.inspect(r.mutation_id)
        if r.kind == "raw":
            problems.append(f"{r.mutation_id}: raised {r.detail}, not a DocmemError")
        elif r.kind == "no-outcome":
            problems.append(f"{r.mutation_id}: {r.detail} without an outcome")
        if r.kind in ("saved", "duplicate"):
            if r.kind == "duplicate":
                problems.append(f"{r.mutation_id}: a distinct note reported duplicate")
            if len(found) != 1:
                problems.append(f"{r.mutation_id}: reported saved, present {len(found)} times")
            elif found[0] != r.index:
                problems.append(
                    f"{r.mutation_id}: reported saved at {r.index}, found at {found[0]}"
                )
            if r.kind == "saved" and (
                record is None
                or (record.op, record.outcome, record.index) != ("save", "saved", r.index)
                or (r.revision is not None and record.revision != r.revision)
            ):
                problems.append(
                    f"{r.mutation_id}: reported saved at {r.index} (revision {r.revision}), "
                    f"inspect says {record}"
                )
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
    """Each save whose effect is not known, retried under its own id without faults."""
    first: dict[str, Result] = {}
    for r in (r for r in results if r.kind in _UNSETTLED):
        retried = _save(memory, r.mutation_id, r.text)
        if retried.kind != "saved":
            problems.append(f"{r.mutation_id}: retry without faults gave {retried.kind}")
            continue
        first[r.mutation_id] = retried
        landed = before.get(r.text, [])
        if landed and retried.index != landed[0]:
            problems.append(
                f"{r.mutation_id}: landed at {landed[0]}, its retry says {retried.index}"
            )
    document = memory.read()
    revision = document.revision if document is not None else 0
    after = _where(document)
    for mutation_id, retried in first.items():
        found = after.get(retried.text, [])
        expected = docmem.MutationRecord("save", "saved", retried.index, retried.revision or 0)
        if len(found) != 1:
            problems.append(f"{mutation_id}: after its retry, present {len(found)} times")
        elif found[0] != retried.index or memory.inspect(mutation_id) != expected:
            problems.append(f"{mutation_id}: after its retry, index or inspect disagree")
        if _save(memory, mutation_id, retried.text) != retried:
            problems.append(f"{mutation_id}: a second retry answered differently")
    document = memory.read()
    if (document.revision if document is not None else 0) != revision:
        problems.append("second retries changed the document")


def run_campaign(server: str, plan: FaultPlan, writers: int, saves: int) -> None:
    """One campaign; fails with the server, the plan, what happened and what broke."""
    endpoint = endpoint_of(server)
    prefix = f"fc-{uuid.uuid4().hex[:12]}"
    scope = docmem.lock_scope(namespace="tests:fault-campaign", scope=("user", f"seed-{plan.seed}"))
    problems: list[str] = []
    faultable = FaultProxy.for_prefix(bucket(), prefix)
    with _quiet("urllib3.connection"), FaultProxy(endpoint, plan, faultable) as proxy:
        results = _write_through_proxy(proxy, prefix, scope, plan.seed, writers, saves, problems)
    # close() joined every proxy thread: nothing more can land from here on.
    direct = docmem.open_store(store_url(endpoint, prefix))
    try:
        memory = docmem.FileMemory(direct).bind(scope, slot="user")
        before = _check_recorded(memory, results, problems)
        _check_retries(memory, results, before, problems)
    finally:
        direct.close()
    if problems:
        tally = collections.Counter(
            f"{r.kind}({r.detail})" if r.detail else r.kind for r in results
        )
        shown = "\n  ".join(problems[:25])
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        pytest.fail(
            f"{server}: {len(problems)} broken promises under {proxy.summary()}\n"
            f"results: {dict(sorted(tally.items()))}\n  {shown}{more}",
            pytrace=False,
        )


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_mixed_faults_keep_every_outcome_truthful(server: str, seed: int) -> None:
    plan = FaultPlan(seed, MIXED, stall=READ_TIMEOUT + 0.3)
    run_campaign(server, plan, WRITERS, SAVES)


# Every answer of one method falsified: GET answers test the read path, PUT answers
# the write whose answer is unusable (unknown, then settled through the journal).
# ``ETag: ""`` is refused with a 412 by both servers, so one campaign covers it.
ETAG_PLANS = {
    "empty-etag-GET": ({"empty-etag": 1}, {"GET"}),
    "empty-etag-PUT": ({"empty-etag": 1}, {"PUT"}),
    "no-etag-GET": ({"no-etag": 1}, {"GET"}),
    "no-etag-PUT": ({"no-etag": 1}, {"PUT"}),
    "blank-etag": ({"blank-etag": 1}, {"GET", "PUT"}),
}


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("name", sorted(ETAG_PLANS))
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_bad_etag_is_a_typed_error_never_a_lost_update(server: str, name: str, seed: int) -> None:
    weights, methods = ETAG_PLANS[name]
    plan = FaultPlan(seed, weights, methods=frozenset(methods))
    run_campaign(server, plan, WRITERS, TARGETED_SAVES)


@pytest.mark.parametrize("seed", ETAG_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_answers_cut_midway_are_typed_errors(server: str, seed: int) -> None:
    """Every answer cut (closed or reset after half of it), error bodies included."""
    run_campaign(server, FaultPlan(seed, {"cut": 1, "cut-reset": 1}), WRITERS, TARGETED_SAVES)
