"""The benchmarks keep running: a quick pass prints every figure with its ratio."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: Each test here starts the docmem command, an example or a benchmark in a process of its own.
pytestmark = pytest.mark.process

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
LOCAL_ROWS = ("save, 10 entries", "recall, 10 entries", "existing scope", "new scope")
ADAPTER_FILE_ROWS = (
    "openai-agents Runner.run, file://",
    "pydantic-ai Agent.run, file://",
    "langchain invoke, file://",
    "langchain ainvoke, file://",
    "google-adk Runner.run_async, file://",
    "strands Agent.invoke_async, file://",
    "llama-index FunctionAgent.run, file://",
)
#: CrewAI runs in a venv of its own (the Makefile's crewai-tests): here it is not installed.
CREWAI_FILE_ROW = "crewai Agent.kickoff, file://"
ADAPTER_S3_ROWS = (
    "openai-agents Runner.run, s3://",
    "pydantic-ai Agent.run, s3://",
    "langchain invoke, s3://",
    "langchain ainvoke, s3://",
    "google-adk Runner.run_async, s3://",
    "strands Agent.invoke_async, s3://",
    "llama-index FunctionAgent.run, s3://",
    "crewai Agent.kickoff, s3://",
    "turn start, 3 slots, MemoryRuntime.recall",
    "turn start, 3 slots, turn_started",
)


def run(script: str, *arguments: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-B", str(BENCHMARKS / script), *arguments],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env=env,
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


def test_adapters_benchmark_without_s3_reports_every_file_row() -> None:
    for framework in ("agents", "pydantic_ai", "langchain"):
        pytest.importorskip(framework)
    env = {name: value for name, value in os.environ.items() if name != "LOCALSTACK_ENDPOINT"}
    report = json.loads(run("adapters.py", "--quick", "--json", env=env))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "adapters")
    assert report["context"]["endpoint"] is None
    results = report["results"]
    assert [result["name"] for result in results] == list(ADAPTER_FILE_ROWS)
    for result in results:
        # One model call's medians with the hook and with it doing nothing; the row's
        # figure is their difference, which noise on a busy machine can turn below 0.
        assert result["hook_seconds"] > 0, result
        assert result["noop_seconds"] > 0, result
        added = result["hook_seconds"] - result["noop_seconds"]
        assert math.isclose(result["subject_seconds"], added, abs_tol=1e-12)
        assert math.isfinite(result["paired_seconds"])
        assert result["baseline_seconds"] == 0.001, result  # the budget, not measured
        assert math.isclose(result["ratio"], result["subject_seconds"] / result["baseline_seconds"])
        assert result["target"] == 1.0
        assert isinstance(result["passed"], bool)
        assert result["checked"], result["notes"]  # one copy sent with the hook, none without
    assert report["errors"] == []
    crewai, *skipped = report["skipped"]
    assert crewai.startswith(f"{CREWAI_FILE_ROW}: not installed")
    assert [entry.split(": ", 1)[0] for entry in skipped] == list(ADAPTER_S3_ROWS)
    assert all("no S3 endpoint" in entry for entry in skipped)


#: The frameworks whose rows prompt_cache.py reports here (CrewAI's run in its own venv).
PROMPT_CACHE_FRAMEWORKS = (
    "openai-agents",
    "pydantic-ai",
    "langchain",
    "langchain-async",
    "google-adk",
    "strands",
    "llama-index",
)


def test_prompt_cache_benchmark_quick_run_sends_one_copy_and_keeps_the_prefix() -> None:
    for framework in ("agents", "pydantic_ai", "langchain", "google.adk", "strands", "llama_index"):
        pytest.importorskip(framework)
    report = json.loads(run("prompt_cache.py", "--quick", "--json"))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "prompt_cache")
    assert report["settings"]["turns"] == 8
    assert report["errors"] == []
    rows = report["results"]
    defaults = [row for row in rows if row["default"]]
    assert [row["framework"] for row in defaults] == list(PROMPT_CACHE_FRAMEWORKS)
    for row in defaults:
        assert row["checked"], row["notes"]  # every scripted step answered, both saves applied
        for slot, copies in row["copies"].items():  # exactly one copy of each slot, every call
            assert (copies["min"], copies["max"]) == (1, 1), (row["name"], slot)
        assert row["stale_calls"] == 0, row["name"]
        assert row["unchanged_calls"] > 0
        # Every call whose memory did not change extends the previous request.
        assert row["unchanged_extending_calls"] == row["unchanged_calls"], row["notes"]
        assert row["ratio"] <= 1.05, row["name"]
        assert row["passed"] is True, row["name"]
    # The naive baselines are measured beside it: appending each turn piles copies up.
    appended = [row for row in rows if row["injection"] == "append"]
    assert appended
    assert all(row["copies"]["user"]["max"] > 1 and row["passed"] is None for row in appended)
    skipped = report["skipped"]
    if importlib.util.find_spec("crewai") is None:
        assert "crewai Agent.kickoff: skipped: crewai not installed" in "\n".join(skipped)


@pytest.mark.parametrize("script", ["s3.py", "fsspec_store.py", "adapters.py", "encryption.py"])
def test_every_server_benchmark_offers_json(script: str) -> None:
    pytest.importorskip("docmem_s3")
    if script == "fsspec_store.py":
        pytest.importorskip("docmem_fsspec")
    assert "--json" in run(script, "--help")


def test_telemetry_benchmark_quick_run_reports_every_mode() -> None:
    report = json.loads(run("telemetry.py", "--quick", "--json"))
    assert report["benchmark"] == "telemetry"
    names = [result["name"] for result in report["results"]]
    modes = [
        "API only",
        "SDK, unsampled (ParentBased(ALWAYS_OFF))",
        "SDK, unsampled (TraceIdRatioBased(0))",
        "SDK, sampled (ALWAYS_ON)",
    ]
    assert names == [f"{op}, file://, {mode}" for op in ("save", "recall") for mode in modes]
    for result in report["results"]:
        assert result["subject_seconds"] > 0
        assert result["baseline_seconds"] > 0
        assert result["baseline"] == "telemetry off"
        assert result["checked"], result["notes"]  # spans exported exactly when sampled


STARTUP_ROWS = (
    "docmem --version",
    "docmem show, file://",
    "import docmem, added to python -c pass",
)


def test_startup_benchmark_quick_run_checks_every_command() -> None:
    report = json.loads(run("startup.py", "--quick", "--json"))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "startup")
    assert report["settings"]["runs"] == 5
    results = report["results"]
    assert [result["name"] for result in results[: len(STARTUP_ROWS)]] == list(STARTUP_ROWS)
    for result in results:
        assert result["checked"], result  # each command printed what it should, once
        assert result["baseline_seconds"] > 0
        assert math.isclose(result["ratio"], result["subject_seconds"] / result["baseline_seconds"])
        assert isinstance(result["passed"], bool)
    version, show, imported = results[:3]
    assert (version["baseline"], show["baseline"]) == ("python -c pass", "python -c pass")
    assert (version["target"], show["target"]) == (3.0, 3.0)
    assert version["subject_seconds"] > 0
    assert show["detail"].startswith("10 entries, ")
    assert (imported["baseline_seconds"], imported["target"]) == (0.040, 1.0)  # the budget
    assert report["errors"] == []


def test_encryption_benchmark_quick_run_without_s3_reports_the_file_rows() -> None:
    env = {name: value for name, value in os.environ.items() if name != "LOCALSTACK_ENDPOINT"}
    report = json.loads(run("encryption.py", "--quick", "--json", env=env))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "encryption")
    assert [result["name"] for result in report["results"]] == ["recall, file://", "save, file://"]
    for result, target in zip(report["results"], (1.15, 1.25), strict=True):
        assert result["subject_seconds"] > 0
        assert result["baseline_seconds"] > 0
        assert result["baseline"] == "plain file://"
        assert math.isclose(result["ratio"], result["subject_seconds"] / result["baseline_seconds"])
        assert result["target"] == target
        assert isinstance(result["passed"], bool)
    assert [entry.split(": ", 1)[0] for entry in report["skipped"]] == [
        "recall, s3:// + KMS",
        "save, s3:// + KMS",
    ]
    assert report["errors"] == []


def test_transfer_benchmark_quick_run_without_s3_reports_the_file_row() -> None:
    env = {name: value for name, value in os.environ.items() if name != "LOCALSTACK_ENDPOINT"}
    report = json.loads(run("transfer.py", "--quick", "--json", env=env))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "transfer")
    assert report["context"]["s3"].startswith("skipped: no S3 endpoint")
    [result] = report["results"]
    assert result["name"] == "migrate, file:// -> file://"
    assert result["checked"], result  # every migration verified all its documents
    assert result["subject_seconds"] > 0
    assert result["baseline_seconds"] > 0
    assert math.isclose(result["ratio"], result["subject_seconds"] / result["baseline_seconds"])
    assert (result["target"], result["passed"]) == (None, None)  # reported, no target
    assert "fencing" in result["notes"][0]
    assert report["errors"] == []


def test_hot_scope_benchmark_quick_run_checks_every_entry_and_counts_lost_races() -> None:
    env = {name: value for name, value in os.environ.items() if name != "LOCALSTACK_ENDPOINT"}
    report = json.loads(run("hot_scope.py", "--quick", "--json", env=env))
    assert report["benchmark"] == "hot_scope"
    result, raw = report["results"]  # no endpoint: the file:// rows alone
    assert result["name"].startswith("file://, 4 threads x 10 saves")
    assert result["baseline"] == "group_commit=False"
    assert result["target"] == 0.3
    assert result["checked"], result["notes"]  # every entry present, few lost races
    grouped, alone = result["notes"][:2]
    assert grouped.startswith("group commit: all 40 entries present in 2 of 2 runs")
    assert alone.startswith("one write per save: all 40 entries present in 2 of 2 runs")
    assert re.search(r"per save 0\.\d\d writes", grouped), "group commit shared no write"
    assert raw["name"] == f"{result['name']}, against a raw loop"
    assert (raw["baseline"], raw["target"]) == ("raw CAS loop", 0.5)
    assert raw["subject_seconds"] == result["subject_seconds"]  # the same group commit runs
    assert raw["checked"], raw["notes"]
    assert raw["notes"][0].startswith("raw loop: 0 lines missing")


PROVENANCE_FILE_ROWS = ("save, file://", "save, file://, history=0", "recall, file://")
PROVENANCE_AUDIT_ROW = "audit, 1,000 scopes"


def test_provenance_benchmark_quick_run_compares_both_releases() -> None:
    env = {name: value for name, value in os.environ.items() if name != "LOCALSTACK_ENDPOINT"}
    report = json.loads(run("provenance.py", "--quick", "--json", env=env))
    assert (report["format"], report["benchmark"]) == ("docmem-benchmarks/1", "provenance")
    assert report["settings"]["audit_scopes"] == 1_000
    assert report["machine"]["cpus"]
    results = {result["name"]: result for result in report["results"]}
    skipped = dict(entry.split(": ", 1) for entry in report["skipped"])
    assert skipped.pop("save, s3://").startswith("no S3 endpoint")
    if "save, file://" in skipped:  # no git, or no previous release in a shallow clone
        assert all(name in skipped for name in PROVENANCE_FILE_ROWS), skipped
    else:
        assert list(results)[:3] == list(PROVENANCE_FILE_ROWS)
        assert report["context"]["baseline"].startswith(report["context"]["baseline_ref"])
    if (BENCHMARKS.parent / "docmem" / "cli" / "commands" / "audit.py").exists():
        assert results[PROVENANCE_AUDIT_ROW]["checked"], results[PROVENANCE_AUDIT_ROW]["notes"]
    else:
        assert skipped[PROVENANCE_AUDIT_ROW].startswith("docmem audit is not in this checkout")
    for name, result in results.items():
        assert "(" not in name, "a measured detail belongs in detail, not the name"
        assert result["subject_seconds"] > 0
        assert result["baseline_seconds"] > 0
        assert math.isclose(result["ratio"], result["subject_seconds"] / result["baseline_seconds"])
        spread = result["ratio_spread"]
        assert 0 < spread["p25"] <= spread["p75"], spread
        assert result["target"] > 0
        assert isinstance(result["passed"], bool)
    assert report["errors"] == []
