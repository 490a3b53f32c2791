"""What the benchmarks share: a result row, A/B interleaving, the report table.

Every benchmark measures docmem against a baseline in the same run, alternating
the two (A/B, then B/A, ...) so the noise of a shared machine hits both alike,
and reports the ratio of the medians against a target.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence

__all__ = ["Result", "Sample", "clock", "format_duration", "interleave", "log", "table"]

#: One timed run: returns the seconds it took (any untimed set-up or clean-up
#: happens inside, outside the clock).
Sample = Callable[[], float]


@dataclasses.dataclass(frozen=True)
class Result:
    """One row of the report: two medians (seconds), the target for their ratio, checks."""

    name: str
    subject: float
    baseline: float
    baseline_name: str
    target: float
    runs: int
    notes: tuple[str, ...] = ()
    #: False when a correctness check failed (e.g. an entry went missing): a MISS.
    checked: bool = True

    @property
    def ratio(self) -> float:
        return self.subject / self.baseline

    @property
    def passed(self) -> bool:
        return self.checked and self.ratio <= self.target


def log(message: str) -> None:
    """Progress goes to stderr, so stdout holds only the report."""
    print(message, file=sys.stderr, flush=True)


def clock(function: Callable[[], object]) -> float:
    """Seconds one call of ``function`` takes."""
    start = time.perf_counter_ns()
    function()
    return (time.perf_counter_ns() - start) / 1e9


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


def format_duration(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def table(results: Sequence[Result]) -> str:
    header = (
        "benchmark",
        "docmem",
        "baseline",
        "difference",
        "ratio",
        "target",
        "result",
        "runs",
        "baseline is",
    )
    rows = [header] + [
        (
            r.name,
            format_duration(r.subject),
            format_duration(r.baseline),
            ("+" if r.subject >= r.baseline else "-")
            + format_duration(abs(r.subject - r.baseline)),
            f"{r.ratio:.2f}x",
            f"<= {r.target:g}x",
            "PASS" if r.passed else "MISS",
            f"{r.runs:,}",
            r.baseline_name,
        )
        for r in results
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    numeric = {1, 2, 3, 4, 5, 7}

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if column in numeric else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])
