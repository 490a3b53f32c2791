"""Benchmarks of the ``fsspec+s3://`` store (docmem-fsspec on s3fs) against docmem-s3.

Both stores run on the same S3 endpoint, in the same run: ``--endpoint`` or
``$LOCALSTACK_ENDPOINT`` (``scripts/with-test-servers .venv/bin/python
benchmarks/fsspec_store.py`` starts LocalStack and sets it), the bucket
``$DOCMEM_TEST_BUCKET`` (default ``docmem-test``), credentials from the
standard AWS chain. A full run takes a few minutes; ``--quick`` is a smoke run
with small counts. As in ``s3.py``, the two sides alternate (A/B, then B/A,
...) and each row reports the ratio of the two medians, fsspec over s3. The
rows issue 14 set a target for (:data:`TARGETS`) pass or miss it; the others
say ``report`` in the target column. A row is flagged FAILED when a
correctness check fails.

Every row opens its stores the public way (``docmem.open_store``):
``fsspec+s3://<bucket>/<prefix>?endpoint_url=<endpoint>`` with
``client_kwargs={"region_name": --region}`` on one side and
``s3://<bucket>/<prefix>?endpoint_url=<endpoint>&region=<region>`` on the
other, each side under a fresh prefix of its own, both with their default
options unless the row says otherwise. The memory is always
``docmem.FileMemory(store).bind(lock_scope(...), slot="user")``.

"A LIST from" below is docmem-fsspec's short listing: one ``ListObjectsV2``
with ``StartAfter`` set to a version's name, which returns only the objects
after it (see docmem_fsspec.commitlog); "a full LIST" lists the key's whole
folder.

* ``recall, unchanged``: ``recall()`` of a 10-entry document this process has
  read before. fsspec: a LIST from the cached version's name, which comes
  back empty, and no GET; s3: a GET with ``If-None-Match`` answered 304. No
  request on either side is a HEAD.
* ``recall, unchanged, hot key``: the same, but the key's folder holds
  :attr:`Settings.hot_versions` more versions, as a key written about once a
  second has within the default ``grace`` of 600 s. They are copies of the
  current document put straight into the folder with boto3 under the next
  revision names (out of band, untimed), so the newest is still a valid
  document, and the store reads it once (untimed) to cache it. The s3 side is
  the same as in the row above (one object has no history). The fsspec LIST
  from the newest name is as short as in the row above; LocalStack still
  sorts every key of the bucket to answer it.
* ``recall, after another client's write``: before every timed run of either
  side, a second store of the same kind (its own clients and cache) saves an
  entry and removes it again, untimed; the timed ``recall()`` must return the
  revision that remove made. fsspec: a LIST from the cached name (the other
  client's two versions), then one GET of the newer (``cat_file(path,
  max_concurrency=1)``: no HEAD for the size); s3: a stale ``If-None-Match``
  GET answered 200.
* ``save, single writer``: ``save()`` into a 10-entry document; an untimed
  ``remove`` by the same store after each save keeps the size stable, so every
  timed save starts from this process's own last write (one agent saving
  steadily). fsspec: no request before the PUT (its cached version is its own
  write, seen within ``max_staleness``), a PUT with ``If-None-Match: *`` of
  the next revision name, then a LIST from that name to confirm it (empty).
  Garbage collection needs the whole folder: at most once per quarter of
  ``grace`` per key a write lists it in full instead (plus a DELETE per
  version found past ``grace``). s3: one PUT with ``If-Match``.
* ``save, after another client's write``: as above, but the untimed remove is
  done by a second store of the same kind, so the saving store's cached
  version is stale when each timed save starts (agents on several machines
  taking turns on one scope). Both stores remember a key on which one of their
  writes lost a race (here the first warm-up save, from the stale cache) and
  read it afresh before each later save: fsspec a LIST from its cached name,
  a GET of the other client's newest version, the PUT with ``If-None-Match:
  *``, and a LIST from the new name (no 412; the key stays marked while every
  read finds a version it did not write); s3 a GET (200), then the PUT with
  ``If-Match``.
* ``contention``: W threads, each with its own store and ``FileMemory`` (no
  practical character limit), save M entries each to one new scope; all W x M
  must be present afterwards. Ratio of the median wall times; a save that ran
  out of docmem's retry budget (``StoreBusy``) is retried with the same
  mutation id. Each writer's first read of the new scope finds no key: fsspec
  one full LIST that comes back empty (its first save then lists again before
  its PUT, as a create-only write does), docmem-s3 a GET answered 404. A
  writer whose PUT lost reads afresh (fsspec a full LIST + GET, s3 GET)
  before its next attempt, and before each later save until a read finds its
  own write still the newest (fsspec a LIST from its cached name, s3 a 304).
  Every s3fs filesystem in a process runs its requests on fsspec's one
  shared event-loop thread.

Listing growth and ``grace``: docmem-fsspec keeps every superseded version
until its successor is older than ``grace`` (default 600 s; plus 1 s of slack
for whole-second store clocks) and never fewer than ``retain`` (8), so under
defaults nothing written during a run is ever collected and every save makes
the key's folder one object longer: a write row's folder grows from about
10 to about 10 + 2 x (runs + warm-up). Only a full LIST pays for that length
(a first read, a read after a lost race, garbage collection); the LISTs from
a name do not. So every row that writes runs twice: once with the defaults
(``grace 600s``) and once with the fsspec store opened with ``grace=2,
max_staleness=1, retain=8`` (``grace 2s``), where garbage collection runs
inside the timed saves (its full LIST and DELETEs are counted and timed,
about every 0.5 s; a ``--quick`` row may end before any version is past
``grace``) and the folder stays near ``retain`` + the versions written in
the last 3 s. The notes give the folder's size (objects, incl. the other
client's versions) before and after each row's timed runs. The docmem-s3 side
is the same in both.

Requests: every HTTP response is counted per operation and status with a
botocore ``response-received`` hook on the store's clients: docmem-s3's boto3
clients, and the aiobotocore clients of s3fs (``S3FileSystem.s3`` of the
store's reader and writer filesystems; aiobotocore emits the same event). The
notes give requests per timed call. Each side works under a fresh prefix
(uuid), and every object a row made is deleted when the row ends: LocalStack
answers each LIST by sorting every key of the bucket (its
``list_objects_v2``), so objects earlier rows left would make later rows'
LISTs slower than S3's, which do not depend on the rest of the bucket.

``--json`` prints the results as one JSON object instead of the table, for
comparisons over time (benchmarks/README.md describes it). Benchmarks never
fail a build: the exit status is 0 whatever the results; a row that raises is
reported as failed and the other rows still run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harness.arguments import (
    add_contention_arguments,
    add_endpoint_arguments,
    add_output_arguments,
    endpoint_arguments,
    override,
)
from harness.contention import Tally, contended_saves
from harness.report import Result, compared, describe, json_report, layout, notes, versions
from harness.s3 import Prefixes, Requests, S3Endpoint, check_bucket
from harness.timing import Sample, clock, interleave, log, settle
from harness.workload import SLOT, bind, changes, index_of, recall_after, seeded, timed_save

import docmem
from docmem.provider.document import MAX_DOCUMENT_BYTES
from docmem_fsspec import FsspecBackend, object_name, parse_version
from docmem_s3 import S3Backend

NAMESPACE = "bench:fsspec"
#: The fsspec store's options per variant of a writing row (the s3 side keeps its defaults).
VARIANTS: tuple[tuple[str, Mapping[str, Any]], ...] = (
    ("grace 600s", {}),
    ("grace 2s", {"grace": 2.0, "max_staleness": 1.0, "retain": 8}),
)


#: Options of the fsspec store, passed as keywords to ``docmem.open_store``.
Options = Mapping[str, Any]

#: Issue 14's targets for the ratio, by row title (without its variant); other rows report.
TARGETS: Mapping[str, float] = {
    "recall, unchanged": 1.3,
    "recall, unchanged, hot key": 1.5,
    "save, single writer": 2.0,
    "save, after another client's write": 2.0,
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many runs each benchmark takes; see :data:`FULL` and :data:`QUICK`."""

    #: Timed runs per side of the ``recall, unchanged`` rows.
    recall_runs: int
    #: Timed runs per side of the rows that write (recall after a write, the saves).
    write_runs: int
    hot_versions: int
    writers: int
    writer_saves: int
    contention_runs: int
    warmup: int


