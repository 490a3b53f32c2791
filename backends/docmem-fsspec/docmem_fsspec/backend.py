"""Any fsspec filesystem with an atomic exclusive create, as a versioned store.

Each key is a folder of immutable objects, ``<root>/<key>/<rev:016x>.md``
(the commit log, see :mod:`docmem_fsspec.commitlog`). A write with version
``<n>.md`` expected creates ``<n+1>.md`` only if that name is free; the store
refuses the loser of a race, so no update is lost.

A read of a key this process has read or written lists only the names after
the version it holds (on S3 one ``ListObjectsV2`` from ``StartAfter``, short
however long the folder): nothing there supersedes that version, so its
bytes are still the current ones; else the newest version listed there is
fetched. Only a first read lists the whole folder and fetches its newest.

Garbage collection frees the names of old versions, and a writer that still
aims at a freed name would re-create it below the newest version. So each
version records the version it was built on (its revision and the digest of
its object), and after every create the names after it are listed: nothing
there supersedes it, so it is committed (a freed name lies below an object
that stays, which would be listed there). Otherwise the whole folder is
listed, and the write counts only if its object is the newest, or the version
above it was built on it. A create that landed below the newest version is a
:class:`VersionConflict` (its object is garbage no reader picks); one that
cannot be judged (a purge or delete ran meanwhile, or the versions around it
are gone) is :class:`WriteOutcomeUnknown`, which :class:`docmem.FileMemory`
settles through the document's journal.

No clock takes part in any of those decisions, so neither a writer paused
past ``grace`` nor a store clock that steps can make one wrong. The store's
timestamps only pace garbage collection (a version goes once it is not among
the newest ``retain`` and its successor is more than ``grace`` seconds older
than the newest object), which runs on a full listing taken after a write at
most once per quarter of ``grace`` per key and process; ``max_staleness``
only saves a create that is bound to be refused (a version seen longer ago is
confirmed by a listing first).

All of that rests on the store refusing a second create of one name, which a
filesystem's class only promises: before its first create, each store object
checks it once per process on a probe object (:mod:`docmem_fsspec.probe`).
"""

from __future__ import annotations

import collections
import enum
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import fsspec
import msgspec

from docmem.backend import (
    Backend,
    ContendedKeys,
    LruCache,
    PerProcess,
    Stored,
    check_key,
)
from docmem.errors import (
    DocmemError,
    DocumentCorrupt,
    StoreBusy,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem.options import Seconds, check_options, split_options

from . import probe
from .commitlog import (
    Entry,
    Envelope,
    Kind,
    Listing,
    Parent,
    Verdict,
    digest,
    object_name,
    parse_version,
    unwrap,
    wrap,
)
from .dialects import Dialect, dialect_for
from .marker import require_store

__all__ = ["FsspecBackend", "FsspecOptions", "Revision"]

logger = logging.getLogger("docmem_fsspec")

#: Schemes served directly; anything else is ``fsspec+<protocol>://``.
DIRECT_SCHEMES = ("gs", "gcs", "az", "abfs", "abfss")
_LOCAL_PROTOCOLS = ("file", "local")
#: A store that keeps whole seconds may round a timestamp down by up to this much.
_TIMESTAMP_SLACK = 1.0
#: Listings in a row that may each find their newest object collected before it is read.
_ATTEMPTS = 8
#: Garbage collection lists a key in full at most once per this share of ``grace``: a
#: version can go only once its successor is ``grace`` old, so more often frees little.
_COLLECT_EVERY = 0.25
_T = TypeVar("_T")
#: Which extra installs the implementation of a protocol.
_EXTRAS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
}


