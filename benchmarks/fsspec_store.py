"""Benchmarks of the ``fsspec+s3://`` store (docmem-fsspec on s3fs) against docmem-s3.

Both stores run on the same S3 endpoint, in the same run: ``--endpoint`` or
``$LOCALSTACK_ENDPOINT`` (``scripts/with-test-servers .venv/bin/python
benchmarks/fsspec_store.py`` starts LocalStack and sets it), the bucket
``$DOCMEM_TEST_BUCKET`` (default ``docmem-test``), credentials from the
standard AWS chain. A full run takes a few minutes; ``--quick`` is a smoke run
with small counts. As in ``s3.py``, the two sides alternate (A/B, then B/A,
...) and each row reports the ratio of the two medians, fsspec over s3. There
is no target yet: the target column says ``report`` and nothing passes or
misses; a row is flagged only when a correctness check fails.

Every row opens its stores the public way (``docmem.open_store``):
``fsspec+s3://<bucket>/<prefix>?endpoint_url=<endpoint>`` with
``client_kwargs={"region_name": --region}`` on one side and
``s3://<bucket>/<prefix>?endpoint_url=<endpoint>&region=<region>`` on the
other, each side under a fresh prefix of its own, both with their default
options unless the row says otherwise. The memory is always
``docmem.FileMemory(store).bind(lock_scope(...), slot="user")``.

* ``recall, unchanged``: ``recall()`` of a 10-entry document this process has
  read before. fsspec: a LIST of the key's folder (the 10 versions the seed
  saves made), no GET (the newest name is the one its cache holds); s3: a GET
  with ``If-None-Match`` answered 304. No request on either side is a HEAD.
* ``recall, unchanged, hot key``: the same, but the key's folder holds
  :attr:`Settings.hot_versions` more versions, as a key written about once a
  second has within the default ``grace`` of 600 s. They are copies of the
  current document put straight into the folder with boto3 under the next
  revision names (out of band, untimed), so the newest is still a valid
  document. The s3 side is the same as in the row above (one object has no
  history); the row shows what a long listing costs a read.
* ``recall, after another client's write``: before every timed run of either
  side, a second store of the same kind (its own clients and cache) saves an
  entry and removes it again, untimed; the timed ``recall()`` must return the
  revision that remove made. fsspec: LIST, then one GET of the new newest
  version (``cat_file(path, max_concurrency=1)``: no HEAD for the size); s3: a
  stale ``If-None-Match`` GET answered 200.
* ``save, single writer``: ``save()`` into a 10-entry document; an untimed
  ``remove`` by the same store after each save keeps the size stable, so every
  timed save starts from this process's own last write (one agent saving
  steadily). fsspec: no listing first (its cached version is its own write,
  seen within ``max_staleness``), a PUT with ``If-None-Match: *`` of the next
  revision name, then a LIST to confirm (plus DELETEs when garbage collection
  finds versions past ``grace``); s3: one PUT with ``If-Match``.
* ``save, after another client's write``: as above, but the untimed remove is
  done by a second store of the same kind, so the saving store's cached
  version is stale when each timed save starts (agents on several machines
  taking turns on one scope). Both stores remember a key on which one of their
  writes lost a race (here the first warm-up save, from the stale cache) and
  read it afresh before each later save: fsspec LIST, GET of the other
  client's version, PUT with ``If-None-Match: *``, LIST to confirm (no 412;
  the key stays marked while every listing finds a version it did not write);
  s3 a GET (200), then the PUT with ``If-Match``.
* ``contention``: W threads, each with its own store and ``FileMemory`` (no
  practical character limit), save M entries each to one new scope; all W x M
  must be present afterwards. Ratio of the median wall times; a save that ran
  out of docmem's retry budget (``StoreBusy``) is retried with the same
  mutation id. Each writer's first read of the new scope finds no key: fsspec
  one LIST that comes back empty (its first save then lists again before its
  PUT, as a create-only write does), docmem-s3 a GET answered 404. A writer
  whose PUT lost reads afresh (fsspec LIST + GET, s3 GET) before its next
  attempt, and before each later save until a read finds its own write still
  the newest (fsspec a LIST alone, s3 a 304). Every s3fs filesystem in a
  process runs its requests on fsspec's one shared event-loop thread.

Listing growth and ``grace``: docmem-fsspec keeps every superseded version
until its successor is older than ``grace`` (default 600 s; plus 1 s of slack
for whole-second store clocks) and never fewer than ``retain`` (8), so under
defaults nothing written during a run is ever collected and every save makes
the key's listing one object longer: a write row's listing grows from about
10 to about 10 + 2 x (runs + warm-up), and its median falls in the middle of
that range. That is the steady state of a key written several times a second
for ten minutes, not of an agent's memory saved a few times per session (which
lists retain-plus-a-few objects; the ``unchanged`` rows show that case). So
every row that writes runs twice: once with the defaults (``grace 600s``)
and once with the fsspec store opened with ``grace=2, max_staleness=1,
retain=8`` (``grace 2s``), where garbage collection runs inside the timed
saves (their DELETEs are counted and timed; a ``--quick`` row may end before
any version is past ``grace``) and the listing stays near
``retain`` + the versions written in the last 3 s. The notes give the listing
size (objects in the key's folder, incl. the other client's versions) before
and after each row's timed runs. The docmem-s3 side is the same in both.

Requests: every HTTP response is counted per operation and status with a
botocore ``response-received`` hook on the store's clients: docmem-s3's boto3
clients, and the aiobotocore clients of s3fs (``S3FileSystem.s3`` of the
store's reader and writer filesystems; aiobotocore emits the same event). The
notes give requests per timed call. Each side works under a fresh prefix
(uuid), deleted afterwards.

Benchmarks never fail a build: the exit status is 0 whatever the results; a
row that raises is reported as failed and the other rows still run.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import dataclasses
import gc
import importlib.metadata
import math
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from harness import Result, Sample, clock, format_duration, interleave, log

import docmem
from docmem.document import MAX_DOCUMENT_BYTES
from docmem_fsspec import FsspecBackend, object_name, parse_version
from docmem_s3 import S3Backend

NAMESPACE = "bench:fsspec"
SLOT = "user"
ENTRIES = 10
DEFAULT_BUCKET = "docmem-test"
DEFAULT_REGION = "us-east-1"
#: Retries of a save that ran out of docmem's budget (StoreBusy), same mutation id.
BUSY_RETRIES = 10
#: The fsspec store's options per variant of a writing row (the s3 side keeps its defaults).
VARIANTS: tuple[tuple[str, Mapping[str, Any]], ...] = (
    ("grace 600s", {}),
    ("grace 2s", {"grace": 2.0, "max_staleness": 1.0, "retain": 8}),
)


#: Options of the fsspec store, passed as keywords to ``docmem.open_store``.
Options = Mapping[str, Any]


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


def settle() -> None:
    gc.collect()


# -- the endpoint and the stores ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """Where the benchmarks run: one S3 endpoint and bucket."""

    url: str
    bucket: str
    region: str

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

    def s3_store(self, prefix: str) -> S3Backend:
        """A docmem-s3 store under ``prefix``, opened from its URL."""
        store = docmem.open_store(
            f"s3://{self.bucket}/{prefix}?endpoint_url={self.url}&region={self.region}"
        )
        if not isinstance(store, S3Backend):
            raise RuntimeError(f"s3:// opened a {type(store).__name__}, not docmem_s3.S3Backend")
        return store

    def client(self) -> Any:
        """A plain boto3 client, for out-of-band set-up and the clean-up."""
        return boto3.session.Session().client("s3", endpoint_url=self.url, region_name=self.region)


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


class Prefixes:
    """A fresh prefix per side and benchmark, and the clean-up of every object under them."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._made: list[str] = []
        self.run_id = uuid.uuid4().hex[:12]

    def fresh(self, name: str) -> str:
        prefix = f"docmem-bench-{self.run_id}/{name}-{uuid.uuid4().hex[:8]}"
        self._made.append(prefix)
        return prefix

    def remove_all(self) -> int:
        """Delete every object under the prefixes made; best effort; the number deleted."""
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
        return deleted


