"""Benchmarks of the framework adapters: what docmem adds to one model call, and turn-start recall.

``python benchmarks/adapters.py`` runs the ``file://`` rows; with an S3
endpoint (``--endpoint URL`` or ``$LOCALSTACK_ENDPOINT``:
``scripts/with-test-servers .venv/bin/python benchmarks/adapters.py``) the
docmem-s3 rows too, in the bucket ``$DOCMEM_TEST_BUCKET`` (default
``docmem-test``), with credentials from the standard AWS chain. Without an
endpoint the S3 rows are reported as not run. A full run takes about a
minute; ``--quick`` is a smoke run with small counts. As in the other
scripts, the sides of a row alternate in the same run (A/B, B/A, ...; three
or four sides rotate) and each row reports the ratio of medians against a
target:

* ``<framework>, file://``: one model call through the real framework
  (:mod:`harness.frameworks`: a run whose fake model answers with text at
  once) with docmem's adapter, against the same run with the adapter's
  per-call hook doing nothing (a subclass whose hook returns its input
  unchanged; docmem's tools are registered in both, so only the hook
  differs). The slot's document holds 10 entries in a warm ``file://``
  store (read before timing). The docmem figure is the time the hook adds:
  the hook run's median minus the no-op run's median. The baseline is not
  measured: it is the 1 ms budget, so the ratio is the share of the budget
  used and the target is 1x (at most 1 ms added). The notes give both
  medians and the median of the paired differences (same round), and check
  that every call with the hook sent the model exactly one copy of the
  document and every call without it none.
* ``<framework>, s3://``: the same on docmem-s3 (the document read before, so
  each recall is a conditional GET answered 304), against one raw boto3
  ``get_object`` of the same object, a third side in the same rotation, by a
  client configured like the store's reader. Target: the hook adds at most
  1.2x one GET.
* ``turn start, 3 slots, ...``: a :class:`docmem.MemoryRuntime` with three
  slots, each a ``FileMemory`` on one docmem-s3 store with a 10-entry
  document of its own (read before: three 304s per call), against one raw
  ``get_object`` of one of the documents: ``runtime.recall(scope)``, and
  ``runtime.turn_started(...)`` with a fresh operation id and a fresh ledger
  per call (a conversation's first turn). The slots are read concurrently,
  so the target is 1.3x one GET. A fourth side, in the notes only, sends the
  same three conditional GETs raw from three threads (three clients), to
  show what those requests cost sent concurrently from one process.

The framework rows' JSON objects also carry ``hook_seconds`` and
``noop_seconds`` (the two medians) and ``paired_seconds``; the turn-start
rows ``concurrent_gets_seconds``. Every S3 request is counted per operation
and status on every side (the notes show requests per call); each run's
prefixes (uuid) are deleted afterwards, the ``file://`` store's temporary
directory too. ``--json`` prints the report as one JSON object
(benchmarks/README.md); rows not run are listed in its ``skipped`` field.
Benchmarks never fail a build: the exit status is 0 whether a target is met
(PASS) or not (MISS).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import importlib.metadata
import json
import os
import pathlib
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from harness.arguments import add_endpoint_arguments, add_output_arguments, override
from harness.frameworks import FRAMEWORKS, Framework, OneCall, Trusted, one_call, rotate, scope_of
from harness.report import Result, describe, format_duration, json_report, notes, table, verdict
from harness.s3 import Prefixes, Requests, S3Endpoint, check_bucket
from harness.timing import Sample, clock, interleave, log, settle
from harness.workload import ENTRIES

import docmem

if TYPE_CHECKING:
    from docmem_s3 import S3Backend

NAMESPACE = "bench:adapters"
#: What the hook may add to one model call on ``file://``.
BUDGET = 1e-3
#: The slots of the turn-start rows.
TURN_SLOTS = ("channel", "team", "user")
CONTEXT = Trusted("alice")


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many rounds each row takes; see :data:`FULL` and :data:`QUICK`."""

    call_runs: int
    s3_call_runs: int
    recall_runs: int
    warmup: int


