"""The storage contract: a versioned blob per key, changed only by conditional writes.

A backend stores opaque bytes under opaque keys. ``write`` is compare-and-swap:
``expected=None`` creates only; otherwise the stored version must still be
``expected``. There is no unconditional write. Backends are found by URL
scheme (:mod:`docmem.storage.registry`): ``memory://`` and ``file://`` are built in,
other schemes resolve through the entry-point group ``docmem.backends`` (a
scheme ``a+b`` resolves the entry point ``a``). ``open_store``,
``register_backend`` and ``ENTRY_POINT_GROUP`` are importable from here too,
where plug-ins and applications have always found them.
"""

from __future__ import annotations

import abc
import collections
import os
import re
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import msgspec

from .errors import HistoryNotKept, InvalidArgument, StoreNotConfigured
from .storage import registry
from .storage.registry import ENTRY_POINT_GROUP, open_store, register_backend

__all__ = [
    "ENTRY_POINT_GROUP",
    "Backend",
    "Check",
    "ContendedKeys",
    "DelegatingBackend",
    "KeptVersion",
    "LruCache",
    "OncePerIdentity",
    "PerProcess",
    "ServerChecks",
    "Stored",
    "check_key",
    "fsspec_key_folder",
    "open_store",
    "race_creates",
    "refuse_fsspec_layout",
    "register_backend",
]

_T = TypeVar("_T")
_V = TypeVar("_V")
#: Every PerProcess, LruCache and OncePerIdentity alive, so a forked child can give each
#: fresh locks.
_fork_guarded: weakref.WeakSet[PerProcess[Any] | LruCache[Any] | OncePerIdentity] = (
    weakref.WeakSet()
)


def _reset_locks_after_fork() -> None:
    """In a forked child: a lock another parent thread held at fork is never released.

    Only the forking thread survives ``fork``, so a lock held by any other
    thread (one building a client in :meth:`PerProcess.get`, one inside an
    :class:`LruCache` method, one verifying a store in
    :meth:`OncePerIdentity.once`) would stay held forever and the child's
    first use of that object would deadlock. The registry resets its own lock.
    """
    for guarded in list(_fork_guarded):
        guarded._lock = threading.Lock()
        if isinstance(guarded, OncePerIdentity):
            guarded._locks = {}


class Stored(msgspec.Struct, frozen=True):
    """What a read returns: the exact bytes and their opaque version token."""

    data: bytes
    version: str


class KeptVersion(msgspec.Struct, frozen=True):
    """One version of a key that a store keeps, as :meth:`Backend.history` lists it.

    ``version`` is the token :meth:`Backend.read_version` takes (for the
    current version, the one :meth:`Backend.read` reports); ``modified`` is
    when the store wrote it, in seconds since the epoch, ``None`` if the store
    does not say; ``size`` its stored bytes. Nothing here is content.
    """

    version: str
    modified: float | None
    size: int


#: One check of a server's guarantees: what it checks, and whether it held.
Check = tuple[str, bool]


@dataclass(frozen=True)
class ServerChecks:
    """What a store's own checks of its server found (:meth:`Backend.check_server`).

    ``by`` names who checked (``"docmem-s3"``), ``checks`` each check in
    order, and ``facts`` what was learnt beside them, content-free (``{"versioning":
    "enabled"}``): ``docmem probe`` prints all three.
    """

    by: str
    checks: tuple[Check, ...]
    facts: Mapping[str, str] = field(default_factory=dict)


