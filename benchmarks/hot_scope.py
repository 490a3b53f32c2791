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
from harness.contention import Tally, contended_saves
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
from harness.timing import interleave, log, settle

import docmem
from docmem.errors import VersionConflict
from docmem.provider.document import MAX_DOCUMENT_BYTES

NAMESPACE = "docmem-bench-hot-scope"
TARGET = 0.3
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


def bench_hot_scope(
    label: str, open_store: Callable[[], docmem.Backend], settings: Settings
) -> Result:
    """Group commit against ``group_commit=False`` on one store, interleaved."""
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
    settle()
    subject, baseline = sides
    grouped_times, single_times = interleave(
        settings.contention_runs, lambda: subject.run(settings), lambda: baseline.run(settings)
    )
    for side in sides:
        side.store.inner.close()
    checked = all(side.tally.ok for side in sides) and subject.lost_per_save < LOST_RACES_PER_SAVE
    return Result(
        name=f"{label}, {settings.writers} threads x {settings.writer_saves} saves, one scope",
        subject=statistics.median(grouped_times),
        baseline=statistics.median(single_times),
        baseline_name="group_commit=False",
        target=TARGET,
        runs=settings.contention_runs,
        notes=(
            *(side.summary(settings) for side in sides),
            f"target: fewer than {LOST_RACES_PER_SAVE} lost races per save with group commit",
        ),
        checked=checked,
    )


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
        results.append(bench_hot_scope("file://", file_store, settings))
    if endpoint:
        s3 = S3Endpoint(endpoint, bucket, region)
        check_bucket(s3, "benchmarks/hot_scope.py")
        prefixes = Prefixes(s3)
        log(f"s3:// on {endpoint}, bucket {bucket}")
        try:
            results.append(
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
    print("medians of interleaved runs; ratio = group commit / group_commit=False")
    print()
    print(table(results))
    print()
    print(notes(results, "check FAILED: a MISS"))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
