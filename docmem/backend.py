"""The storage contract: a versioned blob per key, changed only by conditional writes.

A backend stores opaque bytes under opaque keys. ``write`` is compare-and-swap:
``expected=None`` creates only; otherwise the stored version must still be
``expected``. There is no unconditional write. Backends are found by URL
scheme: ``memory://`` and ``file://`` are built in, other schemes resolve
through the entry-point group ``docmem.backends`` (a scheme ``a+b`` resolves
the entry point ``a``).
"""

from __future__ import annotations

import abc
import collections
import os
import re
import threading
import weakref
from collections.abc import Callable, Iterator
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qsl, urlsplit

import msgspec

from .errors import InvalidArgument, StoreNotConfigured

__all__ = [
    "ENTRY_POINT_GROUP",
    "Backend",
    "LruCache",
    "PerProcess",
    "Stored",
    "check_key",
    "open_store",
    "register_backend",
    "url_flag",
    "url_options",
]

ENTRY_POINT_GROUP = "docmem.backends"

#: Built-in and well-known schemes: ``"module:Class"`` strings, imported on first use.
_BUILTIN: dict[str, str] = {
    "memory": "docmem.backends.memory:MemoryBackend",
    "file": "docmem.backends.local:LocalBackend",
}
#: What to install for schemes served by docmem's own plug-in distributions.
_INSTALL_HINTS: dict[str, str] = {
    "s3": "docmem-s3",
    "fsspec": "docmem-fsspec",
    "gs": "docmem-fsspec",
    "gcs": "docmem-fsspec",
    "az": "docmem-fsspec",
    "abfs": "docmem-fsspec",
    "abfss": "docmem-fsspec",
}
_registered: dict[str, str | type[Backend]] = {}
_T = TypeVar("_T")
_V = TypeVar("_V")
_registry_lock = threading.Lock()
#: A URL scheme as RFC 3986 spells it; a registration also names no ``+`` part.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9.-]*")
#: Every PerProcess and LruCache alive, so a forked child can give each a fresh lock.
_fork_guarded: weakref.WeakSet[PerProcess[Any] | LruCache[Any]] = weakref.WeakSet()


def _reset_locks_after_fork() -> None:
    """In a forked child: a lock another parent thread held at fork is never released.

    Only the forking thread survives ``fork``, so a lock held by any other
    thread (one building a client in :meth:`PerProcess.get`, one inside an
    :class:`LruCache` method or a registration) would stay held forever and
    the child's first use of that object would deadlock.
    """
    global _registry_lock
    _registry_lock = threading.Lock()
    for guarded in list(_fork_guarded):
        guarded._lock = threading.Lock()


class Stored(msgspec.Struct, frozen=True):
    """What a read returns: the exact bytes and their opaque version token."""

    data: bytes
    version: str


class Backend(abc.ABC):
    """A store of versioned blobs; see DESIGN section 4 for the full promise.

    Subclasses implement ``read``, ``write``, ``delete``, ``keys`` and
    ``from_url``; they must be thread-safe, survive ``fork`` (rebuild clients in
    the child) and pickle as their URL and options. Unreachable stores raise
    :class:`~docmem.errors.StoreUnavailable`, never answer ``None``.
    """

    #: True when several processes may share the store (enables the process race tests).
    shared_between_processes: bool = False
    #: True when :meth:`read_recent` may answer from a cache without asking the store.
    recent_reads_may_be_stale: bool = False

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

    def close(self) -> None:  # noqa: B027 - a default, not an abstract method
        """Release clients and file handles; the default has none."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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

    For what a backend remembers per key (the last version it saw). ``keep``,
    given ``(old, new)``, may refuse a replacement (say, an observation older
    than the one held). A size of 0 or less remembers nothing.
    """

    def __init__(self, size: int, *, keep: Callable[[_V, _V], bool] | None = None) -> None:
        self._size = size
        self._keep = keep
        self._entries: collections.OrderedDict[str, _V] = collections.OrderedDict()
        self._lock = threading.Lock()
        _fork_guarded.add(self)

    def get(self, key: str) -> _V | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: str, value: _V) -> None:
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

    def drop(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)