FULL = Settings(call_runs=400, s3_call_runs=300, recall_runs=300, warmup=20)
QUICK = Settings(call_runs=40, s3_call_runs=15, recall_runs=15, warmup=3)


def file_row(framework: Framework) -> str:
    return f"{framework.label}, file://"


def s3_row(framework: Framework) -> str:
    return f"{framework.label}, s3://"


TURN_ROWS = ("turn start, 3 slots, MemoryRuntime.recall", "turn start, 3 slots, turn_started")


# -- memories ---------------------------------------------------------------------


def slot(store: docmem.Backend, name: str = "user") -> docmem.MemorySlot:
    """A slot on ``store`` scoped by the run context's user, as an application declares it."""
    return docmem.MemorySlot(
        name,
        docmem.FileMemory(store),
        scope=docmem.by_principal,
        namespace=f"{NAMESPACE}:{name}",
        description=f"The {name} memory.",
    )


def seed(store: docmem.Backend, name: str = "user") -> docmem.BoundMemory:
    """The document ``slot(store, name)`` shows :data:`CONTEXT`, with :data:`ENTRIES` entries."""
    scope = docmem.by_principal(scope_of(CONTEXT))
    assert scope is not None
    memory = docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace=f"{NAMESPACE}:{name}", scope=scope), slot=name
    )
    for index in range(ENTRIES):
        memory.save(
            f"Seed fact {index}: the user prefers metric units and short answers.",
            mutation_id=f"seed-{name}-{index}",
        )
    return memory


def document_bytes(store: docmem.Backend, memory: docmem.BoundMemory) -> int:
    stored = store.read(memory.scope.storage_key)
    if stored is None:
        raise RuntimeError("the seeded document is missing")
    return len(stored.data)


# -- one model call ---------------------------------------------------------------


@dataclasses.dataclass
class Checked:
    """A framework's run, checked after every call: the copies the model was sent."""

    call: OneCall
    expected: int
    wrong: int = 0

    def run(self) -> float:
        elapsed = self.call.run()
        self.wrong += self.call.copies() != self.expected  # untimed
        return elapsed


def counted(requests: Requests, sample: Sample) -> Sample:
    def run() -> float:
        with requests.counting():
            return sample()

    return run


def hooked_and_noop(
    framework: Framework, slots: Sequence[docmem.MemorySlot], loop: asyncio.AbstractEventLoop
) -> tuple[Checked, Checked]:
    """The framework with docmem's hook (one copy per call) and with it doing nothing (none)."""
    hooked = Checked(one_call(framework, slots, CONTEXT, hook=True, loop=loop), expected=1)
    noop = Checked(one_call(framework, slots, CONTEXT, hook=False, loop=loop), expected=0)
    return hooked, noop


@dataclasses.dataclass(frozen=True)
class Measured:
    """A row, and the figures its JSON object carries beyond the common fields."""

    result: Result
    extra: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Added:
    """The time a hook adds to one model call, from the two sides' times in the same rounds."""

    hook: float
    noop: float
    paired: float

    @classmethod
    def of(cls, hook_times: Sequence[float], noop_times: Sequence[float]) -> Added:
        return cls(
            hook=statistics.median(hook_times),
            noop=statistics.median(noop_times),
            paired=statistics.median(a - b for a, b in zip(hook_times, noop_times, strict=True)),
        )

    @property
    def seconds(self) -> float:
        """The difference of the medians (it may come out below 0 when noise outweighs it)."""
        return self.hook - self.noop

    def note(self) -> str:
        return (
            f"one model call: {format_duration(self.hook)} with the hook, "
            f"{format_duration(self.noop)} with it doing nothing (medians); "
            f"median paired difference {format_duration(self.paired)}"
        )

    def fields(self) -> dict[str, float]:
        return {"hook_seconds": self.hook, "noop_seconds": self.noop, "paired_seconds": self.paired}


def copies_note(framework: Framework, hooked: Checked, noop: Checked, runs: int) -> str:
    wrong = hooked.wrong + noop.wrong
    verdict_text = "as expected" if not wrong else f"WRONG in {wrong} runs"
    return (
        f"{framework.hook}: 1 copy sent per call with the hook, 0 without, {verdict_text} "
        f"({2 * runs:,} runs)"
    )


