"""Benchmarks of the ``s3://`` store (docmem-s3), each against raw boto3 in the same run.

Run against an S3 endpoint given by ``--endpoint`` or ``$LOCALSTACK_ENDPOINT``
(``scripts/with-test-servers .venv/bin/python benchmarks/s3.py`` starts
LocalStack and sets it), in the bucket ``$DOCMEM_TEST_BUCKET`` (default
``docmem-test``), with credentials from the standard AWS chain. A full run
takes about 9 minutes on LocalStack, 6 of them writing and deleting the
scale rows' 100,000 documents; ``--quick`` is a smoke run with small counts.
As in ``local.py``, docmem runs and baseline runs alternate (A/B, then B/A,
...) and each row reports the ratio of the two medians against a target:

* ``recall, unchanged``: ``recall()`` of a 10-entry document this process has
  read before (a conditional GET answered 304 with no body, served from the
  store's cache) against a raw ``get_object`` of the same object.
* ``recall, after another client's write``: before every timed run of either
  side, a second docmem store (its own clients and cache) saves an entry and
  removes it again, untimed; so the timed ``recall()`` sends a stale
  ``If-None-Match``, gets the new body and parses it. Baseline: raw
  ``get_object`` of the same object, after the same untimed writes.
* ``save`` (10 entries; an untimed ``remove`` after each timed save keeps the
  size stable, and the baseline writes exactly the bytes that save wrote, to
  an object of its own under the same prefix):

  - ``cold cache``: a store opened with ``cache_size=0``, so every save must
    read first, as the first save in a process does: GET + conditional PUT,
    against a raw ``get_object`` + ``put_object(IfMatch=etag)``. Same
    requests on both sides; the ratio is docmem's own cost.
  - ``after another client's write``: the untimed remove is done by a second
    store, so the saving store's cached version is stale when each timed save
    starts (agents on several machines taking turns on one scope). Baseline
    as above, its object also rewritten (untimed) before each run.
  - ``fresh cached version``: this store made the last write, so a save may
    start from its cached version; against a raw conditional ``put_object``
    alone, with the ETag the previous PUT returned.
* ``contention``: 8 threads, each with its own store and ``FileMemory``, save
  50 entries each to one new scope; all 400 must be present afterwards. The
  baseline is the same work by 8 raw clients (each its own reader and writer)
  in a naive read-modify-write loop: ``get_object``, append a line,
  ``put_object`` with ``If-Match`` (``If-None-Match: *`` on create), retrying
  at once, without backoff, on 412 or 409. Ratio of median wall times.
* scale: the same docmem calls under a prefix holding 100,000 scopes against
  one holding 100 (``--quick``: 1,000 against 20; ``--large-scopes``), on the
  same scopes in the same order: ``save`` to a scope that exists (after one
  untimed save each, so it starts from the store's cached version) and to a
  new scope, ``recall()`` of an existing scope read before (a 304), and with a
  second store opened with ``cache_size=0`` (a full GET and a parse). The
  documents are written out of band, untimed: valid documents
  (``docmem.provider.document.serialize``) under their real object keys
  (``S3Backend.object_key`` of ``docmem.lock_scope(...).storage_key``), with
  plain ``put_object`` calls from ``--populate-threads`` threads (16).

Fairness: each raw side uses a reader and a writer client built like the
store's own (one fresh ``boto3`` session each, the store's connect and read
timeouts, the store's read retries, retries off for PUTs), sends the same
content type, and is warmed up before timing like docmem. Every HTTP response
is counted per operation and status with a botocore event hook on both sides
(same overhead for both); the notes under the table show requests per timed
call (for the scale rows, on each side). Each benchmark works under a fresh
prefix (uuid), deleted afterwards.

``--json`` prints the results as one JSON object instead of the table, for
comparisons over time (benchmarks/README.md describes it). Benchmarks never
fail a build: the exit status is 0 whether a target is met (PASS) or not
(MISS).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from harness.arguments import (
    add_contention_arguments,
    add_endpoint_arguments,
    add_output_arguments,
    endpoint_arguments,
    override,
)
from harness.contention import Tally, contended_saves, entry_text, present, run_threads
from harness.report import Result, describe, json_report, notes, table, verdict, versions
from harness.s3 import Prefixes, Requests, S3Endpoint, check_bucket
from harness.timing import Sample, clock, interleave, log, measure, settle
from harness.workload import (
    SLOT,
    bind,
    changes,
    index_of,
    recall_after,
    scale_keys,
    seeded,
    small_document,
    timed_save,
)

import docmem
from docmem.provider.document import MAX_DOCUMENT_BYTES
from docmem_s3 import S3Backend
from docmem_s3.backend import CONTENT_TYPE
from docmem_s3.errors import Missing, answer, classify

NAMESPACE = "bench:s3"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many runs each benchmark takes; see :data:`FULL` and :data:`QUICK`."""

    recall_runs: int
    save_runs: int
    writers: int
    writer_saves: int
    contention_runs: int
    scale_runs: int
    small_scopes: int
    large_scopes: int
    populate_threads: int
    warmup: int


