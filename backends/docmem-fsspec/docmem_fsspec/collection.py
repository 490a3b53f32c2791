"""Garbage collection after a write: old versions go by the store's timestamps, paced.

A superseded version goes once it is not among the newest ``retain`` and its
successor is more than ``grace`` seconds older than the newest object; purge
markers and the temporary files a crashed local create left behind go by the
same timestamps (:meth:`Listing.expired`, :meth:`Listing.stale_leftovers`),
and the newest version never goes. Timestamps decide only this, never a read
or a write (docs/design.md, section 4.1). Collection needs the whole folder,
which a write lists instead of its short check only when this process has
not done so for the key within a quarter of ``grace``. It is best effort: a
failure is logged, and the next collection tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from docmem.backend import LruCache
from docmem.errors import StoreUnavailable

from .commitlog import Listing
from .folders import KeyFolders

__all__ = ["Collection"]

logger = logging.getLogger("docmem_fsspec")

#: A store that keeps whole seconds may round a timestamp down by up to this much.
_TIMESTAMP_SLACK = 1.0
#: Garbage collection lists a key in full at most once per this share of ``grace``: a
#: version can go only once its successor is ``grace`` old, so more often frees little.
_COLLECT_EVERY = 0.25


class Collection:
    """When each key is due for collection in this process, and the collection itself."""

    def __init__(self, size: int, *, retain: int, grace: float) -> None:
        self.retain = retain
        self.grace = grace
        # When this process last listed each key in full after a write (by the store's clock).
        self._listed: LruCache[float] = LruCache(max(size, 1))

    def due(self, key: str, clock: Callable[[], float]) -> bool:
        """Whether this process last listed ``key`` in full after a write a while ago, or never."""
        last = self._listed.get(key)
        return last is None or clock() - last >= self.grace * _COLLECT_EVERY

    def listed(self, key: str, since: float) -> None:
        """Note a full listing of ``key`` after a write, taken at ``since`` by the clock."""
        self._listed.put(key, since)

    def collect(self, folders: KeyFolders, key: str, listing: Listing) -> None:
        """Remove what ``listing`` shows expired; failures are only logged."""
        grace = self.grace + _TIMESTAMP_SLACK
        leftovers = [leftover.path for leftover in listing.stale_leftovers(grace=grace)]
        if leftovers:
            reader, _ = folders.filesystems()
            swept = folders._dialect.sweep(reader, leftovers)
            logger.debug("docmem-fsspec: swept %d temporary files of %s", swept, key)
        expired = listing.expired(retain=self.retain, grace=grace)
        if not expired:
            return
        try:
            folders._remove(expired)
        except StoreUnavailable as exc:
            logger.debug("garbage collection stopped: %s", exc.message)
