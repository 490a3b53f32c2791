"""Many writers saving to one scope at once, and the check that every entry is there."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

import docmem

from .workload import SLOT

if TYPE_CHECKING:
    from .s3 import Requests

__all__ = ["BUSY_RETRIES", "Tally", "contended_saves", "entry_text", "present", "run_threads"]

#: Retries of a save that ran out of docmem's budget (StoreBusy), same mutation id.
BUSY_RETRIES = 10


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
