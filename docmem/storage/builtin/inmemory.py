"""``memory://``: an in-process store for tests and development.

Not shared between processes. ``memory://`` opens a fresh private store;
``memory://name`` opens a named store shared by everything in the process
that opens the same name (and by unpickled copies of it). Like ``file://``
by default, it keeps the last 16 older versions of each key, so that history
and revert can be tried without a disk.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ...backend import Backend, KeptVersion, Stored, check_key
from ...errors import StoreNotConfigured, StoreUnavailable, VersionConflict
from ...options import query_options

__all__ = ["MemoryBackend"]

#: Older versions kept of each key: file://'s default ``history``.
_KEPT_VERSIONS = 16

#: A version and when it was written (``None``: put there around the store).
_Dated = tuple[Stored, float | None]


class _Space:
    """The data of one named store and the lock that guards it.

    ``written`` dates each key's current version, by version (an out-of-band
    put in a test replaces the blob only); ``kept`` holds each key's older
    versions, oldest first.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.blobs: dict[str, Stored] = {}
        self.written: dict[str, tuple[str, float]] = {}
        self.kept: dict[str, collections.deque[_Dated]] = {}
        self.versions = itertools.count(1)

    def dated(self, key: str, stored: Stored) -> _Dated:
        """``key``'s current version ``stored`` with its date, if this store wrote it."""
        written = self.written.get(key)
        return stored, written[1] if written is not None and written[0] == stored.version else None

    def forget(self, key: str) -> None:
        """Drop every version of ``key``; call it holding the lock."""
        self.blobs.pop(key, None)
        self.written.pop(key, None)
        self.kept.pop(key, None)


def _listed(dated: _Dated) -> KeptVersion:
    stored, modified = dated
    return KeptVersion(version=stored.version, modified=modified, size=len(stored.data))


# Named spaces live as long as the process; an anonymous one as long as a store
# (or an unpickled copy of it) still refers to it.
_spaces: dict[str, _Space] = {}
_anonymous: weakref.WeakValueDictionary[str, _Space] = weakref.WeakValueDictionary()
_spaces_lock = threading.Lock()


def _reinit_after_fork() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    global _spaces_lock
    _spaces_lock = threading.Lock()
    for space in [*_spaces.values(), *_anonymous.values()]:
        space.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_after_fork)


_ANONYMOUS = "anonymous-"


class MemoryBackend(Backend):
    """A dict of blobs behind a lock; versions are never-repeating counters."""

    shared_between_processes = False

    def __init__(self, name: str | None = None) -> None:
        self._name = name or f"{_ANONYMOUS}{uuid.uuid4().hex}"
        table = _anonymous if self._name.startswith(_ANONYMOUS) else _spaces
        with _spaces_lock:
            space = table.get(self._name)
            if space is None:
                space = table[self._name] = _Space()
        self._space = space
        self._closed = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> MemoryBackend:
        parts = urlsplit(url)
        unknown = sorted({**query_options(url), **options})
        if unknown:
            raise StoreNotConfigured(f"memory:// takes no options; got {', '.join(unknown)}")
        name = (parts.netloc + parts.path).strip("/")
        return cls(name or None)

    @property
    def url(self) -> str:
        return f"memory://{self._name}"

    def _open_space(self) -> _Space:
        if self._closed:
            raise StoreUnavailable("the memory:// store is closed")
        return self._space

    def read(self, key: str) -> Stored | None:
        check_key(key)
        space = self._open_space()
        with space.lock:
            return space.blobs.get(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        check_key(key)
        space = self._open_space()
        with space.lock:
            current = space.blobs.get(key)
            if (current.version if current else None) != expected:
                raise VersionConflict("the stored version is not the expected one")
            if current is not None:
                kept = space.kept.get(key)
                if kept is None:
                    kept = space.kept[key] = collections.deque(maxlen=_KEPT_VERSIONS)
                kept.append(space.dated(key, current))
            version = str(next(space.versions))
            space.blobs[key] = Stored(data=bytes(data), version=version)
            space.written[key] = (version, time.time())
            return version

    def delete(self, key: str) -> None:
        check_key(key)
        space = self._open_space()
        with space.lock:
            space.forget(key)

    def purge_history(self, key: str) -> None:
        check_key(key)
        space = self._open_space()
        with space.lock:
            space.kept.pop(key, None)

    def history(self, key: str) -> list[KeptVersion]:
        check_key(key)
        space = self._open_space()
        with space.lock:
            current = space.blobs.get(key)
            if current is None:
                return []
            older = space.kept.get(key, ())
            return [*(_listed(dated) for dated in older), _listed(space.dated(key, current))]

    def read_version(self, key: str, version: str) -> Stored | None:
        check_key(key)
        space = self._open_space()
        with space.lock:
            current = space.blobs.get(key)
            if current is None or current.version == version:
                return current
            older = space.kept.get(key, ())
            return next((stored for stored, _ in older if stored.version == version), None)

    def keys(self) -> Iterator[str]:
        space = self._open_space()
        with space.lock:
            return iter(list(space.blobs))

    def close(self) -> None:
        self._closed = True
