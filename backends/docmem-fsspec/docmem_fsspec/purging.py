"""Removing versions on purpose: an operator's ``delete``, an erase's ``purge_history``.

Both keep the rule the commit log rests on (docs/design.md, section 4.1):
nothing is removed except below an object that stays. A delete first creates
a content-free tombstone above every version, then removes everything below
it, older tombstones included, so the key reads as deleted and a writer
aiming at a freed name lands below the tombstone. A purge first creates a
marker at the current revision, then removes every older version at once,
without waiting for ``grace``: a writer whose base it removed finds the
marker, and its outcome is left open rather than taken for a success.
"""

from __future__ import annotations

from docmem.errors import StoreBusy, StoreUnavailable, VersionConflict, WriteOutcomeUnknown

from .commitlog import Kind, object_name
from .folders import ATTEMPTS, KeyFolders
from .recent import Recent

__all__ = ["delete", "purge_history"]


def delete(folders: KeyFolders, recent: Recent, key: str) -> None:
    """Remove every version of ``key``, leaving one content-free tombstone above them."""
    folder = folders.folder(key)
    recent.forget(key)
    for _attempt in range(ATTEMPTS):
        listing, _ = folders._list(key)
        if not listing.versions:
            return
        top = listing.entries[-1]
        if top.kind is Kind.TOMBSTONE:
            tombstone = top.revision
        else:
            tombstone = listing.top + 1
            try:
                folders._create(f"{folder}/{object_name(tombstone, Kind.TOMBSTONE)}", b"")
            except (VersionConflict, WriteOutcomeUnknown):
                continue  # list again: that revision was taken, or our tombstone is there
            listing, _ = folders._list(key)  # what was created before the tombstone landed
        folders._remove(
            entry
            for entry in listing.entries
            if entry.revision <= tombstone
            and not (entry.kind is Kind.TOMBSTONE and entry.revision == tombstone)
        )
        return
    raise StoreBusy(f"the delete kept racing with writers over {ATTEMPTS} attempts")


def purge_history(folders: KeyFolders, key: str) -> None:
    """Delete every version below the current one now, after leaving a purge marker."""
    folder = folders.folder(key)
    listing, _ = folders._list(key)
    current = listing.current
    if current is None:
        return
    older = [
        entry
        for entry in listing.entries
        if entry.revision < current.revision and entry.kind is not Kind.TOMBSTONE
    ]
    if not any(entry.kind is Kind.VERSION for entry in older):
        return
    marker = f"{folder}/{object_name(current.revision, Kind.PURGE)}"
    try:
        folders._create(marker, b"")
    except VersionConflict:
        pass  # another purge of the same version left it already
    except WriteOutcomeUnknown:
        raise StoreUnavailable("could not confirm the purge marker; nothing was purged") from None
    folders._remove(older)