class FsspecOptions(msgspec.Struct, frozen=True, kw_only=True):
    """docmem-fsspec's own options (URL query or keywords; see :mod:`docmem.options`).

    Every other option goes to the filesystem; :class:`FsspecBackend` documents each one.
    """

    retain: Annotated[
        int,
        msgspec.Meta(
            ge=1, description="a whole number of at least 1 (the newest version always stays)"
        ),
    ] = 8
    grace: Seconds = 600.0
    max_staleness: Seconds = 60.0
    assume_atomic_create: bool = False
    cache_size: Annotated[
        int, msgspec.Meta(ge=0, description="a whole number of at least 0 (keys remembered)")
    ] = 1024
    create: bool = False

    def __post_init__(self) -> None:
        # A version seen longer ago than grace may be collected: see the module docstring.
        if self.max_staleness >= self.grace:
            raise ValueError("max_staleness must be less than grace")


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


class _Seen(msgspec.Struct, frozen=True):
    """A version this process saw as the current one, and holds the object of."""

    stored: Stored
    revision: int
    #: The backend's clock when the request that showed it as the newest was sent.
    since: float
    #: The digest of its whole object: what a version built on it records as its parent.
    digest: str


class _Relist(enum.Enum):
    """A short listing could not settle a read: list the whole folder."""

    RELIST = "relist"