def bench_hook_file(
    framework: Framework,
    store: docmem.Backend,
    size: int,
    loop: asyncio.AbstractEventLoop,
    settings: Settings,
) -> Measured:
    """The hook's added time in one model call on a warm ``file://`` store, against 1 ms."""
    hooked, noop = hooked_and_noop(framework, [slot(store)], loop)
    interleave(settings.warmup, hooked.run, noop.run)
    hooked.wrong = noop.wrong = 0
    settle()
    runs = settings.call_runs
    hook_times, noop_times = interleave(runs, hooked.run, noop.run)
    found = Added.of(hook_times, noop_times)
    result = Result(
        name=file_row(framework),
        detail=f"{size:,} B",
        subject=found.seconds,
        baseline=BUDGET,
        baseline_name="1 ms budget (fixed)",
        target=1.0,
        runs=runs,
        notes=(found.note(), copies_note(framework, hooked, noop, runs)),
        checked=hooked.wrong == 0 and noop.wrong == 0,
    )
    return Measured(result, found.fields())


# -- S3 ---------------------------------------------------------------------------


def raw_reader(endpoint: S3Endpoint, like: S3Backend) -> Any:
    """A plain boto3 client configured like ``like``'s reader (timeouts, read retries)."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": like.max_attempts},
        connect_timeout=like.connect_timeout,
        read_timeout=like.read_timeout,
    )
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint.url, region_name=endpoint.region, config=config
    )


def raw_get(client: Any, bucket: str, key: str) -> Sample:
    """The baseline: one ``get_object`` of ``key``, its body read."""

    def get() -> bytes:
        data: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        return data

    return lambda: clock(get)


@dataclasses.dataclass
class S3Document:
    """The S3 side of the framework rows: a store with one seeded document, and the raw GET."""

    endpoint: S3Endpoint
    store: S3Backend
    key: str
    size: int
    client: Any

    @classmethod
    def seeded(cls, endpoint: S3Endpoint, prefixes: Prefixes) -> S3Document:
        store = endpoint.s3_store(prefixes.fresh("hooks"))
        memory = seed(store)
        return cls(
            endpoint,
            store,
            store.object_key(memory.scope.storage_key),
            document_bytes(store, memory),
            raw_reader(endpoint, store),
        )

    def close(self) -> None:
        self.client.close()


def bench_hook_s3(
    framework: Framework,
    document: S3Document,
    loop: asyncio.AbstractEventLoop,
    settings: Settings,
) -> Measured:
    """The hook's added time in one model call on docmem-s3, against one raw ``get_object``."""
    hooked, noop = hooked_and_noop(framework, [slot(document.store)], loop)
    ours, idle, theirs = Requests(), Requests(), Requests().attach(document.client)
    ours.attach(*document.store.clients())
    idle.attach(*document.store.clients())
    sides = (
        counted(ours, hooked.run),
        counted(idle, noop.run),
        counted(theirs, raw_get(document.client, document.endpoint.bucket, document.key)),
    )
    rotate(settings.warmup, *sides)
    hooked.wrong = noop.wrong = 0
    for requests in (ours, idle, theirs):
        requests.reset()
    settle()
    runs = settings.s3_call_runs
    hook_times, noop_times, get_times = rotate(runs, *sides)
    found = Added.of(hook_times, noop_times)
    result = Result(
        name=s3_row(framework),
        detail=f"{document.size:,} B",
        subject=found.seconds,
        baseline=statistics.median(get_times),
        baseline_name="raw get_object",
        target=1.2,
        runs=runs,
        notes=(
            found.note(),
            copies_note(framework, hooked, noop, runs),
            f"store per call with the hook: {ours.per_call(runs)}",
            f"store per call with it doing nothing: {idle.per_call(runs)}",
            f"baseline per run: {theirs.per_call(runs)}",
        ),
        checked=hooked.wrong == 0 and noop.wrong == 0,
    )
    return Measured(result, found.fields())


