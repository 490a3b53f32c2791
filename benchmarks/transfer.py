"""What a fenced, verified ``docmem migrate`` costs against a plain parallel copy of the objects.

Two rows, each docmem against its baseline in the same run, interleaved
(A/B, then B/A, ...), the ratio of the medians:

* ``migrate, file:// -> s3://`` (needs an S3 endpoint: ``--endpoint`` or
  ``$LOCALSTACK_ENDPOINT``; ``scripts/with-test-servers .venv/bin/python
  benchmarks/transfer.py`` starts LocalStack): :func:`docmem.provider.transfer.migrate`
  of a ``file://`` store of 10,000 scopes into a fresh, empty prefix, with
  the command line's preflight probe, the fence (marker and every document),
  the export, the create-only import, the read-back verification and the
  last listing, ``--workers`` at a time. The baseline is a plain parallel
  copy of the same objects with boto3 at the same parallelism: list the
  files, read each, ``put_object`` it, with a client configured as the
  store's writer. Target: at most 1.5x.
* ``migrate, file:// -> file://``: the same migration into a fresh local
  store, against a plain parallel copy of the files (read, write a temporary
  file, fsync, rename, fsync the folder). No target: it is reported.

Between runs the source's fence is lifted (untimed), so every run fences it
again. Without an endpoint the S3 row is skipped and the report says so
(``context.s3``). ``--quick`` is a smoke run with 300 scopes; ``--json``
prints one JSON object (benchmarks/README.md)::

    .venv/bin/python benchmarks/transfer.py [--quick] [--json] [--scopes N] [--workers N]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.arguments import add_endpoint_arguments, add_output_arguments, override
from harness.report import Result, compared, describe, json_report, layout, notes, versions
from harness.s3 import Prefixes, S3Endpoint, check_bucket
from harness.timing import interleave, log, settle

import docmem
from docmem.cli.checks import probe_destination
from docmem.provider.document import MemoryDocument, serialize
from docmem.provider.journal import JournalRecord, id_digest, request_digest
from docmem.provider.transfer import MigrationReport, migrate
from docmem.storage.builtin.local import LocalBackend
from docmem.storage.progress import Progress

NAMESPACE = "bench:transfer"
TARGET = 1.5


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many scopes, how many at once, how many timed runs per side."""

    scopes: int = 10_000
    workers: int = 8
    runs: int = 3


FULL = Settings()
QUICK = Settings(scopes=300, workers=8, runs=2)


def document(number: int) -> bytes:
    """A realistic document: three entries and their three journal records (about 450 bytes)."""
    texts = [
        f"Prefers metric units and short answers ({number}).",
        "Works on the billing team; on call every other week.",
        "Lives in Lisbon; usually online 9-17 UTC.",
    ]
    records = tuple(
        JournalRecord(
            id_digest(f"bench-{number}-{index}"),
            request_digest(f"bench-{number}-{index}", "save", text),
            index + 1,
            "save",
            "saved",
            index,
        )
        for index, text in enumerate(texts)
    )
    entries = dict(enumerate(texts))
    return serialize(MemoryDocument(entries, last=2, revision=3, journal=records))


def populate(root: Path, scopes: int) -> LocalBackend:
    """A file:// store of ``scopes`` documents, written out of band, then one ``os.sync()``."""
    store = LocalBackend(root, create=True)
    store.write("memkey1_" + "0" * 43, document(0), expected=None)  # marks the store
    for number in range(1, scopes):
        key = docmem.lock_scope(namespace=NAMESPACE, scope=f"u{number}").storage_key
        path = Path(store.path(key))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(document(number))
    os.sync()
    return store


class Phases(Progress):
    """Seconds spent in each phase of a migration (fencing, exporting, ...), summed over runs."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self._phase: tuple[str, float] | None = None

    def begin(self, phase: str, total: int | None) -> None:
        self._phase = (phase, time.perf_counter())

    def end(self) -> None:
        if self._phase is not None:
            name, started = self._phase
            self.seconds[name] += time.perf_counter() - started
            self._phase = None


class Side:
    """One timed run of either side, with the checks that make it count."""

    def __init__(self, source: LocalBackend, settings: Settings, phases: Phases) -> None:
        self.source = source
        self.settings = settings
        self.phases = phases
        self.failures: list[str] = []

    def migration(self, destination: Callable[[], docmem.Backend]) -> Callable[[], float]:
        def run() -> float:
            target = destination()
            fence_id = f"bench-{uuid.uuid4().hex[:8]}"
            started = time.perf_counter()
            report = migrate(
                self.source,
                target,
                fence_id,
                probe=probe_destination,
                workers=self.settings.workers,
                progress=self.phases,
            )
            elapsed = time.perf_counter() - started
            self._check(report)
            docmem.unfence(self.source, fence_id, workers=self.settings.workers)  # untimed
            target.close()
            return elapsed

        return run

    def _check(self, report: MigrationReport) -> None:
        if not report.verified.ok or report.verified.store_documents != self.settings.scopes:
            self.failures.append(f"a migration verified {report.verified.store_documents:,}")


def plain_copy(
    source: LocalBackend, workers: int, put: Callable[[str, bytes], None]
) -> Callable[[], float]:
    """List the source's files, read each and ``put`` it, ``workers`` at a time."""

    def copy(key: str) -> None:
        put(key, Path(source.path(key)).read_bytes())

    def run() -> float:
        started = time.perf_counter()
        listing = source.keys()
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            for _ in pool.map(copy, listing):
                pass
        return time.perf_counter() - started

    return run


