"""file:// survives SIGKILL mid-save: the document always parses, acknowledged saves persist."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import docmem
from docmem.backends.local import LocalBackend
from docmem.document import parse

WRITER = """
import sys, docmem
root, start = sys.argv[1], int(sys.argv[2])
store = docmem.open_store("file://" + root + "?create=true")
mem = docmem.FileMemory(store, max_characters=10**6).bind(
    docmem.lock_scope(namespace="crash", scope="victim"), slot="user")
print("ready", flush=True)
i = start
while True:
    mem.save(f"note {i}", mutation_id=f"m{i}")
    print(i, flush=True)
    i += 1
"""


@pytest.mark.slow
def test_sigkill_mid_save_never_tears_or_loses_acknowledged_saves(tmp_path: Path) -> None:
    root = tmp_path / "store"
    scope = docmem.lock_scope(namespace="crash", scope="victim")
    backend = LocalBackend(root)
    rng = random.Random(20261130)
    acknowledged: set[int] = set()
    next_start = 0
    for _ in range(12):
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(next_start)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        for _ in range(rng.randint(1, 15)):
            acknowledged.add(int(child.stdout.readline()))
        time.sleep(rng.uniform(0, 0.01))  # land the kill anywhere inside a save
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        # Acks already printed before the kill count too: they were acknowledged.
        acknowledged.update(int(line) for line in child.stdout.read().split())
        stored = backend.read(scope.storage_key)
        assert stored is not None
        document = parse(stored.data)  # never torn
        present = set(document.entries.values())
        assert {f"note {i}" for i in acknowledged} <= present
        next_start = document.last + 1 + 1000  # fresh ids for the next writer
    assert len(acknowledged) >= 12