class ConcurrentGets:
    """Raw conditional ``get_object`` of every document at once, as docmem reads the slots.

    One client per document, configured like the store's reader; the calling
    thread sends the first request and worker threads the others, each with
    the ETag the object has (a 304 with no body, as docmem's cached reads get).
    Not a row's baseline: the notes compare docmem with it, to show what the
    same requests cost sent concurrently from one process.
    """

    def __init__(self, endpoint: S3Endpoint, like: S3Backend, keys: Sequence[str]) -> None:
        self._bucket = endpoint.bucket
        self._keys = list(keys)
        self.clients = [raw_reader(endpoint, like) for _ in keys]
        self._etags = [
            str(client.get_object(Bucket=self._bucket, Key=key)["ETag"])
            for client, key in zip(self.clients, self._keys, strict=True)
        ]
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(keys) - 1)

    def _get(self, index: int) -> None:
        from botocore.exceptions import ClientError

        try:
            self.clients[index].get_object(
                Bucket=self._bucket, Key=self._keys[index], IfNoneMatch=self._etags[index]
            )["Body"].read()
        except ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") != 304:
                raise
        else:
            raise RuntimeError("a conditional GET of an unchanged object answered 200")

    def run(self) -> float:
        start = time.perf_counter_ns()
        rest = [self._pool.submit(self._get, index) for index in range(1, len(self._keys))]
        try:
            self._get(0)
        finally:
            concurrent.futures.wait(rest)
        for future in rest:
            future.result()
        return (time.perf_counter_ns() - start) / 1e9

    def close(self) -> None:
        self._pool.shutdown()
        for client in self.clients:
            client.close()


def bench_turn_start(
    endpoint: S3Endpoint, prefixes: Prefixes, settings: Settings
) -> list[Measured]:
    """``recall`` and ``turn_started`` of 3 slots on docmem-s3 against one raw ``get_object``."""
    store = endpoint.s3_store(prefixes.fresh("turn-start"))
    memories = [seed(store, name) for name in TURN_SLOTS]
    runtime = docmem.MemoryRuntime([slot(store, name) for name in TURN_SLOTS])
    scope = scope_of(CONTEXT)
    keys = [store.object_key(memory.scope.storage_key) for memory in memories]
    size = document_bytes(store, memories[0])
    client = raw_reader(endpoint, store)
    concurrent_gets = ConcurrentGets(endpoint, store, keys)
    wrong = 0

    def recall() -> float:
        nonlocal wrong
        start = time.perf_counter_ns()
        recalls = runtime.recall(scope)
        elapsed = (time.perf_counter_ns() - start) / 1e9
        wrong += len(recalls) != len(TURN_SLOTS)
        return elapsed

    def turn_started() -> float:
        nonlocal wrong
        context = docmem.TurnContext(operation_id=f"turn-{uuid.uuid4()}", scope_context=scope)
        ledger = docmem.RecallLedger()  # a conversation's first turn, every time
        start = time.perf_counter_ns()
        turn = runtime.turn_started(context, ledger=ledger)
        elapsed = (time.perf_counter_ns() - start) / 1e9
        wrong += len(turn.messages) != len(TURN_SLOTS)
        return elapsed

    if len(runtime.recall(scope)) != len(TURN_SLOTS):  # read once: the cache holds each version
        raise RuntimeError("a seeded document is missing")
    by_recall, by_turn = Requests(), Requests()
    theirs, concurrently = Requests().attach(client), Requests().attach(*concurrent_gets.clients)
    by_recall.attach(*store.clients())
    by_turn.attach(*store.clients())
    sides = (
        counted(by_recall, recall),
        counted(by_turn, turn_started),
        counted(theirs, raw_get(client, endpoint.bucket, keys[0])),
        counted(concurrently, concurrent_gets.run),
    )
    try:
        rotate(settings.warmup, *sides)
        wrong = 0
        for requests in (by_recall, by_turn, theirs, concurrently):
            requests.reset()
        settle()
        runs = settings.recall_runs
        recall_times, turn_times, get_times, concurrent_times = rotate(runs, *sides)
    finally:
        client.close()
        concurrent_gets.close()
    baseline = statistics.median(get_times)
    together = statistics.median(concurrent_times)
    check = f"3 documents in every call: {'yes' if not wrong else f'NO, {wrong} calls missed one'}"
    results = []
    for name, times, requests in (
        (TURN_ROWS[0], recall_times, by_recall),
        (TURN_ROWS[1], turn_times, by_turn),
    ):
        subject = statistics.median(times)
        result = Result(
            name=name,
            detail=f"3 x {size:,} B",
            subject=subject,
            baseline=baseline,
            baseline_name="raw get_object, 1 document",
            target=1.3,
            runs=runs,
            notes=(
                f"docmem per call: {requests.per_call(runs)}",
                f"baseline per run: {theirs.per_call(runs)}",
                f"the same 3 conditional GETs, raw, in 3 threads: {format_duration(together)}"
                f" ({concurrently.per_call(runs)}); docmem {subject / together:.2f}x that",
                check,
            ),
            checked=wrong == 0,
        )
        results.append(Measured(result, {"concurrent_gets_seconds": together}))
    return results


