"""Seeded fault campaigns: docmem-gcs through docmem.testing.faultproxy before fake-gcs-server.

Several writers (threads, each with its own store, as separate processes
would have) recall, save distinct notes into one scope (by ``save`` and by
the save tool, alternately) and recall again, all through the proxy, which
resets, drops, delays, stalls, cuts and falsifies answers, and injects 5xx
answers with GCS's JSON error body. Then the document is read straight from
the emulator and held to docmem's promises, as docmem-s3's campaign holds
its store (backends/docmem-s3/tests/test_fault_campaign.py, whose checks
these are):

- a save reported ``saved`` is in the document exactly once, at its index,
  and ``inspect`` agrees;
- an error is a ``DocmemError`` with an outcome; a ``not_committed`` note is
  absent, an ``unknown`` one present at most once, ``inspect`` agreeing;
  nothing is in the document that nobody saved;
- retrying each unsettled save under its own mutation id, without faults,
  applies it exactly once, and retrying again changes nothing.

Which requests get faults: a multipart upload names its object in its body,
not its path, so the proxy cannot tell a document's upload from the
first-write probe's. The campaign's store is therefore verified (layout
listing and probe) through the proxy before faults are armed; from then on
every upload and every download of a document under the campaign's prefix
may get one. The generation faults act on ``X-Goog-Generation``, which
carries a download's version (an upload's is in its JSON body, which the
``cut`` faults break instead).

Bounded: a few seeds by default; ``DOCMEM_LONG_CAMPAIGN=1`` runs many more
seeds and saves. A failure names the seed, the plan and the mutation ids
involved, never note text.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest
from gcs_servers import bucket, endpoint, store_url

import docmem
from docmem.provider.tools import mutation_id_for
from docmem.testing.faultproxy import FaultPlan, FaultProxy

pytestmark = pytest.mark.integration

LONG = os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1"
SEEDS = tuple(range(1, 41)) if LONG else (1, 2, 3)
TARGETED_SEEDS = tuple(range(1, 6)) if LONG else (1,)
WRITERS, SAVES = (4, 8) if LONG else (3, 6)
TARGETED_SAVES = 8 if LONG else 4

TIMEOUTS = "&connect_timeout=0.5&read_timeout=0.6&max_attempts=1"
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

#: A download (GET) and an upload (POST): every request of a document's data path.
DATA_PATH = frozenset({"GET", "POST"})
OUTCOMES = ("not_committed", "unknown", "committed")
_UNSETTLED = ("unknown", "committed", "tool-error", "raw", "no-outcome")
_TOOL_SAVED = re.compile(r"(?:Already saved|Saved) as memory (\d+)\.")
_REASONS = {500: "backendError", 503: "backendError", 403: "forbidden"}


def gcs_error(status: int) -> tuple[str, bytes]:
    """A GCS JSON API error answer's content type and body, as the proxy injects it."""
    reason = _REASONS.get(status, "backendError")
    error = {"code": status, "message": "injected by faultproxy"}
    error["errors"] = [{"domain": "global", "reason": reason, "message": "injected"}]  # type: ignore[assignment]
    return "application/json; charset=UTF-8", json.dumps({"error": error}).encode()


class Armed:
    """The proxy's ``faultable``: nothing until armed, then the campaign's documents."""

    def __init__(self, prefix: str) -> None:
        self.on = False
        self._download = f"/download/storage/v1/b/{bucket()}/o/{prefix}/"
        self._upload = f"/upload/storage/v1/b/{bucket()}/o"

    def __call__(self, method: str, path: str) -> str:
        if not self.on:
            return "other"
        if path.startswith(self._download) and ".docmem-probe/" not in path:
            return "campaign"
        return "campaign" if method == "POST" and path == self._upload else "other"


@dataclass(frozen=True)
class Result:
    """One save as its writer saw it.

    ``kind``: ``saved``/``duplicate`` (a result), an error's outcome, ``tool-error``,
    ``raw`` (an exception outside docmem's tree) or ``no-outcome``.
    """

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


def _writer(
    url: str, scope: docmem.LockedScope, number: int, saves: int, start: threading.Barrier
) -> tuple[list[Result], list[str]]:
    store = docmem.open_store(url)
    memory = docmem.FileMemory(store, retry=RETRY).bind(scope, slot="user")
    tool = memory.tools()["user__save_memory"]
    session = f"w{number}"
    results: list[Result] = []
    problems: list[str] = []
    start.wait()
    try:
        for i in range(saves):
            text = f"campaign note {number}.{i}"
            if i % 2:
                results.append(_save_by_tool(tool, session, f"call-{i}", text))
            else:
                results.append(_save(memory, f"{session}-{i}", text))
            try:
                memory.recall()
            except docmem.DocmemError:
                pass  # a typed refusal is a truthful answer under faults
            except Exception as exc:
                problems.append(f"{session}: recall raised {type(exc).__name__}")
    finally:
        store.close()
    return results, problems


