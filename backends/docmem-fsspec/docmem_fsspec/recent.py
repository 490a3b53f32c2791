"""What this process saw of each key: the version it holds, and whether others write the key.

A read or a write that shows a version as the newest remembers it with the
time its request was sent. The next read then lists only the names after it,
and a save within ``max_staleness`` starts from it without asking the store
(docs/design.md, section 4.1). A key whose create lost a race is contended:
its copy is stale, so ``read_recent`` reads it afresh rather than start a
save bound to be refused, until a read finds this process's copy current again.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from docmem.backend import ContendedKeys, LruCache, Stored

__all__ = ["Recent", "Seen"]


class Seen(msgspec.Struct, frozen=True):
    """A version this process saw as the current one, and holds the object of."""

    stored: Stored
    revision: int
    #: The backend's clock when the request that showed it as the newest was sent.
    since: float
    #: The digest of its whole object: what a version built on it records as its parent.
    digest: str


class Recent:
    """The newest version seen per key (at most ``size`` keys), and the contended keys."""

    def __init__(self, size: int, *, max_staleness: float) -> None:
        self.max_staleness = max_staleness
        # An older observation never replaces a newer one.
        self._seen: LruCache[Seen] = LruCache(
            max(size, 1), keep=lambda old, new: old.since > new.since
        )
        self._contended = ContendedKeys(size)

    def get(self, key: str) -> Seen | None:
        return self._seen.get(key)

    def remember(
        self, key: str, stored: Stored, revision: int, since: float, identity: str
    ) -> None:
        """Note ``stored`` as the current version, as a request sent at ``since`` showed it."""
        self._seen.put(key, Seen(stored=stored, revision=revision, since=since, digest=identity))

    def forget(self, key: str) -> None:
        """Hold nothing for ``key``: what this process has may not be the current version."""
        self._seen.drop(key)

    def lost_race(self, key: str) -> None:
        """Another client wrote past the version this process had: forget it, list next time."""
        self._seen.drop(key)
        self._contended.add(key)

    def settled(self, key: str) -> None:
        """A listing found this process's copy current: nobody else wrote since it did."""
        self._contended.discard(key)

    def fresh(self, seen: Seen, now: float) -> bool:
        """Whether ``seen`` was shown as the newest within ``max_staleness`` of ``now``."""
        return now - seen.since < self.max_staleness

    def read_recent(
        self, key: str, *, clock: Callable[[], float], read: Callable[[str], Stored | None]
    ) -> Stored | None:
        """The copy seen within ``max_staleness``, unless the key is contended; else ``read``."""

        def lately(key: str) -> Stored | None:
            seen = self._seen.get(key)
            return seen.stored if seen is not None and self.fresh(seen, clock()) else None

        return self._contended.read_recent(key, cached=lately, read=read)
