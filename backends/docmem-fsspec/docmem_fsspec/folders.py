"""A store's key folders on its filesystem: every request the commit log sends, and its failures.

Each key is a folder of immutable objects, ``<root>/<key>/<rev:016x>.md``
(:mod:`docmem_fsspec.commitlog` reads their names and envelopes). The
requests are few: list a key's folder, or only the names after one name in
it; fetch an object; create one; remove some. Each turns the filesystem's
failures into docmem's, so that an unreachable store is never read as an
empty one: a missing key folder is a missing key only once the root is known
to be there (a bucket, a container, a mounted volume with its marker).

The create is trusted only after the store has shown that it refuses a
second create of one name, once per store object and process
(:mod:`docmem_fsspec.probe`): everything else rests on that.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from docmem.backend import PerProcess, Stored, check_key
from docmem.errors import DocumentCorrupt, StoreNotConfigured, StoreUnavailable

from . import probe
from .commitlog import Entry, Envelope, Listing, digest, unwrap
from .dialects import Dialect, dialect_for
from .filesystems import LOCAL_PROTOCOLS, build_filesystems, filesystem_class, root_path
from .marker import require_store

__all__ = ["ATTEMPTS", "KeyFolders", "unavailable"]

#: Listings in a row that may each find the objects they listed changed before acting on them.
ATTEMPTS = 8
_T = TypeVar("_T")


class KeyFolders:
    """The objects of one store and the requests on them: what :class:`FsspecBackend` stands on.

    Filesystems are built on first use and again in a forked child, and so is
    the create check. ``_clock`` dates the listings (when a version was last
    seen as the newest): it paces freshness and collection and decides no
    outcome (docs/design.md, section 4.1); a test may swap it.
    """

    def __init__(
        self,
        protocol: str,
        root: str,
        *,
        scheme: str,
        create: bool,
        assume_atomic_create: bool,
        storage_options: dict[str, Any] | None,
    ) -> None:
        self.protocol = protocol
        self.scheme = scheme
        self.create = create
        self.assume_atomic_create = assume_atomic_create
        self.storage_options = dict(storage_options or {})
        self._local = protocol in LOCAL_PROTOCOLS
        if self.create and not self._local:
            raise StoreNotConfigured(
                "create applies to fsspec+file:// only: make the bucket or container outside docmem"
            )
        self._fs_class: type[Any] = filesystem_class(protocol)
        self.root = root_path(self._fs_class, root, local=self._local)
        if not self.root:
            raise StoreNotConfigured(f"the {self.scheme}:// URL names no bucket or folder")
        self._dialect: Dialect = dialect_for(
            self._fs_class, assume_atomic_create=self.assume_atomic_create
        )
        self._filesystems: PerProcess[tuple[Any, Any]] = PerProcess(self._build)
        # Whether the store refuses a second create of one name: checked before this
        # process's first create through this store object, and again in a forked child.
        self._checked: PerProcess[bool] = PerProcess(self._check_creates)
        # Seconds that only ever go forward; decides nothing about a write's outcome, only
        # freshness and pacing. A test may swap in its own clock.
        self._clock: Callable[[], float] = time.monotonic

    def folder(self, key: str) -> str:
        """Where the objects of ``key`` live: ``<root>/<key>``."""
        return f"{self.root}/{check_key(key)}"

    def filesystems(self) -> tuple[Any, Any]:
        """(reader, writer): built on first use and again in a forked child."""
        return self._filesystems.get()

    def _build(self) -> tuple[Any, Any]:
        return build_filesystems(
            self._fs_class, self._dialect, self.storage_options, protocol=self.protocol
        )

    def close(self) -> None:
        self._filesystems.reset()

    # -- creating ----------------------------------------------------------------

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

    # -- listing -----------------------------------------------------------------

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
            raise unavailable("list", exc) from None

    # -- fetching ----------------------------------------------------------------

    def _fetch_object(self, path: str) -> bytes | None:
        """A whole object (envelope included); ``None`` once it is gone."""
        reader, _ = self.filesystems()
        try:
            return self._dialect.fetch(reader, path)
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise unavailable("read", exc) from None

    def _fetch(self, path: str, version: str) -> tuple[Stored, str] | None:
        """A version as a read returns it, and the digest of its object; ``None`` if gone."""
        blob = self._fetch_object(path)
        if blob is None:
            return None
        _, data = unwrap(blob)
        return Stored(data=data, version=version), digest(blob)

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

    # -- removing ----------------------------------------------------------------

    def _remove(self, entries: Iterable[Entry]) -> None:
        """Delete objects oldest first; a failure stops and is raised (nothing skipped over)."""
        reader, _ = self.filesystems()
        for entry in sorted(entries):
            try:
                reader.rm_file(entry.path)
            except FileNotFoundError:
                continue
            except Exception as exc:
                raise unavailable("delete", exc) from None

    # -- the root ----------------------------------------------------------------

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
            raise unavailable("list", exc) from None
        if not present:
            raise StoreUnavailable(f"the {self.scheme} store's root does not exist")


def unavailable(operation: str, exc: BaseException) -> StoreUnavailable:
    """A failed request as docmem reports it: the operation and the exception's type, never
    its message, which may carry a path or a credential."""
    return StoreUnavailable(f"the {operation} failed ({type(exc).__name__})")