def bind(store: docmem.Backend, scope: str, **options: Any) -> docmem.BoundMemory:
    return docmem.FileMemory(store, **options).bind(
        docmem.lock_scope(namespace=NAMESPACE, scope=scope), slot=SLOT
    )


def seeded(store: docmem.Backend, scope: str) -> docmem.BoundMemory:
    """A bound memory whose document holds :data:`ENTRIES` entries, saved through docmem."""
    memory = bind(store, scope)
    for index in range(ENTRIES):
        memory.save(
            f"Seed fact {index}: the user prefers metric units and short answers.",
            mutation_id=f"seed-{scope}-{index}",
        )
    return memory


def save_text(count: int) -> str:
    return f"Note {count}: met the user on a Tuesday."


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
        target=math.inf,
        runs=runs,
        notes=tuple(notes),
    )


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


# -- recall -----------------------------------------------------------------


def recall_unchanged_side(store: docmem.Backend, _: Callable[[], docmem.Backend]) -> Side:
    memory = seeded(store, "recall")
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
        f"recall, unchanged, hot key ({size} objects)",
        settings,
        settings.recall_runs,
        fsspec_side,
        s3_side,
    )


def recall_changed_side(store: docmem.Backend, open_another: Callable[[], docmem.Backend]) -> Side:
    memory = seeded(store, "recall")
    other = bind(open_another(), "recall")
    memory.recall()  # this store has seen the document
    requests = counted(store)
    count = 0

    def change() -> int:
        """Untimed: the other client saves an entry and removes it (the size stays put)."""
        nonlocal count
        count += 1
        saved = other.save(
            f"Note {count}: the user moved the weekly meeting to Thursday.",
            mutation_id=f"change-save-{count}",
        )
        return other.remove(saved.index, mutation_id=f"change-remove-{count}").revision

    def run() -> float:
        revision = change()
        with requests.counting():
            start = time.perf_counter_ns()
            messages = memory.recall()
            elapsed = (time.perf_counter_ns() - start) / 1e9
        if not messages or messages[0].revision != revision:
            raise RuntimeError(f"recall() missed the other client's write (revision {revision})")
        return elapsed

    return Side(store, memory.scope.storage_key, requests, run)


