"""Backends that wrap a real store and inject the failures a network store can have.

They stand in for nothing: every read and write still goes to a real
MemoryBackend; the wrapper only decides when an answer is lost, delayed or
refused, so the provider's reconciliation can be tested deterministically.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from docmem import Backend, KeptVersion, Stored
from docmem.errors import VersionConflict, WriteOutcomeUnknown
from docmem.storage.builtin.inmemory import MemoryBackend


class ScriptedBackend(Backend):
    """A MemoryBackend whose next writes follow a script of failure modes.

    Script entries, consumed one per write:
    ``"ok"``           the write happens normally;
    ``"lost"``         the write happens, then the answer is lost (WriteOutcomeUnknown);
    ``"unsent"``       the write does not happen, and the answer is lost;
    ``"delayed"``      the write does not happen yet but lands just before the next read;
    ``"conflict"``     the write is refused with VersionConflict without trying;
    ``"interleave"``   ``interloper`` (another writer) runs first, then the write is attempted.

    After a scripted unknown outcome, ``interloper`` (when set) also runs once
    just before the next read: another writer getting in while we reconcile.
    :meth:`hold_next_write` parks the next write until released, so a test can
    queue other mutations behind it.
    """

    def __init__(self, inner: Backend | None = None) -> None:
        self.inner = inner or MemoryBackend()
        self.script: list[str] = []
        self.writes: list[tuple[str, bytes, str | None]] = []
        self.purged: list[str] = []
        self.interloper: Callable[[], None] | None = None
        self._delayed: tuple[str, bytes, str | None] | None = None
        self._interlope_before_read = False
        self._gate: threading.Event | None = None
        self.held = threading.Event()

    def hold_next_write(self) -> threading.Event:
        """Park the next write (``held`` is set once it waits) until the returned event is set."""
        self._gate = threading.Event()
        self.held.clear()
        return self._gate

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ScriptedBackend:
        raise NotImplementedError("built directly in tests")

    @property
    def url(self) -> str:
        return self.inner.url

    def read(self, key: str) -> Stored | None:
        if self._interlope_before_read:
            self._interlope_before_read = False
            assert self.interloper is not None
            self.interloper()
        if self._delayed is not None:
            delayed, self._delayed = self._delayed, None
            with contextlib.suppress(VersionConflict):
                self.inner.write(delayed[0], delayed[1], expected=delayed[2])
        return self.inner.read(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        gate, self._gate = self._gate, None
        if gate is not None:
            self.held.set()
            assert gate.wait(30), "a held write was never released"
        mode = self.script.pop(0) if self.script else "ok"
        self.writes.append((key, data, expected))
        if mode == "conflict":
            raise VersionConflict("scripted conflict")
        if mode in ("unsent", "lost", "delayed"):
            self._interlope_before_read = self.interloper is not None
        if mode == "unsent":
            raise WriteOutcomeUnknown("scripted: request lost before the server")
        if mode == "delayed":
            self._delayed = (key, data, expected)
            raise WriteOutcomeUnknown("scripted: request still in flight")
        if mode == "interleave":
            assert self.interloper is not None
            self.interloper()
        version = self.inner.write(key, data, expected=expected)
        if mode == "lost":
            raise WriteOutcomeUnknown("scripted: response lost after the write")
        return version

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def purge_history(self, key: str) -> None:
        self.purged.append(key)

    def keys(self) -> Iterator[str]:
        return self.inner.keys()

    def history(self, key: str) -> list[KeptVersion]:
        return self.inner.history(key)

    def read_version(self, key: str, version: str) -> Stored | None:
        return self.inner.read_version(key, version)
