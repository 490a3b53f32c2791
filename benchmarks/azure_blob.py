"""Benchmarks of the ``az://`` store (docmem-azure), against the Azure SDK and docmem-fsspec.

Run against Azurite or any account named by ``$AZURE_STORAGE_CONNECTION_STRING``
(``scripts/with-test-servers .venv/bin/python benchmarks/azure_blob.py`` starts
Azurite and sets it; without it the script stops with a message saying so),
in the container ``$DOCMEM_TEST_CONTAINER`` (default ``docmem-test``, created
if missing). ``--quick`` is a smoke run with small counts. As in ``s3.py``,
docmem runs and baseline runs alternate (A/B, then B/A, ...) and each row
reports the ratio of the two medians against its target (issue 27):

* ``save, fresh cached version``: ``save()`` into a 10-entry document this
  store wrote last (an untimed ``remove`` after each save keeps the size), so
  it starts from its cached version: one Put Blob with ``If-Match``. Baseline:
  one conditional ``upload_blob`` (``If-Match`` on the ETag the previous one
  returned) of the bytes that save wrote, to a blob of its own. Target 1.15x.
* ``recall, full read``: ``recall()`` through a store opened with
  ``cache_size=0``: one GET of the whole blob and a parse. Baseline: one
  ``download_blob(max_concurrency=1).readall()`` of the same blob. Target 1.05x.
* ``recall, unchanged``: ``recall()`` of a document this store read before: a
  GET with ``If-None-Match`` answered 304, served from the cache. Baseline:
  the same conditional ``download_blob`` answered 304, raw. Target 1.0x.
* ``vs docmem-fsspec``: the same ``save()`` (one writer saving steadily) and
  ``recall()`` of an unchanged document through ``fsspec+az://`` (adlfs) on the
  same Azurite, each side under its own prefix. Targets 0.6x and 0.9x.
* ``contention``: 8 threads, each with its own store and ``FileMemory``, save
  into one new scope; every entry must be present afterwards (a lost update is
  a FAILED check). Baseline: the same through ``fsspec+az://``, ratio reported.

Fairness: the raw side uses clients built like the store's own (the same
connection string, timeouts, read retries, retries off for writes, content
type), warmed up like docmem. Responses are counted per method and status on
both sides with the SDK's response hook (``StorageResponseHook``, once per
attempt); the notes show requests per timed call. Each benchmark works under
a fresh prefix, deleted afterwards. ``--json`` prints one JSON object. The
exit status is 0 whether a target is met (PASS) or not (MISS); it is 2 when
there is no account to run on.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import HttpResponseError, ResourceExistsError
from azure.storage.blob import BlobServiceClient, BlobType, ContainerClient, ContentSettings
from harness.arguments import add_contention_arguments, add_output_arguments, override
from harness.azure import Requests
from harness.contention import Tally, contended_saves
from harness.report import Result, emit, versions
from harness.timing import Sample, counted, interleave, log, measure, settle
from harness.workload import bind, index_of, seeded, timed_save

import docmem
from docmem_azure import AzureBlobBackend
from docmem_azure.backend import CONTENT_TYPE, SINGLE_PUT_LIMIT

NAMESPACE = "bench:azure"
CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many runs each benchmark takes; see :data:`FULL` and :data:`QUICK`."""

    recall_runs: int
    save_runs: int
    writers: int
    writer_saves: int
    contention_runs: int
    warmup: int


#: 8 writers x 20 saves of ~22 characters stay below FileMemory's 4,000 characters.
FULL = Settings(
    recall_runs=300, save_runs=200, writers=8, writer_saves=20, contention_runs=2, warmup=10
)
QUICK = Settings(
    recall_runs=20, save_runs=12, writers=8, writer_saves=5, contention_runs=2, warmup=2
)