def bench_recall_changed(
    endpoint: Endpoint, prefixes: Prefixes, settings: Settings, variant: str, options: Options
) -> Result:
    """``recall()`` right after another client's write."""
    fsspec_side, s3_side = build(endpoint, prefixes, "recall-changed", options, recall_changed_side)
    return compare(
        f"recall, after another client's write, {variant}",
        settings,
        settings.write_runs,
        fsspec_side,
        s3_side,
    )


# -- save -------------------------------------------------------------------


def save_single_side(store: docmem.Backend, _: Callable[[], docmem.Backend]) -> Side:
    memory = seeded(store, "save")
    requests = counted(store)
    count = 0

    def run() -> float:
        nonlocal count
        count += 1
        with requests.counting():
            start = time.perf_counter_ns()
            result = memory.save(save_text(count), mutation_id=f"save-{count}")
            elapsed = (time.perf_counter_ns() - start) / 1e9
        memory.remove(result.index, mutation_id=f"remove-{count}")  # this store again
        return elapsed

    return Side(store, memory.scope.storage_key, requests, run)


def bench_save_single(
    endpoint: Endpoint, prefixes: Prefixes, settings: Settings, variant: str, options: Options
) -> Result:
    """``save()`` from this process's own last write."""
    fsspec_side, s3_side = build(endpoint, prefixes, "save-single", options, save_single_side)
    return compare(
        f"save, single writer, {variant}", settings, settings.write_runs, fsspec_side, s3_side
    )