def _where(document: docmem.MemoryDocument | None) -> dict[str, list[int]]:
    positions: dict[str, list[int]] = collections.defaultdict(list)
    for index, text in (document.entries if document is not None else {}).items():
        positions[text].append(index)
    return positions


def _check(memory: docmem.BoundMemory, results: list[Result], problems: list[str]) -> None:
    """The promises on what each writer saw, then on retrying what is unsettled."""
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
            elif r.revision is not None and (record is None or record.revision != r.revision):
                problems.append(f"{r.mutation_id}: saved, inspect says {record}")
            continue
        if r.kind == "not_committed" and found:
            problems.append(f"{r.mutation_id}: not_committed ({r.detail}) but present")
        if len(found) > 1 or (r.kind == "committed" and len(found) != 1):
            problems.append(f"{r.mutation_id}: {r.kind} ({r.detail}), present {len(found)} times")
        if found and (record is None or record.index != found[0]):
            problems.append(f"{r.mutation_id}: present at {found[0]}, inspect says {record}")
        if not found and record is not None:
            problems.append(f"{r.mutation_id}: absent, inspect says {record}")
    for r in (r for r in results if r.kind in _UNSETTLED):
        retried = _save(memory, r.mutation_id, r.text)
        landed = positions.get(r.text, [])
        if retried.kind != "saved" or (landed and retried.index != landed[0]):
            problems.append(f"{r.mutation_id}: retry gave {retried.kind} at {retried.index}")
        elif _save(memory, r.mutation_id, r.text) != retried:
            problems.append(f"{r.mutation_id}: a second retry answered differently")
    after = _where(memory.read())
    for r in results:
        if r.kind in _UNSETTLED and len(after.get(r.text, [])) != 1:
            problems.append(f"{r.mutation_id}: after its retry, present {len(after[r.text])} times")


def run_campaign(plan: FaultPlan, writers: int, saves: int) -> None:
    prefix = f"fc-{uuid.uuid4().hex[:12]}"
    scope = docmem.lock_scope(namespace="tests:gcs-faults", scope=("user", f"seed-{plan.seed}"))
    armed = Armed(prefix)
    problems: list[str] = []
    results: list[Result] = []
    lock = threading.Lock()
    start = threading.Barrier(writers)
    proxy = FaultProxy(
        endpoint(), plan, armed, error_response=gcs_error, version_header="X-Goog-Generation"
    )
    with _quiet("urllib3.connection"), proxy:
        url = store_url(prefix, through=proxy.url) + TIMEOUTS
        first = docmem.open_store(url)
        first.verify()  # type: ignore[attr-defined]  # the layout listing and the probe, unfaulted
        first.close()
        armed.on = True

        def run(number: int) -> None:
            mine, found = _writer(url, scope, number, saves, start)
            with lock:
                results.extend(mine)
                problems.extend(found)

        threads = [threading.Thread(target=run, args=(n,), daemon=True) for n in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads), "a campaign writer hung"
    # close() joined every proxy thread: nothing more can land from here on.
    direct = docmem.open_store(store_url(prefix))
    try:
        _check(docmem.FileMemory(direct).bind(scope, slot="user"), results, problems)
    finally:
        direct.close()
    if problems:
        tally = collections.Counter(
            f"{r.kind}({r.detail})" if r.detail else r.kind for r in results
        )
        shown = "\n  ".join(problems[:25])
        pytest.fail(
            f"{len(problems)} broken promises under {proxy.summary()}\n"
            f"results: {dict(sorted(tally.items()))}\n  {shown}",
            pytrace=False,
        )
    assert any(entry.fault != "pass" for entry in proxy.log)  # faults were drawn at all


@pytest.mark.parametrize("seed", SEEDS, ids=lambda seed: f"seed{seed}")
def test_mixed_faults_keep_every_outcome_truthful(seed: int) -> None:
    run_campaign(FaultPlan(seed, MIXED, methods=DATA_PATH, stall=0.9), WRITERS, SAVES)


#: One fault on every answer of one kind: downloads whose generation is blanked, emptied or
#: missing (typed errors, never a version taken from nowhere), and answers cut midway.
TARGETED: dict[str, tuple[dict[str, float], frozenset[str]]] = {
    "blank-generation": ({"blank-etag": 1}, frozenset({"GET"})),
    "empty-generation": ({"empty-etag": 1}, frozenset({"GET"})),
    "no-generation": ({"no-etag": 1}, frozenset({"GET"})),
    "cut": ({"cut": 1, "cut-reset": 1}, DATA_PATH),
    "5xx-after-landing": ({"landed-500": 1, "landed-503": 1}, frozenset({"POST"})),
}


@pytest.mark.parametrize("seed", TARGETED_SEEDS, ids=lambda seed: f"seed{seed}")
@pytest.mark.parametrize("name", sorted(TARGETED))
def test_one_fault_everywhere_is_a_typed_error_never_a_lost_update(name: str, seed: int) -> None:
    weights, methods = TARGETED[name]
    run_campaign(FaultPlan(seed, weights, methods=methods), WRITERS, TARGETED_SAVES)
