"""benchmarks/console.py keeps running: a quick pass prints both rows with their ratios."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_console_benchmark_quick_run_checks_both_rows() -> None:
    done = subprocess.run(
        [sys.executable, "console.py", "--quick", "--scopes", "200", "--page-runs", "5"],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "scope page, file://" in done.stdout
    assert "overview, 200 scopes, file://" in done.stdout
    assert "check failed" not in done.stdout