def save_stale_side(store: docmem.Backend, open_another: Callable[[], docmem.Backend]) -> Side:
    memory = seeded(store, "save")
    other = bind(open_another(), "save")
    # The other client writes first, so the first timed save starts from a stale cache too.
    other.remove(other.save("Warm-up note.", mutation_id="warm-save").index, mutation_id="warm")
    requests = counted(store)
    count = 0

    def run() -> float:
        nonlocal count
        count += 1
        with requests.counting():
            start = time.perf_counter_ns()
            result = memory.save(save_text(count), mutation_id=f"save-{count}")
            elapsed = (time.perf_counter_ns() - start) / 1e9
        # The other client removes the entry: the size stays put, this store's cache goes stale.
        other.remove(result.index, mutation_id=f"remove-{count}")
        return elapsed

    return Side(store, memory.scope.storage_key, requests, run)


def bench_save_stale(
    endpoint: Endpoint, prefixes: Prefixes, settings: Settings, variant: str, options: Options
) -> Result:
    """``save()`` after another client's write (this store's cached version is stale)."""
    fsspec_side, s3_side = build(endpoint, prefixes, "save-stale", options, save_stale_side)
    return compare(
        f"save, after another client's write, {variant}",
        settings,
        settings.write_runs,
        fsspec_side,
        s3_side,
    )


# -- contention -------------------------------------------------------------


def entry_text(writer: int, index: int) -> str:
    return f"writer {writer} note {index}"


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
        present = sum(
            entry_text(writer, index) in texts
            for writer in range(writers)
            for index in range(saves)
        )
        tally.finish_run(present, expected)
        size = listing_size(stores[0], scope.storage_key)
        listing = f", listing {size} objects" if size is not None else ""
        log(f"  {label} run {run}: {elapsed:.2f} s, {present}/{expected} present{listing}")
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
    fsspec_lost = fsspec_requests.count("PUT", "412") + fsspec_requests.count("PUT", "409")
    s3_lost = s3_requests.count("PUT", "412") + s3_requests.count("PUT", "409")
    return Result(
        name=f"contention, {writers} writers x {saves} saves, {variant}",
        subject=statistics.median(fsspec_times),
        baseline=statistics.median(s3_times),
        baseline_name="docmem-s3",
        target=math.inf,
        runs=settings.contention_runs,
        notes=(
            f"fsspec: {fsspec_tally.summary(expected)}",
            f"fsspec per save: {fsspec_requests.per_call(saves_done)}; lost races per save "
            f"{fsspec_lost / saves_done:.2f}",
            f"s3: {s3_tally.summary(expected)}",
            f"s3 per save:     {s3_requests.per_call(saves_done)}; lost races per save "
            f"{s3_lost / saves_done:.2f}",
        ),
        checked=fsspec_tally.ok and s3_tally.ok,
    )


# -- report -----------------------------------------------------------------


def report_table(results: Sequence[Result]) -> str:
    """Like ``harness.table``, but with no target: the target column says ``report``."""
    header = ("benchmark", "fsspec", "s3", "difference", "ratio", "target", "check", "runs")
    rows = [header] + [
        (
            r.name,
            format_duration(r.subject),
            format_duration(r.baseline),
            ("+" if r.subject >= r.baseline else "-")
            + format_duration(abs(r.subject - r.baseline)),
            f"{r.ratio:.2f}x",
            "report",
            "ok" if r.checked else "FAILED",
            f"{r.runs:,}",
        )
        for r in results
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    numeric = {1, 2, 3, 4, 7}

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if column in numeric else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])