class Account:
    """Where the benchmarks run: the connection string's account and one container."""

    def __init__(self, connection_string: str, container: str) -> None:
        self.connection_string = connection_string
        self.container = container
        self.run_id = uuid.uuid4().hex[:10]
        self._prefixes: list[str] = []
        service = BlobServiceClient.from_connection_string(connection_string)
        self.url = str(service.url).split("?", 1)[0]
        with contextlib.suppress(ResourceExistsError):
            service.create_container(container)
        service.close()

    def prefix(self, name: str) -> str:
        prefix = f"docmem-bench-{self.run_id}/{name}"
        self._prefixes.append(prefix)
        return prefix

    def store(self, prefix: str, **options: Any) -> AzureBlobBackend:
        store = docmem.open_store(f"az://{self.container}/{prefix}", **options)
        assert isinstance(store, AzureBlobBackend)
        return store

    def fsspec_store(self, prefix: str) -> docmem.Backend:
        return docmem.open_store(f"fsspec+az://{self.container}/{prefix}")

    def raw(self, like: AzureBlobBackend) -> Raw:
        """A reader and a writer built like ``like``'s (see ``AzureBlobBackend.clients``)."""
        from azure.storage.blob import LinearRetry

        common: dict[str, Any] = {
            "connection_timeout": like.connect_timeout,
            "read_timeout": like.read_timeout,
            "max_single_put_size": SINGLE_PUT_LIMIT,
        }
        reads = LinearRetry(backoff=0.2, random_jitter_range=0.1, retry_total=like.max_attempts - 1)  # type: ignore[arg-type]
        writes = LinearRetry(backoff=0, random_jitter_range=0, retry_total=0)
        reader = BlobServiceClient.from_connection_string(
            self.connection_string, retry_policy=reads, **common
        )
        writer = BlobServiceClient.from_connection_string(
            self.connection_string, retry_policy=writes, **common
        )
        return Raw(
            reader.get_container_client(self.container),
            writer.get_container_client(self.container),
        )

    def clean_up(self) -> None:
        client = ContainerClient.from_connection_string(self.connection_string, self.container)
        for blob in client.list_blobs(name_starts_with=f"docmem-bench-{self.run_id}/"):
            with contextlib.suppress(Exception):
                client.delete_blob(blob.name)
        client.close()


@dataclasses.dataclass
class Raw:
    """The baseline: plain SDK calls, no cache, no parsing, no journal."""

    reader: Any
    writer: Any

    def clients(self) -> tuple[Any, Any]:
        return self.reader, self.writer

    def get(self, name: str) -> tuple[bytes, str]:
        downloader = self.reader.get_blob_client(name).download_blob(max_concurrency=1)
        return bytes(downloader.readall()), str(downloader.properties.etag)

    def get_if_changed(self, name: str, etag: str) -> bytes | None:
        """A conditional download: ``None`` when answered 304."""
        try:
            downloader = self.reader.get_blob_client(name).download_blob(
                max_concurrency=1, etag=etag, match_condition=MatchConditions.IfModified
            )
        except HttpResponseError as exc:
            if exc.status_code == 304:
                return None
            raise
        return bytes(downloader.readall())

    def put(self, name: str, data: bytes, *, expected: str | None) -> str:
        condition: dict[str, Any] = (
            {"match_condition": MatchConditions.IfMissing}
            if expected is None
            else {
                "overwrite": True,
                "etag": expected,
                "match_condition": MatchConditions.IfNotModified,
            }
        )
        response = self.writer.get_blob_client(name).upload_blob(
            data,
            blob_type=BlobType.BLOCKBLOB,
            length=len(data),
            content_settings=ContentSettings(content_type=CONTENT_TYPE),
            **condition,
        )
        return str(response["etag"])

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def blob_of(store: AzureBlobBackend, memory: docmem.BoundMemory) -> str:
    return store.blob_name(memory.scope.storage_key)


# -- against the SDK ----------------------------------------------------------


def bench_save(account: Account, settings: Settings) -> Result:
    """``save()`` from the store's own cached version against one conditional upload."""
    store = account.store(account.prefix("save"))
    memory = seeded(store, NAMESPACE, "save")
    raw = account.raw(store)
    name = blob_of(store, memory)
    raw_name = f"{store.prefix}/raw-save.md"
    written, _ = raw.get(name)
    raw_etag = raw.put(raw_name, written, expected=None)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    count = 0

    def save() -> float:
        nonlocal count, written
        count += 1
        elapsed, result = timed_save(memory, ours, count)
        cached = store.read_recent(memory.scope.storage_key)
        assert cached is not None
        written = cached.data  # what the baseline writes next: the same bytes
        memory.remove(index_of(result), mutation_id=f"remove-{count}")
        return elapsed

    def baseline() -> float:
        nonlocal raw_etag
        with theirs.counting():
            start = time.perf_counter_ns()
            raw_etag = raw.put(raw_name, written, expected=raw_etag)
            return (time.perf_counter_ns() - start) / 1e9

    runs = settings.save_runs
    subject, base, per_call = measure(settings.warmup, runs, save, baseline, ours, theirs)
    raw.close()
    return Result(
        name="save, fresh cached version",
        detail=f"{len(written):,} B",
        subject=subject,
        baseline=base,
        baseline_name="one conditional upload_blob",
        target=1.15,
        runs=runs,
        notes=per_call,
    )


