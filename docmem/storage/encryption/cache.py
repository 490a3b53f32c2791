"""The data keys an encrypted store holds open: bounded, per process, never written anywhere.

Two caches, each an :class:`~docmem.backend.LruCache` of ``size`` entries:

* opened keys, by key id, storage key and wrapped bytes: a recall of an
  unchanged document (or of any document whose data key was seen) opens
  nothing, so it makes no KMS call;
* the key each scope writes with, for at most ``lifetime`` seconds from when
  this process made it or first opened it under the primary key: within
  that time a save makes no KMS call, so a save makes at most one per scope
  per ``lifetime``. A lifetime of 0 makes a new data key for every write.

A key is cached only after it opened a document, so a wrapped key that fails
authentication is asked about again, never remembered. :class:`Documents`
keeps, per scope, the last envelope seen and what it opened to, so reading
an unchanged document again decrypts nothing (the provider keeps parsed
documents the same way).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ...backend import LruCache
from .aead import Sealer
from .kek import KeyEncryptionKey

__all__ = ["DataKey", "DataKeys", "Documents"]


@dataclass(frozen=True, repr=False)
class DataKey:
    """One scope's data key: its sealer, the KEK that wrapped it, and the wrapped bytes."""

    key_id: str
    wrapped: bytes
    sealer: Sealer

    def __repr__(self) -> str:
        return f"DataKey(key_id={self.key_id!r})"


@dataclass(frozen=True)
class _Writing:
    key: DataKey
    until: float


def _cache_key(key_id: str, storage_key: str, wrapped: bytes) -> bytes:
    # Neither a storage key nor a key id holds a NUL: read from the end, this is unambiguous.
    return b"%s\0%s\0%s" % (wrapped, storage_key.encode("ascii"), key_id.encode("ascii"))


class DataKeys:
    """Opened data keys and the one each scope writes with (see the module docstring)."""

    def __init__(
        self, *, size: int, lifetime: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._opened: LruCache[DataKey] = LruCache(size)
        self._writing: LruCache[_Writing] = LruCache(size)
        self._lifetime = lifetime
        self._clock = clock

    def opened(self, key_id: str, storage_key: str, wrapped: bytes) -> DataKey | None:
        """The data key already opened for these wrapped bytes, if cached."""
        return self._opened.get(_cache_key(key_id, storage_key, wrapped))

    def open(self, kek: KeyEncryptionKey, storage_key: str, wrapped: bytes) -> DataKey:
        """Ask ``kek`` to open ``wrapped`` (not cached until :meth:`remember`)."""
        return DataKey(kek.key_id, wrapped, Sealer(kek.open_data_key(wrapped, storage_key)))

    def remember(self, storage_key: str, key: DataKey, *, primary: str) -> None:
        """``key`` opened a document of ``storage_key``: keep it, and write with it if it is new."""
        self._opened.put(_cache_key(key.key_id, storage_key, key.wrapped), key)
        if key.key_id != primary or self._lifetime <= 0:
            return
        current = self._writing.get(storage_key)
        now = self._clock()
        if current is None or current.key.key_id != primary or current.until <= now:
            self._writing.put(storage_key, _Writing(key, now + self._lifetime))

    def for_writing(self, primary: KeyEncryptionKey, storage_key: str) -> DataKey:
        """The data key the next write of ``storage_key`` seals with; a new one when due."""
        current = self._writing.get(storage_key)
        now = self._clock()
        if current is not None and current.key.key_id == primary.key_id and current.until > now:
            return current.key
        plain, wrapped = primary.new_data_key(storage_key)
        key = DataKey(primary.key_id, wrapped, Sealer(plain))
        self._opened.put(_cache_key(key.key_id, storage_key, wrapped), key)
        if self._lifetime > 0:
            self._writing.put(storage_key, _Writing(key, now + self._lifetime))
        return key


class Documents:
    """Per storage key, the last envelope opened or sealed and its plaintext (``size`` keys).

    At worst ``size`` x 2 x 64 KiB; 0 keeps nothing.
    """

    def __init__(self, size: int) -> None:
        self._last: LruCache[tuple[bytes, bytes]] = LruCache(size)

    def get(self, storage_key: str, envelope: bytes) -> bytes | None:
        """The plaintext of ``envelope`` if it is the one last seen under ``storage_key``."""
        found = self._last.get(storage_key)
        if found is not None and found[0] == envelope:
            return found[1]
        return None

    def put(self, storage_key: str, envelope: bytes, plaintext: bytes) -> None:
        self._last.put(storage_key, (envelope, plaintext))
