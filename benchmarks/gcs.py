"""Benchmarks of the ``gs://`` store (docmem-gcs), each against the SDK's own calls in the same run.

Run against fake-gcs-server at ``$GCS_EMULATOR_ENDPOINT`` (``make bench`` starts it through
scripts/with-test-servers; by hand, ``scripts/gcs-emulator start``), in the bucket
``$DOCMEM_TEST_BUCKET`` (default ``docmem-test``); without the variable it stops at once
with that reason. docmem runs and baseline runs alternate (A/B, then B/A, ...) and each row
reports the ratio of the two medians against its target (issue 27):

* ``save``: ``save()`` into a 10-entry document this store wrote last (it starts from its
  cached generation; an untimed ``remove`` after each keeps the size), against one
  conditional upload with the SDK (``upload_from_string(if_generation_match=...,
  retry=None)``) of the same bytes to an object of its own. Target 1.15x.
* ``recall``: ``recall()`` of the document against one SDK download of it. fake-gcs-server
  ignores ``ifGenerationNotMatch`` and sends the body, so this is a full download on both
  sides. Target 1.05x.
* ``recall, unchanged (304)``: the same through ``Revalidator`` (the tests' proxy that
  answers ``ifGenerationNotMatch`` with a 304 as GCS does), against one SDK download with
  ``if_generation_not_match`` answered 304 through the same proxy. Target 1.0x.
Each baseline uses a plain SDK client of its own, as SDK users build one. The store's
client differs in one way: it reads the environment's proxy and CA settings once, when it
is built, where requests reads them before every request (``docmem_gcs.clients``); on a
local emulator that is some 0.4 ms of a 5 ms request, most of docmem's margin.

* ``save`` and ``recall`` against docmem-fsspec (``fsspec+gs://``, gcsfs) on the same
  emulator, the same calls on both sides. Targets 0.6x and 0.9x. On the bare emulator a
  recall of an unchanged document is a full download for docmem-gcs (the emulator ignores
  ``ifGenerationNotMatch``) and a listing of the names after the one it holds for
  docmem-fsspec; ``as GCS answers (304)`` runs both through ``Revalidator``, where
  docmem-gcs gets the 304 GCS would send.
* ``contention``: 8 threads, each with its own store and ``FileMemory``, save into one new
  scope; every entry must be present afterwards (lost updates: 0), against the same work by
  docmem-fsspec. No ratio target.

``--quick`` is a smoke run with small counts; ``--json`` prints one JSON object.
Benchmarks never fail a build: the exit status is 0 whether a target is met or not.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote

import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[import-untyped]
from harness.arguments import add_output_arguments, override
from harness.contention import Tally, contended_saves
from harness.gcs import Requests
from harness.report import Result, emit, versions
from harness.timing import Sample, clock, counted, interleave, log, measure, settle
from harness.workload import bind, seeded

import docmem
from docmem.provider.document import MAX_DOCUMENT_BYTES
from docmem.testing.rewriting_proxy import Revalidator
from docmem_gcs import GcsBackend
from docmem_gcs.backend import CONTENT_TYPE

# gcsfs's Storage Control API client (gRPC) logs every failed handshake with the emulator.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
NAMESPACE = "bench:gcs"
#: gcsfs asks a Storage Control API the emulator does not speak; let it give up at once.
FSSPEC_OPTIONS: dict[str, Any] = {"retry_timeout": 0.01}


@dataclasses.dataclass(frozen=True)
class Settings:
    runs: int
    writers: int
    writer_saves: int
    contention_runs: int
    warmup: int


FULL = Settings(runs=300, writers=8, writer_saves=25, contention_runs=3, warmup=10)
QUICK = Settings(runs=20, writers=8, writer_saves=4, contention_runs=1, warmup=2)


@dataclasses.dataclass
class Emulator:
    url: str
    bucket: str
    prefixes: list[str] = dataclasses.field(default_factory=list)

    def prefix(self, name: str) -> str:
        prefix = f"docmem-bench-{uuid.uuid4().hex[:8]}-{name}"
        self.prefixes.append(prefix)
        return prefix

    def store(self, prefix: str, *, through: str | None = None) -> GcsBackend:
        store = docmem.open_store(f"gs://{self.bucket}/{prefix}?endpoint_url={through or self.url}")
        assert isinstance(store, GcsBackend)
        return store

    def sdk(self, through: str | None = None) -> Any:
        """A plain SDK client, as its users build one for an emulator: the baselines' client."""
        return storage.Client(
            project=None,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options={"api_endpoint": through or self.url},
        )

    def fsspec(self, prefix: str, *, through: str | None = None) -> docmem.Backend:
        url = f"fsspec+gs://{self.bucket}/{prefix}?endpoint_url={through or self.url}&token=anon"
        return docmem.open_store(url, **FSSPEC_OPTIONS)


