"""The benchmarks keep running: a quick pass prints every figure with its ratio."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
LOCAL_ROWS = ("save, 10 entries", "recall, 10 entries", "existing scope", "new scope")


def run(script: str, *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *arguments],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout


def test_local_benchmark_quick_run_prints_every_ratio() -> None:
    stdout = run("local.py", "--quick")
    rows = [line for line in stdout.splitlines() if re.search(r"\d\.\d\dx\s", line)]
    names = " | ".join(rows)
    assert len(rows) == 4, stdout
    for name in LOCAL_ROWS:
        assert name in names


def test_local_benchmark_json_is_one_object_with_every_result() -> None:
    report = json.loads(run("local.py", "--quick", "--json"))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "local")
    assert report["versions"]["docmem"]
    assert report["settings"]["large_scopes"] == 1_000
    results = report["results"]
    assert len(results) == 4
    for result, name in zip(results, LOCAL_ROWS, strict=True):
        assert name in result["name"]
        assert "(" not in result["name"], "a measured detail belongs in detail, not the name"
        assert result["subject_seconds"] > 0
        assert result["baseline_seconds"] > 0
        assert math.isclose(result["ratio"], result["subject_seconds"] / result["baseline_seconds"])
        assert isinstance(result["passed"], bool)
        assert result["target"] > 0
    assert report["errors"] == []


@pytest.mark.parametrize("script", ["s3.py", "fsspec_store.py"])
def test_every_server_benchmark_offers_json(script: str) -> None:
    pytest.importorskip("docmem_s3")
    if script == "fsspec_store.py":
        pytest.importorskip("docmem_fsspec")
    assert "--json" in run(script, "--help")
