"""Which backend serves a URL scheme, and ``open_store`` that asks it (docs/design.md, section 4).

A scheme resolves, first match wins, to: a :func:`register_backend`
registration, a built-in store, an installed entry point of the group
``docmem.backends``. A scheme ``a+b`` resolves as ``a``. :data:`SCHEMES` is
the one list of the schemes docmem itself knows: the built-ins, and those
its own plug-in distributions serve, so an unknown one can name what to
install. The plug-ins' entry points are checked against it by the tests.
"""

from __future__ import annotations

import os
import re
import threading
import weakref
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import InvalidArgument, StoreNotConfigured

if TYPE_CHECKING:
    from ..backend import Backend

__all__ = [
    "CORE_DISTRIBUTION",
    "ENTRY_POINT_GROUP",
    "SCHEMES",
    "KnownScheme",
    "open_store",
    "register_backend",
]

ENTRY_POINT_GROUP = "docmem.backends"
#: The distribution whose schemes are built in: imported directly, never looked up.
CORE_DISTRIBUTION = "agent-docmem"


@dataclass(frozen=True)
class KnownScheme:
    """A URL scheme docmem knows by name, the class that serves it and who ships that class."""

    scheme: str
    #: The backend class as ``"module:Class"``; a plug-in's entry point names the same.
    target: str
    #: The distribution to install for it; :data:`CORE_DISTRIBUTION` for a built-in.
    distribution: str

    @property
    def builtin(self) -> bool:
        return self.distribution == CORE_DISTRIBUTION


_FSSPEC = "docmem_fsspec:FsspecBackend"
_FSSPEC_DISTRIBUTION = "agent-docmem-fsspec"
_S3_DISTRIBUTION = "agent-docmem-s3"
_AZURE = "docmem_azure:AzureBlobBackend"
_AZURE_DISTRIBUTION = "agent-docmem-azure"
_GCS = "docmem_gcs:GcsBackend"
_GCS_DISTRIBUTION = "agent-docmem-gcs"

#: Sorted by scheme. A plug-in scheme here still resolves only through an entry point
#: (any distribution may provide it); the table gives the advice when none is installed.
SCHEMES: tuple[KnownScheme, ...] = (
    KnownScheme("abfs", _FSSPEC, _FSSPEC_DISTRIBUTION),
    KnownScheme("abfss", _FSSPEC, _FSSPEC_DISTRIBUTION),
    KnownScheme("az", _AZURE, _AZURE_DISTRIBUTION),
    KnownScheme("azblob", _AZURE, _AZURE_DISTRIBUTION),
    KnownScheme("encrypted", "docmem.storage.encryption.store:EncryptedStore", CORE_DISTRIBUTION),
    KnownScheme("file", "docmem.storage.builtin.local:LocalBackend", CORE_DISTRIBUTION),
    KnownScheme("fsspec", _FSSPEC, _FSSPEC_DISTRIBUTION),
    KnownScheme("gcs", _GCS, _GCS_DISTRIBUTION),
    KnownScheme("gs", _GCS, _GCS_DISTRIBUTION),
    KnownScheme("memory", "docmem.storage.builtin.inmemory:MemoryBackend", CORE_DISTRIBUTION),
    KnownScheme("s3", "docmem_s3:S3Backend", _S3_DISTRIBUTION),
)
_KNOWN: dict[str, KnownScheme] = {known.scheme: known for known in SCHEMES}

_registered: dict[str, str | type[Backend]] = {}
_registry_lock = threading.Lock()
#: A URL scheme as RFC 3986 spells it; a registration also names no ``+`` part.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9.-]*")


def _reset_lock_after_fork() -> None:
    """In a forked child: a registration another parent thread was making holds the lock."""
    global _registry_lock
    _registry_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_lock_after_fork)


def _builtin(scheme: str) -> KnownScheme | None:
    known = _KNOWN.get(scheme)
    return known if known is not None and known.builtin else None


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
        if not clobber and (scheme in _registered or _builtin(scheme) is not None):
            raise InvalidArgument(f"URL scheme {scheme!r} is already registered; pass clobber=True")
        _registered[scheme] = target


#: Every subclass of :class:`~docmem.backend.Backend`, named by the class itself as
#: it is created: docmem.backend imports this module (for ``open_store``), so this
#: module tells a backend class by this set instead of importing docmem.backend.
_backend_classes: weakref.WeakSet[type] = weakref.WeakSet()


def note_backend_class(cls: type) -> None:
    """Record ``cls`` as a Backend class (``Backend.__init_subclass__`` calls it)."""
    _backend_classes.add(cls)


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
    if not (isinstance(loaded, type) and loaded in _backend_classes):
        raise StoreNotConfigured(f"{target!r} is not a docmem Backend class")
    backend_class: type[Backend] = loaded
    return backend_class


def entry_points(*, group: str, name: str) -> Any:
    """The installed entry points of ``group`` named ``name``.

    importlib.metadata is imported here, for a plug-in's scheme only: it
    costs more to import than the rest of docmem.
    """
    from importlib.metadata import entry_points as installed

    return installed(group=group, name=name)


def _resolve(scheme: str) -> type[Backend]:
    entry = scheme.split("+", 1)[0]
    with _registry_lock:
        target = _registered.get(entry)
    if target is not None:
        return _load(target)
    builtin = _builtin(entry)
    if builtin is not None:
        return _load(builtin.target)
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
    known = _KNOWN.get(entry)
    hint = known.distribution if known is not None else None
    advice = f"install {hint} (pip install {hint})" if hint else "install a docmem backend for it"
    raise StoreNotConfigured(
        f"no docmem backend for URL scheme {entry!r}: {advice}, or use file:///path or memory://"
    )


def open_store(url: str | None, **options: Any) -> Backend:
    """Open the store a URL names, without any I/O.

    ``file:///abs/path``, ``file://./rel/path`` and ``file:rel/path`` are local
    directories; ``memory://`` is a private in-process store and
    ``memory://name`` a named one shared within the process;
    ``encrypted+<URL>?keyring=...`` is the store at ``<URL>`` with client-side
    encryption (docs/encryption.md). Other schemes come from installed
    plug-ins. URL query parameters become options; keyword arguments win over
    them. ``None`` or an empty URL is an error, never a default store.
    """
    if url is None or not str(url).strip():
        raise StoreNotConfigured(
            "no memory store configured: pass a URL such as 'file:///var/lib/agent/memory' "
            "or 'memory://' (an S3 bucket needs agent-docmem-s3)"
        )
    scheme = urlsplit(url).scheme
    if not scheme:
        raise StoreNotConfigured(
            "the store URL has no scheme: use 'file:///path', 'file://./path' or 'memory://'"
        )
    backend_class = _resolve(scheme.lower())
    return backend_class.from_url(url, **options)
