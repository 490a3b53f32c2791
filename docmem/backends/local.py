"""``file://``: one file per key on a local disk, changed under a per-key file lock.

A write locks ``<key>.md.lock`` (``flock``), compares the current version (SHA-256 of the
bytes), writes a temp file in the same directory, fsyncs it, renames it over
the document with ``os.replace`` and fsyncs the directory, so a crash at any
point leaves the old or the new document, never a torn one. Files fan out
over two directory levels (``ab/cd/<key>.md``) so a million scopes never share
one directory. The root directory must exist, unless the store is opened with
``create=true``. POSIX local disks only: ``flock`` is not reliable on NFS or
SMB, and there is no Windows support.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import math
import os
import stat
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ..backend import Backend, Stored, check_key, url_flag, url_options
from ..errors import (
    StoreBusy,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from ._flock import LockTimeout, exclusive

__all__ = ["LocalBackend"]

_SUFFIX = ".md"
_temp_names = itertools.count()


def _version(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


def _root_of(url: str) -> str:
    parts = urlsplit(url)
    if parts.netloc in ("", "localhost"):
        path = parts.path
    elif parts.netloc in (".", ".."):
        path = parts.netloc + parts.path
    else:
        raise StoreNotConfigured(
            "file:// URLs name a local path: "
            "use file:///abs/path, file://./rel/path or file:rel/path"
        )
    if not path:
        raise StoreNotConfigured("the file:// URL has no path")
    return os.path.abspath(unquote(path))


def _read_file(path: str) -> bytes:
    """The whole file in a few system calls (no buffered file object)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 17):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _write_new_file(path: str, data: bytes) -> None:
    """Create ``path`` (which must not exist), write ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _ensure_directory(directory: str) -> None:
    """Create ``directory`` and its missing parents durably.

    A new directory's own name lives in its parent, so each parent that
    gained an entry is fsynced too: otherwise a crash could lose a document
    whose save had already returned. Costs nothing once the directory exists.
    """
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if parent != directory:
        _ensure_directory(parent)
    with contextlib.suppress(FileExistsError):  # a racing writer made it: still sync it
        os.mkdir(directory)
    _fsync_directory(parent)


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalBackend(Backend):
    """Documents as files under ``root``; see the module docstring for the write recipe."""

    shared_between_processes = True

    def __init__(
        self, root: str | os.PathLike[str], *, lock_timeout: float = 10.0, create: bool = False
    ) -> None:
        self._root = os.path.abspath(os.fspath(root))
        self._lock_timeout = float(lock_timeout)
        if not math.isfinite(self._lock_timeout) or self._lock_timeout <= 0:
            raise StoreNotConfigured("file:// lock_timeout must be a positive number of seconds")
        self._create = create

    @classmethod
    def from_url(cls, url: str, **options: Any) -> LocalBackend:
        merged = url_options(url, options)
        lock_timeout = merged.pop("lock_timeout", 10.0)
        create = url_flag(merged.pop("create", False), option="file:// option create")
        if merged:
            raise StoreNotConfigured(
                f"unknown file:// options: {', '.join(sorted(merged))} "
                "(known: lock_timeout, create)"
            )
        try:
            timeout = float(lock_timeout)
        except ValueError:
            raise StoreNotConfigured("file:// option lock_timeout must be a number") from None
        return cls(_root_of(url), lock_timeout=timeout, create=create)

    def _root_missing(self) -> bool:
        """Whether the root is absent; an error unless the store may create it.

        A mistyped path or an unmounted volume must not read as an empty
        memory, nor be created by the first save.
        """
        try:
            is_directory = stat.S_ISDIR(os.stat(self._root).st_mode)
        except FileNotFoundError:
            if self._create:
                return True
            is_directory = False
        except OSError as exc:
            raise StoreUnavailable(f"cannot reach the file:// root ({exc.strerror})") from exc
        if is_directory:
            return False
        raise StoreUnavailable(
            "the file:// root directory does not exist or is not a directory; create it, or "
            "open the store with "
            "create=true to have the first save create it"
        )

    @property
    def root(self) -> str:
        """The absolute directory holding the documents."""
        return self._root

    @property
    def url(self) -> str:
        return "file://" + quote(self._root)

    def path(self, key: str) -> str:
        """Where ``key`` lives: ``<root>/ab/cd/<key>.md`` with ``abcd`` from SHA-256(key)."""
        fan = hashlib.sha256(check_key(key).encode("ascii")).hexdigest()
        return os.path.join(self._root, fan[:2], fan[2:4], key + _SUFFIX)

    def read(self, key: str) -> Stored | None:
        path = self.path(key)
        try:
            data = _read_file(path)
        except FileNotFoundError:
            self._root_missing()
            return None
        except OSError as exc:
            raise StoreUnavailable(f"cannot read from the file:// store ({exc.strerror})") from exc
        return Stored(data=data, version=_version(data))

    def _current_version(self, path: str) -> str | None:
        try:
            return _version(_read_file(path))
        except FileNotFoundError:
            return None

    @contextlib.contextmanager
    def _locked(self, path: str) -> Iterator[None]:
        try:
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                self._root_missing()
                _ensure_directory(directory)
            with exclusive(path + ".lock", self._lock_timeout):
                yield
        except LockTimeout as exc:
            raise StoreBusy(
                f"the file:// lock was held for more than {self._lock_timeout:g} s"
            ) from exc
        except OSError as exc:
            raise StoreUnavailable(f"cannot write to the file:// store ({exc.strerror})") from exc

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        path = self.path(key)
        directory = os.path.dirname(path)
        with self._locked(path):
            if self._current_version(path) != expected:
                raise VersionConflict("the stored version is not the expected one")
            temp = os.path.join(
                directory, f".tmp-{os.getpid()}-{next(_temp_names)}-{os.urandom(4).hex()}{_SUFFIX}"
            )
            try:
                _write_new_file(temp, data)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            try:
                _fsync_directory(directory)
            except OSError as exc:
                raise WriteOutcomeUnknown(
                    "the document was replaced but the directory could not be synced"
                ) from exc
        return _version(data)

    def delete(self, key: str) -> None:
        path = self.path(key)
        try:
            os.lstat(path)
        except FileNotFoundError:
            self._root_missing()
            return  # nothing to purge; no lock file or directories for a no-op
        except OSError as exc:
            raise StoreUnavailable(f"cannot reach the file:// store ({exc.strerror})") from exc
        with self._locked(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            _fsync_directory(os.path.dirname(path))

    def keys(self) -> Iterator[str]:
        try:
            for first in sorted(os.listdir(self._root)):
                top = os.path.join(self._root, first)
                if len(first) != 2 or not os.path.isdir(top):
                    continue  # a stray file (README, .DS_Store) is not part of the store
                for second in sorted(os.listdir(top)):
                    directory = os.path.join(top, second)
                    if len(second) != 2 or not os.path.isdir(directory):
                        continue
                    for name in sorted(os.listdir(directory)):
                        if name.endswith(_SUFFIX) and not name.startswith("."):
                            yield name[: -len(_SUFFIX)]
        except FileNotFoundError:
            if not self._root_missing():
                raise StoreUnavailable("the file:// store changed while it was listed") from None
        except OSError as exc:
            raise StoreUnavailable(f"cannot list the file:// store ({exc.strerror})") from exc

    @property
    def options(self) -> dict[str, Any]:
        return {"lock_timeout": self._lock_timeout, "create": self._create}