def bench_recall_full(account: Account, settings: Settings) -> Result:
    """``recall()`` without a cache (a full GET and a parse) against one download."""
    prefix = account.prefix("recall-full")
    seeded_memory = seeded(account.store(prefix), NAMESPACE, "recall")
    store = account.store(prefix, cache_size=0)
    memory = bind(store, NAMESPACE, "recall")
    raw = account.raw(store)
    name = blob_of(store, memory)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    size = len(raw.get(name)[0])
    del seeded_memory
    recall, baseline = counted(ours, memory.recall), counted(theirs, lambda: raw.get(name))
    runs = settings.recall_runs
    subject, base, per_call = measure(settings.warmup, runs, recall, baseline, ours, theirs)
    raw.close()
    return Result(
        name="recall, full read (cache off)",
        detail=f"{size:,} B",
        subject=subject,
        baseline=base,
        baseline_name="one download_blob",
        target=1.05,
        runs=runs,
        notes=per_call,
    )


def bench_recall_unchanged(account: Account, settings: Settings) -> Result:
    """``recall()`` of a document read before (304) against a raw conditional download (304)."""
    store = account.store(account.prefix("recall-unchanged"))
    memory = seeded(store, NAMESPACE, "recall")
    raw = account.raw(store)
    name = blob_of(store, memory)
    _, etag = raw.get(name)
    ours = Requests().attach(*store.clients())
    theirs = Requests().attach(*raw.clients())
    memory.recall()
    recall = counted(ours, memory.recall)
    baseline = counted(theirs, lambda: raw.get_if_changed(name, etag))
    runs = settings.recall_runs
    subject, base, per_call = measure(settings.warmup, runs, recall, baseline, ours, theirs)
    raw.close()
    return Result(
        name="recall, unchanged (304)",
        subject=subject,
        baseline=base,
        baseline_name="one conditional download_blob (304)",
        target=1.0,
        runs=runs,
        notes=per_call,
    )


# -- against docmem-fsspec ------------------------------------------------------


def bench_vs_fsspec_save(account: Account, settings: Settings) -> Result:
    """One writer saving steadily: docmem-azure against docmem-fsspec on the same Azurite."""
    store = account.store(account.prefix("vs-fsspec-save-az"))
    other = account.fsspec_store(account.prefix("vs-fsspec-save-fs"))
    ours_memory = seeded(store, NAMESPACE, "save")
    their_memory = seeded(other, NAMESPACE, "save")
    ours = Requests().attach(*store.clients())
    uncounted = Requests()
    count = 0

    def saver(memory: docmem.BoundMemory, requests: Requests) -> Sample:
        def save() -> float:
            nonlocal count
            count += 1
            elapsed, result = timed_save(memory, requests, count)
            memory.remove(index_of(result), mutation_id=f"remove-{count}")
            return elapsed

        return save

    runs = settings.save_runs
    subject, base, per_call = measure(
        settings.warmup,
        runs,
        saver(ours_memory, ours),
        saver(their_memory, uncounted),
        ours,
        uncounted,
    )
    return Result(
        name="save vs docmem-fsspec",
        subject=subject,
        baseline=base,
        baseline_name="fsspec+az:// save",
        target=0.6,
        runs=runs,
        notes=(per_call[0], "docmem-fsspec: not counted (adlfs's async clients)"),
    )


def bench_vs_fsspec_recall(account: Account, settings: Settings) -> Result:
    """``recall()`` of an unchanged document: docmem-azure against docmem-fsspec."""
    store = account.store(account.prefix("vs-fsspec-recall-az"))
    other = account.fsspec_store(account.prefix("vs-fsspec-recall-fs"))
    ours_memory = seeded(store, NAMESPACE, "recall")
    their_memory = seeded(other, NAMESPACE, "recall")
    ours_memory.recall()
    their_memory.recall()
    ours = Requests().attach(*store.clients())
    uncounted = Requests()
    recall, baseline = counted(ours, ours_memory.recall), counted(uncounted, their_memory.recall)
    runs = settings.recall_runs
    subject, base, per_call = measure(settings.warmup, runs, recall, baseline, ours, uncounted)
    return Result(
        name="recall, unchanged vs docmem-fsspec",
        subject=subject,
        baseline=base,
        baseline_name="fsspec+az:// recall",
        target=0.9,
        runs=runs,
        notes=(per_call[0], "docmem-fsspec: not counted (adlfs's async clients)"),
    )


