"""fsspec+file:// survives SIGKILL mid-save with garbage collection running.

A seeded campaign: in each round two writer processes save to one scope of a
store opened with ``retain=1`` and a short ``grace``, so every save also
collects old versions and sweeps temporary files, and each writer is killed
with SIGKILL at a random moment: while writing a create's temporary file,
between it and the link, in the listing after the create, in the middle of
garbage collection. Each writer reports a save on a pipe right after it
returned (one ``os.write``, so the parent reads it before the kill's effects),
and after the kills the document must parse and hold every reported save.
Temporary files that killed writers left are swept once they are older than
the grace period: none may outlive a write that comes after it.
``DOCMEM_LONG_CAMPAIGN=1`` runs ten times as many rounds (nightly).

The writers are forked from one helper process that imported docmem once (a
fresh interpreter per kill would cost more than the whole campaign, and the
test process itself runs threads that a fork should not copy).
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
from docmem.document import parse
from docmem_fsspec import FsspecBackend

ROUNDS = 200 if os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1" else 20
WRITERS = 2
GRACE = 0.2
#: What the store adds to grace for stores that keep whole seconds, and a margin.
SWEPT_AFTER = GRACE + 1.0 + 0.3
OPTIONS = f"retain=1&grace={GRACE}&max_staleness=0.1"

#: Reads "round <tag>" lines; forks WRITERS writers that save until killed, reports
#: their pids, waits for them and reports how each one ended. Every line goes out
#: with one os.write of less than PIPE_BUF bytes, so lines never interleave.
HELPER = """
import os, sys, docmem
url, writers = sys.argv[1], int(sys.argv[2])

def say(line):
    os.write(1, (line + "\\n").encode())

def write_until_killed(tag):
    try:
        mem = docmem.FileMemory(docmem.open_store(url), max_characters=10**6).bind(
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

    def __init__(self, url: str) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", HELPER, url, str(WRITERS)],
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

    def wait_until_ready(self, tag: str) -> None:
        """Read on until writer ``tag`` has opened its store."""
        while tag not in self._ready:
            self._line()

    def wait_for_a_save(self, tag: str) -> None:
        """Read on until some writer of round ``tag`` acknowledged a save.

        One writer may starve (optimistic writers are not fair), so the round
        waits for either, never for one in particular.
        """
        while not any(note.startswith(f"note {tag}w") for note in self.acknowledged):
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
def store(tmp_path: Path) -> Iterator[FsspecBackend]:
    opened = docmem.open_store(f"fsspec+file://{tmp_path / 'store'}?create=true&{OPTIONS}")
    assert isinstance(opened, FsspecBackend)
    yield opened
    opened.close()


@pytest.fixture
def writers(store: FsspecBackend) -> Iterator[Writers]:
    started = Writers(f"fsspec+file://{store.root}?{OPTIONS}")  # as a service opens it
    try:
        yield started
    finally:
        started.close()


def _stale_temps(folder: Path, *, older_than: float) -> list[str]:
    """Temporary files in ``folder`` whose time is more than ``older_than`` s before now."""
    now = time.time()
    return sorted(
        entry.name
        for entry in os.scandir(folder)
        if entry.name.startswith(".tmp-") and entry.stat().st_mtime < now - older_than
    )


@pytest.mark.slow
def test_sigkill_campaign_with_collection_never_tears_loses_or_litters(
    store: FsspecBackend, writers: Writers
) -> None:
    scope = docmem.lock_scope(namespace="crash", scope="victim")
    mem = docmem.FileMemory(store, max_characters=10**6).bind(scope, slot="user")
    mem.save("before the campaign", mutation_id="setup")  # creates the store and its marker
    folder = Path(store.folder(scope.storage_key))
    rng = random.Random(20261201)
    left_by_kills: set[str] = set()
    for round_number in range(ROUNDS):
        tag = f"r{round_number}"
        pids = writers.start(tag)
        for n in range(len(pids)):
            writers.wait_until_ready(f"{tag}w{n}")
        if rng.random() < 0.7:  # mostly well inside the save loop; sometimes in the first save
            writers.wait_for_a_save(tag)
        for pid in pids:
            time.sleep(rng.uniform(0, 0.01))
            os.kill(pid, signal.SIGKILL)
        assert writers.wait_dead() == [signal.SIGKILL] * WRITERS
        stored = store.read(scope.storage_key)
        assert stored is not None
        present = set(parse(stored.data).entries.values())  # never torn
        assert writers.acknowledged <= present, f"round {round_number} lost acknowledged saves"
        left_by_kills.update(_stale_temps(folder, older_than=0))
        # The next write sweeps what killed writers left more than the grace period ago.
        mem.save(f"after round {round_number}", mutation_id=f"check-{round_number}")
        assert _stale_temps(folder, older_than=SWEPT_AFTER) == [], f"round {round_number}"
        if round_number % 5 == 4:  # keep the document small, and purge amid the campaign
            mem.erase(mutation_id=f"erase-{round_number}")
            writers.acknowledged.clear()
    time.sleep(SWEPT_AFTER)
    mem.save("after the campaign", mutation_id="teardown")
    assert _stale_temps(folder, older_than=0) == [], "temporary files outlived collection"
    versions = sorted(name for name in os.listdir(folder) if name.endswith(".md"))
    assert len(versions) <= 2, f"garbage collection left {len(versions)} versions"
    document = mem.read()
    assert document is not None
    assert "after the campaign" in document.entries.values()
    print(f"{ROUNDS} rounds of {WRITERS} kills; {len(left_by_kills)} temporary files left by kills")
