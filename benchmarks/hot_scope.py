"""Group commit on a hot scope: many threads of one process saving to one document.

One ``FileMemory`` shared by ``--writers`` threads, each saving
``--writer-saves`` entries to the same scope, timed wall clock from the
first save to the last. The subject is the default provider (group commit:
mutations of one key made at once share one read and one conditional write);
the baseline is the same provider with ``group_commit=False``, today's loop
of one conditional write per mutation, racing the others by compare-and-swap
and backing off. Both sides run in the same process, alternating (A/B, then
B/A, ...), each run on a fresh scope, and each row reports the ratio of the
two medians.

A second row puts group commit against the floor of any lock-free writer: a
raw compare-and-swap loop on the same store, each thread appending its line
to one key's bytes (read, conditional write, and on a lost race a back-off
drawn as docmem draws it, full jitter from 5 ms doubling to 250 ms), with no
document, journal or limit to decide. Group commit should beat it by
batching: at most 0.5x (issue 28); the instructions a batch spends deciding
its members are what decide the margin.

Rows: ``file://`` (a temporary directory) always; ``s3://`` when an endpoint
is given (``--endpoint`` or ``$LOCALSTACK_ENDPOINT``;
``scripts/with-test-servers .venv/bin/python benchmarks/hot_scope.py``
starts LocalStack and sets it). Targets (issue 14): wall time at most 0.3x,
and fewer than 0.2 lost races per save (a MISS otherwise, as is a missing
entry or an error). Lost races and writes are counted by a thin wrapper
around the real store, the same on both sides.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.arguments import add_contention_arguments, add_output_arguments, override
from harness.contention import Tally, contended_saves, entry_text, run_threads
from harness.report import (
    Result,
    describe,
    json_report,
    notes,
    table,
    verdict,
    versions,
)
from harness.s3 import Prefixes, Requests, S3Endpoint, check_bucket
from harness.timing import log, settle

import docmem
from docmem.errors import VersionConflict
from docmem.provider.document import MAX_DOCUMENT_BYTES
from docmem.provider.retry import RetryPolicy

NAMESPACE = "docmem-bench-hot-scope"
TARGET = 0.3
RAW_LOOP_TARGET = 0.5
LOST_RACES_PER_SAVE = 0.2


@dataclasses.dataclass(frozen=True)
class Settings:
    writers: int
    writer_saves: int
    contention_runs: int


FULL = Settings(writers=8, writer_saves=50, contention_runs=5)
QUICK = Settings(writers=4, writer_saves=10, contention_runs=2)


class CountingStore(docmem.Backend):
    """The real store, with its writes and lost races counted (thread-safe)."""

    def __init__(self, inner: docmem.Backend) -> None:
        self.inner = inner
        self.recent_reads_may_be_stale = inner.recent_reads_may_be_stale
        self.writes = 0
        self.conflicts = 0
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> CountingStore:
        raise NotImplementedError("wraps an open store")

    @property
    def url(self) -> str:
        return self.inner.url

    def read(self, key: str) -> docmem.Stored | None:
        return self.inner.read(key)

    def read_recent(self, key: str) -> docmem.Stored | None:
        return self.inner.read_recent(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        with self._lock:
            self.writes += 1
        try:
            return self.inner.write(key, data, expected=expected)
        except VersionConflict:
            with self._lock:
                self.conflicts += 1
            raise

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def keys(self) -> Iterator[str]:
        return self.inner.keys()

    def reset(self) -> None:
        with self._lock:
            self.writes = self.conflicts = 0


@dataclasses.dataclass
class Side:
    """One side of a row: its provider over a counting store, and what its runs did."""

    name: str
    store: CountingStore
    memory: docmem.FileMemory
    tally: Tally = dataclasses.field(default_factory=Tally)
    saves: int = 0
    writes: int = 0
    conflicts: int = 0
    runs: int = 0

    def run(self, settings: Settings) -> float:
        """One timed run on a fresh scope: the wall seconds of every thread's saves."""
        self.runs += 1
        scope = docmem.lock_scope(namespace=NAMESPACE, scope=f"{self.name}-{self.runs}")
        self.store.reset()
        # Every thread saves through the one provider: one line per key, shared.
        memories = [self.memory] * settings.writers
        elapsed, found = contended_saves(
            memories, scope, self.runs, settings.writer_saves, Requests(), self.tally
        )
        self.saves += settings.writers * settings.writer_saves
        self.writes += self.store.writes
        self.conflicts += self.store.conflicts
        expected = settings.writers * settings.writer_saves
        log(f"  {self.name} run {self.runs}: {elapsed:.2f} s, {found}/{expected} present")
        return elapsed

    @property
    def lost_per_save(self) -> float:
        return self.conflicts / self.saves if self.saves else 0.0

    def summary(self, settings: Settings) -> str:
        expected = settings.writers * settings.writer_saves
        per_write = self.saves / self.writes if self.writes else 0.0
        return (
            f"{self.name}: {self.tally.summary(expected)}; per save {self.writes / self.saves:.2f} "
            f"writes ({per_write:.1f} saves per write), {self.lost_per_save:.2f} lost races"
        )


