"""Clocks and the A/B interleaving every benchmark times its two sides with."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

__all__ = ["Counter", "Sample", "clock", "counted", "interleave", "log", "measure", "settle"]

#: One timed run: returns the seconds it took (any untimed set-up or clean-up
#: happens inside, outside the clock).
Sample = Callable[[], float]


class Counter(Protocol):
    """What counts a side's requests: ``harness.s3.Requests`` and its kin for other SDKs."""

    def counting(self) -> AbstractContextManager[None]: ...

    def reset(self) -> None: ...

    def per_call(self, calls: int) -> str: ...


def log(message: str) -> None:
    """Progress goes to stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def clock(function: Callable[[], object]) -> float:
    """Seconds one call of ``function`` takes."""
    start = time.perf_counter_ns()
    function()
    return (time.perf_counter_ns() - start) / 1e9


def settle() -> None:
    """Collect the previous phase's garbage before timing the next one."""
    gc.collect()


def interleave(rounds: int, subject: Sample, baseline: Sample) -> tuple[list[float], list[float]]:
    """Run both once per round, swapping which goes first every round (A/B, B/A, ...)."""
    subject_times: list[float] = []
    baseline_times: list[float] = []
    for round_number in range(rounds):
        if round_number % 2 == 0:
            subject_times.append(subject())
            baseline_times.append(baseline())
        else:
            baseline_times.append(baseline())
            subject_times.append(subject())
    return subject_times, baseline_times


def counted(requests: Counter, function: Callable[[], object]) -> Sample:
    """A sample timing one call of ``function`` while ``requests`` counts."""

    def run() -> float:
        with requests.counting():
            return clock(function)

    return run


def measure(
    warmup: int, runs: int, subject: Sample, baseline: Sample, ours: Counter, theirs: Counter
) -> tuple[float, float, tuple[str, str]]:
    """Warm up, then interleave ``runs`` rounds: both medians and the requests per call.

    The counters are reset after the warm-up, so the notes count the timed runs only.
    """
    interleave(warmup, subject, baseline)
    ours.reset()
    theirs.reset()
    settle()
    subject_times, baseline_times = interleave(runs, subject, baseline)
    notes = (
        f"docmem per call: {ours.per_call(runs)}",
        f"baseline per run: {theirs.per_call(runs)}",
    )
    return statistics.median(subject_times), statistics.median(baseline_times), notes