# -- the run ----------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    """What the rows produced: results, rows that raised, rows not run."""

    results: list[Result] = dataclasses.field(default_factory=list)
    #: Each row's figures beyond the common fields, by row name, for its JSON object.
    extra: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    errors: list[str] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)

    def row(self, names: Sequence[str], bench: Callable[[], Measured | list[Measured]]) -> None:
        """Run one benchmark (one or more rows); a missing framework skips it, a failure is
        an error, and the other rows still run."""
        phase = time.monotonic()
        label = " and ".join(names)
        try:
            found = bench()
        except ImportError as exc:
            self.skip(names, f"not installed ({exc})")
            return
        except Exception as exc:  # reported; the other rows still run
            self.errors.append(f"{label}: {type(exc).__name__}: {exc}")
            log(f"{label}: FAILED ({type(exc).__name__}: {exc})")
            return
        for measured in found if isinstance(found, list) else [found]:
            self.results.append(measured.result)
            self.extra[measured.result.name] = measured.extra
        log(f"{label}: {time.monotonic() - phase:.1f} s")

    def skip(self, names: Sequence[str], reason: str) -> None:
        self.skipped.extend(f"{name}: {reason}" for name in names)
        log(f"not run, {reason}: {'; '.join(names)}")


def run_file_rows(run: Run, base: str, loop: asyncio.AbstractEventLoop, settings: Settings) -> None:
    store = docmem.open_store(pathlib.Path(base, "file").as_uri() + "?create=true")
    memory = seed(store)
    size = document_bytes(store, memory)
    for framework in FRAMEWORKS:
        run.row(
            [file_row(framework)],
            functools.partial(bench_hook_file, framework, store, size, loop, settings),
        )


def run_s3_rows(
    run: Run, endpoint: S3Endpoint, loop: asyncio.AbstractEventLoop, settings: Settings
) -> None:
    prefixes = Prefixes(endpoint)
    under = f"docmem-bench-{prefixes.run_id}/"
    log(f"S3 rows on {endpoint.url}, bucket {endpoint.bucket}, under {under}")
    try:
        document = S3Document.seeded(endpoint, prefixes)
        try:
            for framework in FRAMEWORKS:
                run.row(
                    [s3_row(framework)],
                    functools.partial(bench_hook_s3, framework, document, loop, settings),
                )
        finally:
            document.close()
        run.row(TURN_ROWS, functools.partial(bench_turn_start, endpoint, prefixes, settings))
    finally:
        prefixes.clean_up()


def s3_rows() -> list[str]:
    return [s3_row(framework) for framework in FRAMEWORKS] + list(TURN_ROWS)


