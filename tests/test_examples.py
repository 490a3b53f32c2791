"""Every example runs, and says what it claims."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import docmem
from docmem.document import parse

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_quickstart(cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DOCMEM_STORE"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout


def test_quickstart_on_the_default_store_twice(tmp_path: Path) -> None:
    out = run_quickstart(tmp_path)
    assert "store file://./.docmem" in out
    assert "Saved as memory 0." in out
    assert "Already saved as memory 0." in out
    assert "Removed memory 2." in out
    assert "Memory 999 does not exist; nothing removed." in out
    assert "replaces the copy of revision 3 in the prompt" in out
    assert "unchanged: the host keeps the copy it already has" in out
    # session 2 ran in another process and saw session 1's notes
    second = out.split("--- session 2 runs in a new process")[1]
    assert "2: Is planning a trip to Lisbon in May." in second

    store = docmem.open_store(f"file://{tmp_path / '.docmem'}")
    [key] = list(store.keys())
    stored = store.read(key)
    assert stored is not None
    assert dict(parse(stored.data).entries) == {
        0: "Prefers metric units.",
        1: "Works at Acme on the billing team.",
        3: "Visited Lisbon in May and loved it.",
    }

    again = run_quickstart(tmp_path)
    assert "erased what an earlier run of this demo saved" in again
    assert "Saved as memory 4." in again  # indexes never repeat, also after erase
    assert "Removed memory 6." in again
