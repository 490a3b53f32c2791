"""A read: the current version of a key, from the shortest listing that settles it.

A process that holds a version of the key lists only the names after it.
Nothing there supersedes it: then nothing did in between, so the object was
never removed or replaced and its bytes are still the current ones, however
long ago they were seen. Otherwise the newest version listed there is fetched
(every version above and every tombstone at or above is among those names).
Only a process that holds nothing lists the whole folder. A version collected
between the listing and the fetch sends the read round again (docs/design.md,
section 4.1).
"""

from __future__ import annotations

import enum

from docmem.backend import Stored
from docmem.errors import StoreUnavailable

from .folders import ATTEMPTS, KeyFolders
from .recent import Recent, Seen

__all__ = ["read"]


class _Relist(enum.Enum):
    """A short listing could not settle a read: list the whole folder."""

    RELIST = "relist"


def read(folders: KeyFolders, recent: Recent, key: str) -> Stored | None:
    """The current bytes and version of ``key``, or ``None`` if it has none."""
    seen = recent.get(key)
    if seen is not None:
        found = _read_after(folders, recent, key, seen)
        if found is not _Relist.RELIST:
            return found
    for _attempt in range(ATTEMPTS):
        listing, since = folders._list(key)
        current = listing.current
        if current is None:
            recent.forget(key)
            return None
        seen = recent.get(key)
        if seen is not None and seen.stored.version == current.name:
            # The newest version's name is never re-created (only names below the newest
            # are freed), so its bytes are the ones we have; and nobody wrote since this
            # process did: the key is no longer contended.
            recent.settled(key)
            recent.remember(key, seen.stored, current.revision, since, seen.digest)
            return seen.stored
        fetched = folders._fetch(current.path, current.name)
        if fetched is None:
            continue  # collected since the listing: list again
        stored, identity = fetched
        recent.remember(key, stored, current.revision, since, identity)
        return stored
    raise StoreUnavailable(f"the newest version kept vanishing over {ATTEMPTS} listings")


def _read_after(
    folders: KeyFolders, recent: Recent, key: str, seen: Seen
) -> Stored | _Relist | None:
    """Read by listing only the names after the version this process holds."""
    probed = folders._tail(key, seen.stored.version)
    if probed is None:
        return _Relist.RELIST
    tail, since = probed
    if not tail.supersedes(seen.revision):
        recent.settled(key)  # nobody wrote since this process did
        recent.remember(key, seen.stored, seen.revision, since, seen.digest)
        return seen.stored
    current = tail.current
    if current is None:  # deleted: a tombstone at or above every version
        recent.forget(key)
        return None
    fetched = folders._fetch(current.path, current.name)
    if fetched is None:
        return _Relist.RELIST  # collected since the listing
    stored, identity = fetched
    recent.remember(key, stored, current.revision, since, identity)
    return stored