def s3_unavailable() -> str | None:
    """Why the S3 rows cannot run here (docmem-s3 or boto3 missing), or ``None``."""
    for module in ("docmem_s3", "boto3"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed"
    return None


def installed(*distributions: str) -> dict[str, str]:
    """docmem's version, those of ``distributions`` that are installed, and Python's."""
    found = {"docmem": docmem.__version__}
    for name in distributions:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    found["python"] = platform.python_version()
    return found


@contextlib.contextmanager
def scratch(parent: str | None) -> Iterator[str]:
    """A temporary directory, removed afterwards however the run ends."""
    base = tempfile.mkdtemp(prefix="docmem-bench-", dir=parent)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def event_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """One event loop for every async run, as in a long-lived application; closed afterwards."""
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def parse_arguments(
    argv: Sequence[str] | None,
) -> tuple[Settings, S3Endpoint | None, str | None, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark docmem's framework adapters: the cost added to one model call "
        "(file:// and s3://) and turn-start recall of 3 slots on S3, each against a baseline "
        "in the same run."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    parser.add_argument(
        "--dir",
        default=None,
        help="where to create the temporary file:// store (default: the system temp directory)",
    )
    add_endpoint_arguments(parser)
    parser.add_argument("--call-runs", type=int, help="rounds per framework on file://")
    parser.add_argument("--s3-call-runs", type=int, help="rounds per framework on s3://")
    parser.add_argument("--recall-runs", type=int, help="rounds of the 3-slot turn start")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    endpoint = (
        S3Endpoint(arguments.endpoint, arguments.bucket, arguments.region)
        if arguments.endpoint
        else None
    )
    return settings, endpoint, arguments.dir, arguments.json


def main(argv: Sequence[str] | None = None) -> int:
    settings, endpoint, parent, as_json = parse_arguments(argv)
    unavailable = s3_unavailable() if endpoint is not None else None
    if endpoint is not None and unavailable is None:
        check_bucket(endpoint, "benchmarks/adapters.py")
    started = time.monotonic()
    run = Run()
    with event_loop() as loop:
        with scratch(parent) as base:
            log(f"benchmarking docmem {docmem.__version__}'s adapters, file:// store in {base}")
            run_file_rows(run, base, loop, settings)
        if endpoint is None:
            run.skip(s3_rows(), "no S3 endpoint (--endpoint URL or $LOCALSTACK_ENDPOINT)")
        elif unavailable is not None:
            run.skip(s3_rows(), unavailable)
        else:
            run_s3_rows(run, endpoint, loop, settings)
    distributions = sorted({framework.distribution for framework in FRAMEWORKS} | {"langgraph"})
    if endpoint is not None and unavailable is None:
        distributions += ["agent-docmem-s3", "boto3"]
    found = installed(*distributions)
    directory = parent or tempfile.gettempdir()
    if as_json:
        context = {
            "directory": directory,
            "docmem_from": os.path.dirname(docmem.__file__),
            "endpoint": endpoint.url if endpoint is not None else None,
            "bucket": endpoint.bucket if endpoint is not None else None,
            "region": endpoint.region if endpoint is not None else None,
        }
        report = json.loads(
            json_report(
                "adapters",
                run.results,
                settings=settings,
                found=found,
                context=context,
                started=started,
                errors=run.errors,
            )
        )
        for row in report["results"]:
            row.update(run.extra.get(row["name"], {}))
        report["skipped"] = run.skipped
        print(json.dumps(report, indent=2, allow_nan=False))
        return 0
    print(f"{describe(found)}; docmem from {os.path.dirname(docmem.__file__)}")
    where = f"endpoint {endpoint.url}, bucket {endpoint.bucket}" if endpoint else "no S3 endpoint"
    print(f"file:// store in {directory}; {where}; medians of interleaved runs")
    print(
        "framework rows: docmem = the time the hook adds to one model call "
        "(median with the hook - median with it doing nothing);"
    )
    print("  baseline = the fixed 1 ms budget (file://) or one raw get_object (s3://)")
    print("turn start rows: docmem = the whole call; ratio = docmem / baseline")
    print()
    if run.results:
        print(table(run.results))
        print()
        print("medians, copies and requests per timed call, checks:")
        print(notes(run.results, "check FAILED: a MISS"))
        print()
    for skipped in run.skipped:
        print(f"not run: {skipped}")
    for error in run.errors:
        print(f"FAILED, no row: {error}")
    if run.skipped or run.errors:
        print()
    print(verdict(run.results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