FULL = Settings(
    recall_runs=300,
    save_runs=200,
    writers=8,
    writer_saves=50,
    contention_runs=5,
    scale_runs=300,
    small_scopes=100,
    large_scopes=100_000,
    populate_threads=16,
    warmup=10,
)
QUICK = Settings(
    recall_runs=20,
    save_runs=12,
    writers=8,
    writer_saves=5,
    contention_runs=2,
    scale_runs=8,
    small_scopes=20,
    large_scopes=1_000,
    populate_threads=16,
    warmup=2,
)


# -- the endpoint, stores and raw clients ------------------------------------


class Endpoint(S3Endpoint):
    """Where the benchmarks run: one S3 endpoint and bucket, and raw clients for baselines."""

    def raw(self, like: S3Backend) -> Raw:
        """Raw boto3 clients configured like ``like``'s own (see :meth:`S3Backend.clients`)."""
        timeouts = {"connect_timeout": like.connect_timeout, "read_timeout": like.read_timeout}
        read_config = Config(
            retries={"mode": "standard", "total_max_attempts": like.max_attempts}, **timeouts
        )
        write_config = Config(retries={"mode": "standard", "total_max_attempts": 1}, **timeouts)
        session = boto3.session.Session()
        common = {"endpoint_url": self.url, "region_name": self.region}
        return Raw(
            reader=session.client("s3", config=read_config, **common),
            writer=session.client("s3", config=write_config, **common),
            bucket=self.bucket,
        )


def is_conflict(exc: ClientError) -> bool:
    """A lost conditional write (412, or 409: another one in flight), as docmem-s3 maps it."""
    return classify("update", *answer(exc)) is docmem.VersionConflict


