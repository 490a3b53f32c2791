"""Clocks and the A/B interleaving every benchmark times its two sides with."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable

__all__ = ["Sample", "clock", "interleave", "log", "settle"]

#: One timed run: returns the seconds it took (any untimed set-up or clean-up
#: happens inside, outside the clock).
Sample = Callable[[], float]


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