FULL = Settings(
    recall_runs=100,
    write_runs=60,
    hot_versions=500,
    writers=4,
    writer_saves=20,
    contention_runs=3,
    warmup=5,
)
QUICK = Settings(
    recall_runs=20,
    write_runs=12,
    hot_versions=50,
    writers=4,
    writer_saves=5,
    contention_runs=2,
    warmup=2,
)


# -- the endpoint and the stores ----------------------------------------------


class Endpoint(S3Endpoint):
    """Where the benchmarks run: one S3 endpoint and bucket, opened by either store."""

    def fsspec_store(self, prefix: str, **options: Any) -> FsspecBackend:
        """A docmem-fsspec store on s3fs under ``prefix``, opened from its URL."""
        store = docmem.open_store(
            f"fsspec+s3://{self.bucket}/{prefix}?endpoint_url={self.url}",
            client_kwargs={"region_name": self.region},
            **options,
        )
        if not isinstance(store, FsspecBackend):
            raise RuntimeError(
                f"fsspec+s3:// opened a {type(store).__name__}, not docmem_fsspec.FsspecBackend"
            )
        return store


def clients_of(store: docmem.Backend) -> list[Any]:
    """The botocore-style clients a store sends its requests through (reader and writer)."""
    if isinstance(store, S3Backend):
        return list(dict.fromkeys(store.clients()))
    if isinstance(store, FsspecBackend):
        filesystems = list(dict.fromkeys(store.filesystems()))
        return [filesystem.s3 for filesystem in filesystems]  # connects if need be
    raise TypeError(f"no clients known for {type(store).__name__}")


