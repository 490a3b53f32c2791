"""benchmarks/mcp_load.py keeps running: a quick file:// pass reports every phase and goal."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

#: The benchmark starts `docmem mcp --http` and a no-op MCP server, each a process of its own.
pytestmark = pytest.mark.process

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "mcp_load.py"
PHASES = ("MCP, docmem", "in-process, docmem", "MCP, no-op tool")


def test_mcp_load_quick_run_on_file_store_reports_phases_and_goals() -> None:
    env = {name: value for name, value in os.environ.items() if name != "LOCALSTACK_ENDPOINT"}
    done = subprocess.run(
        [sys.executable, "-B", str(SCRIPT), "--quick", "--seconds", "2", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
        env=env,
    )
    report = json.loads(done.stdout)
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "mcp_load")
    assert report["settings"]["clients"] == 8
    assert report["context"]["store"].startswith("file://")
    assert report["errors"] == [], report["errors"]
    phases = {phase["name"]: phase for phase in report["phases"]}
    assert tuple(phases) == PHASES
    docmem_mcp = phases["MCP, docmem"]
    assert set(docmem_mcp["by_operation"]) == {"recall", "save", "remove"}
    # The no-op phase makes as many calls as the docmem phase did.
    assert phases["MCP, no-op tool"]["calls"] == docmem_mcp["calls"] > 0
    for phase in report["phases"]:
        assert phase["p50_seconds"] > 0
        assert phase["p99_seconds"] >= phase["p50_seconds"]
        assert (phase["lost_saves"], phase["undone_removes"]) == (0, 0), phase["name"]
    (cost,) = report["results"]
    assert math.isclose(cost["ratio"], cost["subject_seconds"] / cost["baseline_seconds"])
    assert cost["target"] == 1.2
    memory = report["memory"]
    assert memory["before_bytes"] > 0
    assert memory["last_quarter_bytes"] > 0
    goals = {goal["name"]: goal for goal in report["goals"]}
    assert goals["errors (both docmem phases)"]["passed"] is True
    assert goals["lost saves and undone removes"]["passed"] is True