class FsspecBackend(Backend):
    """Documents as commit logs on an fsspec filesystem; see the module docstring.

    URLs: ``fsspec+<protocol>://<root>`` for any fsspec protocol (``fsspec+s3://bucket/prefix``,
    ``fsspec+file:///var/lib/memory``), and ``gs://``, ``gcs://``, ``az://``, ``abfs://``
    directly. Options (URL query or keywords): ``retain`` versions kept per key
    (default 8), ``grace`` seconds before a superseded version may be collected
    (default 600), ``max_staleness`` seconds a seen version may be written on
    without a new listing (default 60, less than ``grace``),
    ``assume_atomic_create`` (default false), ``cache_size`` (default 1,024
    keys) and, for ``fsspec+file://`` only, ``create`` (default false: the
    root must already be a store). Every other option goes to the filesystem
    (``endpoint_url``, ``account_name``, ...); URL query values are strings, so
    pass typed ones as keywords. Keep secrets in the environment the
    implementation reads: :attr:`options` carries storage options along when
    the store is pickled.
    """

    shared_between_processes = True
    recent_reads_may_be_stale = True

    def __init__(
        self,
        protocol: str,
        root: str,
        *,
        scheme: str | None = None,
        retain: int = 8,
        grace: float = 600.0,
        max_staleness: float = 60.0,
        assume_atomic_create: bool = False,
        cache_size: int = 1024,
        create: bool = False,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        self.protocol = protocol
        self.scheme = scheme or f"fsspec+{protocol}"
        given = {
            "retain": retain,
            "grace": grace,
            "max_staleness": max_staleness,
            "assume_atomic_create": assume_atomic_create,
            "cache_size": cache_size,
            "create": create,
        }
        checked = check_options(FsspecOptions, given, scheme=self.scheme)
        self.retain = checked.retain
        self.grace = checked.grace
        self.max_staleness = checked.max_staleness
        self.cache_size = checked.cache_size
        self.assume_atomic_create = checked.assume_atomic_create
        self.create = checked.create
        self.storage_options = dict(storage_options or {})
        self._local = protocol in _LOCAL_PROTOCOLS
        if self.create and not self._local:
            raise StoreNotConfigured(
                "create applies to fsspec+file:// only: make the bucket or container outside docmem"
            )
        self._fs_class: type[Any] = _filesystem_class(protocol)
        self.root = _root_path(self._fs_class, root, local=self._local)
        if not self.root:
            raise StoreNotConfigured(f"the {self.scheme}:// URL names no bucket or folder")
        self._dialect: Dialect = dialect_for(
            self._fs_class, assume_atomic_create=self.assume_atomic_create
        )
        # The newest version seen per key, and when; an older observation never replaces a newer.
        self._recent: LruCache[_Seen] = LruCache(
            max(self.cache_size, 1), keep=lambda old, new: old.since > new.since
        )
        # Keys whose last create lost a race: another client writes them, so read_recent
        # lists first (until a listing finds what this process had) instead of sending a
        # create that is bound to be refused.
        self._contended = ContendedKeys(self.cache_size)
        # When this process last listed each key in full after a write (by _clock).
        self._collected: LruCache[float] = LruCache(max(self.cache_size, 1))
        self._filesystems: PerProcess[tuple[Any, Any]] = PerProcess(self._build)
        # Whether the store refuses a second create of one name: checked before this
        # process's first create through this store object, and again in a forked child.
        self._checked: PerProcess[bool] = PerProcess(self._check_creates)
        # Seconds that only ever go forward; decides nothing about a write's outcome (see the
        # module docstring), only freshness and pacing. A test may swap in its own clock.
        self._clock: Callable[[], float] = time.monotonic

    @classmethod
    def from_url(cls, url: str, **options: Any) -> FsspecBackend:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme.startswith("fsspec+"):
            protocol = scheme[len("fsspec+") :]
        elif scheme in DIRECT_SCHEMES:
            protocol = scheme
        else:
            raise StoreNotConfigured(
                "docmem-fsspec URLs are fsspec+<protocol>://... (for example fsspec+s3://bucket) "
                f"or one of {', '.join(s + '://' for s in DIRECT_SCHEMES)}"
            )
        ours, rest = split_options(FsspecOptions, url, options, scheme=scheme)
        storage = dict(rest.pop("storage_options", None) or {})
        storage.update(rest)
        return cls(
            protocol,
            parts.netloc + parts.path,
            scheme=scheme,
            **msgspec.structs.asdict(ours),
            storage_options=storage,
        )

    # -- identity --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.root}"

    @property
    def options(self) -> dict[str, Any]:
        ours: dict[str, Any] = {
            "retain": self.retain,
            "grace": self.grace,
            "max_staleness": self.max_staleness,
            "assume_atomic_create": self.assume_atomic_create,
            "cache_size": self.cache_size,
        }
        if self.create:
            ours["create"] = True
        return {**ours, **self.storage_options}

    def folder(self, key: str) -> str:
        """Where the objects of ``key`` live: ``<root>/<key>``."""
        return f"{self.root}/{check_key(key)}"

    # -- filesystems -----------------------------------------------------------

    def filesystems(self) -> tuple[Any, Any]:
        """(reader, writer): built on first use and again in a forked child."""
        return self._filesystems.get()

    def _build(self) -> tuple[Any, Any]:
        # Listing caches would hide other writers' versions: every listing asks the store.
        fixed = {"skip_instance_cache": True, "use_listings_cache": False}
        try:
            reader = self._fs_class(**self.storage_options, **fixed)
            writer_options = self._dialect.writer_options(self.storage_options)
            if writer_options is None:
                self._dialect.prepare(reader, writer=True)
                return reader, reader
            writer = self._fs_class(**writer_options, **fixed)
            self._dialect.prepare(reader, writer=False)
            self._dialect.prepare(writer, writer=True)
            return reader, writer
        except DocmemError:
            raise
        except Exception as exc:
            raise StoreNotConfigured(
                f"cannot open the {self.protocol} filesystem ({type(exc).__name__}): "
                "check the storage options"
            ) from None

    # -- the Backend contract --------------------------------------------------

    def read(self, key: str) -> Stored | None:
        seen = self._recent.get(key)
        if seen is not None:
            found = self._read_after(key, seen)
            if found is not _Relist.RELIST:
                return found
        for _attempt in range(_ATTEMPTS):
            listing, since = self._list(key)
            current = listing.current
            if current is None:
                self._recent.drop(key)
                return None
            seen = self._recent.get(key)
            if seen is not None and seen.stored.version == current.name:
                # The newest version's name is never re-created (only names below the newest
                # are freed), so its bytes are the ones we have; and nobody wrote since this
                # process did: the key is no longer contended.
                self._contended.discard(key)
                self._remember(key, seen.stored, current.revision, since, seen.digest)
                return seen.stored
            fetched = self._fetch(current.path, current.name)
            if fetched is None:
                continue  # collected since the listing: list again
            stored, identity = fetched
            self._remember(key, stored, current.revision, since, identity)
            return stored
        raise StoreUnavailable(f"the newest version kept vanishing over {_ATTEMPTS} listings")

    def _read_after(self, key: str, seen: _Seen) -> Stored | _Relist | None:
        """Read by listing only the names after the version this process holds.

        Nothing there supersedes it: it is still the current version (see
        :mod:`docmem_fsspec.commitlog`), however long ago it was seen. Else the
        names there decide as the whole folder would, since every version
        above it and every tombstone at or above it are among them.
        """
        probed = self._tail(key, seen.stored.version)
        if probed is None:
            return _Relist.RELIST
        tail, since = probed
        if not tail.supersedes(seen.revision):
            self._contended.discard(key)  # nobody wrote since this process did
            self._remember(key, seen.stored, seen.revision, since, seen.digest)
            return seen.stored
        current = tail.current
        if current is None:  # deleted: a tombstone at or above every version
            self._recent.drop(key)
            return None
        fetched = self._fetch(current.path, current.name)
        if fetched is None:
            return _Relist.RELIST  # collected since the listing
        stored, identity = fetched
        self._remember(key, stored, current.revision, since, identity)
        return stored

    def read_recent(self, key: str) -> Stored | None:
        """The version this process saw last, if within ``max_staleness``; else :meth:`read`.

        A key another client has been writing is listed instead, so that a save
        does not send a create bound to be refused.
        """
        return self._contended.read_recent(key, cached=self._seen_lately, read=self.read)

    def _seen_lately(self, key: str) -> Stored | None:
        """The version this process saw last, if it was the newest within ``max_staleness``."""
        seen = self._recent.get(key)
        if seen is not None and self._clock() - seen.since < self.max_staleness:
            return seen.stored
        return None

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        folder = self.folder(key)
        payload = bytes(data)
        if expected is None:
            listing, _ = self._list(key)
            if listing.current is not None:
                raise VersionConflict("create-only write, but the key exists")
            revision, parent = listing.top + 1, None
        else:
            parent = self._base(key, expected)
            revision = parent.revision + 1
        blob = wrap(payload, parent)
        identity = digest(blob)
        started = self._clock()
        try:
            self._create(f"{folder}/{object_name(revision)}", blob)
        except VersionConflict:
            self._mark_contended(key)
            raise
        except WriteOutcomeUnknown:
            self._recent.drop(key)
            raise
        confirmed = self._confirm(key, revision, identity)
        version = object_name(revision)
        if confirmed is None or confirmed.versions[-1].revision == revision:
            stored = Stored(data=payload, version=version)
            self._remember(key, stored, revision, started, identity)
        else:
            self._recent.drop(key)  # committed, and already built on: not the newest any more
        if confirmed is not None:
            self._collect(key, confirmed)
        return version

    def delete(self, key: str) -> None:
        """Remove every version of ``key``, leaving one content-free tombstone above them."""
        folder = self.folder(key)
        self._recent.drop(key)
        for _attempt in range(_ATTEMPTS):
            listing, _ = self._list(key)
            if not listing.versions:
                return
            top = listing.entries[-1]
            if top.kind is Kind.TOMBSTONE:
                tombstone = top.revision
            else:
                tombstone = listing.top + 1
                try:
                    self._create(f"{folder}/{object_name(tombstone, Kind.TOMBSTONE)}", b"")
                except (VersionConflict, WriteOutcomeUnknown):
                    continue  # list again: that revision was taken, or our tombstone is there
                listing, _ = self._list(key)  # what was created before the tombstone landed
            self._remove(
                entry
                for entry in listing.entries
                if entry.revision <= tombstone
                and not (entry.kind is Kind.TOMBSTONE and entry.revision == tombstone)
            )
            return
        raise StoreBusy(f"the delete kept racing with writers over {_ATTEMPTS} attempts")

    def purge_history(self, key: str) -> None:
        """Delete every version below the current one now, after leaving a purge marker."""
        folder = self.folder(key)
        listing, _ = self._list(key)
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
            self._create(marker, b"")
        except VersionConflict:
            pass  # another purge of the same version left it already
        except WriteOutcomeUnknown:
            raise StoreUnavailable(
                "could not confirm the purge marker; nothing was purged"
            ) from None
        self._remove(older)

    def keys(self) -> Iterator[str]:
        if not self._require_store(writing=False):
            return
        reader, _ = self.filesystems()
        try:
            found = reader.find(self.root, detail=True)
        except FileNotFoundError:
            found = {}
        except Exception as exc:
            raise _unavailable("list", exc) from None
        if not found:
            self._require_root()  # an empty answer from a missing bucket is no answer
        by_key: dict[str, list[Any]] = collections.defaultdict(list)
        prefix = self.root.rstrip("/") + "/"
        for path, info in dict(found).items():
            relative = str(path)[len(prefix) :] if str(path).startswith(prefix) else ""
            key, slash, _ = relative.partition("/")
            if slash:
                by_key[key].append(info)
        for key, infos in sorted(by_key.items()):
            if Listing.from_infos(infos, folder=f"{prefix}{key}").current is not None:
                yield key

    def history(self, key: str) -> list[Revision]:
        """The retained versions of ``key`` that the current one descends from, oldest first.

        What an operator needs to see what a memory looked like before a
        change; read one with :meth:`read_version`. It follows the parent
        each version records, from the current one down, so an object a stale
        writer left below the newest version (garbage) is not shown; a version
        written by the previous release (which records no parent) is taken to
        follow the one below it. Empty after a delete.
        """
        listing, _ = self._list(key)
        entry = listing.current
        chain: list[Revision] = []
        expected: str | None = None  # the digest the next version down must have
        while entry is not None:
            fetched = self._fetch_object(entry.path)
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

    def read_version(self, key: str, version: str) -> Stored | None:
        """The bytes of one retained version, or ``None`` once it is collected or purged."""
        folder = self.folder(key)
        if parse_version(version) is None:
            return None
        fetched = self._fetch(f"{folder}/{version}", version)
        return None if fetched is None else fetched[0]

    def close(self) -> None:
        self._filesystems.reset()

    # -- the first-write check -------------------------------------------------

    def verify(self) -> None:
        """Check that the store refuses a second create of one name, before the first create.

        Once per store object and process (a forked child checks again): the
        creates of concurrent first writes wait for one check. A store that
        fails it is refused with :class:`ConditionsNotHonoured` (see
        :mod:`docmem_fsspec.probe`), and so is every later write through it,
        each after checking again; a check that could not finish is
        ``StoreUnavailable`` and is tried again by the next write.
        """
        self._require_store(writing=True)  # a local store to be created is made first
        self._checked.get()

    def _check_creates(self) -> bool:
        """The check :meth:`verify` runs once per process (``True``: it held)."""
        reader, writer = self.filesystems()
        probe.check(self._dialect, reader, writer, self.root, scheme=self.scheme)
        return True

    def _create(self, path: str, data: bytes) -> None:
        """Create ``path`` through the dialect if it is free, the store verified first."""
        self.verify()
        _, writer = self.filesystems()
        self._dialect.create(writer, path, data)

    # -- internals -------------------------------------------------------------

    def _list(self, key: str) -> tuple[Listing, float]:
        """The key's objects, and the clock's time from before the request was sent."""
        folder = self.folder(key)
        since = self._clock()
        if not self._require_store(writing=False):
            return Listing(()), since  # a store to be created: nothing in it yet
        reader, _ = self.filesystems()
        infos = self._listing(lambda: self._dialect.list_folder(reader, folder))
        if infos is None:  # a missing folder is a missing key, if the root is there
            self._require_root()
            infos = []
        return Listing.from_infos(infos, folder=folder), since

    def _tail(self, key: str, name: str) -> tuple[Listing, float] | None:
        """The key's objects whose names sort after ``name``, and the time before asking.

        ``None`` when the folder is missing or the store is not created yet: a
        version this process holds is gone with it, and the full listing says
        what there is instead.
        """
        folder = self.folder(key)
        since = self._clock()
        if not self._require_store(writing=False):
            return None
        reader, _ = self.filesystems()
        infos = self._listing(lambda: self._dialect.list_after(reader, folder, name))
        if infos is None:
            return None
        return Listing.from_infos(infos, folder=folder).after(name), since

    def _listing(self, request: Callable[[], _T]) -> _T:
        """``request()``, a listing, with the filesystem's failures turned into docmem's."""
        try:
            return request()
        except FileNotFoundError:
            raise StoreUnavailable(f"the {self.scheme} store's root does not exist") from None
        except NotADirectoryError:
            raise StoreUnavailable(
                "the key's folder is a file: not a docmem-fsspec store"
            ) from None
        except Exception as exc:
            raise _unavailable("list", exc) from None

    def _remember(
        self, key: str, stored: Stored, revision: int, since: float, identity: str
    ) -> None:
        """Note ``stored`` as the current version, as a request sent at ``since`` showed it."""
        self._recent.put(key, _Seen(stored=stored, revision=revision, since=since, digest=identity))

    def _fetch_object(self, path: str) -> bytes | None:
        """A whole object (envelope included); ``None`` once it is gone."""
        reader, _ = self.filesystems()
        try:
            return self._dialect.fetch(reader, path)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise _unavailable("read", exc) from None

    def _fetch(self, path: str, version: str) -> tuple[Stored, str] | None:
        """A version as a read returns it, and the digest of its object; ``None`` if gone."""
        blob = self._fetch_object(path)
        if blob is None:
            return None
        _, data = unwrap(blob)
        return Stored(data=data, version=version), digest(blob)

    def _base(self, key: str, expected: str) -> Parent:
        """The version a write on ``expected`` builds on, as its successor will record it.

        ``expected`` must be the current version: seen as the newest within
        ``max_staleness`` (if it is no longer, the create is refused, or lands
        on a freed name and :meth:`_confirm` says so), or confirmed now by a
        listing of the names after it, on an object fetched before that
        listing if this process holds none (else VersionConflict).
        """
        revision = parse_version(expected)
        if revision is None:  # no name of this store; but an unreachable store says so first
            self._list(key)
            raise VersionConflict("the expected version is not a version of this store")
        seen = self._recent.get(key)
        if seen is not None and seen.stored.version != expected:
            seen = None
        if seen is not None and self._clock() - seen.since < self.max_staleness:
            return Parent(revision=revision, digest=seen.digest)
        if seen is None:
            fetched = self._fetch(f"{self.folder(key)}/{expected}", expected)
            if fetched is None:
                raise VersionConflict("the expected version is not the current one")
            stored, identity = fetched
        else:
            stored, identity = seen.stored, seen.digest
        probed = self._tail(key, expected)
        if probed is None or probed[0].supersedes(revision):
            raise VersionConflict("the expected version is not the current one")
        self._remember(key, stored, revision, probed[1], identity)
        return Parent(revision=revision, digest=identity)

    def _confirm(self, key: str, revision: int, identity: str) -> Listing | None:
        """Raise unless the version this process just created at ``revision`` is committed.

        Usually by one listing of the names after it: nothing there supersedes
        it, so it is the current version, and the name was free because it had
        never been used (a freed name lies below an object that stays, which
        would be listed there; see :mod:`docmem_fsspec.commitlog`). Otherwise,
        and whenever garbage collection is due, the whole folder is listed and
        :meth:`Listing.verdict` decides; that listing is returned for the
        collection (``None``: only the short one was taken).
        """
        try:
            if not self._collection_due(key):
                probed = self._tail(key, object_name(revision))
                if probed is not None and not probed[0].supersedes(revision):
                    return None
            listing, since = self._list(key)
            envelope = self._envelope_of(listing.successor(revision))
        except StoreUnavailable:
            self._recent.drop(key)
            raise WriteOutcomeUnknown(
                "the version was created, but listing the key to confirm it failed"
            ) from None
        self._collected.put(key, since)
        verdict = listing.verdict(revision, identity, envelope)
        if verdict is Verdict.COMMITTED:
            return listing
        if verdict is Verdict.NOT_COMMITTED:
            self._mark_contended(key)  # others wrote past the version this process had
            raise VersionConflict(
                "the version name had been freed and was created below the newest version; "
                "nobody reads it"
            )
        self._recent.drop(key)
        raise WriteOutcomeUnknown(
            "the version was created, but a concurrent delete or purge, or versions collected "
            "around it, leave open whether the current one descends from it"
        )

    def _collection_due(self, key: str) -> bool:
        """Whether this process last listed ``key`` in full after a write a while ago, or never."""
        last = self._collected.get(key)
        return last is None or self._clock() - last >= self.grace * _COLLECT_EVERY

    def _envelope_of(self, entry: Entry | None) -> Envelope | None:
        """What ``entry`` records as its parent; ``None`` if gone, damaged or of the old format."""
        if entry is None:
            return None
        blob = self._fetch_object(entry.path)
        if blob is None:
            return None
        try:
            return unwrap(blob)[0]
        except DocumentCorrupt:
            return None  # a damaged successor says nothing about this write

    def _mark_contended(self, key: str) -> None:
        self._recent.drop(key)
        self._contended.add(key)

    def _require_store(self, *, writing: bool) -> bool:
        """Whether the store exists (``False``: it may be created, and is not yet).

        A local root must carry the marker (see :mod:`docmem_fsspec.marker`);
        elsewhere the bucket or container is checked where a missing one could
        pass for an empty key.
        """
        if not self._local:
            return True
        return require_store(self.root, create=self.create, writing=writing)

    def _require_root(self) -> None:
        """A missing key is fine; a missing bucket, container or root folder is not."""
        reader, _ = self.filesystems()
        top = self.root if self._local else (self.root.split("/", 1)[0] or self.root)
        try:
            present = os.path.isdir(top) if self._local else reader.exists(top)
        except Exception as exc:
            raise _unavailable("list", exc) from None
        if not present:
            raise StoreUnavailable(f"the {self.scheme} store's root does not exist")

    def _remove(self, entries: Iterator[Entry] | list[Entry]) -> None:
        """Delete objects oldest first; a failure stops and is raised (nothing skipped over)."""
        reader, _ = self.filesystems()
        for entry in sorted(entries):
            try:
                reader.rm_file(entry.path)
            except FileNotFoundError:
                continue
            except Exception as exc:
                raise _unavailable("delete", exc) from None

    def _collect(self, key: str, listing: Listing) -> None:
        """Best-effort garbage collection after a write: failures are only logged.

        Old versions and purge markers go by the store's timestamps, and so do
        temporary files a crashed local create left behind.
        """
        grace = self.grace + _TIMESTAMP_SLACK
        leftovers = [leftover.path for leftover in listing.stale_leftovers(grace=grace)]
        if leftovers:
            reader, _ = self.filesystems()
            swept = self._dialect.sweep(reader, leftovers)
            logger.debug("docmem-fsspec: swept %d temporary files of %s", swept, key)
        expired = listing.expired(retain=self.retain, grace=grace)
        if not expired:
            return
        try:
            self._remove(expired)
        except StoreUnavailable as exc:
            logger.debug("garbage collection stopped: %s", exc.message)


def _filesystem_class(protocol: str) -> type[Any]:
    try:
        return fsspec.get_filesystem_class(protocol)  # type: ignore[no-any-return]
    except (ImportError, ValueError) as exc:
        extra = _EXTRAS.get(protocol)
        advice = f"pip install 'agent-docmem-fsspec[{extra}]'" if extra else "install it"
        raise StoreNotConfigured(
            f"fsspec has no usable implementation of {protocol!r} ({type(exc).__name__}): {advice}"
        ) from None


def _revision(entry: Entry, size: int) -> Revision:
    return Revision(revision=entry.revision, version=entry.name, modified=entry.modified, size=size)


def _root_path(fs_class: type[Any], root: str, *, local: bool) -> str:
    if local:
        return os.path.abspath(root) if root else ""
    return str(fs_class._strip_protocol(root)).rstrip("/") if root else ""


def _unavailable(operation: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"the {operation} failed ({type(exc).__name__})")
