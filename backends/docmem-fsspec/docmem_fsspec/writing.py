"""A write: create the next version's object, then make sure it counts.

An update on ``<n>.md`` creates ``<n+1>.md`` only if that name is free, so the
store refuses the loser of a race. The object's first line records the version
it was built on (revision and digest), because garbage collection frees old
names and a stale writer could create a freed one again below the newest
version. So after the create the names after it are listed: nothing there
supersedes it, and it is committed (a freed name lies below an object that
stays, which would be listed there). Otherwise the whole folder decides
(:meth:`Listing.verdict`): committed, :class:`VersionConflict` (created below
the newest, garbage nobody reads), or :class:`WriteOutcomeUnknown` (a delete
or purge ran meanwhile, or the versions around it are gone), which the
provider settles through the document's journal (docs/design.md, section 4.1).

The version written on must be current: seen as the newest within
``max_staleness``, or confirmed by a listing of the names after it first,
which only saves a create bound to be refused. A full listing, once due,
also feeds garbage collection (:mod:`docmem_fsspec.collection`).
"""

from __future__ import annotations

from docmem.backend import Stored
from docmem.errors import StoreUnavailable, VersionConflict, WriteOutcomeUnknown

from .collection import Collection
from .commitlog import Listing, Parent, Verdict, digest, object_name, parse_version, wrap
from .folders import KeyFolders
from .recent import Recent

__all__ = ["write"]


def write(
    folders: KeyFolders,
    recent: Recent,
    collection: Collection,
    key: str,
    data: bytes,
    *,
    expected: str | None,
) -> str:
    """Create the version after ``expected`` (``None``: the first) and return its token."""
    folder = folders.folder(key)
    payload = bytes(data)
    if expected is None:
        listing, _ = folders._list(key)
        if listing.current is not None:
            raise VersionConflict("create-only write, but the key exists")
        revision, parent = listing.top + 1, None
    else:
        parent = _base(folders, recent, key, expected)
        revision = parent.revision + 1
    blob = wrap(payload, parent)
    identity = digest(blob)
    started = folders._clock()
    try:
        folders._create(f"{folder}/{object_name(revision)}", blob)
    except VersionConflict:
        recent.lost_race(key)
        raise
    except WriteOutcomeUnknown:
        recent.forget(key)
        raise
    confirmed = _confirm(folders, recent, collection, key, revision, identity)
    version = object_name(revision)
    if confirmed is None or confirmed.versions[-1].revision == revision:
        stored = Stored(data=payload, version=version)
        recent.remember(key, stored, revision, started, identity)
    else:
        recent.forget(key)  # committed, and already built on: not the newest any more
    if confirmed is not None:
        collection.collect(folders, key, confirmed)
    return version


def _base(folders: KeyFolders, recent: Recent, key: str, expected: str) -> Parent:
    """The version a write on ``expected`` builds on, as its successor will record it.

    ``expected`` must be the current version: seen as the newest within
    ``max_staleness`` (if it is no longer, the create is refused, or lands
    on a freed name and :func:`_confirm` says so), or confirmed now by a
    listing of the names after it, on an object fetched before that
    listing if this process holds none (else VersionConflict).
    """
    revision = parse_version(expected)
    if revision is None:  # no name of this store; but an unreachable store says so first
        folders._list(key)
        raise VersionConflict("the expected version is not a version of this store")
    seen = recent.get(key)
    if seen is not None and seen.stored.version != expected:
        seen = None
    if seen is not None and recent.fresh(seen, folders._clock()):
        return Parent(revision=revision, digest=seen.digest)
    if seen is None:
        fetched = folders._fetch(f"{folders.folder(key)}/{expected}", expected)
        if fetched is None:
            raise VersionConflict("the expected version is not the current one")
        stored, identity = fetched
    else:
        stored, identity = seen.stored, seen.digest
    probed = folders._tail(key, expected)
    if probed is None or probed[0].supersedes(revision):
        raise VersionConflict("the expected version is not the current one")
    recent.remember(key, stored, revision, probed[1], identity)
    return Parent(revision=revision, digest=identity)


def _confirm(
    folders: KeyFolders,
    recent: Recent,
    collection: Collection,
    key: str,
    revision: int,
    identity: str,
) -> Listing | None:
    """Raise unless the version this process just created at ``revision`` is committed.

    Usually by one listing of the names after it (see the module docstring).
    Otherwise, and whenever garbage collection is due, the whole folder is
    listed and :meth:`Listing.verdict` decides; that listing is returned for
    the collection (``None``: only the short one was taken).
    """
    try:
        if not collection.due(key, folders._clock):
            probed = folders._tail(key, object_name(revision))
            if probed is not None and not probed[0].supersedes(revision):
                return None
        listing, since = folders._list(key)
        envelope = folders._envelope_of(listing.successor(revision))
    except StoreUnavailable:
        recent.forget(key)
        raise WriteOutcomeUnknown(
            "the version was created, but listing the key to confirm it failed"
        ) from None
    collection.listed(key, since)
    verdict = listing.verdict(revision, identity, envelope)
    if verdict is Verdict.COMMITTED:
        return listing
    if verdict is Verdict.NOT_COMMITTED:
        recent.lost_race(key)  # others wrote past the version this process had
        raise VersionConflict(
            "the version name had been freed and was created below the newest version; "
            "nobody reads it"
        )
    recent.forget(key)
    raise WriteOutcomeUnknown(
        "the version was created, but a concurrent delete or purge, or versions collected "
        "around it, leave open whether the current one descends from it"
    )
