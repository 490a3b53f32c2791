"""What the benchmarks share: a result row, A/B interleaving, the report table.

Every benchmark measures docmem against a baseline in the same run, alternating
the two (A/B, then B/A, ...) so the noise of a shared machine hits both alike,
and reports the ratio of the medians against a target.

Also here: the docmem side common to the scripts (seeded memories, timed saves
and recalls, the contention run) and, for ``s3.py`` and ``fsspec_store.py``,
the S3 endpoint, prefixes and request counting. Those import boto3, botocore
and docmem_s3 only when called, so ``local.py`` needs docmem alone.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import gc
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import docmem

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from docmem_s3 import S3Backend

__all__ = [
    "BUSY_RETRIES",
    "ENTRIES",
    "SLOT",
    "Requests",
    "Result",
    "S3Endpoint",
    "Sample",
    "Tally",
    "add_contention_arguments",
    "add_endpoint_arguments",
    "bind",
    "changes",
    "check_bucket",
    "clock",
    "compared",
    "contended_saves",
    "endpoint_arguments",
    "entry_text",
    "format_duration",
    "interleave",
    "layout",
    "log",
    "notes",
    "override",
    "present",
    "recall_after",
    "run_threads",
    "save_text",
    "seeded",
    "settle",
    "status_of",
    "table",
    "timed_save",
    "verdict",
]

#: One timed run: returns the seconds it took (any untimed set-up or clean-up
#: happens inside, outside the clock).
Sample = Callable[[], float]

SLOT = "user"
#: Entries in a seeded document.
ENTRIES = 10
#: Retries of a save that ran out of docmem's budget (StoreBusy), same mutation id.
BUSY_RETRIES = 10
DEFAULT_BUCKET = "docmem-test"
DEFAULT_REGION = "us-east-1"


@dataclasses.dataclass(frozen=True)
class Result:
    """One row of the report: two medians (seconds), the target for their ratio, checks."""

    name: str
    subject: float
    baseline: float
    baseline_name: str
    target: float
    runs: int
    notes: tuple[str, ...] = ()
    #: False when a correctness check failed (e.g. an entry went missing): a MISS.
    checked: bool = True

    @property
    def ratio(self) -> float:
        return self.subject / self.baseline

    @property
    def passed(self) -> bool:
        return self.checked and self.ratio <= self.target


def log(message: str) -> None:
    """Progress goes to stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def clock(function: Callable[[], object]) -> float:
    """Seconds one call of ``function`` takes."""
    start = time.perf_counter_ns()
    function()
    return (time.perf_counter_ns() - start) / 1e9


def settle() -> None:
    """Collect the previous phase's garbage before timing the next one."""
    gc.collect()


def interleave(rounds: int, subject: Sample, baseline: Sample) -> tuple[list[float], list[float]]:
    """Run both once per round, swapping which goes first every round (A/B, B/A, ...)."""
    subject_times: list[float] = []
    baseline_times: list[float] = []
    for round_number in range(rounds):
        if round_number % 2 == 0:
            subject_times.append(subject())
            baseline_times.append(baseline())
        else:
            baseline_times.append(baseline())
            subject_times.append(subject())
    return subject_times, baseline_times


# -- arguments ----------------------------------------------------------------

SettingsT = TypeVar("SettingsT", bound="DataclassInstance")


def override(
    parser: argparse.ArgumentParser, settings: SettingsT, arguments: argparse.Namespace
) -> SettingsT:
    """``settings`` with each field given on the command line (``--save-runs`` sets
    ``save_runs``); a usage error for a count below 1."""
    given = {
        field.name: getattr(arguments, field.name)
        for field in dataclasses.fields(settings)
        if getattr(arguments, field.name, None) is not None
    }
    settings = dataclasses.replace(settings, **given)
    for name, value in dataclasses.asdict(settings).items():
        if value < 1:
            parser.error(f"{name.replace('_', '-')} must be at least 1")
    return settings


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """``--endpoint``, ``--bucket`` and ``--region``, defaults from the environment."""
    parser.add_argument(
        "--endpoint",
        default=os.environ.get("LOCALSTACK_ENDPOINT"),
        help="the S3 endpoint URL (default: $LOCALSTACK_ENDPOINT)",
    )
    parser.add_argument(
        "--bucket",
        default=os.environ.get("DOCMEM_TEST_BUCKET") or DEFAULT_BUCKET,
        help=f"an existing bucket (default: $DOCMEM_TEST_BUCKET or {DEFAULT_BUCKET})",
    )
    parser.add_argument("--region", default=DEFAULT_REGION, help="default: %(default)s")


