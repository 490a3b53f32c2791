"""The benchmarks keep running: a quick pass prints every figure with its ratio."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_local_benchmark_quick_run_prints_every_ratio() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "local.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    rows = [line for line in done.stdout.splitlines() if re.search(r"\d\.\d\dx\s", line)]
    names = " | ".join(rows)
    assert len(rows) == 4, done.stdout
    for name in ("save, 10 entries", "recall, 10 entries", "existing scope", "new scope"):
        assert name in names
