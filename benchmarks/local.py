"""Benchmarks of the ``file://`` store, each against a baseline measured in the same run.

Run ``python benchmarks/local.py`` (one to two minutes, most of it creating
and removing the 100,000-scope store) or ``--quick`` (a few seconds, small
counts, for a smoke test). Every benchmark alternates docmem
runs and baseline runs (A/B, then B/A, ...) so the noise of a shared machine
hits both alike, and reports the ratio of the two medians against a target:

* ``save``: ``FileMemory(...).bind(...).save()`` on a document holding 10
  entries, against the raw atomic write recipe (``mkstemp`` in the same
  directory, write, fsync, ``os.replace``, fsync of the directory) of exactly
  the bytes that save wrote. Each timed save is followed by an untimed
  ``remove``, so every save starts from a 10-entry document.
* ``recall``: ``recall()`` of such a document against ``open()`` + ``read()``
  of its file.
* scale: save latency in a store holding 100,000 scopes against the same in a
  store holding 100 (``--quick``: 1,000 against 20), on scopes that exist and
  on new scopes. The stores are
  populated out of band (valid documents written straight to
  ``LocalBackend.path(key)`` without fsync): populating them through
  ``save()`` would fsync 100,000 times.

``--json`` prints the results as one JSON object instead of the table, for
comparisons over time (benchmarks/README.md describes it). Benchmarks never
fail a build: the exit status is 0 whether a target is met (PASS) or not
(MISS).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from harness.arguments import add_output_arguments, override
from harness.report import Result, describe, json_report, table, verdict, versions
from harness.timing import Sample, clock, interleave, log
from harness.workload import ENTRIES, bind, index_of, save_text, scale_keys, seeded, small_document

import docmem
from docmem.storage.builtin.local import LocalBackend

NAMESPACE = "bench:local"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many runs each benchmark takes; see :data:`FULL` and :data:`QUICK`."""

    save_runs: int
    recall_rounds: int
    recall_batch: int
    scale_runs: int
    small_scopes: int
    large_scopes: int
    warmup: int


FULL = Settings(
    save_runs=400,
    recall_rounds=400,
    recall_batch=20,
    scale_runs=300,
    small_scopes=100,
    large_scopes=100_000,
    warmup=10,
)
QUICK = Settings(
    save_runs=12,
    recall_rounds=12,
    recall_batch=5,
    scale_runs=8,
    small_scopes=20,
    large_scopes=1_000,
    warmup=2,
)


def settle() -> None:
    """Flush the previous phase's dirty pages and garbage before timing the next one."""
    gc.collect()
    os.sync()


# -- baselines --------------------------------------------------------------


def fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def raw_atomic_write(path: str, data: bytes) -> None:
    """The save baseline: the crash-safe replace recipe, with no lock, parse or check."""
    directory = os.path.dirname(path)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".md")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_directory(directory)


def raw_read(path: str) -> bytes:
    """The recall baseline: the bytes of the file, nothing else."""
    with open(path, "rb") as file:
        return file.read()


# -- stores -----------------------------------------------------------------


def file_store(root: str) -> docmem.Backend:
    """A ``file://`` store opened the public way, from its URL."""
    return docmem.open_store(pathlib.Path(root).as_uri() + "?create=true")


def document_path(root: str, memory: docmem.BoundMemory) -> str:
    return LocalBackend(root).path(memory.scope.storage_key)


def populate(root: str, keys: Sequence[str], data: bytes, *, threads: int = 2) -> None:
    """Write ``data`` as the document of every key, straight to disk, without fsync.

    Keys are split by first-level fan-out directory over a few threads: file
    creation here is bound by the kernel, not by Python, and the GIL is free.
    """
    backend = LocalBackend(root)
    shares: list[list[str]] = [[] for _ in range(threads)]
    for key in keys:
        path = backend.path(key)
        fan = os.path.basename(os.path.dirname(os.path.dirname(path)))
        shares[int(fan, 16) % threads].append(path)

    def write_all(paths: list[str]) -> None:
        made: set[str] = set()
        for path in paths:
            directory = os.path.dirname(path)
            if directory not in made:
                os.makedirs(directory, exist_ok=True)
                made.add(directory)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for done in [pool.submit(write_all, share) for share in shares]:
            done.result()  # re-raise the first failure