def add_contention_arguments(parser: argparse.ArgumentParser) -> None:
    """``--writers``, ``--writer-saves`` and ``--contention-runs``."""
    parser.add_argument("--writers", type=int, help="threads in the contention benchmark")
    parser.add_argument("--writer-saves", type=int, help="saves per contention writer")
    parser.add_argument("--contention-runs", type=int, help="contention runs per side")


def endpoint_arguments(
    parser: argparse.ArgumentParser, arguments: argparse.Namespace
) -> tuple[str, str, str]:
    """The endpoint URL, bucket and region given; a usage error when there is no endpoint."""
    if not arguments.endpoint:
        parser.error(
            "no S3 endpoint: pass --endpoint URL or set LOCALSTACK_ENDPOINT "
            "(scripts/with-test-servers sets it)"
        )
    return arguments.endpoint, arguments.bucket, arguments.region


# -- the docmem side ----------------------------------------------------------


def bind(store: docmem.Backend, namespace: str, scope: str) -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace=namespace, scope=scope), slot=SLOT
    )


def seeded(store: docmem.Backend, namespace: str, scope: str) -> docmem.BoundMemory:
    """A bound memory whose document holds :data:`ENTRIES` entries, saved through docmem."""
    memory = bind(store, namespace, scope)
    for index in range(ENTRIES):
        memory.save(
            f"Seed fact {index}: the user prefers metric units and short answers.",
            mutation_id=f"seed-{scope}-{index}",
        )
    return memory


def save_text(count: int) -> str:
    return f"Note {count}: met the user on a Tuesday."


def timed_save(
    memory: docmem.BoundMemory, requests: Requests, count: int
) -> tuple[float, docmem.SaveResult]:
    """Save :func:`save_text` ``(count)``, counting its requests: its seconds and result."""
    with requests.counting():
        start = time.perf_counter_ns()
        result = memory.save(save_text(count), mutation_id=f"save-{count}")
        elapsed = (time.perf_counter_ns() - start) / 1e9
    return elapsed, result


def changes(other: docmem.BoundMemory) -> Callable[[], int]:
    """Each call: ``other`` saves an entry and removes it again (size unchanged); the revision."""
    count = 0

    def change() -> int:
        nonlocal count
        count += 1
        saved = other.save(
            f"Note {count}: the user moved the weekly meeting to Thursday.",
            mutation_id=f"change-save-{count}",
        )
        return other.remove(saved.index, mutation_id=f"change-remove-{count}").revision

    return change


def recall_after(
    change: Callable[[], int], memory: docmem.BoundMemory, requests: Requests
) -> Sample:
    """Untimed ``change()``, then a timed, counted ``recall()`` that must return its revision."""

    def run() -> float:
        revision = change()
        with requests.counting():
            start = time.perf_counter_ns()
            messages = memory.recall()
            elapsed = (time.perf_counter_ns() - start) / 1e9
        if not messages or messages[0].revision != revision:
            raise RuntimeError(f"recall() missed the other client's write (revision {revision})")
        return elapsed

    return run


# -- contention ---------------------------------------------------------------


def entry_text(writer: int, index: int) -> str:
    return f"writer {writer} note {index}"


def present(texts: Collection[str], writers: int, saves: int) -> int:
    """How many of the ``writers`` x ``saves`` entry texts are among ``texts``."""
    return sum(
        entry_text(writer, index) in texts for writer in range(writers) for index in range(saves)
    )