# -- against the SDK ---------------------------------------------------------


def bench_save(emulator: Emulator, settings: Settings) -> Result:
    store = emulator.store(emulator.prefix("save"))
    memory = seeded(store, NAMESPACE, "save")
    sdk = emulator.sdk()
    blob = sdk.bucket(store.bucket).blob(f"{store.prefix}/raw-save.md")
    data = store.read(memory.scope.storage_key).data  # type: ignore[union-attr]
    blob.upload_from_string(data, content_type=CONTENT_TYPE, if_generation_match=0, retry=None)
    generation = [blob.generation]
    ours, theirs = Requests().attach(store.client()), Requests().attach(sdk)
    count = [0]

    def save() -> float:
        count[0] += 1
        with ours.counting():
            elapsed = clock(lambda: memory.save(f"Note {count[0]}.", mutation_id=f"s-{count[0]}"))
        memory.remove(memory.read().last, mutation_id=f"r-{count[0]}")  # type: ignore[union-attr]
        return elapsed

    def upload() -> None:
        fresh = sdk.bucket(store.bucket).blob(blob.name)
        fresh.upload_from_string(
            data,
            content_type=CONTENT_TYPE,
            if_generation_match=generation[0],
            retry=None,
            timeout=store.timeout,
        )
        generation[0] = fresh.generation

    subject, base, per_call = measure(
        settings.warmup, settings.runs, save, counted(theirs, upload), ours, theirs
    )
    return Result(
        name="save",
        detail=f"{len(data):,} B",
        subject=subject,
        baseline=base,
        baseline_name="SDK conditional upload",
        target=1.15,
        runs=settings.runs,
        notes=per_call,
    )


def bench_recall(emulator: Emulator, settings: Settings, *, through: str | None = None) -> Result:
    store = emulator.store(emulator.prefix("recall"), through=through)
    memory = seeded(store, NAMESPACE, "recall")
    name = store.object_name(memory.scope.storage_key)
    sdk = emulator.sdk(through)
    generation = int(store.read(memory.scope.storage_key).version)  # type: ignore[union-attr]
    ours, theirs = Requests().attach(store.client()), Requests().attach(sdk)

    def download() -> None:
        blob = sdk.bucket(store.bucket).blob(name)
        try:
            blob.download_as_bytes(
                if_generation_not_match=generation if through else None,
                retry=None,
                timeout=store.timeout,
            )
        except Exception as exc:  # the 304 the revalidating proxy answers
            if getattr(exc, "code", None) != 304:
                raise

    recall, baseline = counted(ours, memory.recall), counted(theirs, download)
    subject, base, per_call = measure(
        settings.warmup, settings.runs, recall, baseline, ours, theirs
    )
    size = len(store.read(memory.scope.storage_key).data)  # type: ignore[union-attr]
    return Result(
        name="recall, unchanged (304)" if through else "recall",
        detail=f"{size:,} B",
        subject=subject,
        baseline=base,
        baseline_name="SDK download answered 304" if through else "SDK download",
        target=1.0 if through else 1.05,
        runs=settings.runs,
        notes=per_call,
    )