@dataclasses.dataclass
class RawLoop:
    """The floor: threads appending lines to one key by compare-and-swap, nothing decided.

    Each thread reads the key, appends its line to the bytes and writes them
    back conditionally; on a lost race it backs off as docmem's default
    :class:`RetryPolicy` would and reads again. A run on a fresh key; every
    line is checked present afterwards.
    """

    store: CountingStore
    policy: RetryPolicy = dataclasses.field(default_factory=RetryPolicy)
    runs: int = 0
    saves: int = 0
    conflicts: int = 0
    missing: int = 0

    def run(self, settings: Settings) -> float:
        self.runs += 1
        key = f"raw-loop-{self.runs}"
        self.store.reset()

        def append(writer: int) -> None:
            for index in range(settings.writer_saves):
                line = entry_text(writer, index).encode() + b"\n"
                attempt = 0
                while True:
                    current = self.store.read(key)
                    data = line if current is None else current.data + line
                    expected = None if current is None else current.version
                    try:
                        self.store.write(key, data, expected=expected)
                        break
                    except VersionConflict:
                        time.sleep(self.policy.delay(attempt))
                        attempt += 1

        elapsed = run_threads(settings.writers, append)
        stored = self.store.read(key)
        lines = set() if stored is None else set(stored.data.decode().splitlines())
        expected_lines = {
            entry_text(writer, index)
            for writer in range(settings.writers)
            for index in range(settings.writer_saves)
        }
        self.missing += len(expected_lines - lines)
        self.saves += len(expected_lines)
        self.conflicts += self.store.conflicts
        log(f"  raw loop run {self.runs}: {elapsed:.2f} s")
        return elapsed

    def summary(self) -> str:
        lost = self.conflicts / self.saves if self.saves else 0.0
        return f"raw loop: {self.missing} lines missing; {lost:.2f} lost races per save"