def run_threads(count: int, work: Callable[[int], None]) -> float:
    """Wall seconds for ``work(0)`` ... ``work(count - 1)`` in threads started together."""
    barrier = threading.Barrier(count + 1)
    failures: list[BaseException] = []

    def runner(number: int) -> None:
        barrier.wait()
        try:
            work(number)
        except BaseException as exc:  # re-raised below, after every thread joined
            failures.append(exc)

    threads = [threading.Thread(target=runner, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter_ns()
    for thread in threads:
        thread.join()
    elapsed = (time.perf_counter_ns() - start) / 1e9
    if failures:
        raise failures[0]
    return elapsed


@dataclasses.dataclass
class Tally:
    """What one side of the contention benchmark did, over all its runs."""

    runs: int = 0
    complete_runs: int = 0
    fewest_present: int | None = None
    busy: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)

    def finish_run(self, present: int, expected: int) -> None:
        self.runs += 1
        self.complete_runs += present == expected
        if self.fewest_present is None or present < self.fewest_present:
            self.fewest_present = present

    def summary(self, expected: int) -> str:
        text = (
            f"all {expected:,} entries present in {self.complete_runs} of {self.runs} runs"
            f" (fewest {self.fewest_present if self.fewest_present is not None else 0:,})"
        )
        if self.busy:
            text += f", {self.busy} saves retried after StoreBusy"
        if self.errors:
            text += f", {len(self.errors)} errors (first: {self.errors[0]})"
        return text

    @property
    def ok(self) -> bool:
        return self.runs > 0 and self.complete_runs == self.runs and not self.errors


def contended_saves(
    memories: Sequence[docmem.FileMemory],
    scope: docmem.LockedScope,
    run: int,
    saves: int,
    requests: Requests,
    tally: Tally,
) -> tuple[float, int]:
    """One docmem contention run: a thread per memory saves ``saves`` entries to ``scope``.

    A save that ran out of docmem's budget (StoreBusy) is retried with the same
    mutation id, up to :data:`BUSY_RETRIES` times. Returns the wall seconds and
    how many of the entries the document holds afterwards (also tallied).
    """
    writers = len(memories)
    bound = [memory.bind(scope, slot=SLOT) for memory in memories]

    def work(writer: int) -> None:
        for index in range(saves):
            mutation_id = f"{run}-{writer}-{index}"
            for _ in range(BUSY_RETRIES + 1):
                try:
                    bound[writer].save(entry_text(writer, index), mutation_id=mutation_id)
                    break
                except docmem.StoreBusy:
                    with tally.lock:
                        tally.busy += 1
                except docmem.DocmemError as exc:
                    tally.error(f"{type(exc).__name__}: {exc}")
                    break

    with requests.counting():
        elapsed = run_threads(writers, work)
    document = bound[0].read()
    texts = set(document.entries.values()) if document is not None else set()
    found = present(texts, writers, saves)
    tally.finish_run(found, writers * saves)
    return elapsed, found


# -- S3: endpoint, prefixes, request counting ---------------------------------


_SHORT_NAMES = {
    "GetObject": "GET",
    "PutObject": "PUT",
    "DeleteObject": "DELETE",
    "ListObjectsV2": "LIST",
    "HeadObject": "HEAD",
}


class Requests:
    """HTTP responses the clients received while counting, by operation and status.

    Hooked on botocore's ``response-received`` event, which fires once per
    attempt (aiobotocore, under s3fs, emits it too), so retries count; a
    request that got no response counts under the exception's name.
    """

    def __init__(self) -> None:
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()
        self._active = False

    def attach(self, *clients: Any) -> Requests:
        for client in clients:
            client.meta.events.register("response-received.s3", self._received)
        return self

    def _received(
        self,
        event_name: str,
        response_dict: dict[str, Any] | None = None,
        exception: BaseException | None = None,
        **_: Any,
    ) -> None:
        if not self._active:
            return
        operation = event_name.rsplit(".", 1)[-1]
        if response_dict is not None:
            status = str(response_dict.get("status_code", "?"))
        else:
            status = type(exception).__name__ if exception is not None else "?"
        with self._lock:
            self._counts[(_SHORT_NAMES.get(operation, operation), status)] += 1

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        self._active = True
        try:
            yield
        finally:
            self._active = False

    def count(self, operation: str, status: str | None = None) -> int:
        with self._lock:
            return sum(
                n
                for (op, code), n in self._counts.items()
                if op == operation and (status is None or code == status)
            )

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def per_call(self, calls: int) -> str:
        """``"GET 1.00 (304), PUT 0"``-style: requests per call, statuses in parentheses."""
        with self._lock:
            counts = dict(self._counts)
        parts = []
        for operation in sorted({op for op, _ in counts} | {"GET", "PUT"}):
            statuses = {code: n for (op, code), n in counts.items() if op == operation}
            total = sum(statuses.values())
            if not total:
                parts.append(f"{operation} 0")
                continue
            if len(statuses) == 1:
                detail = next(iter(statuses))
            else:
                detail = ", ".join(
                    f"{code} {n / calls:.2f}" for code, n in sorted(statuses.items())
                )
            parts.append(f"{operation} {total / calls:.2f} ({detail})")
        return ", ".join(parts)

    def per_save(self, saves: int) -> str:
        """:meth:`per_call`, then the PUTs that lost a race (412 or 409) per save."""
        lost = self.count("PUT", "412") + self.count("PUT", "409")
        return f"{self.per_call(saves)}; lost races per save {lost / saves:.2f}"


def status_of(exc: Any) -> tuple[int, str]:
    """A botocore ``ClientError``'s HTTP status and error code."""
    meta = exc.response.get("ResponseMetadata", {})
    return int(meta.get("HTTPStatusCode", 0)), str(exc.response.get("Error", {}).get("Code", ""))


@dataclasses.dataclass(frozen=True)
class S3Endpoint:
    """Where the benchmarks run: one S3 endpoint and bucket."""

    url: str
    bucket: str
    region: str

    def client(self) -> Any:
        """A plain boto3 client, for out-of-band set-up and the clean-up."""
        import boto3

        return boto3.session.Session().client("s3", endpoint_url=self.url, region_name=self.region)

    def s3_store(self, prefix: str, **options: Any) -> S3Backend:
        """A docmem-s3 store under ``prefix``, opened the public way, from its URL."""
        from docmem_s3 import S3Backend

        store = docmem.open_store(
            f"s3://{self.bucket}/{prefix}?endpoint_url={self.url}&region={self.region}",
            **options,
        )
        if not isinstance(store, S3Backend):
            raise RuntimeError(f"s3:// opened a {type(store).__name__}, not docmem_s3.S3Backend")
        return store


def check_bucket(endpoint: S3Endpoint, script: str) -> None:
    """Exit early and clearly when the endpoint, the bucket or the credentials are wrong."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = endpoint.client()
    try:
        client.head_bucket(Bucket=endpoint.bucket)
    except ClientError as exc:
        status, code = status_of(exc)
        raise SystemExit(
            f"{script}: bucket {endpoint.bucket!r} at {endpoint.url} is not usable "
            f"(HTTP {status} {code}); create it or set DOCMEM_TEST_BUCKET"
        ) from None
    except BotoCoreError as exc:
        raise SystemExit(
            f"{script}: cannot reach {endpoint.url} ({type(exc).__name__}: {exc})"
        ) from None
    finally:
        client.close()


class Prefixes:
    """A fresh prefix per benchmark (or side), and the clean-up of every object under them."""

    def __init__(self, endpoint: S3Endpoint) -> None:
        self._endpoint = endpoint
        self._made: list[str] = []
        self.run_id = uuid.uuid4().hex[:12]

    def fresh(self, name: str) -> str:
        prefix = f"docmem-bench-{self.run_id}/{name}-{uuid.uuid4().hex[:8]}"
        self._made.append(prefix)
        return prefix

    def clean_up(self) -> None:
        """Delete every object under the prefixes made (best effort); log how many, how fast."""
        from botocore.exceptions import BotoCoreError, ClientError

        started = time.monotonic()
        client = self._endpoint.client()
        deleted = 0
        try:
            for prefix in self._made:
                with contextlib.suppress(ClientError, BotoCoreError):
                    pages = client.get_paginator("list_objects_v2").paginate(
                        Bucket=self._endpoint.bucket, Prefix=f"{prefix}/"
                    )
                    for page in pages:
                        keys = [{"Key": item["Key"]} for item in page.get("Contents", ())]
                        if keys:
                            client.delete_objects(
                                Bucket=self._endpoint.bucket, Delete={"Objects": keys}
                            )
                            deleted += len(keys)
        finally:
            client.close()
        log(f"clean-up: {deleted:,} objects deleted in {time.monotonic() - started:.1f} s")


# -- report -------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def compared(result: Result) -> tuple[str, str, str, str, str]:
    """A report row's first cells: the name, both medians, their difference, their ratio."""
    return (
        result.name,
        format_duration(result.subject),
        format_duration(result.baseline),
        ("+" if result.subject >= result.baseline else "-")
        + format_duration(abs(result.subject - result.baseline)),
        f"{result.ratio:.2f}x",
    )


def layout(rows: Sequence[Sequence[str]], numeric: Collection[int]) -> str:
    """``rows`` in aligned columns, the first (the header) ruled off; ``numeric`` ones right."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if column in numeric else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])


def table(results: Sequence[Result]) -> str:
    header = (
        "benchmark",
        "docmem",
        "baseline",
        "difference",
        "ratio",
        "target",
        "result",
        "runs",
        "baseline is",
    )
    rows = [header] + [
        (
            *compared(r),
            f"<= {r.target:g}x",
            "PASS" if r.passed else "MISS",
            f"{r.runs:,}",
            r.baseline_name,
        )
        for r in results
    ]
    return layout(rows, numeric={1, 2, 3, 4, 5, 7})


def verdict(results: Sequence[Result], started: float) -> str:
    """The last line of a report with targets: passes and misses, time since ``started``."""
    misses = sum(not result.passed for result in results)
    return (
        f"{len(results) - misses} PASS, {misses} MISS "
        f"in {time.monotonic() - started:.0f} s (benchmarks never fail the build)"
    )


def notes(results: Sequence[Result], failed: str) -> str:
    """Each result's notes under its name; ``failed`` follows the name of a failed check."""
    lines = []
    for result in results:
        lines.append(f"{result.name}:" + ("" if result.checked else f"  ({failed})"))
        lines.extend(f"    {note}" for note in result.notes)
    return "\n".join(lines)