def counted(store: docmem.Backend) -> Requests:
    return Requests().attach(*clients_of(store))


def listing_size(store: docmem.Backend, key: str) -> int | None:
    """Objects in the key's folder of an fsspec store (``None`` for other stores)."""
    if not isinstance(store, FsspecBackend):
        return None
    reader, _ = store.filesystems()
    try:
        return len(reader.ls(store.folder(key), detail=False))
    except FileNotFoundError:
        return 0


# -- one side of a row, and a row --------------------------------------------


@dataclasses.dataclass
class Side:
    """One store's half of a row: its timed run, its request counter, its key."""

    store: docmem.Backend
    key: str
    requests: Requests
    run: Sample


SideFactory = Callable[[docmem.Backend, Callable[[], docmem.Backend]], Side]


def compare(
    name: str,
    settings: Settings,
    runs: int,
    fsspec_side: Side,
    s3_side: Side,
    *,
    detail: str = "",
    extra_notes: Sequence[str] = (),
) -> Result:
    """Warm up, then interleave ``runs`` rounds: both medians, requests per call, listing sizes."""
    interleave(settings.warmup, fsspec_side.run, s3_side.run)
    fsspec_side.requests.reset()
    s3_side.requests.reset()
    before = listing_size(fsspec_side.store, fsspec_side.key)
    settle()
    fsspec_times, s3_times = interleave(runs, fsspec_side.run, s3_side.run)
    after = listing_size(fsspec_side.store, fsspec_side.key)
    notes = [
        f"fsspec per call: {fsspec_side.requests.per_call(runs)}",
        f"s3 per call:     {s3_side.requests.per_call(runs)}",
        f"fsspec listing: {before} objects before the timed runs, {after} after",
    ]
    if not fsspec_side.requests.total():
        notes.append("fsspec requests: none counted (the hook did not fire)")
    notes.extend(extra_notes)
    return Result(
        name=name,
        subject=statistics.median(fsspec_times),
        baseline=statistics.median(s3_times),
        baseline_name="docmem-s3",
        target=target_of(name),
        runs=runs,
        notes=tuple(notes),
        detail=detail,
    )


def target_of(name: str) -> float:
    """The row's target (:data:`TARGETS`, whatever its variant); infinite for none."""
    for title, target in TARGETS.items():
        if name == title or name.startswith(f"{title}, grace "):
            return target
    return math.inf


def build(
    endpoint: Endpoint,
    prefixes: Prefixes,
    row: str,
    fsspec_options: Mapping[str, Any],
    side: SideFactory,
) -> tuple[Side, Side]:
    """Both sides of a row: ``side(store, open_another)`` for each kind, fresh prefixes."""
    fsspec_prefix = prefixes.fresh(f"{row}-fsspec")
    s3_prefix = prefixes.fresh(f"{row}-s3")

    def another_fsspec() -> docmem.Backend:
        return endpoint.fsspec_store(fsspec_prefix, **fsspec_options)

    def another_s3() -> docmem.Backend:
        return endpoint.s3_store(s3_prefix)

    return side(another_fsspec(), another_fsspec), side(another_s3(), another_s3)


