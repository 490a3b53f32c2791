"""A benchmark's results: the row, the table on stdout, and the JSON report (``--json``).

The JSON report is one object, for keeping and comparing runs over time; its
fields are described in benchmarks/README.md ("JSON").
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import math
import os
import platform
import time
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import docmem

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "FORMAT",
    "Result",
    "compared",
    "describe",
    "emit",
    "format_duration",
    "json_report",
    "layout",
    "notes",
    "table",
    "verdict",
    "versions",
]

#: The ``format`` field of the JSON report; a change of its fields' meaning changes it.
FORMAT = "docmem-benchmarks/1"


@dataclasses.dataclass(frozen=True)
class Result:
    """One row of the report: two medians (seconds), the target for their ratio, checks."""

    #: What the row measures, the same in every run (the key to compare runs by).
    name: str
    subject: float
    baseline: float
    baseline_name: str
    target: float
    runs: int
    notes: tuple[str, ...] = ()
    #: False when a correctness check failed (e.g. an entry went missing): a MISS.
    checked: bool = True
    #: What this run measured it on (``"1,234 B"``, ``"560 objects"``): shown after the name.
    detail: str = ""

    @property
    def title(self) -> str:
        return f"{self.name} ({self.detail})" if self.detail else self.name

    @property
    def ratio(self) -> float:
        return self.subject / self.baseline

    @property
    def passed(self) -> bool:
        return self.checked and self.ratio <= self.target


def format_duration(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def compared(result: Result) -> tuple[str, str, str, str, str]:
    """A report row's first cells: the name, both medians, their difference, their ratio."""
    return (
        result.title,
        format_duration(result.subject),
        format_duration(result.baseline),
        ("+" if result.subject >= result.baseline else "-")
        + format_duration(abs(result.subject - result.baseline)),
        f"{result.ratio:.2f}x",
    )


def layout(rows: Sequence[Sequence[str]], numeric: Collection[int]) -> str:
    """``rows`` in aligned columns, the first (the header) ruled off; ``numeric`` ones right."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]

    def line(row: Sequence[str]) -> str:
        cells = [
            cell.rjust(width) if column in numeric else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(rows[0]), rule, *(line(row) for row in rows[1:])])


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
            *compared(r),
            f"<= {r.target:g}x",
            "PASS" if r.passed else "MISS",
            f"{r.runs:,}",
            r.baseline_name,
        )
        for r in results
    ]
    return layout(rows, numeric={1, 2, 3, 4, 5, 7})


def verdict(results: Sequence[Result], started: float) -> str:
    """The last line of a report with targets: passes and misses, time since ``started``."""
    misses = sum(not result.passed for result in results)
    return (
        f"{len(results) - misses} PASS, {misses} MISS "
        f"in {time.monotonic() - started:.0f} s (benchmarks never fail the build)"
    )


def notes(results: Sequence[Result], failed: str) -> str:
    """Each result's notes under its name; ``failed`` follows the name of a failed check."""
    lines = []
    for result in results:
        lines.append(f"{result.title}:" + ("" if result.checked else f"  ({failed})"))
        lines.extend(f"    {note}" for note in result.notes)
    return "\n".join(lines)


# -- the environment and the JSON report -----------------------------------


def versions(*distributions: str) -> dict[str, str]:
    """docmem's version, the installed versions of ``distributions``, and Python's."""
    found = {"docmem": docmem.__version__}
    found.update({name: importlib.metadata.version(name) for name in distributions})
    found["python"] = platform.python_version()
    return found


def _machine() -> dict[str, Any]:
    return {"system": platform.system(), "release": platform.release(), "cpus": os.cpu_count()}


def describe(found: Mapping[str, str]) -> str:
    """The report's first line: ``"docmem 0.1.0, ..., Python 3.12.1, Linux 6.8, 2 CPUs"``."""
    machine = _machine()
    named = ", ".join(f"{'Python' if name == 'python' else name} {v}" for name, v in found.items())
    return f"{named}, {machine['system']} {machine['release']}, {machine['cpus']} CPUs"


def _row(result: Result) -> dict[str, Any]:
    has_target = math.isfinite(result.target)
    return {
        "name": result.name,
        "detail": result.detail,
        "subject_seconds": result.subject,
        "baseline_seconds": result.baseline,
        "baseline": result.baseline_name,
        "ratio": result.ratio,
        "target": result.target if has_target else None,
        "passed": result.passed if has_target else None,
        "checked": result.checked,
        "runs": result.runs,
        "notes": list(result.notes),
    }


def json_report(
    benchmark: str,
    results: Sequence[Result],
    *,
    settings: DataclassInstance,
    found: Mapping[str, str],
    context: Mapping[str, Any],
    started: float,
    errors: Sequence[str] = (),
) -> str:
    """The whole report as one JSON object (``started``: ``time.monotonic()`` at the start)."""
    report = {
        "format": FORMAT,
        "benchmark": benchmark,
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 3),
        "versions": dict(found),
        "machine": _machine(),
        "settings": dataclasses.asdict(settings),
        "context": dict(context),
        "results": [_row(result) for result in results],
        "errors": list(errors),
    }
    return json.dumps(report, indent=2, allow_nan=False)


def emit(
    benchmark: str,
    results: Sequence[Result],
    *,
    as_json: bool,
    settings: DataclassInstance,
    found: Mapping[str, str],
    context: Mapping[str, Any],
    where: str,
    started: float,
) -> None:
    """Print the report of a benchmark against a baseline: the JSON object, or the table.

    ``where`` is the line saying what it ran on. The verdict counts the rows with a
    target; a row without one (``inf``) only reports, and its checks.
    """
    if as_json:
        report = json_report(
            benchmark, results, settings=settings, found=found, context=context, started=started
        )
        print(report)
        return
    print(describe(found))
    print(f"{where}; medians of interleaved runs")
    print("ratio = docmem median / baseline median; difference = docmem - baseline")
    print()
    print(table(results))
    print()
    print("requests per timed call (HTTP status in parentheses), checks:")
    print(notes(results, "check FAILED: a MISS"))
    print()
    print(verdict([result for result in results if math.isfinite(result.target)], started))
