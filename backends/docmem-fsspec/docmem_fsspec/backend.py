"""Any fsspec filesystem with an atomic exclusive create, as a versioned store.

Each key is a folder of immutable objects, ``<root>/<key>/<rev:016x>.md``: a
commit log (docs/design.md, section 4.1; the format is
:mod:`docmem_fsspec.commitlog`'s). :class:`FsspecBackend` only puts the parts
together, each in a module of its own:

- :mod:`~docmem_fsspec.opening`: what a URL and its options mean;
- :mod:`~docmem_fsspec.folders`: every request on a key's objects, its
  failures turned into docmem's (the class this one builds on), on the
  clients :mod:`~docmem_fsspec.filesystems` builds;
- :mod:`~docmem_fsspec.recent`: the version this process holds of each key;
- :mod:`~docmem_fsspec.reading` and :mod:`~docmem_fsspec.writing`: the
  listings that settle a read, and a write's create and confirmation;
- :mod:`~docmem_fsspec.collection`: garbage collection after a write;
- :mod:`~docmem_fsspec.purging`: ``delete`` and ``purge_history``;
- :mod:`~docmem_fsspec.history` and :mod:`~docmem_fsspec.catalog`: what an
  operator lists, a key's older versions and the store's keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from docmem.backend import Backend, KeptVersion, Stored
from docmem.options import check_options

from . import purging, reading, writing
from .catalog import stored_keys
from .collection import Collection
from .folders import KeyFolders
from .history import Revision, descent, fetch_version
from .opening import DIRECT_SCHEMES, FsspecOptions, parse_url
from .recent import Recent

__all__ = ["DIRECT_SCHEMES", "FsspecBackend", "FsspecOptions", "Revision"]


class FsspecBackend(KeyFolders, Backend):
    """Documents as commit logs on an fsspec filesystem; see docs/design.md, section 4.1.

    URLs: ``fsspec+<protocol>://<root>`` for any fsspec protocol
    (``fsspec+s3://bucket/prefix``, ``fsspec+file:///var/lib/memory``), and ``abfs://`` and
    ``abfss://`` directly (``gs://`` and ``az://`` are the native plug-ins'). Options (URL
    query or keywords): ``retain`` versions kept per key (default 8), ``grace`` seconds
    before a superseded version may be collected (default 600), ``max_staleness`` seconds a
    seen version may be written on without a new listing (default 60, less than ``grace``),
    ``assume_atomic_create`` (default false), ``cache_size`` (default 1,024 keys) and, for
    ``fsspec+file://`` only, ``create`` (default false: the root must already be a store).
    Every other option goes to the filesystem (``endpoint_url``, ``account_name``, ...); URL
    query values are strings, so pass typed ones as keywords. Keep secrets in the
    environment the implementation reads: :attr:`options` carries storage options along when
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
        scheme = scheme or f"fsspec+{protocol}"
        given = {
            "retain": retain,
            "grace": grace,
            "max_staleness": max_staleness,
            "assume_atomic_create": assume_atomic_create,
            "cache_size": cache_size,
            "create": create,
        }
        checked = check_options(FsspecOptions, given, scheme=scheme)
        self.retain = checked.retain
        self.grace = checked.grace
        self.max_staleness = checked.max_staleness
        self.cache_size = checked.cache_size
        super().__init__(
            protocol,
            root,
            scheme=scheme,
            create=checked.create,
            assume_atomic_create=checked.assume_atomic_create,
            storage_options=storage_options,
        )
        self._recent = Recent(self.cache_size, max_staleness=self.max_staleness)
        self._collection = Collection(self.cache_size, retain=self.retain, grace=self.grace)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> FsspecBackend:
        opening = parse_url(url, options)
        return cls(
            opening.protocol,
            opening.root,
            scheme=opening.scheme,
            **msgspec.structs.asdict(opening.options),
            storage_options=opening.storage_options,
        )

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

    # -- the Backend contract --------------------------------------------------

    def read(self, key: str) -> Stored | None:
        return reading.read(self, self._recent, key)

    def read_recent(self, key: str) -> Stored | None:
        """The version this process saw last, if within ``max_staleness``; else :meth:`read`.

        A key another client has been writing is listed instead, so that a save
        does not send a create bound to be refused.
        """
        return self._recent.read_recent(key, clock=self._clock, read=self.read)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        return writing.write(self, self._recent, self._collection, key, data, expected=expected)

    def delete(self, key: str) -> None:
        """Remove every version of ``key``, leaving one content-free tombstone above them."""
        purging.delete(self, self._recent, key)

    def purge_history(self, key: str) -> None:
        """Delete every version below the current one now, after leaving a purge marker."""
        purging.purge_history(self, key)

    def keys(self) -> Iterator[str]:
        return stored_keys(self)

    # -- for operators ---------------------------------------------------------

    def history(self, key: str) -> list[KeptVersion]:
        """The retained versions of ``key`` that the current one descends from, oldest first.

        What an operator needs to see what a memory looked like before a
        change; read one with :meth:`read_version`. It follows the parent
        each version records, from the current one down, so an object a stale
        writer left below the newest version (garbage) is not shown; a version
        written by the previous release (which records no parent) is taken to
        follow the one below it. The current version comes last; each entry is
        a :class:`Revision`, carrying its revision number too. Empty when the
        key is missing or deleted.
        """
        return descent(self, key)

    def read_version(self, key: str, version: str) -> Stored | None:
        """The bytes of one retained version, or ``None`` once it is collected or purged."""
        return fetch_version(self, key, version)
