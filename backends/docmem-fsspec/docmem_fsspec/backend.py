"""Any fsspec filesystem with an atomic exclusive create, as a versioned store.

Each key is a folder of immutable objects, ``<root>/<key>/<rev:016x>.md``
(the commit log, see :mod:`docmem_fsspec.commitlog`). A write with version
``<n>.md`` expected creates ``<n+1>.md`` only if that name is free; the store
refuses the loser of a race, so no update is lost. Reading lists the folder
and fetches the newest object.

Revision names must never be created twice, or a stale writer's create of a
deleted name would "succeed" while its object is not the newest. Three rules
(DESIGN section 4) keep that from going unnoticed:

1. A write is based only on a version this process saw as the newest within
   ``max_staleness`` seconds; an older or unknown one is checked by a listing
   first and is a :class:`VersionConflict` unless it is still the newest.
2. Garbage collection deletes a version only when it is not among the newest
   ``retain`` and its successor is more than ``grace`` seconds older than the
   newest object, by the store's clock. ``purge_history`` and ``delete`` free
   names at once, but leave a marker above them first.
3. After every create the folder is listed again: a marker at or above the new
   version, the new version missing, or more than ``grace`` seconds since the
   base version was seen make the outcome :class:`WriteOutcomeUnknown`, which
   :class:`docmem.FileMemory` settles through the document's journal.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import fsspec
import msgspec

from docmem.backend import (
    Backend,
    LruCache,
    PerProcess,
    Stored,
    check_key,
    url_flag,
    url_options,
)
from docmem.errors import (
    DocmemError,
    StoreBusy,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

from .commitlog import Entry, Kind, Listing, Verdict, object_name, parse_version
from .dialects import Dialect, dialect_for

__all__ = ["FsspecBackend", "Revision"]

logger = logging.getLogger("docmem_fsspec")

#: Schemes served directly; anything else is ``fsspec+<protocol>://``.
DIRECT_SCHEMES = ("gs", "gcs", "az", "abfs", "abfss")
_LOCAL_PROTOCOLS = ("file", "local")
_OPTION_NAMES = ("retain", "grace", "max_staleness", "assume_atomic_create", "cache_size")
#: A store that keeps whole seconds may round a timestamp down by up to this much.
_TIMESTAMP_SLACK = 1.0
#: Listings in a row that may each find their newest object collected before it is read.
_ATTEMPTS = 8
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


class Revision(msgspec.Struct, frozen=True):
    """One retained version of a key, as :meth:`FsspecBackend.history` lists it."""

    #: The revision number; the version token is ``object_name(revision)``.
    revision: int
    #: The version token a read of this version reports.
    version: str
    #: The store's timestamp of the object, seconds since the epoch (``None`` if it has none).
    modified: float | None
    size: int


class _Seen(msgspec.Struct, frozen=True):
    stored: Stored
    #: ``time.monotonic()`` when the request that showed it as the newest was sent.
    since: float


class FsspecBackend(Backend):
    """Documents as commit logs on an fsspec filesystem; see the module docstring.

    URLs: ``fsspec+<protocol>://<root>`` for any fsspec protocol (``fsspec+s3://bucket/prefix``,
    ``fsspec+file:///var/lib/memory``), and ``gs://``, ``gcs://``, ``az://``, ``abfs://``
    directly. Options (URL query or keywords): ``retain`` versions kept per key
    (default 8), ``grace`` seconds before a superseded version may be collected
    (default 600), ``max_staleness`` seconds a seen version may be written on
    without a new listing (default 60, less than ``grace``),
    ``assume_atomic_create`` (default false) and ``cache_size`` (default 1,024
    keys). Every other option goes to the filesystem (``endpoint_url``,
    ``account_name``, ...); URL query values are strings, so pass typed ones as
    keywords. Keep secrets in the environment the implementation reads:
    :attr:`options` carries storage options along when the store is pickled.
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
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        self.protocol = protocol
        self.scheme = scheme or f"fsspec+{protocol}"
        self.retain = int(retain)
        self.grace = float(grace)
        self.max_staleness = float(max_staleness)
        self.assume_atomic_create = bool(assume_atomic_create)
        self.cache_size = int(cache_size)
        self.storage_options = dict(storage_options or {})
        if self.retain < 1:
            raise StoreNotConfigured("retain must be at least 1: the newest version always stays")
        if not 0 < self.max_staleness < self.grace:
            raise StoreNotConfigured("max_staleness must be positive and less than grace")
        try:
            fs_class = fsspec.get_filesystem_class(protocol)
        except (ImportError, ValueError) as exc:
            extra = _EXTRAS.get(protocol)
            advice = f"pip install 'docmem-fsspec[{extra}]'" if extra else "install it"
            raise StoreNotConfigured(
                f"fsspec has no usable implementation of {protocol!r} "
                f"({type(exc).__name__}): {advice}"
            ) from None
        self._fs_class: type[Any] = fs_class
        self._local = protocol in _LOCAL_PROTOCOLS
        self.root = _root_path(fs_class, root, local=self._local)
        if not self.root:
            raise StoreNotConfigured(f"the {self.scheme}:// URL names no bucket or folder")
        self._dialect: Dialect = dialect_for(
            fs_class, assume_atomic_create=self.assume_atomic_create
        )
        # The newest version seen per key, and when; an older observation never replaces a newer.
        self._recent: LruCache[_Seen] = LruCache(
            max(self.cache_size, 1), keep=lambda old, new: old.since > new.since
        )
        # Keys whose last create lost a race: another client writes them, so read_recent
        # lists first (until a listing finds what this process had) instead of sending a
        # create that is bound to be refused.
        self._contended: set[str] = set()
        self._filesystems: PerProcess[tuple[Any, Any]] = PerProcess(self._build)

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
        merged = url_options(url, options)
        storage = dict(merged.pop("storage_options", None) or {})
        ours = {name: merged.pop(name) for name in _OPTION_NAMES if name in merged}
        storage.update(merged)
        try:
            return cls(
                protocol,
                parts.netloc + parts.path,
                scheme=scheme,
                retain=int(ours.get("retain", 8)),
                grace=float(ours.get("grace", 600.0)),
                max_staleness=float(ours.get("max_staleness", 60.0)),
                assume_atomic_create=url_flag(
                    ours.get("assume_atomic_create", False), option="assume_atomic_create"
                ),
                cache_size=int(ours.get("cache_size", 1024)),
                storage_options=storage,
            )
        except ValueError:
            raise StoreNotConfigured(
                "retain, grace, max_staleness and cache_size are numbers"
            ) from None

    # -- identity --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.root}"

    @property
    def options(self) -> dict[str, Any]:
        return {
            "retain": self.retain,
            "grace": self.grace,
            "max_staleness": self.max_staleness,
            "assume_atomic_create": self.assume_atomic_create,
            "cache_size": self.cache_size,
            **self.storage_options,
        }

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
        reader, _ = self.filesystems()
        for _attempt in range(_ATTEMPTS):
            listing, since = self._list(key)
            current = listing.current
            if current is None:
                self._recent.drop(key)
                return None
            seen = self._recent.get(key)
            if seen is not None and seen.stored.version == current.name:
                # A version name is never current twice, so its bytes are the ones we have;
                # and nobody wrote since this process did: the key is no longer contended.
                stored = seen.stored
                self._contended.discard(key)
            else:
                try:
                    data = self._dialect.fetch(reader, current.path)
                except FileNotFoundError:
                    continue  # collected since the listing: list again
                except Exception as exc:
                    raise _unavailable("read", exc) from None
                stored = Stored(data=data, version=current.name)
            self._recent.put(key, _Seen(stored=stored, since=since))
            return stored
        raise StoreUnavailable(f"the newest version kept vanishing over {_ATTEMPTS} listings")

    def read_recent(self, key: str) -> Stored | None:
        """The version this process saw last, if within ``max_staleness``; else :meth:`read`.

        A key another client has been writing is listed instead, so that a save
        does not send a create bound to be refused.
        """
        seen = self._recent.get(check_key(key)) if key not in self._contended else None
        if seen is not None and time.monotonic() - seen.since < self.max_staleness:
            return seen.stored
        return self.read(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        folder = self.folder(key)
        payload = bytes(data)
        if expected is None:
            listing, since = self._list(key)
            if listing.current is not None:
                raise VersionConflict("create-only write, but the key exists")
            revision = listing.top + 1
        else:
            since = self._seen_since(key, expected)
            revision = _revision_of(expected) + 1
        _, writer = self.filesystems()
        started = time.monotonic()
        try:
            self._dialect.create(writer, f"{folder}/{object_name(revision)}", payload)
        except VersionConflict:
            self._recent.drop(key)
            if len(self._contended) >= self.cache_size:
                self._contended.clear()  # bounded; forgetting costs one refused create later
            self._contended.add(key)
            raise
        except WriteOutcomeUnknown:
            self._recent.drop(key)
            raise
        try:
            listing, _ = self._list(key)
        except StoreUnavailable:
            self._recent.drop(key)
            raise WriteOutcomeUnknown(
                "the version was created, but listing the key to confirm it failed"
            ) from None
        if time.monotonic() - since >= self.grace or listing.verdict(revision) is Verdict.UNKNOWN:
            self._recent.drop(key)
            raise WriteOutcomeUnknown(
                "the version was created, but a concurrent delete or purge, or a pause longer "
                "than the grace period, leaves open whether it is the current one"
            )
        version = object_name(revision)
        if listing.versions[-1].revision == revision:
            self._recent.put(
                key, _Seen(stored=Stored(data=payload, version=version), since=started)
            )
        else:
            self._recent.drop(key)
        self._collect(listing.expired(retain=self.retain, grace=self.grace + _TIMESTAMP_SLACK))
        return version

    def delete(self, key: str) -> None:
        """Remove every version of ``key``, leaving one content-free tombstone above them."""
        folder = self.folder(key)
        self._recent.drop(key)
        _, writer = self.filesystems()
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
                    self._dialect.create(
                        writer, f"{folder}/{object_name(tombstone, Kind.TOMBSTONE)}", b""
                    )
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
        _, writer = self.filesystems()
        marker = f"{folder}/{object_name(current.revision, Kind.PURGE)}"
        try:
            self._dialect.create(writer, marker, b"")
        except VersionConflict:
            pass  # another purge of the same version left it already
        except WriteOutcomeUnknown:
            raise StoreUnavailable(
                "could not confirm the purge marker; nothing was purged"
            ) from None
        self._remove(older)

    def keys(self) -> Iterator[str]:
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
        """The retained versions of ``key``, oldest first (the current one last).

        What an operator needs to see what a memory looked like before a
        change; read one with :meth:`read_version`. Empty after a delete.
        """
        listing, _ = self._list(key)
        current = listing.current
        if current is None:
            return []
        return [
            Revision(
                revision=entry.revision,
                version=entry.name,
                modified=entry.modified,
                size=entry.size,
            )
            for entry in listing.versions
            if entry.revision <= current.revision
        ]

    def read_version(self, key: str, version: str) -> Stored | None:
        """The bytes of one retained version, or ``None`` once it is collected or purged."""
        folder = self.folder(key)
        if parse_version(version) is None:
            return None
        reader, _ = self.filesystems()
        try:
            data = self._dialect.fetch(reader, f"{folder}/{version}")
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise _unavailable("read", exc) from None
        return Stored(data=data, version=version)

    def close(self) -> None:
        self._filesystems.reset()

    # -- internals -------------------------------------------------------------

    def _list(self, key: str) -> tuple[Listing, float]:
        """The key's objects, and ``time.monotonic()`` from before the request was sent."""
        folder = self.folder(key)
        reader, _ = self.filesystems()
        since = time.monotonic()
        try:
            infos = self._dialect.list_folder(reader, folder)
        except FileNotFoundError:
            raise StoreUnavailable(f"the {self.scheme} store's root does not exist") from None
        except NotADirectoryError:
            raise StoreUnavailable(
                "the key's folder is a file: not a docmem-fsspec store"
            ) from None
        except Exception as exc:
            raise _unavailable("list", exc) from None
        if infos is None:  # a missing folder is a missing key, if the root is there
            self._require_root()
            infos = []
        return Listing.from_infos(infos, folder=folder), since

    def _seen_since(self, key: str, expected: str) -> float:
        """When ``expected`` was last seen as the newest (rule 1), listing once if need be."""
        seen = self._recent.get(key)
        if (
            seen is not None
            and seen.stored.version == expected
            and time.monotonic() - seen.since < self.max_staleness
        ):
            return seen.since
        listing, since = self._list(key)
        current = listing.current
        if current is None or current.name != expected:
            self._recent.drop(key)
            raise VersionConflict("the expected version is not the current one")
        return since

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

    def _collect(self, expired: list[Entry]) -> None:
        """Best-effort garbage collection after a write: failures are only logged."""
        if not expired:
            return
        try:
            self._remove(expired)
        except StoreUnavailable as exc:
            logger.debug("garbage collection stopped: %s", exc.message)


def _revision_of(token: str) -> int:
    revision = parse_version(token)
    if revision is None:
        raise VersionConflict("the expected version is not a version of this store")
    return revision


def _root_path(fs_class: type[Any], root: str, *, local: bool) -> str:
    if local:
        return os.path.abspath(root) if root else ""
    return str(fs_class._strip_protocol(root)).rstrip("/") if root else ""


def _unavailable(operation: str, exc: BaseException) -> StoreUnavailable:
    return StoreUnavailable(f"the {operation} failed ({type(exc).__name__})")