def revalidator(emulator: Emulator) -> Revalidator:
    """The tests' proxy that answers ``ifGenerationNotMatch`` with a 304, as GCS does."""
    return Revalidator(emulator.url)


def bench_recall_304(emulator: Emulator, settings: Settings) -> Result:
    with revalidator(emulator) as proxy:
        return bench_recall(emulator, settings, through=proxy.url)


# -- against docmem-fsspec ---------------------------------------------------


def bench_against_fsspec(
    emulator: Emulator, settings: Settings, operation: str, *, through: str | None = None
) -> Result:
    ours_store = emulator.store(emulator.prefix(f"{operation}-native"), through=through)
    theirs_store = emulator.fsspec(emulator.prefix(f"{operation}-fsspec"), through=through)
    ours = seeded(ours_store, NAMESPACE, operation)
    theirs = seeded(theirs_store, NAMESPACE, operation)
    count = [0]

    def saving(memory: docmem.BoundMemory) -> Sample:
        def run() -> float:
            count[0] += 1
            text, tag = f"Note {count[0]}.", f"{id(memory)}-{count[0]}"
            elapsed = clock(lambda: memory.save(text, mutation_id=f"s-{tag}"))
            memory.remove(memory.read().last, mutation_id=f"r-{tag}")  # type: ignore[union-attr]
            return elapsed

        return run

    found: tuple[str, ...] = ()
    if operation == "save":
        subject, baseline = saving(ours), saving(theirs)
    else:
        subject, baseline = (lambda: clock(ours.recall)), (lambda: clock(theirs.recall))
        found = (emulator_alone(emulator, ours_store, ours.scope.storage_key),)
    interleave(settings.warmup, subject, baseline)
    settle()
    subject_times, baseline_times = interleave(settings.runs, subject, baseline)
    return Result(
        name=f"{operation} vs docmem-fsspec" + (", as GCS answers (304)" if through else ""),
        subject=statistics.median(subject_times),
        baseline=statistics.median(baseline_times),
        baseline_name="fsspec+gs:// (gcsfs)",
        target=0.6 if operation == "save" else 0.9,
        runs=settings.runs,
        notes=found,
    )


def emulator_alone(emulator: Emulator, store: GcsBackend, key: str, runs: int = 50) -> str:
    """What the emulator takes for each side's one request, with plain requests (no SDK).

    A recall of an unchanged document is one media download for docmem-gcs
    (a 304 on GCS) and one listing for docmem-fsspec; fake-gcs-server answers
    the first much more slowly than the second.
    """
    session = requests.Session()
    name = quote(store.object_name(key), safe="")
    download = f"{emulator.url}/download/storage/v1/b/{store.bucket}/o/{name}?alt=media"
    listing = f"{emulator.url}/storage/v1/b/{store.bucket}/o?delimiter=/&prefix={store.prefix}/"
    times: dict[str, list[float]] = {download: [], listing: []}
    for _ in range(runs):
        for url, taken in times.items():
            taken.append(clock(lambda url=url: session.get(url, timeout=10).content))  # type: ignore[misc]
    session.close()
    medians = [f"{statistics.median(taken) * 1000:.2f} ms" for taken in times.values()]
    return f"the emulator alone (plain requests): a download {medians[0]}, a listing {medians[1]}"


def bench_recall_vs_fsspec_304(emulator: Emulator, settings: Settings) -> Result:
    with revalidator(emulator) as proxy:
        return bench_against_fsspec(emulator, settings, "recall", through=proxy.url)