# -- benchmarks -------------------------------------------------------------


def bench_save(base: str, settings: Settings) -> Result:
    """``save`` on a 10-entry document against the raw atomic write of the same bytes."""
    root = os.path.join(base, "save")
    memory = seeded(file_store(root), NAMESPACE, "save")
    path = document_path(root, memory)
    # The baseline replaces a file of its own in the same directory.
    baseline_path = os.path.join(os.path.dirname(path), "raw-baseline.bin")
    written = raw_read(path)
    raw_atomic_write(baseline_path, written)
    count = 0

    def save() -> float:
        nonlocal count, written
        count += 1
        text = save_text(count)
        start = time.perf_counter_ns()
        result = memory.save(text, mutation_id=f"save-{count}")
        elapsed = (time.perf_counter_ns() - start) / 1e9
        written = raw_read(path)  # what the baseline writes next
        memory.remove(index_of(result), mutation_id=f"remove-{count}")
        return elapsed

    def raw() -> float:
        return clock(lambda: raw_atomic_write(baseline_path, written))

    interleave(settings.warmup, save, raw)
    settle()
    docmem_times, raw_times = interleave(settings.save_runs, save, raw)
    return Result(
        name=f"save, {ENTRIES} entries",
        detail=f"{len(written):,} B",
        subject=statistics.median(docmem_times),
        baseline=statistics.median(raw_times),
        baseline_name="raw atomic write",
        target=1.15,  # issue 14
        runs=settings.save_runs,
    )


def bench_recall(base: str, settings: Settings) -> Result:
    """``recall()`` of a 10-entry document against reading its file's bytes."""
    root = os.path.join(base, "recall")
    memory = seeded(file_store(root), NAMESPACE, "recall")
    path = document_path(root, memory)
    batch = settings.recall_batch
    if not memory.recall():
        raise RuntimeError("the seeded document is missing")

    def recall() -> float:
        start = time.perf_counter_ns()
        for _ in range(batch):
            memory.recall()
        return (time.perf_counter_ns() - start) / 1e9 / batch

    def raw() -> float:
        start = time.perf_counter_ns()
        for _ in range(batch):
            raw_read(path)
        return (time.perf_counter_ns() - start) / 1e9 / batch

    interleave(settings.warmup, recall, raw)
    settle()
    docmem_times, raw_times = interleave(settings.recall_rounds, recall, raw)
    return Result(
        name=f"recall, {ENTRIES} entries",
        detail=f"{len(raw_read(path)):,} B",
        subject=statistics.median(docmem_times),
        baseline=statistics.median(raw_times),
        baseline_name="open + read",
        target=3.0,
        runs=settings.recall_rounds * batch,
    )


