"""A seeded fault campaign against a network store, run through :mod:`docmem.testing.faultproxy`.

What a campaign proves. Several writers (threads, each with its own store,
as separate processes would have) recall, save distinct notes into one scope
(by ``BoundMemory.save`` and by the save tool, alternately) and recall again,
all through the fault proxy, which resets, drops, delays, stalls, cuts and
falsifies answers as a :class:`~docmem.testing.faultproxy.FaultPlan` draws.
Every save's result is recorded; then the proxy is closed (nothing more can
land) and the document is read straight from the server and held to
docmem's promises:

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
  index), and retrying again changes nothing;
- at least one campaign request got a fault (the proxy was on the path).

The engine is the same for every store, so it lives here once: docmem-s3,
docmem-azure and docmem-gcs each describe their server in a
:class:`CampaignServer` and keep only their fault plans and test functions
(backends/docmem-s3/tests/test_fault_campaign.py is the model)::

    from docmem.testing import faultcampaign as fc
    from docmem.testing.faultproxy import FaultPlan, FaultProxy

    def test_mixed_faults(seed: int) -> None:
        server = fc.CampaignServer(
            name="my-server",
            upstream=ENDPOINT,  # the server's http://127.0.0.1:port
            faultable=lambda prefix: FaultProxy.for_prefix(BUCKET, prefix),
            open_through=lambda proxy, prefix: open_store(url(proxy, prefix) + fc.CLIENT_TIMEOUTS),
            open_direct=lambda prefix: open_store(url(ENDPOINT, prefix)),
        )
        plan = FaultPlan(seed, fc.MIXED, stall=fc.STALL)
        fc.run_campaign(server, plan, fc.WRITERS, fc.SAVES)

The stores opened through the proxy must use short client timeouts and a
single attempt per request (:data:`CLIENT_TIMEOUTS`), so that a ``stall``
(:data:`STALL`) outlasts the read timeout and docmem's own retry policy, not
the SDK's, decides what happens next. A header block cut short makes urllib3
log a parsing traceback; that logger is quieted during a campaign.

Bounded: a few saves per writer by default; ``DOCMEM_LONG_CAMPAIGN=1``
(:data:`LONG`) asks for more writers and saves, and a plug-in for more seeds.
A failure names the server, the seed and the fault plan, and the mutation ids
involved, never note text. Needs the ``test`` extra (pytest).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pytest

from ..backend import Backend
from ..errors import DocmemError
from ..provider.document import MemoryDocument
from ..provider.keys import LockedScope, lock_scope
from ..provider.memory import BoundMemory, FileMemory, MutationRecord
from ..provider.retry import RetryPolicy
from ..provider.tools import Tool, mutation_id_for
from .faultproxy import FaultPlan, FaultProxy, s3_error

__all__ = [
    "CLIENT_TIMEOUTS",
    "LONG",
    "MIXED",
    "READ_TIMEOUT",
    "SAVES",
    "STALL",
    "WRITERS",
    "CampaignServer",
    "Result",
    "run_campaign",
]

#: ``DOCMEM_LONG_CAMPAIGN=1``: the nightly campaign, with more writers, saves and seeds.
LONG = os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1"
#: Writers and saves per writer of a mixed campaign. At most 32 saves per document:
#: the journal keeps the last 32 writing mutations, so inspect() can vouch for each.
WRITERS, SAVES = (4, 8) if LONG else (3, 6)
#: The client's read timeout through the proxy, and a ``stall`` that outlasts it.
READ_TIMEOUT = 0.6
STALL = READ_TIMEOUT + 0.3
#: URL options for a store opened through the proxy: short timeouts, one attempt per request.
CLIENT_TIMEOUTS = f"&connect_timeout=0.5&read_timeout={READ_TIMEOUT}&max_attempts=1"

#: The mixed plan's weights: every fault, with most requests passing.
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

_RETRY = RetryPolicy(max_attempts=8, max_seconds=1.0, base=0.005, cap=0.05)
_OUTCOMES = ("not_committed", "unknown", "committed")
_UNSETTLED = ("unknown", "committed", "tool-error", "raw", "no-outcome")
_TOOL_SAVED = re.compile(r"(?:Already saved|Saved) as memory (\d+)\.")
_QUIETED = ("urllib3.connection",)


@dataclass(frozen=True)
class CampaignServer:
    """One server to run campaigns against: what differs from store to store.

    ``name`` is named in failure messages. ``upstream`` is the server's
    ``http://127.0.0.1:port``, which the proxy forwards to. Each campaign
    uses a fresh prefix; given it, ``faultable`` returns the proxy's
    classifier (which requests may get a fault), ``open_through`` opens a
    store on it through the proxy at ``proxy_url`` (with
    :data:`CLIENT_TIMEOUTS`) and ``open_direct`` one on the server itself.
    ``error_response`` and ``version_header`` are the proxy's (the server's
    error bodies, the header that carries a version). ``warm_up``, if given,
    is called on a store opened through the proxy before any request may get
    a fault: for a store whose probe requests the classifier cannot tell
    from a document's (the probe is then run unfaulted).
    """

    name: str
    upstream: str
    faultable: Callable[[str], Callable[[str, str], str]]
    open_through: Callable[[str, str], Backend]
    open_direct: Callable[[str], Backend]
    error_response: Callable[[int], tuple[str, bytes]] = s3_error
    version_header: str = "ETag"
    warm_up: Callable[[Backend], None] | None = None


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
def _quiet(names: tuple[str, ...]) -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _save(memory: BoundMemory, mutation_id: str, text: str) -> Result:
    try:
        saved = memory.save(text, mutation_id=mutation_id)
    except DocmemError as exc:
        kind = exc.outcome if exc.outcome in _OUTCOMES else "no-outcome"
        return Result(mutation_id, text, str(kind), type(exc).__name__)
    except Exception as exc:  # the defect a campaign exists to catch: recorded, not raised
        return Result(mutation_id, text, "raw", type(exc).__name__)
    return Result(mutation_id, text, saved.status, "", saved.index, saved.revision)


def _save_by_tool(tool: Tool, session: str, call: str, text: str) -> Result:
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


def _recall(memory: BoundMemory, who: str, problems: list[str]) -> None:
    try:
        messages = memory.recall()
    except DocmemError:
        return  # a typed refusal is a truthful answer under faults
    except Exception as exc:
        problems.append(f"{who}: recall raised {type(exc).__name__}, not a DocmemError")
        return
    if len(messages) > 1:
        problems.append(f"{who}: recall gave {len(messages)} messages")


def _write_through_proxy(
    stores: list[Backend],
    scope: LockedScope,
    seed: int,
    saves: int,
    problems: list[str],
) -> list[Result]:
    """Each writer recalls, saves (by ``save`` and by the save tool, alternately), recalls."""
    results: list[Result] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(stores))

    def writer(number: int) -> None:
        memory = FileMemory(stores[number], retry=_RETRY).bind(scope, slot="user")
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

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "a campaign writer hung"
    return sorted(results, key=lambda r: r.mutation_id)


def _where(document: MemoryDocument | None) -> dict[str, list[int]]:
    positions: dict[str, list[int]] = collections.defaultdict(list)
    for index, text in (document.entries if document is not None else {}).items():
        positions[text].append(index)
    return positions


def _check_recorded(
    memory: BoundMemory, results: list[Result], problems: list[str]
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
    memory: BoundMemory,
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
        expected = MutationRecord("save", "saved", retried.index, retried.revision or 0)
        if len(found) != 1:
            problems.append(f"{mutation_id}: after its retry, present {len(found)} times")
        elif found[0] != retried.index or memory.inspect(mutation_id) != expected:
            problems.append(f"{mutation_id}: after its retry, index or inspect disagree")
        if _save(memory, mutation_id, retried.text) != retried:
            problems.append(f"{mutation_id}: a second retry answered differently")
    document = memory.read()
    if (document.revision if document is not None else 0) != revision:
        problems.append("second retries changed the document")


def run_campaign(server: CampaignServer, plan: FaultPlan, writers: int, saves: int) -> None:
    """One campaign, each of ``writers`` saving ``saves`` notes; fails naming what broke."""
    prefix = f"fc-{uuid.uuid4().hex[:12]}"
    scope = lock_scope(namespace="tests:fault-campaign", scope=("user", f"seed-{plan.seed}"))
    problems: list[str] = []
    classify = server.faultable(prefix)
    armed = server.warm_up is None

    def faultable(method: str, path: str) -> str:
        return classify(method, path) if armed else "other"

    proxy = FaultProxy(
        server.upstream,
        plan,
        faultable,
        error_response=server.error_response,
        version_header=server.version_header,
    )
    with _quiet(_QUIETED), proxy:
        if server.warm_up is not None:
            first = server.open_through(proxy.url, prefix)
            try:
                server.warm_up(first)
            finally:
                first.close()
            armed = True
        stores = [server.open_through(proxy.url, prefix) for _ in range(writers)]
        try:
            results = _write_through_proxy(stores, scope, plan.seed, saves, problems)
        finally:
            for store in stores:
                store.close()
    # close() joined every proxy thread: nothing more can land from here on.
    direct = server.open_direct(prefix)
    try:
        memory = FileMemory(direct).bind(scope, slot="user")
        before = _check_recorded(memory, results, problems)
        _check_retries(memory, results, before, problems)
    finally:
        direct.close()
    if not any(count for name, count in proxy.counts().items() if name != "pass"):
        problems.append("no campaign request got a fault: the proxy is not on the path")
    if problems:
        tally = collections.Counter(
            f"{r.kind}({r.detail})" if r.detail else r.kind for r in results
        )
        shown = "\n  ".join(problems[:25])
        more = f"\n  ... and {len(problems) - 25} more" if len(problems) > 25 else ""
        pytest.fail(
            f"{server.name}: {len(problems)} broken promises under {proxy.summary()}\n"
            f"results: {dict(sorted(tally.items()))}\n  {shown}{more}",
            pytrace=False,
        )
