"""file:// survives SIGKILL mid-save: the document always parses, acknowledged saves persist.

A seeded campaign: in each round two writer processes save to one scope and
are killed with SIGKILL at random moments: in the middle of a save, holding
the key's lock, between the temp file and the rename. Each writer reports a
save on a pipe right after it returned, so the parent knows every save that
was acknowledged. After the kills the document must parse and hold every
acknowledged save, and the next write must leave no crashed writer's temp
file behind. ``DOCMEM_LONG_CAMPAIGN=1`` runs ten times as many rounds (nightly).

The writers are forked from one helper process that imported docmem once
(a fresh interpreter per kill would cost more than the whole campaign).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import docmem
from docmem.backends.local import LocalBackend
from docmem.document import parse

ROUNDS = 200 if os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1" else 20
WRITERS = 2

#: Reads "round <tag>" lines; forks WRITERS writers that save until killed, reports
#: their pids, waits for them and reports how each one ended. Every line goes out
#: with one os.write of less than PIPE_BUF bytes, so lines never interleave.
HELPER = """
import os, sys, docmem
root, writers = sys.argv[1], int(sys.argv[2])

def say(line):
    os.write(1, (line + "\\n").encode())

def write_until_killed(tag):
    try:
        store = docmem.open_store("file://" + root)
        mem = docmem.FileMemory(store, max_characters=10**6).bind(
            docmem.lock_scope(namespace="crash", scope="victim"), slot="user")
        say("ready " + tag)
        i = 0
        while True:
            try:
                mem.save(f"note {tag}-{i}", mutation_id=f"{tag}-{i}")
            except docmem.StoreBusy as busy:  # two unthrottled writers: one may starve
                assert busy.outcome == "not_committed", busy.outcome
                continue  # the same note under the same id again
            say(f"ack note {tag}-{i}")  # right after the save returned
            i += 1
    except BaseException as exc:
        say("error " + type(exc).__name__)
    os._exit(1)

for line in sys.stdin:
    tag = line.split()[1]
    pids = []
    for n in range(writers):
        pid = os.fork()
        if pid == 0:
            write_until_killed(f"{tag}w{n}")
        pids.append(pid)
    say("pids " + " ".join(map(str, pids)))
    ends = [os.waitpid(pid, 0)[1] for pid in pids]
    say("dead " + " ".join(str(os.WTERMSIG(e) if os.WIFSIGNALED(e) else -1) for e in ends))
"""


class Writers:
    """The helper process and what its writers said, line by line."""

    def __init__(self, root: Path) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", HELPER, str(root), str(WRITERS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.acknowledged: set[str] = set()
        self._ready: set[str] = set()

    def _line(self) -> list[str]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        assert line, "the helper process died"
        words = line.split(" ", 1)
        assert words[0] != "error", f"a writer failed: {line.strip()}"
        if words[0] == "ack":
            self.acknowledged.add(words[1].strip())
        elif words[0] == "ready":
            self._ready.add(words[1].strip())
        return line.split()

    def start(self, tag: str) -> list[int]:
        assert self._process.stdin is not None
        self._process.stdin.write(f"round {tag}\n")
        self._process.stdin.flush()
        while (words := self._line())[0] != "pids":
            pass
        return [int(pid) for pid in words[1:]]

    def wait_until(self, tag: str, *, saved: bool) -> None:
        """Read on until writer ``tag`` is ready, or has acknowledged a save."""
        while tag not in self._ready or (
            saved and not any(note.startswith(f"note {tag}-") for note in self.acknowledged)
        ):
            self._line()

    def wait_dead(self) -> list[int]:
        """The signal that ended each writer, once all are dead and all their acks are read."""
        while (words := self._line())[0] != "dead":
            pass
        return [int(number) for number in words[1:]]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(30)


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[Writers]:
    started = Writers(tmp_path / "store")
    try:
        yield started
    finally:
        started.close()


def _temps(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith(".tmp-"))


@pytest.mark.slow
def test_sigkill_campaign_never_tears_loses_or_litters(tmp_path: Path, writers: Writers) -> None:
    scope = docmem.lock_scope(namespace="crash", scope="victim")
    backend = LocalBackend(tmp_path / "store", create=True)
    mem = docmem.FileMemory(backend, max_characters=10**6).bind(scope, slot="user")
    mem.save("before the campaign", mutation_id="setup")  # creates the store and its marker
    directory = Path(backend.path(scope.storage_key)).parent
    rng = random.Random(20261130)
    left_by_kills = 0
    for round_number in range(ROUNDS):
        tag = f"r{round_number}"
        pids = writers.start(tag)
        for n, pid in enumerate(pids):
            # Mostly kill well inside the save loop; sometimes during the first save.
            writers.wait_until(f"{tag}w{n}", saved=rng.random() < 0.7)
            time.sleep(rng.uniform(0, 0.004))
            os.kill(pid, signal.SIGKILL)
        assert writers.wait_dead() == [signal.SIGKILL] * WRITERS
        stored = backend.read(scope.storage_key)
        assert stored is not None
        present = set(parse(stored.data).entries.values())  # never torn
        assert writers.acknowledged <= present, f"round {round_number} lost acknowledged saves"
        left_by_kills += len(_temps(directory))
        # The next write collects what the killed writers left behind.
        mem.save(f"after round {round_number}", mutation_id=f"check-{round_number}")
        assert _temps(directory) == [], f"round {round_number} left temp files"
        # Empty the memory so the document stays far below its size limit.
        mem.erase(mutation_id=f"erase-{round_number}")
        writers.acknowledged.clear()
    print(f"{ROUNDS} rounds of {WRITERS} kills; {left_by_kills} temp files left by the kills")