def bench_scale(base: str, settings: Settings) -> list[Result]:
    """Save latency with many scopes in the store against the same with few."""
    small, large = settings.small_scopes, settings.large_scopes
    small_root = os.path.join(base, "small")
    large_root = os.path.join(base, "large")
    started = time.monotonic()
    keys = scale_keys(NAMESPACE, large)
    data = small_document()
    populate(small_root, keys[:small], data)
    populate(large_root, keys, data)
    settle()
    log(f"  populated {small:,} + {large:,} scopes in {time.monotonic() - started:.1f} s")

    stores = {"small": file_store(small_root), "large": file_store(large_root)}

    def saver(which: str, scope_of: Callable[[int], str], phase: str) -> Sample:
        """Each call saves a new entry once to the next scope ``scope_of(n)`` of one store."""
        store = stores[which]
        count = 0

        def save() -> float:
            nonlocal count
            memory = bind(store, NAMESPACE, scope_of(count))
            text = f"Moved to office number {count} ({phase})."
            mutation_id = f"{phase}-{which}-{count}"
            count += 1
            return clock(lambda: memory.save(text, mutation_id=mutation_id))

        return save

    # Existing scopes: the same `small` scopes exist in both stores, in the
    # same state, and get the same sequence of saves.
    def existing(n: int) -> str:
        return f"user-{n % small}"

    def fresh(n: int) -> str:
        return f"new-{n}"

    def warm(n: int) -> str:
        return f"warm-{n}"

    interleave(settings.warmup, saver("large", warm, "warm"), saver("small", warm, "warm"))
    # One untimed save per existing scope first, so every timed save finds its
    # lock file in place, as a scope in steady use does.
    interleave(small, saver("large", existing, "first"), saver("small", existing, "first"))
    settle()
    results = []
    for label, scope_of in (("existing", existing), ("new", fresh)):
        large_times, small_times = interleave(
            settings.scale_runs, saver("large", scope_of, label), saver("small", scope_of, label)
        )
        results.append(
            Result(
                name=f"save, {label} scope, {large:,} scopes",
                subject=statistics.median(large_times),
                baseline=statistics.median(small_times),
                baseline_name=f"same, {small:,} scopes",
                target=1.2,
                runs=settings.scale_runs,
            )
        )
    return results


# -- report -----------------------------------------------------------------


def remove_tree(base: str) -> None:
    """``shutil.rmtree``, each store's fan-out directories in parallel threads.

    Removing 100,000 documents waits mostly on the file system's journal, so a
    few threads finish sooner than one.
    """
    with contextlib.suppress(OSError), ThreadPoolExecutor(max_workers=4) as pool:
        for store in os.scandir(base):
            if store.is_dir(follow_symlinks=False):
                for fan in os.scandir(store.path):
                    if fan.is_dir(follow_symlinks=False):
                        pool.submit(shutil.rmtree, fan.path, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def scratch(parent: str | None) -> Iterator[str]:
    """A temporary directory, removed afterwards however the run ends."""
    base = tempfile.mkdtemp(prefix="docmem-bench-", dir=parent)
    try:
        yield base
    finally:
        remove_tree(base)


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, str | None, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark docmem's file:// store against raw baselines in the same run."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    parser.add_argument(
        "--dir",
        default=None,
        help="where to create the temporary stores (default: the system temp directory)",
    )
    parser.add_argument("--save-runs", type=int, help="timed saves per side")
    parser.add_argument("--recall-rounds", type=int, help="timed recall batches per side")
    parser.add_argument("--scale-runs", type=int, help="timed saves per store and scope kind")
    parser.add_argument("--large-scopes", type=int, help="scopes in the large store")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    if settings.large_scopes < settings.small_scopes:
        parser.error(f"--large-scopes must be at least {settings.small_scopes}")
    return settings, arguments.dir, arguments.json


def main(argv: Sequence[str] | None = None) -> int:
    settings, parent, as_json = parse_arguments(argv)
    started = time.monotonic()
    results: list[Result] = []
    with scratch(parent) as base:
        log(f"benchmarking docmem {docmem.__version__} in {base}")
        for name, bench in (("save", bench_save), ("recall", bench_recall)):
            phase = time.monotonic()
            results.append(bench(base, settings))
            log(f"{name}: {time.monotonic() - phase:.1f} s")
        phase = time.monotonic()
        results.extend(bench_scale(base, settings))
        log(f"scale: {time.monotonic() - phase:.1f} s")
        phase = time.monotonic()
    log(f"clean-up: {time.monotonic() - phase:.1f} s")
    found = versions()
    directory = parent or tempfile.gettempdir()
    if as_json:
        context = {"directory": directory, "docmem_from": os.path.dirname(docmem.__file__)}
        print(
            json_report(
                "local", results, settings=settings, found=found, context=context, started=started
            )
        )
        return 0
    print(f"{describe(found)}; docmem from {os.path.dirname(docmem.__file__)}")
    print(f"stores in {directory}; medians of interleaved runs")
    print("ratio = docmem median / baseline median; difference = docmem - baseline")
    print()
    print(table(results))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