def register_backend(scheme: str, target: str | type[Backend], *, clobber: bool = False) -> None:
    """Register a backend class (or its ``"module:Class"`` path) for a URL scheme.

    Entry points are the normal way for plug-ins; this is for applications and
    tests. Replacing an existing registration needs ``clobber=True``.

    ``scheme`` is a URL scheme (a letter, then letters, digits, ``.`` or
    ``-``), matched case-insensitively like the URLs :func:`open_store` gets.
    A ``+`` is refused: ``a+b://`` resolves through ``a``, so a registration
    under ``a+b`` could never be found.
    """
    if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme):
        raise InvalidArgument(
            "a backend's URL scheme is a letter followed by letters, digits, '.' or '-' "
            "(register 'a' to serve 'a+b://' URLs)"
        )
    scheme = scheme.lower()
    with _registry_lock:
        if not clobber and (scheme in _registered or scheme in _BUILTIN):
            raise InvalidArgument(f"URL scheme {scheme!r} is already registered; pass clobber=True")
        _registered[scheme] = target


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_after_fork)


def _load(target: str | type[Backend]) -> type[Backend]:
    if isinstance(target, str):
        module, _, name = target.partition(":")
        try:
            loaded = getattr(import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise StoreNotConfigured(
                f"cannot load the docmem backend {target!r} ({type(exc).__name__}); "
                "reinstall the package that provides it"
            ) from exc
    else:
        loaded = target
    if not (isinstance(loaded, type) and issubclass(loaded, Backend)):
        raise StoreNotConfigured(f"{target!r} is not a docmem Backend class")
    return loaded


def _resolve(scheme: str) -> type[Backend]:
    entry = scheme.split("+", 1)[0]
    with _registry_lock:
        target = _registered.get(entry)
    if target is not None:
        return _load(target)
    if entry in _BUILTIN:
        return _load(_BUILTIN[entry])
    found = entry_points(group=ENTRY_POINT_GROUP, name=entry)
    for point in found:
        try:
            loaded = point.load()
        except ImportError as exc:
            raise StoreNotConfigured(
                f"the docmem backend for {entry!r} is installed but cannot be imported "
                f"({type(exc).__name__}: {exc.name or 'a dependency'}); reinstall it"
            ) from exc
        return _load(loaded)
    hint = _INSTALL_HINTS.get(entry)
    advice = f"install {hint} (pip install {hint})" if hint else "install a docmem backend for it"
    raise StoreNotConfigured(
        f"no docmem backend for URL scheme {entry!r}: {advice}, or use file:///path or memory://"
    )


def open_store(url: str | None, **options: Any) -> Backend:
    """Open the store a URL names, without any I/O.

    ``file:///abs/path``, ``file://./rel/path`` and ``file:rel/path`` are local
    directories; ``memory://`` is a private in-process store and
    ``memory://name`` a named one shared within the process. Other schemes come
    from installed plug-ins. URL query parameters become options; keyword
    arguments win over them. ``None`` or an empty URL is an error, never a
    default store.
    """
    if url is None or not str(url).strip():
        raise StoreNotConfigured(
            "no memory store configured: pass a URL such as 'file:///var/lib/agent/memory' "
            "or 'memory://' (an S3 bucket needs docmem-s3)"
        )
    scheme = urlsplit(url).scheme
    if not scheme:
        raise StoreNotConfigured(
            "the store URL has no scheme: use 'file:///path', 'file://./path' or 'memory://'"
        )
    backend_class = _resolve(scheme.lower())
    return backend_class.from_url(url, **options)


def _reopen(url: str, options: dict[str, Any]) -> Backend:
    return open_store(url, **options)


def url_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """The URL's query parameters with keyword ``options`` taking precedence."""
    merged: dict[str, Any] = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    merged.update(options)
    return merged


def url_flag(value: object, *, option: str) -> bool:
    """A yes/no option as a bool: ``True``/``False``, or a URL query string such as ``"true"``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise StoreNotConfigured(f"{option} must be true or false")


def check_key(key: str) -> str:
    """Refuse keys a backend could turn into a path outside its own space."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise InvalidArgument("a storage key is 1-200 characters of [A-Za-z0-9_-]")
    return key


_KEY = re.compile(r"[A-Za-z0-9_-]{1,200}")