#: A baseline: make the next run's fresh destination (untimed), and copy one object into it.
Baseline = tuple[Callable[[], None], Callable[[str, bytes], None]]


def s3_put(endpoint: S3Endpoint, prefixes: Prefixes) -> Baseline:
    """A fresh prefix per run, and a put into it with a client built like the store's writer."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=2.0, read_timeout=5.0
    )
    client = boto3.session.Session().client(
        "s3", endpoint_url=endpoint.url, region_name=endpoint.region, config=config
    )
    current = [""]

    def fresh() -> None:
        current[0] = prefixes.fresh("copy")

    def put(key: str, data: bytes) -> None:
        client.put_object(
            Bucket=endpoint.bucket,
            Key=f"{current[0]}/{key}.md",
            Body=data,
            ContentType="text/markdown; charset=utf-8",
        )

    return fresh, put


def file_put(base: Path) -> Baseline:
    """A fresh folder per run, and a durable atomic write of each file into it."""
    current = [base]

    def fresh() -> None:
        current[0] = base / f"copy-{uuid.uuid4().hex[:8]}"
        current[0].mkdir()

    def put(key: str, data: bytes) -> None:
        folder = current[0] / key[8:10]
        folder.mkdir(exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=folder)
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, folder / f"{key}.md")
        directory = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    return fresh, put


def fresh_then(fresh: Callable[[], None], run: Callable[[], float]) -> Callable[[], float]:
    def sample() -> float:
        fresh()  # untimed
        return run()

    return sample


def bench(
    name: str,
    source: LocalBackend,
    settings: Settings,
    destination: Callable[[], docmem.Backend],
    baseline: Baseline,
    baseline_name: str,
    target: float,
) -> Result:
    phases = Phases()
    side = Side(source, settings, phases)
    fresh, put = baseline
    subject = side.migration(destination)
    copy = fresh_then(fresh, plain_copy(source, settings.workers, put))
    settle()
    subject_times, baseline_times = interleave(settings.runs, subject, copy)
    spent = ", ".join(
        f"{phase} {seconds / settings.runs:.2f} s" for phase, seconds in phases.seconds.items()
    )
    log(f"{name}: done")
    return Result(
        name=name,
        subject=statistics.median(subject_times),
        baseline=statistics.median(baseline_times),
        baseline_name=baseline_name,
        target=target,
        runs=settings.runs,
        notes=(f"per migration: {spent}", *side.failures),
        checked=not side.failures,
        detail=f"{settings.scopes:,} scopes, {settings.workers} workers",
    )


def report_table(results: Sequence[Result]) -> str:
    header = ("benchmark", "docmem", "baseline", "difference", "ratio", "target", "result", "runs")
    rows = [header] + [
        (
            *compared(r),
            f"<= {r.target:g}x" if math.isfinite(r.target) else "report",
            ("PASS" if r.passed else "MISS") if math.isfinite(r.target) else "ok",
            f"{r.runs:,}",
        )
        for r in results
    ]
    return layout(rows, numeric={1, 2, 3, 4, 5, 7})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run with 300 scopes")
    parser.add_argument("--scopes", type=int, help="documents in the source store")
    parser.add_argument("--workers", type=int, help="requests at once, both sides")
    parser.add_argument("--runs", type=int, help="timed runs per side")
    add_endpoint_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    started = time.monotonic()
    results: list[Result] = []
    context: dict[str, Any] = {"endpoint": arguments.endpoint, "bucket": arguments.bucket}
    with tempfile.TemporaryDirectory(prefix="docmem-bench-transfer-") as base:
        root = Path(base)
        log(f"benchmarking docmem {docmem.__version__} migrate of {settings.scopes:,} scopes")
        source = populate(root / "source", settings.scopes)
        if arguments.endpoint:
            endpoint = S3Endpoint(arguments.endpoint, arguments.bucket, arguments.region)
            check_bucket(endpoint, "benchmarks/transfer.py")
            prefixes = Prefixes(endpoint)
            try:
                results.append(
                    bench(
                        "migrate, file:// -> s3://",
                        source,
                        settings,
                        lambda: endpoint.s3_store(prefixes.fresh("migrate")),
                        s3_put(endpoint, prefixes),
                        "boto3 put_object copy, same parallelism",
                        TARGET,
                    )
                )
            finally:
                prefixes.clean_up()
            context["s3"] = "measured"
        else:
            context["s3"] = "skipped: no S3 endpoint (--endpoint or LOCALSTACK_ENDPOINT)"
            log(f"migrate, file:// -> s3://: {context['s3']}")

        def local_destination() -> docmem.Backend:
            return docmem.open_store(f"file://{root / uuid.uuid4().hex[:8]}?create=true")

        results.append(
            bench(
                "migrate, file:// -> file://",
                source,
                settings,
                local_destination,
                file_put(root),
                "atomic file copy, same parallelism",
                math.inf,
            )
        )
        source.close()
    found = versions("boto3") if arguments.endpoint else versions()
    if arguments.json:
        print(
            json_report(
                "transfer",
                results,
                settings=settings,
                found=found,
                context=context,
                started=started,
            )
        )
        return 0
    print(describe(found))
    print("ratio = docmem migrate / plain copy (medians of interleaved runs)")
    if not arguments.endpoint:
        print(f"S3 row {context['s3']}")
    print()
    print(report_table(results))
    print()
    print(notes(results, "a check failed"))
    misses = sum(not r.passed for r in results if math.isfinite(r.target))
    print(f"{misses} MISS in {time.monotonic() - started:.0f} s (benchmarks never fail the build)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