def notes(results: Sequence[Result]) -> str:
    lines = []
    for result in results:
        lines.append(f"{result.name}:" + ("" if result.checked else "  (check FAILED)"))
        lines.extend(f"    {note}" for note in result.notes)
    return "\n".join(lines)


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, Endpoint]:
    parser = argparse.ArgumentParser(
        description="Benchmark docmem-fsspec (s3fs) against docmem-s3 on one S3 endpoint."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
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
    parser.add_argument(
        "--recall-runs", type=int, help="timed runs per side of the recall, unchanged rows"
    )
    parser.add_argument("--write-runs", type=int, help="timed runs per side of the other rows")
    parser.add_argument("--hot-versions", type=int, help="extra versions of the hot key")
    parser.add_argument("--writers", type=int, help="threads in the contention benchmark")
    parser.add_argument("--writer-saves", type=int, help="saves per contention writer")
    parser.add_argument("--contention-runs", type=int, help="contention runs per side")
    arguments = parser.parse_args(argv)
    if not arguments.endpoint:
        parser.error(
            "no S3 endpoint: pass --endpoint URL or set LOCALSTACK_ENDPOINT "
            "(scripts/with-test-servers sets it)"
        )
    settings = QUICK if arguments.quick else FULL
    overrides = {
        "recall_runs": arguments.recall_runs,
        "write_runs": arguments.write_runs,
        "hot_versions": arguments.hot_versions,
        "writers": arguments.writers,
        "writer_saves": arguments.writer_saves,
        "contention_runs": arguments.contention_runs,
    }
    settings = dataclasses.replace(
        settings, **{name: value for name, value in overrides.items() if value is not None}
    )
    for name, value in dataclasses.asdict(settings).items():
        if value < 1:
            parser.error(f"{name.replace('_', '-')} must be at least 1")
    return settings, Endpoint(arguments.endpoint, arguments.bucket, arguments.region)


def check_bucket(endpoint: Endpoint) -> None:
    """Fail early and clearly when the endpoint, the bucket or the credentials are wrong."""
    client = endpoint.client()
    try:
        client.head_bucket(Bucket=endpoint.bucket)
    except ClientError as exc:
        meta = exc.response.get("ResponseMetadata", {})
        code = exc.response.get("Error", {}).get("Code", "")
        raise SystemExit(
            f"benchmarks/fsspec_store.py: bucket {endpoint.bucket!r} at {endpoint.url} is not "
            f"usable (HTTP {meta.get('HTTPStatusCode', 0)} {code}); create it or set "
            "DOCMEM_TEST_BUCKET"
        ) from None
    except BotoCoreError as exc:
        raise SystemExit(
            f"benchmarks/fsspec_store.py: cannot reach {endpoint.url} ({type(exc).__name__}: {exc})"
        ) from None
    finally:
        client.close()


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
    settings, endpoint = parse_arguments(argv)
    check_bucket(endpoint)
    started = time.monotonic()
    prefixes = Prefixes(endpoint)
    results: list[Result] = []
    errors: list[str] = []
    log(
        f"benchmarking docmem-fsspec against docmem-s3 on {endpoint.url}, "
        f"bucket {endpoint.bucket}, under docmem-bench-{prefixes.run_id}/"
    )
    try:
        for name, bench in benches():
            phase = time.monotonic()
            try:
                results.append(bench(endpoint, prefixes, settings))
            except Exception as exc:  # reported below; the other rows still run
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
                log(f"{name}: FAILED ({type(exc).__name__}: {exc})")
                continue
            log(f"{name}: {time.monotonic() - phase:.1f} s")
    finally:
        phase = time.monotonic()
        deleted = prefixes.remove_all()
        log(f"clean-up: {deleted:,} objects deleted in {time.monotonic() - phase:.1f} s")
    versions = ", ".join(
        f"{name} {importlib.metadata.version(name)}"
        for name in ("docmem", "docmem-fsspec", "docmem-s3", "s3fs", "aiobotocore", "boto3")
    )
    print(
        f"{versions}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs"
    )
    print(f"endpoint {endpoint.url}, bucket {endpoint.bucket}; medians of interleaved runs")
    print("ratio = fsspec median / s3 median; difference = fsspec - s3; no target yet")
    print()
    print(report_table(results))
    print()
    print("requests per timed call (HTTP status in parentheses), listing sizes, checks:")
    print(notes(results))
    print()
    for error in errors:
        print(f"FAILED, no row: {error}")
    failed = sum(not result.checked for result in results) + len(errors)
    print(
        f"{len(results)} rows, {failed} failed checks or rows, "
        f"in {time.monotonic() - started:.0f} s (benchmarks never fail the build)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