class Backend(abc.ABC):
    """A store of versioned blobs; see docs/design.md, section 4, for the full promise.

    Subclasses implement ``read``, ``write``, ``delete``, ``keys`` and
    ``from_url``; they must be thread-safe, survive ``fork`` (rebuild clients in
    the child) and pickle as their URL and options. Unreachable stores raise
    :class:`~docmem.errors.StoreUnavailable`, never answer ``None``.
    """

    #: True when several processes may share the store (enables the process race tests).
    shared_between_processes: bool = False
    #: True when :meth:`read_recent` may answer from a cache without asking the store.
    recent_reads_may_be_stale: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The registry checks what it loads against the classes named here: it
        # cannot import this module, which imports it for open_store.
        super().__init_subclass__(**kwargs)
        registry.note_backend_class(cls)

    @classmethod
    @abc.abstractmethod
    def from_url(cls, url: str, **options: Any) -> Backend:
        """Build the backend for ``url`` with ``options`` (URL query merged in). No I/O."""

    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The URL this store was opened with (secret-free)."""

    @property
    def options(self) -> dict[str, Any]:
        """The options that, with :attr:`url`, reopen this store (secret-free)."""
        return {}

    def __reduce__(self) -> tuple[Any, ...]:
        # Stores pickle as (URL, options): the copy opens its own clients.
        return (_reopen, (self.url, self.options))

    @abc.abstractmethod
    def read(self, key: str) -> Stored | None:
        """The current bytes and version of ``key``, or ``None`` if it does not exist."""

    def read_recent(self, key: str) -> Stored | None:
        """A recent version of ``key``, possibly from a cache: good to start a write from.

        A write based on it may meet a VersionConflict, after which the
        provider reads afresh. The default asks the store, like :meth:`read`.
        """
        return self.read(key)

    @abc.abstractmethod
    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        """Store ``data`` if the current version is ``expected`` (``None``: create only).

        Returns the new version. Raises VersionConflict when the condition does
        not hold and WriteOutcomeUnknown when the write may have happened.
        """

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove ``key`` and all its history (operator purge; not ``erase()``)."""

    def purge_history(self, key: str) -> None:  # noqa: B027 - a default, not an abstract method
        """Drop older versions of ``key`` kept by versioned stores; nothing by default."""

    @abc.abstractmethod
    def keys(self) -> Iterator[str]:
        """Every stored key, in no particular order (export and admin only)."""

    def history(self, key: str) -> list[KeptVersion]:
        """The versions of ``key`` this store keeps, oldest first, the current one last.

        For an operator's ``docmem history`` and a revert (docs/design.md,
        section 3.1): empty when nothing is stored under ``key``. A store
        that keeps no older versions raises
        :class:`~docmem.errors.HistoryNotKept` saying why in its own terms;
        that is the default.
        """
        raise HistoryNotKept(f"{_scheme(self)} keeps no older versions of its documents")

    def read_version(self, key: str, version: str) -> Stored | None:
        """The bytes of one version :meth:`history` listed, or ``None`` once it is gone.

        The default, for a store that keeps none, raises
        :class:`~docmem.errors.HistoryNotKept` like :meth:`history`.
        """
        raise HistoryNotKept(f"{_scheme(self)} keeps no older versions of its documents")

    def listed_versions(self) -> Iterator[tuple[str, str]] | None:
        """Every stored key with its current version, in no particular order; ``None``: not offered.

        For a store that lists versions without reading each key (an S3
        listing carries ETags): a migration then verifies its copy by
        comparing the versions its writes returned, instead of reading every
        document back. A version listed must be the one :meth:`read` returns.
        """
        return None

    def check_server(self, *, writers: int = 8) -> ServerChecks | None:
        """Run this store's own checks of its server now; ``None``: it has none of its own.

        For a store that knows what its server must honour better than the
        backend contract's generic checks (docmem-s3's probe: ETags, both
        conditions, a race of ``writers`` creates). ``docmem probe`` and a
        migration's preflight ask the store through this, never by its type;
        without it they run the contract's checks. Raises
        :class:`~docmem.errors.ConditionsNotHonoured` naming each check that failed.
        """
        return None

    def close(self) -> None:  # noqa: B027 - a default, not an abstract method
        """Release clients and file handles; the default has none."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class DelegatingBackend(Backend):
    """A store around another store: every call goes to ``store`` unless overridden.

    What a wrapper (the encrypting store, a test's fault injector) extends, so
    that it overrides only what it changes and a method added to
    :class:`Backend` reaches the wrapped store without a line of its own.
    ``url`` and ``from_url`` remain the wrapper's to say.
    """

    def __init__(self, store: Backend) -> None:
        self._inner = store
        self.shared_between_processes = store.shared_between_processes
        self.recent_reads_may_be_stale = store.recent_reads_may_be_stale

    @property
    def store(self) -> Backend:
        """The wrapped store."""
        return self._inner

    def read(self, key: str) -> Stored | None:
        return self._inner.read(key)

    def read_recent(self, key: str) -> Stored | None:
        return self._inner.read_recent(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        return self._inner.write(key, data, expected=expected)

    def delete(self, key: str) -> None:
        self._inner.delete(key)

    def purge_history(self, key: str) -> None:
        self._inner.purge_history(key)

    def keys(self) -> Iterator[str]:
        return self._inner.keys()

    def history(self, key: str) -> list[KeptVersion]:
        return self._inner.history(key)

    def read_version(self, key: str, version: str) -> Stored | None:
        return self._inner.read_version(key, version)

    def listed_versions(self) -> Iterator[tuple[str, str]] | None:
        return self._inner.listed_versions()

    def check_server(self, *, writers: int = 8) -> ServerChecks | None:
        return self._inner.check_server(writers=writers)

    def close(self) -> None:
        self._inner.close()


class PerProcess(Generic[_T]):
    """A value built on first use, and built again in a forked child.

    For a backend's clients and filesystems: a connection pool or event loop
    inherited through ``fork`` belongs to the parent and must not be used.
    Thread-safe; ``build`` runs at most once per process until :meth:`reset`.
    """

    def __init__(self, build: Callable[[], _T]) -> None:
        self._build = build
        self._value: _T | None = None
        self._pid = 0
        self._lock = threading.Lock()
        _fork_guarded.add(self)

    def get(self) -> _T:
        """This process's value, built now if it has none yet."""
        pid = os.getpid()
        value = self._value
        if value is not None and self._pid == pid:
            return value
        with self._lock:
            if self._value is None or self._pid != pid:
                self._value = self._build()
                self._pid = pid
            return self._value

    def reset(self) -> _T | None:
        """Forget the value so the next :meth:`get` builds anew; return it if built here."""
        with self._lock:
            value, self._value = self._value, None
            return value if self._pid == os.getpid() else None


class LruCache(Generic[_V]):
    """A thread-safe map of at most ``size`` keys; the least recently used go first.

    For what a backend remembers per key (the last version it saw), or the
    provider per stored bytes (the parsed document): keys are ``str`` or
    ``bytes``. ``keep``, given ``(old, new)``, may refuse a replacement (say,
    an observation older than the one held). A size of 0 or less remembers
    nothing.
    """

    def __init__(self, size: int, *, keep: Callable[[_V, _V], bool] | None = None) -> None:
        self._size = size
        self._keep = keep
        self._entries: collections.OrderedDict[str | bytes, _V] = collections.OrderedDict()
        self._lock = threading.Lock()
        _fork_guarded.add(self)

    def get(self, key: str | bytes) -> _V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: str | bytes, value: _V) -> None:
        if self._size <= 0:
            return
        with self._lock:
            old = self._entries.get(key)
            if old is not None and self._keep is not None and self._keep(old, value):
                return
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def drop(self, key: str | bytes) -> None:
        with self._lock:
            self._entries.pop(key, None)


