"""examples/with_crewai.py runs in a process of its own and shows what it claims."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "with_crewai.py"
SMUGGLED = "Invalid call to user__save_memory: unexpected argument 'user_id'; expected only text."


@pytest.mark.process
def test_the_crewai_example(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-B", str(EXAMPLE)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = done.stdout
    assert "(tools: user_save_memory, user_remove_memory)" in out  # CrewAI's spelling
    assert "result    Saved as memory 0." in out
    assert "result    Saved as memory 1." in out  # call_1 again in a new run: a new save
    assert f"result    {SMUGGLED}" in out
    assert "memory    # Memory: user <!-- docmem:recall user -->" in out
    assert "              1: Lives in Berlin." in out
    assert "Memory: user" not in out.split("bob says")[1].split("alice's executor")[0]
    assert "after the run: 0 copies of memory; the task output's messages: 0 copies" in out
    assert list(tmp_path.iterdir()) == []  # the store lived in a temporary directory