@dataclasses.dataclass
class Raw:
    """The baseline: plain boto3 calls, no cache, no parsing, no journal."""

    reader: Any
    writer: Any
    bucket: str

    def clients(self) -> tuple[Any, Any]:
        return self.reader, self.writer

    def get(self, key: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag, or ``None`` when it does not exist."""
        try:
            response = self.reader.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if classify("read", *answer(exc)) is Missing:
                return None
            raise
        return response["Body"].read(), str(response["ETag"])

    def put(self, key: str, data: bytes, *, expected: str | None) -> str:
        """A conditional PUT (``expected=None``: create only); the new ETag."""
        condition = {"IfMatch": expected} if expected is not None else {"IfNoneMatch": "*"}
        response = self.writer.put_object(
            Bucket=self.bucket, Key=key, Body=data, ContentType=CONTENT_TYPE, **condition
        )
        return str(response["ETag"])

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def fetch(raw: Raw, key: str) -> tuple[bytes, str]:
    found = raw.get(key)
    if found is None:
        raise RuntimeError(f"the object {key} is missing")
    return found


def object_key(store: S3Backend, memory: docmem.BoundMemory) -> str:
    return store.object_key(memory.scope.storage_key)


def baseline_key(store: S3Backend, name: str) -> str:
    """An object of the baseline's own, next to the store's documents."""
    return f"{store.prefix}/raw-{name}.md"


# -- recall -----------------------------------------------------------------


def bench_recall_unchanged(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``recall()`` of a document this process has seen (304) against a raw ``get_object``."""
    store = endpoint.s3_store(prefixes.fresh("recall-unchanged"))
    memory = seeded(store, NAMESPACE, "recall")
    key = object_key(store, memory)
    raw = endpoint.raw(store)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    if not memory.recall():
        raise RuntimeError("the seeded document is missing")
    size = len(fetch(raw, key)[0])

    def recall() -> float:
        with ours.counting():
            return clock(memory.recall)

    def baseline() -> float:
        with theirs.counting():
            return clock(lambda: raw.get(key))

    runs = settings.recall_runs
    subject, base, notes = measure(settings.warmup, runs, recall, baseline, ours, theirs)
    raw.close()
    return Result(
        name="recall, unchanged",
        detail=f"{size:,} B",
        subject=subject,
        baseline=base,
        baseline_name="raw get_object",
        target=1.0,
        runs=runs,
        notes=notes,
    )


def bench_recall_changed(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``recall()`` right after another client's write against a raw ``get_object``."""
    prefix = prefixes.fresh("recall-changed")
    store = endpoint.s3_store(prefix)
    memory = seeded(store, NAMESPACE, "recall")
    other = bind(endpoint.s3_store(prefix), NAMESPACE, "recall")
    key = object_key(store, memory)
    raw = endpoint.raw(store)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    change = changes(other)  # untimed, before every run of either side
    recall = recall_after(change, memory, ours)

    def baseline() -> float:
        change()
        with theirs.counting():
            return clock(lambda: raw.get(key))

    memory.recall()  # this store has seen the document: its recalls send If-None-Match
    runs = settings.recall_runs
    subject, base, notes = measure(settings.warmup, runs, recall, baseline, ours, theirs)
    size = len(fetch(raw, key)[0])
    raw.close()
    return Result(
        name="recall, after another client's write",
        detail=f"{size:,} B",
        subject=subject,
        baseline=base,
        baseline_name="raw get_object",
        target=1.15,
        runs=runs,
        notes=notes,
    )


# -- save -------------------------------------------------------------------


def bench_save_cold(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``save()`` that must read first (no cache) against raw GET + conditional PUT."""
    store = endpoint.s3_store(prefixes.fresh("save-cold"), cache_size=0)
    memory = seeded(store, NAMESPACE, "save")
    key = object_key(store, memory)
    raw = endpoint.raw(store)
    raw_key = baseline_key(store, "save-cold")
    written = fetch(raw, key)[0]
    raw.put(raw_key, written, expected=None)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    count = 0

    def save() -> float:
        nonlocal count, written
        count += 1
        elapsed, result = timed_save(memory, ours, count)
        written = fetch(raw, key)[0]  # what the baseline writes next (no cache to ask)
        memory.remove(index_of(result), mutation_id=f"remove-{count}")
        return elapsed

    def baseline() -> float:
        with theirs.counting():
            start = time.perf_counter_ns()
            _, etag = fetch(raw, raw_key)
            raw.put(raw_key, written, expected=etag)
            return (time.perf_counter_ns() - start) / 1e9

    runs = settings.save_runs
    subject, base, notes = measure(settings.warmup, runs, save, baseline, ours, theirs)
    raw.close()
    return Result(
        name="save, cold cache",
        detail=f"{len(written):,} B",
        subject=subject,
        baseline=base,
        baseline_name="raw get + conditional put",
        target=1.1,
        runs=runs,
        notes=notes,
    )


def bench_save_stale(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``save()`` after another client's write (stale cache) against raw GET + conditional PUT."""
    prefix = prefixes.fresh("save-stale")
    store = endpoint.s3_store(prefix)
    memory = seeded(store, NAMESPACE, "save")
    other_store = endpoint.s3_store(prefix)
    other = bind(other_store, NAMESPACE, "save")
    key = object_key(store, memory)
    raw = endpoint.raw(store)
    other_raw = endpoint.raw(store)
    raw_key = baseline_key(store, "save-stale")
    written = fetch(raw, key)[0]
    raw_etag = raw.put(raw_key, written, expected=None)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    count = 0
    # The other client writes first, so the first timed save starts from a stale cache too.
    other.remove(index_of(other.save("Warm-up note.", mutation_id="warm-save")), mutation_id="warm")

    def save() -> float:
        nonlocal count, written
        count += 1
        elapsed, result = timed_save(memory, ours, count)
        written = fetch(raw, key)[0]  # what the baseline writes next
        # The other client removes the entry: the size stays put, this store's cache goes stale.
        other.remove(index_of(result), mutation_id=f"remove-{count}")
        return elapsed

    def baseline() -> float:
        nonlocal raw_etag
        raw_etag = other_raw.put(raw_key, written, expected=raw_etag)  # untimed, likewise
        with theirs.counting():
            start = time.perf_counter_ns()
            _, etag = fetch(raw, raw_key)
            raw_etag = raw.put(raw_key, written, expected=etag)
            return (time.perf_counter_ns() - start) / 1e9

    runs = settings.save_runs
    subject, base, notes = measure(settings.warmup, runs, save, baseline, ours, theirs)
    raw.close()
    other_raw.close()
    return Result(
        name="save, after another client's write",
        detail=f"{len(written):,} B",
        subject=subject,
        baseline=base,
        baseline_name="raw get + conditional put",
        target=1.1,
        runs=runs,
        notes=notes,
    )


def bench_save_fresh(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """``save()`` from a fresh cached version against a raw conditional PUT alone."""
    store = endpoint.s3_store(prefixes.fresh("save-fresh"))
    memory = seeded(store, NAMESPACE, "save")
    key = object_key(store, memory)
    raw = endpoint.raw(store)
    raw_key = baseline_key(store, "save-fresh")
    written = fetch(raw, key)[0]
    raw_etag = raw.put(raw_key, written, expected=None)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    count = 0

    def save() -> float:
        nonlocal count, written
        count += 1
        elapsed, result = timed_save(memory, ours, count)
        written = fetch(raw, key)[0]  # what the baseline writes next
        memory.remove(index_of(result), mutation_id=f"remove-{count}")  # this store again: fresh
        return elapsed

    def baseline() -> float:
        nonlocal raw_etag
        with theirs.counting():
            start = time.perf_counter_ns()
            raw_etag = raw.put(raw_key, written, expected=raw_etag)
            return (time.perf_counter_ns() - start) / 1e9

    runs = settings.save_runs
    subject, base, notes = measure(settings.warmup, runs, save, baseline, ours, theirs)
    raw.close()
    return Result(
        name="save, fresh cached version",
        detail=f"{len(written):,} B",
        subject=subject,
        baseline=base,
        baseline_name="raw conditional put",
        target=1.2,
        runs=runs,
        notes=notes,
    )


# -- contention -------------------------------------------------------------


def bench_contention(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> Result:
    """N writers x M saves on one scope against a naive read-modify-write loop, wall time."""
    writers, saves = settings.writers, settings.writer_saves
    expected = writers * saves
    prefix = prefixes.fresh("contention")
    stores = [endpoint.s3_store(prefix) for _ in range(writers)]
    # Room for every entry: the default max_characters (4,000) holds fewer than 400 notes.
    memories = [docmem.FileMemory(store, max_characters=MAX_DOCUMENT_BYTES) for store in stores]
    raws = [endpoint.raw(stores[0]) for _ in range(writers)]
    ours, theirs = Requests(), Requests()
    for store, raw in zip(stores, raws, strict=True):
        ours.attach(*store.clients())
        theirs.attach(*raw.clients())

    # Warm-up: every store and raw client opens its connections (and the first write
    # through the prefix runs docmem's one-off probe of the conditions), on keys of their own.
    for number, (memory, raw) in enumerate(zip(memories, raws, strict=True)):
        bound = memory.bind(
            docmem.lock_scope(namespace=NAMESPACE, scope=f"warm-{number}"), slot=SLOT
        )
        bound.save("warm-up", mutation_id="warm-up")
        raw_key = baseline_key(stores[0], f"warm-{number}")
        raw.put(raw_key, b"warm-up\n", expected=None)
        fetch(raw, raw_key)

    docmem_tally, raw_tally = Tally(), Tally()
    run = 0

    def docmem_run() -> float:
        nonlocal run
        run += 1
        scope = docmem.lock_scope(namespace=NAMESPACE, scope=f"contention-{run}")
        elapsed, held = contended_saves(memories, scope, run, saves, ours, docmem_tally)
        log(f"  docmem run {run}: {elapsed:.2f} s, {held}/{expected} present")
        return elapsed

    raw_run = 0

    def naive_run() -> float:
        nonlocal raw_run
        raw_run += 1
        key = baseline_key(stores[0], f"contention-{raw_run}")

        def work(writer: int) -> None:
            raw = raws[writer]
            for index in range(saves):
                line = f"{entry_text(writer, index)}\n".encode()
                while True:  # the naive loop: no backoff, no budget
                    try:
                        found = raw.get(key)
                        data, etag = found if found is not None else (b"", None)
                        raw.put(key, data + line, expected=etag)
                        break
                    except ClientError as exc:
                        if is_conflict(exc):
                            continue
                        code, status = answer(exc)
                        raw_tally.error(f"HTTP {status} {code}")
                        break
                    except BotoCoreError as exc:
                        raw_tally.error(type(exc).__name__)
                        break

        with theirs.counting():
            elapsed = run_threads(writers, work)
        found = raws[0].get(key)
        lines = set(found[0].decode().splitlines()) if found is not None else set()
        held = present(lines, writers, saves)
        raw_tally.finish_run(held, expected)
        log(f"  naive run {raw_run}: {elapsed:.2f} s, {held}/{expected} present")
        return elapsed

    settle()
    docmem_times, raw_times = interleave(settings.contention_runs, docmem_run, naive_run)
    for raw in raws:
        raw.close()
    saves_done = expected * settings.contention_runs
    return Result(
        name=f"contention, {writers} writers x {saves} saves",
        subject=statistics.median(docmem_times),
        baseline=statistics.median(raw_times),
        baseline_name="naive retry loop, no backoff",
        target=1.0,
        runs=settings.contention_runs,
        notes=(
            f"docmem: {docmem_tally.summary(expected)}",
            f"docmem per save: {ours.per_save(saves_done)}",
            f"naive: {raw_tally.summary(expected)}",
            f"naive per save: {theirs.per_save(saves_done)}",
        ),
        checked=docmem_tally.ok,
    )


# -- scale ------------------------------------------------------------------


def populate(
    endpoint: Endpoint, store: S3Backend, keys: Sequence[str], data: bytes, *, threads: int
) -> None:
    """Put ``data`` as the document of every key under ``store``'s prefix, untimed.

    Plain ``put_object`` calls from one client shared by ``threads`` threads,
    with the content type docmem-s3 writes: a conditional save per document
    would take the probe, a read and the journal 100,000 times over.
    """
    client = endpoint.client(max_pool_connections=threads)
    object_keys = [store.object_key(key) for key in keys]
    done = 0
    guard = threading.Lock()
    step = max(len(object_keys) // 10, 1)

    def put_all(share: Sequence[str]) -> None:
        nonlocal done
        for object_key in share:
            client.put_object(
                Bucket=endpoint.bucket, Key=object_key, Body=data, ContentType=CONTENT_TYPE
            )
            with guard:
                done += 1
                if done % step == 0 and len(object_keys) >= 10_000:
                    log(f"  populated {done:,} of {len(object_keys):,}")

    try:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            shares = [object_keys[i::threads] for i in range(threads)]
            for future in [pool.submit(put_all, share) for share in shares]:
                future.result()  # re-raise the first failure
    finally:
        client.close()


def bench_scale(endpoint: Endpoint, prefixes: Prefixes, settings: Settings) -> list[Result]:
    """Save and recall latency with many scopes under the prefix against the same with few.

    Both prefixes hold the documents of ``user-0`` ... (written out of band); the
    timed calls go to the same ``user-<n % small>`` scopes of each, in the same
    order and state, interleaved, and new scopes get the same names on both sides.
    """
    small, large = settings.small_scopes, settings.large_scopes
    keys = scale_keys(NAMESPACE, large)
    data = small_document()
    prefix = {"large": prefixes.fresh("scale-large"), "small": prefixes.fresh("scale-small")}
    stores = {which: endpoint.s3_store(name) for which, name in prefix.items()}
    # A second store per prefix without a cache: every recall is a full GET and a parse.
    uncached = {which: endpoint.s3_store(name, cache_size=0) for which, name in prefix.items()}
    started = time.monotonic()
    threads = settings.populate_threads
    populate(endpoint, stores["small"], keys[:small], data, threads=threads)
    populate(endpoint, stores["large"], keys, data, threads=threads)
    log(f"  populated {small:,} + {large:,} scopes in {time.monotonic() - started:.1f} s")
    counts = {which: Requests() for which in stores}
    for which, counted in counts.items():
        counted.attach(*stores[which].clients(), *uncached[which].clients())

    def saver(which: str, scope_of: Callable[[int], str], phase: str) -> Sample:
        """Each call saves a new entry once to the next scope ``scope_of(n)`` of one prefix."""
        count = 0

        def save() -> float:
            nonlocal count
            memory = bind(stores[which], NAMESPACE, scope_of(count))
            text = f"Moved to office number {count} ({phase})."
            mutation_id = f"{phase}-{which}-{count}"
            count += 1
            with counts[which].counting():
                return clock(lambda: memory.save(text, mutation_id=mutation_id))

        return save

    def recaller(which: str, scope_of: Callable[[int], str], cached: bool) -> Sample:
        """Each call recalls the next scope ``scope_of(n)``, which must hold a document."""
        store = stores[which] if cached else uncached[which]
        count = 0

        def recall() -> float:
            nonlocal count
            memory = bind(store, NAMESPACE, scope_of(count))
            count += 1
            with counts[which].counting():
                start = time.perf_counter_ns()
                messages = memory.recall()
                elapsed = (time.perf_counter_ns() - start) / 1e9
            if not messages:
                raise RuntimeError(f"{memory.scope.scope_key} has no document in the {which} store")
            return elapsed

        return recall

    def existing(n: int) -> str:
        return f"user-{n % small}"

    def fresh(n: int) -> str:
        return f"new-{n}"

    def warm(n: int) -> str:
        return f"warm-{n}"

    # Warm-up: connections, and each store's one-off probe of the conditions on its first write.
    interleave(settings.warmup, saver("large", warm, "warm"), saver("small", warm, "warm"))
    interleave(settings.warmup, recaller("large", warm, False), recaller("small", warm, False))
    # One untimed save per existing scope first, so every timed call finds it in the
    # store's cache, as a scope in steady use is.
    interleave(small, saver("large", existing, "first"), saver("small", existing, "first"))
    rows: tuple[tuple[str, Callable[[str], Sample]], ...] = (
        ("save, existing scope", lambda which: saver(which, existing, "existing")),
        ("save, new scope", lambda which: saver(which, fresh, "new")),
        ("recall, unchanged", lambda which: recaller(which, existing, True)),
        ("recall, cache off", lambda which: recaller(which, existing, False)),
    )
    runs = settings.scale_runs
    results = []
    for label, sample in rows:
        for counted in counts.values():
            counted.reset()
        settle()
        large_times, small_times = interleave(runs, sample("large"), sample("small"))
        results.append(
            Result(
                name=f"{label}, {large:,} scopes",
                subject=statistics.median(large_times),
                baseline=statistics.median(small_times),
                baseline_name=f"same, {small:,} scopes",
                target=1.2,
                runs=runs,
                notes=(
                    f"{large:,} scopes per call: {counts['large'].per_call(runs)}",
                    f"{small:,} scopes per call: {counts['small'].per_call(runs)}",
                ),
            )
        )
    return results


# -- report -----------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, Endpoint, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark docmem's s3:// store against raw boto3 baselines in the same run."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    add_endpoint_arguments(parser)
    parser.add_argument("--recall-runs", type=int, help="timed recalls per side and benchmark")
    parser.add_argument("--save-runs", type=int, help="timed saves per side and benchmark")
    add_contention_arguments(parser)
    parser.add_argument("--scale-runs", type=int, help="timed calls per prefix and scale row")
    parser.add_argument("--large-scopes", type=int, help="scopes under the large prefix")
    parser.add_argument(
        "--populate-threads", type=int, help="threads writing the scale documents (untimed)"
    )
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    endpoint = Endpoint(*endpoint_arguments(parser, arguments))
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    if settings.large_scopes < settings.small_scopes:
        parser.error(f"--large-scopes must be at least {settings.small_scopes}")
    return settings, endpoint, arguments.json


def main(argv: Sequence[str] | None = None) -> int:
    settings, endpoint, as_json = parse_arguments(argv)
    check_bucket(endpoint, "benchmarks/s3.py")
    started = time.monotonic()
    prefixes = Prefixes(endpoint)
    results: list[Result] = []
    benches: tuple[tuple[str, Callable[[Endpoint, Prefixes, Settings], Result]], ...] = (
        ("recall, unchanged", bench_recall_unchanged),
        ("recall, after another client's write", bench_recall_changed),
        ("save, cold cache", bench_save_cold),
        ("save, after another client's write", bench_save_stale),
        ("save, fresh cached version", bench_save_fresh),
        ("contention", bench_contention),
    )
    log(
        f"benchmarking docmem {docmem.__version__} on {endpoint.url}, bucket {endpoint.bucket}, "
        f"under docmem-bench-{prefixes.run_id}/"
    )
    try:
        for name, bench in benches:
            phase = time.monotonic()
            results.append(bench(endpoint, prefixes, settings))
            log(f"{name}: {time.monotonic() - phase:.1f} s")
        phase = time.monotonic()
        results.extend(bench_scale(endpoint, prefixes, settings))
        log(f"scale: {time.monotonic() - phase:.1f} s")
    finally:
        prefixes.clean_up()
    found = versions("agent-docmem-s3", "boto3")
    if as_json:
        context = {"endpoint": endpoint.url, "bucket": endpoint.bucket, "region": endpoint.region}
        print(
            json_report(
                "s3", results, settings=settings, found=found, context=context, started=started
            )
        )
        return 0
    print(describe(found))
    print(f"endpoint {endpoint.url}, bucket {endpoint.bucket}; medians of interleaved runs")
    print("ratio = docmem median / baseline median; difference = docmem - baseline")
    print()
    print(table(results))
    print()
    print("requests per timed call (HTTP status in parentheses), checks:")
    print(notes(results, "check FAILED: a MISS"))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
