"""Older versions of a key, for an operator: the chain the current version descends from.

:func:`descent` follows the parent each version records (docs/design.md,
section 4.1) from the current one down, rather than taking every object in
the folder, so that an object a stale writer left below the newest version
(garbage no reader picks) is never shown as a past state of the memory.
Only what garbage collection has not freed yet is there (``retain``, ``grace``).
Each is a :class:`Revision`, the contract's :class:`~docmem.backend.KeptVersion`
with its revision number beside it, oldest first and the current one last.
"""

from __future__ import annotations

from docmem.backend import KeptVersion, Stored
from docmem.errors import StoreUnavailable

from .commitlog import Entry, Listing, digest, parse_version, unwrap
from .folders import ATTEMPTS, KeyFolders

__all__ = ["Revision", "descent", "fetch_version"]


class Revision(KeptVersion, frozen=True):
    """One retained version of a key, as :meth:`FsspecBackend.history` lists it.

    A :class:`~docmem.backend.KeptVersion` (``version`` is the token a read of
    it reports, ``modified`` the store's timestamp of the object, ``size`` the
    document's bytes without the object's envelope line), and its revision
    number, so that an operator sees the order of the log.
    """

    #: The revision number; the version token is ``object_name(revision)``.
    revision: int


def descent(folders: KeyFolders, key: str) -> list[KeptVersion]:
    """The retained versions of ``key`` that the current one descends from, oldest first.

    A version written by the previous release (which records no parent) is
    taken to follow the one below it. Empty when the key is missing or
    deleted. A current version collected between the listing and its fetch
    (a newer one was written meanwhile) sends the listing round again, so the
    last entry is always a version that was current.
    """
    for _attempt in range(ATTEMPTS):
        listing, _ = folders._list(key)
        chain = _chain(folders, listing)
        if chain is not None:
            return chain[::-1]
    raise StoreUnavailable(f"the newest version kept vanishing over {ATTEMPTS} listings")


def _chain(folders: KeyFolders, listing: Listing) -> list[KeptVersion] | None:
    """The listing's current version and its ancestors, newest first; ``None`` if it vanished."""
    entry = listing.current
    chain: list[KeptVersion] = []
    expected: str | None = None  # the digest the next version down must have
    while entry is not None:
        fetched = folders._fetch_object(entry.path)
        if fetched is None and not chain:
            return None  # the current version itself is gone: list again
        if fetched is None or (expected is not None and digest(fetched) != expected):
            break  # collected meanwhile, or not the version its successor was built on
        envelope, data = unwrap(fetched)
        chain.append(_revision(entry, len(data)))
        if envelope is None:  # the previous format records no parent: the one below
            expected, entry = None, listing.find(entry.revision - 1)
        elif envelope.parent is None or envelope.parent.revision >= entry.revision:
            break
        else:
            expected, entry = envelope.parent.digest, listing.find(envelope.parent.revision)
    return chain


def fetch_version(folders: KeyFolders, key: str, version: str) -> Stored | None:
    """The bytes of one retained version, or ``None`` once it is collected, purged or deleted.

    A token that names no version (a tombstone's, a purge marker's, not a
    name at all) is ``None`` too. Why a gone version asks about the store:
    a local root whose volume is not mounted, or a missing bucket, has no
    versions either, and must read as unavailable, never as gone.
    """
    folder = folders.folder(key)
    if parse_version(version) is None:
        return None
    fetched = folders._fetch(f"{folder}/{version}", version)
    if fetched is None:
        if folders._require_store(writing=False):
            folders._require_root()
        return None
    return fetched[0]


def _revision(entry: Entry, size: int) -> Revision:
    return Revision(revision=entry.revision, version=entry.name, modified=entry.modified, size=size)