class OncePerIdentity:
    """The stores this process has verified, by identity, and a lock per one being verified.

    For a plug-in's first-write check of its server (docmem-s3's probe): it
    runs once per process and store identity (say, endpoint, bucket and
    prefix), not once per store object, since every object of one store
    talks to the same server. Concurrent first writes to one store wait for
    a single check; other stores are not held up, because the lock that
    guards the two collections is never held across the check's I/O. A
    forked child gets fresh locks and keeps what was verified.
    """

    def __init__(self) -> None:
        self._done: set[Hashable] = set()
        self._lock = threading.Lock()
        self._locks: dict[Hashable, threading.Lock] = {}
        _fork_guarded.add(self)

    def once(self, identity: Hashable, check: Callable[[], None]) -> None:
        """Run ``check`` unless ``identity`` passed it in this process; mark it when it does.

        A ``check`` that raises marks nothing: the next write checks again.
        """
        if identity in self._done:
            return
        with self._lock_of(identity):
            if identity in self._done:
                return
            check()
            self.mark(identity)

    def mark(self, identity: Hashable) -> None:
        """Count ``identity`` as verified (a probe run on demand passed)."""
        with self._lock:
            self._done.add(identity)
            self._locks.pop(identity, None)  # no longer needed: the fast path answers

    def _lock_of(self, identity: Hashable) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(identity, threading.Lock())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_after_fork)


