"""SIGKILL campaigns: writer processes killed mid-save, for stores on a local disk.

A campaign proves that a store survives its writers dying at any moment: in
each round :class:`Writers` forks writer processes that save to one scope
(:func:`victim_memory`) until the test kills them with SIGKILL, each
reporting a save on a pipe right after it returned, so the parent knows
every save that was acknowledged. :meth:`Writers.rounds` runs the rounds and
checks after each that every writer died of the kill and that the document
parses and holds every acknowledged save; the test adds what its store must
also leave behind (no temporary files, collected versions). The writers are
forked from one helper process that imported docmem once: a fresh
interpreter per kill would cost more than the whole campaign, and the test
process may run threads that a fork should not copy.

This module is part of :mod:`docmem.testing`'s API for plug-in authors, for
stores whose writers may run in many processes of one host.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence

from ..backend import Backend
from ..errors import StoreBusy
from ..provider.document import parse
from ..provider.keys import LockedScope, lock_scope
from ..provider.memory import BoundMemory, FileMemory
from ..storage.registry import open_store

__all__ = [
    "MAX_SAVES",
    "Writers",
    "campaign_rounds",
    "running_writers",
    "victim_memory",
    "victim_scope",
]

#: Saves after which a writer of a round waits to be killed: two writers' notes stay
#: far below the 64 KiB document even when the parent is scheduled late.
MAX_SAVES = 500


def campaign_rounds(rounds: int = 20) -> int:
    """``rounds``, or ten times as many under ``DOCMEM_LONG_CAMPAIGN=1`` (nightly)."""
    return rounds * 10 if os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1" else rounds


def victim_scope() -> LockedScope:
    """The scope every writer of a campaign saves to."""
    return lock_scope(namespace="crash", scope="victim")


def victim_memory(store: Backend) -> BoundMemory:
    """The memory the writers save to, bound as they bind it (no size limit in reach)."""
    return FileMemory(store, max_characters=10**6).bind(victim_scope(), slot="user")


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # one write below PIPE_BUF: lines never interleave


def _write_until_killed(url: str, tag: str, max_saves: int) -> None:
    """A forked writer: save notes ``<tag>-<i>`` and report each, until killed."""
    try:
        mem = victim_memory(open_store(url))
        _say("ready " + tag)
        i = 0
        while True:
            try:
                mem.save(f"note {tag}-{i}", mutation_id=f"{tag}-{i}")
            except StoreBusy as busy:  # two unthrottled writers: one may starve
                if busy.outcome != "not_committed":
                    raise AssertionError(busy.outcome) from busy
                continue  # the same note under the same id again
            _say(f"ack note {tag}-{i}")  # right after the save returned
            i += 1
            while i >= max_saves:  # a parent scheduled late must not find the memory full
                time.sleep(1)
    except BaseException as exc:
        _say("error " + type(exc).__name__)
    os._exit(1)


def serve_writers(argv: Sequence[str]) -> None:
    """The helper process: ``argv`` is the store URL, the writers a round and ``MAX_SAVES``.

    Reads ``round <tag>`` lines; forks the writers ``<tag>w<n>``, reports
    their pids, waits for them and reports how each one ended.
    """
    url, writers, max_saves = argv[0], int(argv[1]), int(argv[2])
    for line in sys.stdin:
        tag = line.split()[1]
        pids = []
        for n in range(writers):
            pid = os.fork()
            if pid == 0:
                _write_until_killed(url, f"{tag}w{n}", max_saves)
            pids.append(pid)
        _say("pids " + " ".join(map(str, pids)))
        ends = [os.waitpid(pid, 0)[1] for pid in pids]
        _say("dead " + " ".join(str(os.WTERMSIG(e) if os.WIFSIGNALED(e) else -1) for e in ends))


_HELPER = (
    "import sys; from docmem.testing.campaigns import serve_writers; serve_writers(sys.argv[1:])"
)


class Writers:
    """The helper process for the store at ``url`` and what its writers said, line by line.

    :meth:`close` it once the campaign is over.
    """

    def __init__(self, url: str, *, writers: int = 2, max_saves: int = MAX_SAVES) -> None:
        self.count = writers
        self._process = subprocess.Popen(
            [sys.executable, "-c", _HELPER, url, str(writers), str(max_saves)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        #: The notes acknowledged as saved since the test last cleared this set.
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
        """Fork the writers of round ``tag``; their pids, writer ``<tag>w<n>`` at ``n``."""
        assert self._process.stdin is not None
        self._process.stdin.write(f"round {tag}\n")
        self._process.stdin.flush()
        while (words := self._line())[0] != "pids":
            pass
        return [int(pid) for pid in words[1:]]

    def wait_until_ready(self, writer: str) -> None:
        """Read on until ``writer`` (``<tag>w<n>``) has opened its store."""
        while writer not in self._ready:
            self._line()

    def wait_for_a_save(self, prefix: str) -> None:
        """Read on until a note starting ``note <prefix>`` was acknowledged.

        ``<tag>w<n>-`` waits for writer ``n``; ``<tag>w`` for any writer of the
        round (one may starve: optimistic writers are not fair).
        """
        while not any(note.startswith(f"note {prefix}") for note in self.acknowledged):
            self._line()

    def wait_dead(self) -> list[int]:
        """The signal that ended each writer, once all are dead and all their acks are read."""
        while (words := self._line())[0] != "dead":
            pass
        return [int(number) for number in words[1:]]

    def rounds(
        self, count: int, store: Backend, *, kill: Callable[[str, list[int]], None]
    ) -> Iterator[int]:
        """Run ``count`` rounds ``r<n>``, yielding ``n`` once round ``n`` is checked.

        ``kill(tag, pids)`` must SIGKILL every writer of the round (when is up
        to the test). Then every writer must have died of it, and ``store``'s
        document must parse and hold every acknowledged save.
        """
        key = victim_scope().storage_key
        for round_number in range(count):
            tag = f"r{round_number}"
            kill(tag, self.start(tag))
            assert self.wait_dead() == [signal.SIGKILL] * self.count
            stored = store.read(key)
            assert stored is not None
            present = set(parse(stored.data).entries.values())  # never torn
            assert self.acknowledged <= present, f"round {round_number} lost acknowledged saves"
            yield round_number

    def close(self) -> None:
        """End the helper (it exits when its input closes)."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(30)


def running_writers(url: str, *, writers: int = 2, max_saves: int = MAX_SAVES) -> Iterator[Writers]:
    """A started :class:`Writers`, closed afterwards: ``yield from`` it in a fixture."""
    started = Writers(url, writers=writers, max_saves=max_saves)
    try:
        yield started
    finally:
        started.close()