def bench_contention(account: Account, settings: Settings) -> Result:
    """``writers`` threads, each its own store, saving into one scope: every entry present."""
    writers, saves = settings.writers, settings.writer_saves
    ours, uncounted = Requests(), Requests()
    ours_tally, their_tally = Tally(), Tally()
    run_number = 0

    def side(kind: str) -> Sample:
        def run() -> float:
            nonlocal run_number
            run_number += 1
            prefix = account.prefix(f"contention-{kind}-{run_number}")
            if kind == "az":
                stores: list[docmem.Backend] = [account.store(prefix) for _ in range(writers)]
                for store in stores:
                    assert isinstance(store, AzureBlobBackend)
                    ours.attach(*store.clients())
                requests, tally = ours, ours_tally
            else:
                stores = [account.fsspec_store(prefix) for _ in range(writers)]
                requests, tally = uncounted, their_tally
            memories = [docmem.FileMemory(store) for store in stores]
            scope = docmem.lock_scope(namespace=NAMESPACE, scope=f"contention-{run_number}")
            elapsed, found = contended_saves(memories, scope, run_number, saves, requests, tally)
            log(f"  {kind} run {run_number}: {elapsed:.2f} s, {found}/{writers * saves} present")
            for store in stores:
                store.close()
            return elapsed

        return run

    settle()
    subject_times, base_times = interleave(settings.contention_runs, side("az"), side("fs"))
    expected = writers * saves
    done = expected * settings.contention_runs
    return Result(
        name=f"contention, {writers} writers x {saves} saves",
        subject=statistics.median(subject_times),
        baseline=statistics.median(base_times),
        baseline_name="the same through fsspec+az://",
        target=1.0,
        runs=settings.contention_runs,
        notes=(
            f"docmem-azure: {ours_tally.summary(expected)}; lost updates (acknowledged, "
            f"absent): {_lost(ours_tally, expected)}",
            f"docmem-azure per save: {ours.per_save(done)}",
            f"docmem-fsspec: {their_tally.summary(expected)}",
        ),
        checked=ours_tally.ok and their_tally.ok,
    )


def _lost(tally: Tally, expected: int) -> int:
    """Saves that returned without an error yet are absent, at most (from the worst run).

    A save that raised is no lost update; every other absent entry would be one.
    """
    if tally.runs == 0:
        return 0
    fewest = tally.fewest_present if tally.fewest_present is not None else 0
    return max(0, expected - fewest - len(tally.errors))


# -- report -------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark docmem's az:// store against the Azure SDK and docmem-fsspec."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    parser.add_argument("--recall-runs", type=int, help="timed recalls per side and benchmark")
    parser.add_argument("--save-runs", type=int, help="timed saves per side and benchmark")
    add_contention_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    return settings, bool(arguments.json)


def main(argv: Sequence[str] | None = None) -> int:
    settings, as_json = parse_arguments(argv)
    connection_string = os.environ.get(CONNECTION_STRING)
    if not connection_string:
        print(
            f"benchmarks/azure_blob.py needs {CONNECTION_STRING} (Azurite's, under "
            "scripts/with-test-servers): nothing was measured",
            file=sys.stderr,
        )
        return 2
    account = Account(connection_string, os.environ.get("DOCMEM_TEST_CONTAINER") or "docmem-test")
    started = time.monotonic()
    benches: tuple[tuple[str, Callable[[Account, Settings], Result]], ...] = (
        ("save", bench_save),
        ("recall, full read", bench_recall_full),
        ("recall, unchanged", bench_recall_unchanged),
        ("save vs docmem-fsspec", bench_vs_fsspec_save),
        ("recall vs docmem-fsspec", bench_vs_fsspec_recall),
        ("contention", bench_contention),
    )
    log(f"benchmarking docmem {docmem.__version__} on {account.url}, container {account.container}")
    results: list[Result] = []
    try:
        for name, bench in benches:
            phase = time.monotonic()
            results.append(bench(account, settings))
            log(f"{name}: {time.monotonic() - phase:.1f} s")
    finally:
        account.clean_up()
    found = versions("agent-docmem-azure", "azure-storage-blob", "agent-docmem-fsspec", "adlfs")
    emit(
        "azure",
        results,
        as_json=as_json,
        settings=settings,
        found=found,
        context={"endpoint": account.url, "container": account.container},
        where=f"account {account.url}, container {account.container}",
        started=started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