def bench_contention(emulator: Emulator, settings: Settings) -> Result:
    """8 threads save into one scope: every entry present (0 lost updates), wall time median."""
    walls: dict[str, list[float]] = {"native": [], "fsspec": []}
    tallies = {"native": Tally(), "fsspec": Tally()}
    for run in range(settings.contention_runs):
        for side in ("native", "fsspec") if run % 2 == 0 else ("fsspec", "native"):
            prefix = emulator.prefix(f"contention-{side}-{run}")
            open_one = emulator.store if side == "native" else emulator.fsspec
            stores = [open_one(prefix) for _ in range(settings.writers)]
            for store in stores:  # each store's once-per-process checks, untimed
                bind(store, NAMESPACE, "warm").recall()
            # Room for every entry: the default max_characters (4,000) holds about 180 notes.
            memories = [docmem.FileMemory(s, max_characters=MAX_DOCUMENT_BYTES) for s in stores]
            scope = docmem.lock_scope(namespace=NAMESPACE, scope=f"contended-{run}")
            elapsed, _ = contended_saves(
                memories, scope, run, settings.writer_saves, Requests(), tallies[side]
            )
            walls[side].append(elapsed)
    expected = settings.writers * settings.writer_saves
    native = tallies["native"]
    return Result(
        name=f"contention, {settings.writers} threads, one scope",
        detail=f"{expected} saves a run",
        subject=statistics.median(walls["native"]),
        baseline=statistics.median(walls["fsspec"]),
        baseline_name="the same on docmem-fsspec",
        target=float("inf"),
        runs=settings.contention_runs,
        checked=native.ok and tallies["fsspec"].ok,
        notes=(
            f"docmem-gcs: {native.summary(expected)}",
            f"docmem-fsspec: {tallies['fsspec'].summary(expected)}",
        ),
    )


# -- main --------------------------------------------------------------------


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, bool]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run with small counts")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    return override(parser, QUICK if arguments.quick else FULL, arguments), bool(arguments.json)


def main(argv: Sequence[str] | None = None) -> int:
    settings, as_json = parse_arguments(argv)
    url = os.environ.get("GCS_EMULATOR_ENDPOINT")
    if not url:
        print(
            "benchmarks/gcs.py needs GCS_EMULATOR_ENDPOINT: run it through "
            "scripts/with-test-servers (make bench) or after scripts/gcs-emulator start",
            file=sys.stderr,
        )
        return 2
    emulator = Emulator(url.rstrip("/"), os.environ.get("DOCMEM_TEST_BUCKET", "docmem-test"))
    # gcsfs logs every Storage Control API lookup the emulator cannot answer.
    logging.getLogger("gcsfs").setLevel(logging.CRITICAL)
    started = time.monotonic()
    log(f"benchmarking docmem-gcs on {emulator.url}, bucket {emulator.bucket}")
    benches: list[tuple[str, Callable[[], Result]]] = [
        ("save", lambda: bench_save(emulator, settings)),
        ("recall", lambda: bench_recall(emulator, settings)),
        ("recall, unchanged (304)", lambda: bench_recall_304(emulator, settings)),
        ("save vs fsspec", lambda: bench_against_fsspec(emulator, settings, "save")),
        ("recall vs fsspec", lambda: bench_against_fsspec(emulator, settings, "recall")),
        ("recall vs fsspec, 304", lambda: bench_recall_vs_fsspec_304(emulator, settings)),
        ("contention", lambda: bench_contention(emulator, settings)),
    ]
    results: list[Result] = []
    for name, bench in benches:
        phase = time.monotonic()
        results.append(bench())
        log(f"{name}: {time.monotonic() - phase:.1f} s")
    found = versions("agent-docmem-gcs", "google-cloud-storage", "agent-docmem-fsspec", "gcsfs")
    emit(
        "gcs",
        results,
        as_json=as_json,
        settings=settings,
        found=found,
        context={"endpoint": emulator.url, "bucket": emulator.bucket},
        where=f"fake-gcs-server at {emulator.url}, bucket {emulator.bucket}",
        started=started,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