def bench_hot_scope(
    label: str, open_store: Callable[[], docmem.Backend], settings: Settings
) -> list[Result]:
    """Group commit against ``group_commit=False`` and a raw loop on one store, interleaved."""
    # Room for every entry: the default max_characters (4,000) holds fewer than 400 notes.
    sides = [
        Side(
            name,
            store,
            docmem.FileMemory(store, max_characters=MAX_DOCUMENT_BYTES, group_commit=grouped),
        )
        for name, grouped in (("group commit", True), ("one write per save", False))
        for store in (CountingStore(open_store()),)
    ]
    for side in sides:  # warm-up: connections, and s3's one-off probe of the conditions
        warm = docmem.lock_scope(namespace=NAMESPACE, scope=f"warm-{side.name}")
        side.memory.bind(warm, slot="user").save("warm-up", mutation_id="warm-up")
    raw = RawLoop(CountingStore(open_store()))
    raw.store.write("raw-loop-warm-up", b"warm-up\n", expected=None)
    settle()
    subject, baseline = sides
    runs: dict[str, list[float]] = {"grouped": [], "single": [], "raw": []}
    order: list[tuple[str, Callable[[], float]]] = [
        ("grouped", lambda: subject.run(settings)),
        ("single", lambda: baseline.run(settings)),
        ("raw", lambda: raw.run(settings)),
    ]
    for round_number in range(settings.contention_runs):  # each goes first in turn
        turn = round_number % len(order)
        for name, run in order[turn:] + order[:turn]:
            runs[name].append(run())
    for store in (*(side.store for side in sides), raw.store):
        store.inner.close()
    checked = all(side.tally.ok for side in sides) and subject.lost_per_save < LOST_RACES_PER_SAVE
    title = f"{label}, {settings.writers} threads x {settings.writer_saves} saves, one scope"
    grouped = statistics.median(runs["grouped"])
    return [
        Result(
            name=title,
            subject=grouped,
            baseline=statistics.median(runs["single"]),
            baseline_name="group_commit=False",
            target=TARGET,
            runs=settings.contention_runs,
            notes=(
                *(side.summary(settings) for side in sides),
                f"target: fewer than {LOST_RACES_PER_SAVE} lost races per save with group commit",
            ),
            checked=checked,
        ),
        Result(
            name=f"{title}, against a raw loop",
            subject=grouped,
            baseline=statistics.median(runs["raw"]),
            baseline_name="raw CAS loop",
            target=RAW_LOOP_TARGET,
            runs=settings.contention_runs,
            notes=(raw.summary(),),
            checked=checked and raw.missing == 0,
        ),
    ]


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, str | None, str, str, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark group commit on one hot scope against one write per save."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    parser.add_argument(
        "--endpoint",
        default=None,
        help="an S3 endpoint URL for the s3:// row (default: $LOCALSTACK_ENDPOINT; none: no row)",
    )
    parser.add_argument(
        "--bucket", default=None, help="default: $DOCMEM_TEST_BUCKET or docmem-test"
    )
    parser.add_argument("--region", default="us-east-1", help="default: %(default)s")
    add_contention_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    endpoint = arguments.endpoint or os.environ.get("LOCALSTACK_ENDPOINT")
    bucket = arguments.bucket or os.environ.get("DOCMEM_TEST_BUCKET") or "docmem-test"
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    return settings, endpoint, bucket, arguments.region, arguments.json


def main(argv: Sequence[str] | None = None) -> int:
    settings, endpoint, bucket, region, as_json = parse_arguments(argv)
    started = time.monotonic()
    results: list[Result] = []
    found = versions()
    with tempfile.TemporaryDirectory(prefix="docmem-hot-scope-") as scratch:
        root = Path(scratch)
        counter = iter(range(1_000_000))

        def file_store() -> docmem.Backend:
            return docmem.open_store(f"file://{root / str(next(counter))}?create=true")

        log(f"file:// under {root}")
        results.extend(bench_hot_scope("file://", file_store, settings))
    if endpoint:
        s3 = S3Endpoint(endpoint, bucket, region)
        check_bucket(s3, "benchmarks/hot_scope.py")
        prefixes = Prefixes(s3)
        log(f"s3:// on {endpoint}, bucket {bucket}")
        try:
            results.extend(
                bench_hot_scope("s3://", lambda: s3.s3_store(prefixes.fresh("hot")), settings)
            )
        finally:
            prefixes.clean_up()
        found = versions("agent-docmem-s3", "boto3")
    else:
        log("no S3 endpoint (--endpoint or $LOCALSTACK_ENDPOINT): the s3:// row is not run")
    if as_json:
        context = {"endpoint": endpoint, "bucket": bucket} if endpoint else {}
        print(
            json_report(
                "hot_scope",
                results,
                settings=settings,
                found=found,
                context=context,
                started=started,
            )
        )
        return 0
    print(describe(found))
    print("medians of interleaved runs; ratio = group commit / the baseline named")
    print()
    print(table(results))
    print()
    print(notes(results, "check FAILED: a MISS"))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