def _reopen(url: str, options: dict[str, Any]) -> Backend:
    return open_store(url, **options)


def _scheme(store: Backend) -> str:
    """``file://``, ``s3://``: how a message names a store without its URL's path or secrets."""
    return f"{store.url.partition(':')[0] or 'this store'}://"


def check_key(key: str) -> str:
    """Refuse keys a backend could turn into a path outside its own space."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidArgument("a storage key is 1-200 characters of [A-Za-z0-9_-]")
    return key


_KEY = re.compile(r"[A-Za-z0-9_-]{1,200}")
_MEMORY_KEY = re.compile(r"memkey1_[A-Za-z0-9_-]{43}")


def race_creates(create: Callable[[], object], writers: int) -> int:
    """How many of ``writers`` threads, released together, won ``create()`` (got a non-None).

    A plug-in's verification sends ``writers`` create-only writes of one name at
    the same instant, through its own SDK call (``create`` answers None when the
    store refused the write as a lost race); a store that honours conditional
    writes lets exactly one win. Every thread is joined before the first
    exception a ``create()`` raised is re-raised; clean-up is the caller's.
    """
    barrier = threading.Barrier(writers)
    results: list[bool] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        try:
            accepted = create()
        except BaseException as exc:  # re-raised below, after every thread joined
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(accepted is not None)

    threads = [threading.Thread(target=run) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results.count(True)


def fsspec_key_folder(name: str, *, at_root: bool) -> bool:
    """Whether ``name``, one listed sub-prefix without its slash, is a docmem-fsspec key folder.

    docmem-fsspec keeps each key as a folder of commit-log objects,
    ``<prefix>/<key>/<16 hex>.md``; a native plug-in keeps ``<prefix>/<key>.md``.
    Under a prefix any docmem key's name counts. At a container's or bucket's
    root, where other stores' prefixes live side by side, only the names
    :class:`docmem.FileMemory` gives its keys (``memkey1_...``) do, so a
    neighbour's prefix is not taken for a key folder.
    """
    return (_MEMORY_KEY if at_root else _KEY).fullmatch(name) is not None


def refuse_fsspec_layout(folders: Iterable[str], *, at_root: bool, url: str, plugin: str) -> None:
    """StoreNotConfigured if any listed sub-prefix of ``url`` is a docmem-fsspec key folder.

    A native plug-in must never read a docmem-fsspec (commit-log) store as empty:
    its keys would look missing, and the first save would start every scope's
    memory afresh beside the old one. So a plug-in lists the names directly
    under its prefix once (with its own SDK) and passes the sub-prefixes it got,
    relative to the prefix and without their slash, here; ``at_root`` is true
    when the store has no prefix, ``url`` is the store's URL (without secrets)
    and ``plugin`` the plug-in's name, for the message.
    """
    if any(fsspec_key_folder(name, at_root=at_root) for name in folders):
        fsspec_url = f"fsspec+{url}"
        raise StoreNotConfigured(
            f"{url} holds a docmem-fsspec store (a folder of commit-log objects per key), "
            f"which {plugin} cannot read: open it as {fsspec_url}, or move it to this "
            f"layout with `docmem migrate {fsspec_url} {url}`"
        )


class ContendedKeys:
    """Keys another client has been writing, for a backend whose ``read_recent`` uses a cache.

    A conditional write that lost a race adds its key: the cached copy is
    stale, and a save starting from it would send a write bound to lose again.
    :meth:`read_recent` then asks the store, until a read finds the cache
    current again and the backend discards the key. At most ``limit`` keys
    (at least one): when full it forgets them all, which costs at most one
    lost write each. No lock: each set operation is atomic, and a race
    between two of them only forgets a key early.
    """

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 1)
        self._keys: set[str] = set()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def add(self, key: str) -> None:
        if len(self._keys) >= self._limit:
            self._keys.clear()
        self._keys.add(key)

    def discard(self, key: str) -> None:
        self._keys.discard(key)

    def read_recent(
        self,
        key: str,
        *,
        cached: Callable[[str], Stored | None],
        read: Callable[[str], Stored | None],
    ) -> Stored | None:
        """``cached(key)`` if the key is not contended and that has a copy, else ``read(key)``."""
        check_key(key)
        found = None if key in self._keys else cached(key)
        return found if found is not None else read(key)