WritingBench = Callable[[Endpoint, Prefixes, Settings, str, Options], Result]


def writing_row(title: str, row: str, side: SideFactory) -> WritingBench:
    """A row that writes: ``side`` for each kind, :attr:`Settings.write_runs` timed runs."""

    def bench(
        endpoint: Endpoint, prefixes: Prefixes, settings: Settings, variant: str, options: Options
    ) -> Result:
        fsspec_side, s3_side = build(endpoint, prefixes, row, options, side)
        return compare(f"{title}, {variant}", settings, settings.write_runs, fsspec_side, s3_side)

    return bench


# -- recall -----------------------------------------------------------------


def recall_unchanged_side(store: docmem.Backend, _: Callable[[], docmem.Backend]) -> Side:
    memory = seeded(store, NAMESPACE, "recall")
    if not memory.recall():  # this store has seen the document
        raise RuntimeError("the seeded document is missing")
    requests = counted(store)

    def run() -> float:
        with requests.counting():
            return clock(memory.recall)

    return Side(store, memory.scope.storage_key, requests, run)


def bench_recall_unchanged(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``recall()`` of a document this process has read before."""
    fsspec_side, s3_side = build(endpoint, prefixes, "recall-unchanged", {}, recall_unchanged_side)
    return compare("recall, unchanged", settings, settings.recall_runs, fsspec_side, s3_side)


def add_versions(endpoint: Endpoint, store: FsspecBackend, key: str, count: int) -> None:
    """Put ``count`` copies of the current document above it, as the next revisions (untimed)."""
    current = store.read(key)
    if current is None:
        raise RuntimeError("the seeded document is missing")
    bucket, _, folder = store.folder(key).partition("/")
    newest = parse_version(current.version)
    if newest is None:
        raise RuntimeError(f"{current.version!r} is not a docmem-fsspec version name")
    first = newest + 1
    client = endpoint.client()
    try:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            futures = [
                pool.submit(
                    client.put_object,
                    Bucket=bucket,
                    Key=f"{folder}/{object_name(revision)}",
                    Body=current.data,
                )
                for revision in range(first, first + count)
            ]
            for future in futures:
                future.result()
    finally:
        client.close()


def bench_recall_hot(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``recall()`` of an unchanged document whose fsspec folder holds many recent versions."""

    def side(store: docmem.Backend, open_another: Callable[[], docmem.Backend]) -> Side:
        made = recall_unchanged_side(store, open_another)
        if isinstance(store, FsspecBackend):
            add_versions(endpoint, store, made.key, settings.hot_versions)
            store.read(made.key)  # the newest version is cached again
        return made

    fsspec_side, s3_side = build(endpoint, prefixes, "recall-hot", {}, side)
    size = listing_size(fsspec_side.store, fsspec_side.key)
    return compare(
        "recall, unchanged, hot key",
        settings,
        settings.recall_runs,
        fsspec_side,
        s3_side,
        detail=f"{size} objects",
    )


def recall_changed_side(store: docmem.Backend, open_another: Callable[[], docmem.Backend]) -> Side:
    """``recall()`` right after another client's write."""
    memory = seeded(store, NAMESPACE, "recall")
    other = bind(open_another(), NAMESPACE, "recall")
    memory.recall()  # this store has seen the document
    requests = counted(store)
    run = recall_after(changes(other), memory, requests)
    return Side(store, memory.scope.storage_key, requests, run)


bench_recall_changed = writing_row(
    "recall, after another client's write", "recall-changed", recall_changed_side
)


# -- save -------------------------------------------------------------------


def saves(memory: docmem.BoundMemory, requests: Requests, remover: docmem.BoundMemory) -> Sample:
    """Timed saves to ``memory``; ``remover`` removes each new entry again, untimed."""
    count = 0

    def run() -> float:
        nonlocal count
        count += 1
        elapsed, result = timed_save(memory, requests, count)
        remover.remove(index_of(result), mutation_id=f"remove-{count}")
        return elapsed

    return run


def save_single_side(store: docmem.Backend, _: Callable[[], docmem.Backend]) -> Side:
    """``save()`` from this process's own last write."""
    memory = seeded(store, NAMESPACE, "save")
    requests = counted(store)
    run = saves(memory, requests, remover=memory)  # this store again
    return Side(store, memory.scope.storage_key, requests, run)


def save_stale_side(store: docmem.Backend, open_another: Callable[[], docmem.Backend]) -> Side:
    """``save()`` after another client's write (this store's cached version is stale)."""
    memory = seeded(store, NAMESPACE, "save")
    other = bind(open_another(), NAMESPACE, "save")
    # The other client writes first, so the first timed save starts from a stale cache too.
    other.remove(index_of(other.save("Warm-up note.", mutation_id="warm-save")), mutation_id="warm")
    requests = counted(store)
    # The other client removes each entry: the size stays put, this store's cache goes stale.
    run = saves(memory, requests, remover=other)
    return Side(store, memory.scope.storage_key, requests, run)


bench_save_single = writing_row("save, single writer", "save-single", save_single_side)
bench_save_stale = writing_row("save, after another client's write", "save-stale", save_stale_side)


# -- contention -------------------------------------------------------------


def contention_side(
    label: str, stores: Sequence[docmem.Backend], settings: Settings
) -> tuple[Sample, Tally, Requests]:
    """One kind's timed run: W threads x M saves on a new scope, then the check."""
    writers, saves = settings.writers, settings.writer_saves
    expected = writers * saves
    # Room for every entry, whatever the counts.
    memories = [docmem.FileMemory(store, max_characters=MAX_DOCUMENT_BYTES) for store in stores]
    # Warm-up: every store opens its connections (docmem-s3 also runs its one-off probe
    # of the conditions) on a key of its own.
    for number, memory in enumerate(memories):
        warm = docmem.lock_scope(namespace=NAMESPACE, scope=f"warm-{number}")
        memory.bind(warm, slot=SLOT).save("warm-up", mutation_id="warm-up")
    requests = Requests()
    for store in stores:
        requests.attach(*clients_of(store))
    tally = Tally()
    run = 0

    def timed() -> float:
        nonlocal run
        run += 1
        scope = docmem.lock_scope(namespace=NAMESPACE, scope=f"contention-{run}")
        elapsed, held = contended_saves(memories, scope, run, saves, requests, tally)
        size = listing_size(stores[0], scope.storage_key)
        listing = f", listing {size} objects" if size is not None else ""
        log(f"  {label} run {run}: {elapsed:.2f} s, {held}/{expected} present{listing}")
        return elapsed

    return timed, tally, requests


def bench_contention(
    endpoint: Endpoint, prefixes: Prefixes, settings: Settings, variant: str, options: Options
) -> Result:
    """W writers x M saves on one scope, each writer with its own store; wall time."""
    writers, saves = settings.writers, settings.writer_saves
    expected = writers * saves
    fsspec_prefix = prefixes.fresh("contention-fsspec")
    s3_prefix = prefixes.fresh("contention-s3")
    fsspec_stores = [endpoint.fsspec_store(fsspec_prefix, **options) for _ in range(writers)]
    s3_stores = [endpoint.s3_store(s3_prefix) for _ in range(writers)]
    fsspec_run, fsspec_tally, fsspec_requests = contention_side("fsspec", fsspec_stores, settings)
    s3_run, s3_tally, s3_requests = contention_side("s3", s3_stores, settings)
    settle()
    fsspec_times, s3_times = interleave(settings.contention_runs, fsspec_run, s3_run)
    saves_done = expected * settings.contention_runs
    return Result(
        name=f"contention, {writers} writers x {saves} saves, {variant}",
        subject=statistics.median(fsspec_times),
        baseline=statistics.median(s3_times),
        baseline_name="docmem-s3",
        target=math.inf,
        runs=settings.contention_runs,
        notes=(
            f"fsspec: {fsspec_tally.summary(expected)}",
            f"fsspec per save: {fsspec_requests.per_save(saves_done)}",
            f"s3: {s3_tally.summary(expected)}",
            f"s3 per save:     {s3_requests.per_save(saves_done)}",
        ),
        checked=fsspec_tally.ok and s3_tally.ok,
    )


# -- report -----------------------------------------------------------------


def report_table(results: Sequence[Result]) -> str:
    """Like ``harness.table``; a row without a target says ``report`` and ``ok``."""
    header = ("benchmark", "fsspec", "s3", "difference", "ratio", "target", "result", "runs")
    rows = [header] + [(*compared(r), *judged(r), f"{r.runs:,}") for r in results]
    return layout(rows, numeric={1, 2, 3, 4, 5, 7})


def judged(result: Result) -> tuple[str, str]:
    """The target and result cells: ``<= 1.3x``/``PASS``, ``report``/``ok``, or ``FAILED``."""
    if not math.isfinite(result.target):
        return "report", "ok" if result.checked else "FAILED"
    verdict = "PASS" if result.passed else ("MISS" if result.checked else "FAILED")
    return f"<= {result.target:g}x", verdict


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, Endpoint, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark docmem-fsspec (s3fs) against docmem-s3 on one S3 endpoint."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    add_endpoint_arguments(parser)
    parser.add_argument(
        "--recall-runs", type=int, help="timed runs per side of the recall, unchanged rows"
    )
    parser.add_argument("--write-runs", type=int, help="timed runs per side of the other rows")
    parser.add_argument("--hot-versions", type=int, help="extra versions of the hot key")
    add_contention_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    endpoint = Endpoint(*endpoint_arguments(parser, arguments))
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    return settings, endpoint, arguments.json


Bench = Callable[[Endpoint, Prefixes, Settings], Result]


def benches() -> list[tuple[str, Bench]]:
    """Every row, in report order; the writing rows once per :data:`VARIANTS` entry."""
    found: list[tuple[str, Bench]] = [
        ("recall, unchanged", bench_recall_unchanged),
        ("recall, unchanged, hot key", bench_recall_hot),
    ]
    writing = (
        ("recall, after another client's write", bench_recall_changed),
        ("save, single writer", bench_save_single),
        ("save, after another client's write", bench_save_stale),
        ("contention", bench_contention),
    )
    for name, bench in writing:
        for variant, options in VARIANTS:

            def row(
                endpoint: Endpoint,
                prefixes: Prefixes,
                settings: Settings,
                bench: Callable[..., Result] = bench,
                variant: str = variant,
                options: Mapping[str, Any] = options,
            ) -> Result:
                return bench(endpoint, prefixes, settings, variant, options)

            found.append((f"{name}, {variant}", row))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    settings, endpoint, as_json = parse_arguments(argv)
    check_bucket(endpoint, "benchmarks/fsspec_store.py")
    started = time.monotonic()
    prefixes = Prefixes(endpoint)
    results: list[Result] = []
    errors: list[str] = []
    log(
        f"benchmarking docmem-fsspec against docmem-s3 on {endpoint.url}, "
        f"bucket {endpoint.bucket}, under docmem-bench-{prefixes.run_id}/"
    )
    for name, bench in benches():
        phase = time.monotonic()
        # Each row's objects go when the row ends: LocalStack sorts every object of the
        # bucket for every LIST, so what earlier rows left would slow later rows' LISTs.
        row_prefixes = Prefixes(endpoint)
        row_prefixes.run_id = prefixes.run_id
        try:
            results.append(bench(endpoint, row_prefixes, settings))
        except Exception as exc:  # reported below; the other rows still run
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
            log(f"{name}: FAILED ({type(exc).__name__}: {exc})")
            continue
        finally:
            row_prefixes.clean_up()
        log(f"{name}: {time.monotonic() - phase:.1f} s")
    found = versions("agent-docmem-fsspec", "agent-docmem-s3", "s3fs", "aiobotocore", "boto3")
    if as_json:
        context = {"endpoint": endpoint.url, "bucket": endpoint.bucket, "region": endpoint.region}
        print(
            json_report(
                "fsspec",
                results,
                settings=settings,
                found=found,
                context=context,
                started=started,
                errors=errors,
            )
        )
        return 0
    print(describe(found))
    print(f"endpoint {endpoint.url}, bucket {endpoint.bucket}; medians of interleaved runs")
    print("ratio = fsspec median / s3 median; difference = fsspec - s3; targets of issue 14")
    print()
    print(report_table(results))
    print()
    print("requests per timed call (HTTP status in parentheses), listing sizes, checks:")
    print(notes(results, "check FAILED"))
    print()
    for error in errors:
        print(f"FAILED, no row: {error}")
    failed = sum(not result.checked for result in results) + len(errors)
    aimed = [result for result in results if math.isfinite(result.target)]
    missed = sum(not result.passed for result in aimed)
    print(
        f"{len(results)} rows, {failed} failed checks or rows; {len(aimed) - missed} PASS, "
        f"{missed} MISS; in {time.monotonic() - started:.0f} s (benchmarks never fail the build)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
