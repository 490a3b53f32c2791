"""Older versions of a key, for an operator: the chain the current version descends from.

:func:`descent` follows the parent each version records (docs/design.md,
section 4.1) from the current one down, rather than taking every object in
the folder, so that an object a stale writer left below the newest version
(garbage no reader picks) is never shown as a past state of the memory.
Only what garbage collection has not freed yet is there (``retain``, ``grace``).
"""

from __future__ import annotations

import msgspec

from docmem.backend import Stored

from .commitlog import Entry, digest, parse_version, unwrap
from .folders import KeyFolders

__all__ = ["Revision", "descent", "fetch_version"]


class Revision(msgspec.Struct, frozen=True):
    """One retained version of a key, as :meth:`FsspecBackend.history` lists it."""

    #: The revision number; the version token is ``object_name(revision)``.
    revision: int
    #: The version token a read of this version reports.
    version: str
    #: The store's timestamp of the object, seconds since the epoch (``None`` if it has none).
    modified: float | None
    #: The document's bytes (the envelope line of the object not counted).
    size: int


def descent(folders: KeyFolders, key: str) -> list[Revision]:
    """The retained versions of ``key`` that the current one descends from, oldest first.

    A version written by the previous release (which records no parent) is
    taken to follow the one below it. Empty after a delete.
    """
    listing, _ = folders._list(key)
    entry = listing.current
    chain: list[Revision] = []
    expected: str | None = None  # the digest the next version down must have
    while entry is not None:
        fetched = folders._fetch_object(entry.path)
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
    return chain[::-1]


def fetch_version(folders: KeyFolders, key: str, version: str) -> Stored | None:
    """The bytes of one retained version, or ``None`` once it is collected or purged."""
    folder = folders.folder(key)
    if parse_version(version) is None:
        return None
    fetched = folders._fetch(f"{folder}/{version}", version)
    return None if fetched is None else fetched[0]


def _revision(entry: Entry, size: int) -> Revision:
    return Revision(revision=entry.revision, version=entry.name, modified=entry.modified, size=size)
