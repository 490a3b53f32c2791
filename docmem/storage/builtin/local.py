"""``file://``: one file per key on a local disk, changed under a per-key file lock.

A write locks ``<key>.md.lock`` (``flock``), compares the current version (SHA-256 of the
bytes), writes the key's temp file ``.tmp-<key>.new`` in the same directory,
fsyncs it, renames it over the document with ``os.replace`` and fsyncs the
directory, so a crash at any point leaves the old or the new document, never
a torn one. Only the lock's holder has a temp file of its key, so one found
under the lock is a crashed writer's, and the write replaces it. Files fan
out over two directory levels (``ab/cd/<key>.md``) so a million scopes never
share one directory. POSIX local disks only: ``flock`` is not reliable on NFS or
SMB, and there is no Windows support.

Each key keeps its last ``history`` older versions beside the document (see
:class:`LocalOptions`). Still under the lock, before it writes its temp file,
a write hard-links the document it is about to replace as ``<key>.md.~<n>``,
``n`` one more than the key's newest kept version, and unlinks the one that
falls out of the last ``history``; the number orders the versions whatever
the clock's resolution. A link copies nothing, and the fsyncs the write makes
anyway make it durable. The document itself is still changed by the rename
alone, so a crash leaves the old or the new document; a kept version may then
be a second name of the current one, which a listing leaves out. Keeping a
version is best-effort: one that cannot be kept never fails the save. A store
remembers the number it kept last per key, so a lone writer never lists the
directory; after another writer's save it lists once.

The root holds a marker file, ``.docmem-store``, written when the store is
created (``create=true``). An existing directory is no proof that it is the
store: the mount point of an unmounted volume is an empty directory too, and
reading it as an empty memory, or saving into the disk underneath, would lose
every memory at once. So wherever the store could be mistaken for empty (a
document not found, a listing, a create, a delete of a missing key) the
marker must be there; reading a document that exists needs no extra call.
A root written before markers existed is recognised by its documents and gets
its marker on its next write.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
import stat
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import quote, unquote_to_bytes, urlsplit

import msgspec

from ...backend import Backend, KeptVersion, Stored, check_key
from ...errors import (
    HistoryNotKept,
    StoreBusy,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from ...localfs.durable import (
    ensure_directory,
    fsync_directory,
    rewrite_own_file,
    write_new_file,
)
from ...localfs.flock import LockTimeout, exclusive
from ...localfs.kept import kept_name, kept_number, kept_versions, read_with_stat, remove_kept
from ...localfs.marker import MARKER, publish_marker
from ...options import Seconds, check_options, parse_options

__all__ = ["LocalBackend", "LocalOptions"]

_SUFFIX = ".md"
_TEMP = ".tmp-"
#: The end of a write's temp name, ``.tmp-<key>.new``: one name per key (see
#: :func:`_write_temp`). Earlier versions added ``<pid>-<n>-<hex8>`` instead.
_TEMP_END = "new"
#: Temp names of docmem before they named their key: ``.tmp-<pid>-<n>-<hex8>.md``.
_UNATTRIBUTED_TEMP = re.compile(r"\.tmp-\d+-\d+-[0-9a-f]{8}\.md")
#: Age after which an unattributed temp file is taken for a crash's leftover.
_UNATTRIBUTED_TEMP_AGE = 3600.0
#: Keys a store remembers having swept for older temp names before it starts over.
_SWEPT_KEYS = 4096
_FAN_OUT = re.compile(r"[0-9a-f]{2}")
#: Keys whose newest kept version a store remembers before it starts over.
_REMEMBERED_KEYS = 4096
_KEY_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")

_MISSING_MARKER = (
    f"no docmem store at the file:// root (marker {MARKER} missing): is the volume mounted? "
    "to start a new store here, open it with create=true"
)
_MISSING_ROOT = (
    "the file:// root directory does not exist: is the volume mounted? create the store "
    "by opening it with create=true"
)

#: What a look at the root found: the marker, a store still to be marked, or no root yet.
_State = Literal["marked", "unmarked", "absent"]


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
    return _path_of(path)


def _path_of(url_path: str) -> str:
    """The file name a URL's path spells, byte for byte: ``%FF`` is the byte 0xFF.

    A folder name need not be valid UTF-8 (a disk written under another
    locale), and Python names it with ``surrogateescape`` (``\\udcff``):
    ``os.fsdecode`` of the exact bytes gives that name, and :attr:`LocalBackend.url`
    spells it back as ``%FF``, so a copy opened from the URL (a pickle, a
    worker process) opens the same folder. ``unquote`` would decode ``%FF`` as
    U+FFFD, which names another folder.
    """
    return os.fsdecode(unquote_to_bytes(_encoded(url_path)))


def _encoded(path: str) -> bytes:
    """``path`` as the bytes the file system sees; StoreNotConfigured if it has none."""
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:
        pass  # raised below, outside the handler: the error quotes the character
    raise StoreNotConfigured(
        "the file:// path holds a character no file name can hold (a lone surrogate): "
        "pass the folder's name as os.fsdecode gives it"
    )


def _checked_root(root: object) -> str:
    """The absolute root, or StoreNotConfigured naming what is wrong (never the path)."""
    if not isinstance(root, (str, os.PathLike)):
        raise StoreNotConfigured("the file:// root must be a path")
    path = os.fspath(root)
    if not isinstance(path, str):
        raise StoreNotConfigured("the file:// root must be a text path, not bytes")
    if b"\x00" in _encoded(path):
        raise StoreNotConfigured("the file:// path contains a NUL character (%00)")
    return os.path.abspath(path)


class LocalOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The ``file://`` options, from the URL query or keywords (see :mod:`docmem.options`)."""

    #: Seconds a write waits for its key's lock before it is :class:`StoreBusy`.
    lock_timeout: Seconds = 10.0
    #: Whether a write may create the store: see the module docstring.
    create: bool = False
    #: Older versions kept of each document, for ``docmem history`` and a revert; 0 keeps none.
    #: Sixteen, because a poisoning spans a few turns, and 16 versions reach back past half
    #: of the journal's 32 records; a version is at most 64 KiB, usually a few, and keeping
    #: one costs no copy (it is a hard link of the file the write replaced).
    history: Annotated[
        int, msgspec.Meta(ge=0, le=1000, description="a whole number from 0 to 1000")
    ] = 16


_DEFAULTS = LocalOptions()


#: ``O_NOATIME``: a read does not change the file's access time, which would make the
#: inode dirty and add it to the journal commit of the next save's fsync.
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOATIME", 0)


def _read_file(path: str) -> bytes:
    """The whole file in a few system calls (no buffered file object)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except PermissionError:  # O_NOATIME on a file of another user: read it the plain way
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 17):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _is_document(directory: str, name: str) -> bool:
    """Whether ``name`` in ``directory`` is where docmem keeps a key's document.

    Only a key whose fan-out is this very directory counts, so a stray
    ``notes.md`` is not taken for a store.
    """
    key = name[: -len(_SUFFIX)]
    if not name.endswith(_SUFFIX) or not _KEY_NAME.fullmatch(key):
        return False
    fan = hashlib.sha256(key.encode("ascii")).hexdigest()
    return directory.endswith(f"{os.sep}{fan[:2]}{os.sep}{fan[2:4]}")


def _fan_out_directories(directory: str) -> list[str]:
    with os.scandir(directory) as entries:
        return sorted(
            entry.path
            for entry in entries
            if _FAN_OUT.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
        )


def _holds_documents(root: str) -> bool:
    """Whether ``root`` holds a docmem document: a store from before markers existed."""
    for top in _fan_out_directories(root):
        for directory in _fan_out_directories(top):
            with os.scandir(directory) as entries:
                if any(_is_document(directory, entry.name) for entry in entries):
                    return True
    return False


def _temp_prefix(key: str) -> str:
    """The start of every temp name of ``key``; a key has no ``.``, so no other key shares it."""
    return f"{_TEMP}{key}."


def _write_temp(temp: str, data: bytes, *, recycled: bool = False) -> None:
    """Create the key's temp file ``temp`` with ``data``, fsynced; call it holding the lock.

    ``recycled``: ``temp`` is the kept version that just fell out of the
    key's history, renamed there to be rewritten in place
    (:func:`~docmem.localfs.durable.rewrite_own_file`); if it is not a file
    that can be, it goes like a crashed writer's temp.

    A writer creates its temp only while it holds the key's lock and renames
    or removes it before letting go, so a file already there under the lock
    is a crashed writer's: it goes, and the name is taken again (still
    ``O_EXCL``, so the bytes only ever land in a file this call made). One
    fixed name per key spares every write a listing of the directory, which
    costs more than its system calls: reading a directory updates its atime,
    a journalled change the write's first fsync then has to commit.
    """
    if recycled and rewrite_own_file(temp, data):
        return
    try:
        write_new_file(temp, data)
    except FileExistsError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        write_new_file(temp, data)


def _collect_stale_temps(directory: str, key: str, history: int) -> int | None:
    """Remove what crashed writers of ``key`` left, and its kept versions beyond ``history``.

    Call it holding the key's lock, which makes every temp of this key a dead
    writer's (see :func:`_write_temp`); a store does it on its first write of
    each key. Temps of older versions that do not name their key go once they
    are an hour old. Even a wrong removal could not lose a save: the writer's
    rename would fail and its save would report not committed. Of the kept
    versions only the newest ``history`` stay, so a store reopened with a
    shorter history (or none) bounds what stays on disk. Returns the newest
    kept version's number, -1 if there is none, ``None`` if the folder could
    not be listed: housekeeping never fails a save, so errors are ignored.
    """
    prefix = _temp_prefix(key)
    document = key + _SUFFIX
    horizon = time.time() - _UNATTRIBUTED_TEMP_AGE
    kept: dict[int, str] = {}
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                number = kept_number(entry.name, document)
                if number is not None:
                    kept[number] = entry.path
                elif entry.name.startswith(_TEMP) and (
                    entry.name.startswith(prefix)
                    or (
                        _UNATTRIBUTED_TEMP.fullmatch(entry.name) is not None
                        and entry.stat(follow_symlinks=False).st_mtime < horizon
                    )
                ):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
        newest = max(kept, default=-1)
        for number in sorted(kept)[: max(len(kept) - history, 0)]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(kept[number])
    except OSError:
        return None
    return newest


class LocalBackend(Backend):
    """Documents as files under ``root``; see the module docstring for the write recipe."""

    shared_between_processes = True

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        lock_timeout: float = _DEFAULTS.lock_timeout,
        create: bool = _DEFAULTS.create,
        history: int = _DEFAULTS.history,
    ) -> None:
        self._root = _checked_root(root)
        checked = check_options(
            LocalOptions,
            {"lock_timeout": lock_timeout, "create": create, "history": history},
            scheme="file",
        )
        self._lock_timeout = checked.lock_timeout
        self._create = checked.create
        self._history = checked.history
        # Keys whose folder this store swept for temps under older names; the set
        # starts over when full (a second sweep costs one listing, nothing else).
        self._swept: set[str] = set()
        # Per key, the version this store wrote last and the newest kept version's
        # number then: while the document is still that version, the next number
        # is known without a listing. Starts over when full, like _swept.
        self._last_kept: dict[str, tuple[str, int]] = {}

    @classmethod
    def from_url(cls, url: str, **options: Any) -> LocalBackend:
        checked = parse_options(LocalOptions, url, options, scheme="file")
        return cls(
            _root_of(url),
            lock_timeout=checked.lock_timeout,
            create=checked.create,
            history=checked.history,
        )

    # -- is this the store? -------------------------------------------------------------

    def _state(self) -> _State:
        """Look at the root before trusting an absence; StoreUnavailable if it is no store.

        One ``stat`` when the marker is there. Without it the root must hold
        documents (a store from before markers), or the store must be open
        with ``create=true``; anything else is an unmounted volume or a wrong
        path, never an empty memory.
        """
        try:
            try:
                marker = os.stat(os.path.join(self._root, MARKER))
            except (FileNotFoundError, NotADirectoryError):
                return self._unmarked_state()
        except OSError as exc:
            raise StoreUnavailable(f"cannot reach the file:// root ({exc.strerror})") from exc
        if not stat.S_ISREG(marker.st_mode):
            raise StoreUnavailable(f"the file:// store marker {MARKER} is not a regular file")
        return "marked"

    def _unmarked_state(self) -> _State:
        """No marker: a store only if it may be created here, or already holds documents."""
        try:
            is_directory = stat.S_ISDIR(os.stat(self._root).st_mode)
        except FileNotFoundError:
            if self._create:
                return "absent"
            raise StoreUnavailable(_MISSING_ROOT) from None
        if not is_directory:
            raise StoreUnavailable("the file:// root is not a directory")
        if self._create or _holds_documents(self._root):
            return "unmarked"
        raise StoreUnavailable(_MISSING_MARKER)

    def _prepare_to_write(self) -> None:
        """Require the marker before a write, or write it first where that is allowed."""
        if self._state() == "marked":
            return
        try:
            ensure_directory(self._root)
            publish_marker(self._root, lock_timeout=self._lock_timeout)
        except LockTimeout:
            raise StoreBusy(
                f"the file:// lock was held for more than {self._lock_timeout:g} s"
            ) from None
        except OSError as exc:
            raise StoreUnavailable(f"cannot create the file:// store ({exc.strerror})") from exc

    # -- the store ----------------------------------------------------------------------

    @property
    def root(self) -> str:
        """The absolute directory holding the documents."""
        return self._root

    @property
    def url(self) -> str:
        """``file://`` and the root's bytes percent-encoded, so any folder name has a URL."""
        return "file://" + quote(os.fsencode(self._root))

    def path(self, key: str) -> str:
        """Where ``key`` lives: ``<root>/ab/cd/<key>.md`` with ``abcd`` from SHA-256(key)."""
        fan = hashlib.sha256(check_key(key).encode("ascii")).hexdigest()
        return os.path.join(self._root, fan[:2], fan[2:4], key + _SUFFIX)

    def read(self, key: str) -> Stored | None:
        path = self.path(key)
        try:
            data = _read_file(path)
        except (FileNotFoundError, NotADirectoryError):
            self._state()
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
        """Hold the key's lock; the store itself was checked by the caller."""
        try:
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                ensure_directory(directory)
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
        self._prepare_to_write()
        with self._locked(path):
            if self._current_version(path) != expected:
                raise VersionConflict("the stored version is not the expected one")
            if key not in self._swept:
                newest = _collect_stale_temps(directory, key, self._history)
                if expected is not None and newest is not None:
                    self._remember_kept(key, expected, newest)
                if len(self._swept) >= _SWEPT_KEYS:
                    self._swept.clear()
                self._swept.add(key)
            temp = os.path.join(directory, _temp_prefix(key) + _TEMP_END)
            kept, recycled = (
                (None, False) if expected is None else self._keep(key, path, expected, temp)
            )
            try:
                _write_temp(temp, data, recycled=recycled)
                try:
                    os.replace(temp, path)
                except BaseException:
                    with contextlib.suppress(OSError):
                        os.unlink(temp)
                    raise
            except BaseException:
                self._unkeep(key, directory, kept)
                raise
            version = _version(data)
            self._remember_kept(key, version, kept)
            try:
                fsync_directory(directory)
            except OSError as exc:
                raise WriteOutcomeUnknown(
                    "the document was replaced but the directory could not be synced"
                ) from exc
        return version

    def _keep(self, key: str, path: str, current: str, temp: str) -> tuple[int | None, bool]:
        """Hard-link the document ``path`` (version ``current``) as a kept version.

        Called under the key's lock before the temp file is written, so the
        link and the removal of the version falling out of the last
        ``history`` are committed by the temp file's fsync, not the rename's.
        That version is not unlinked but renamed to ``temp``, for the write
        to reuse its inode: freeing one and allocating another would cost a
        save on ext4 about a fifth of its time. The next number is
        remembered while the document is what this store wrote, else found
        by a listing. Returns the kept version's number (``None`` when
        nothing was kept: best-effort, the save goes on) and whether
        ``temp`` now holds a recycled version.
        """
        if self._history == 0:
            return None, False
        directory, document = os.path.split(path)
        remembered = self._last_kept.get(key)
        try:
            if remembered is not None and remembered[0] == current:
                number = remembered[1] + 1
                dropped = [number - self._history] if number >= self._history else []
            else:
                kept = kept_versions(directory, document)
                number = max(kept, default=-1) + 1
                dropped = [older for older in kept if older <= number - self._history]
            recycled = False
            for older in dropped:
                older_path = os.path.join(directory, kept_name(document, older))
                with contextlib.suppress(FileNotFoundError):
                    if recycled:
                        os.unlink(older_path)
                    else:
                        os.rename(older_path, temp)
                        recycled = True
            kept_path = os.path.join(directory, kept_name(document, number))
            os.link(path, kept_path, follow_symlinks=False)
        except OSError:
            self._last_kept.pop(key, None)
            return None, False
        return number, recycled

    def _unkeep(self, key: str, directory: str, kept: int | None) -> None:
        """After a failed write: the version just kept is the document that stays, not an older."""
        self._last_kept.pop(key, None)
        if kept is not None:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, kept_name(key + _SUFFIX, kept)))

    def _remember_kept(self, key: str, version: str, newest: int | None) -> None:
        """The document of ``key`` is ``version`` and its newest kept version is ``newest``."""
        if newest is None:
            self._last_kept.pop(key, None)
            return
        if len(self._last_kept) >= _REMEMBERED_KEYS and key not in self._last_kept:
            self._last_kept.clear()
        self._last_kept[key] = (version, newest)

    def delete(self, key: str) -> None:
        """Remove the document and every kept version of it, the kept versions first.

        So a crash part way leaves the document, and the delete can be run
        again; kept versions of a document removed out of band go too.
        """
        path = self.path(key)
        directory = os.path.dirname(path)
        try:
            os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            self._state()
            if not self._listed_kept(directory, key):
                return  # nothing to purge; no lock file or directories for a no-op
        except OSError as exc:
            raise StoreUnavailable(f"cannot reach the file:// store ({exc.strerror})") from exc
        with self._locked(path):
            remove_kept(directory, key + _SUFFIX)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            fsync_directory(directory)
        self._last_kept.pop(key, None)

    def purge_history(self, key: str) -> None:
        """Unlink every kept version of ``key`` under its lock, whatever ``history`` is now.

        An erase's last step: versions kept while the store was opened with a
        longer history, or before it was opened with ``history=0``, go too.
        """
        path = self.path(key)
        directory = os.path.dirname(path)
        if not self._listed_kept(directory, key):
            return  # nothing kept: no lock file or directories for a no-op
        with self._locked(path):
            remove_kept(directory, key + _SUFFIX)
            fsync_directory(directory)
        self._last_kept.pop(key, None)

    def history(self, key: str) -> list[KeptVersion]:
        """The kept versions of ``key`` oldest first (by their numbers), the current one last.

        Read without the lock: a write landing meanwhile may leave its newest
        kept version out, or list it as the current one only.
        """
        path = self._path_with_history(key)
        current = self._current_with_stat(path)
        if current is None:
            return []
        data, info = current
        # A crash between a link and its rename leaves a second name of one file: list it once.
        seen = {(info.st_dev, info.st_ino)}
        older: list[KeptVersion] = []
        for found_data, found in self._kept_files(path, key):
            if (found.st_dev, found.st_ino) not in seen:
                seen.add((found.st_dev, found.st_ino))
                older.append(KeptVersion(_version(found_data), found.st_mtime, len(found_data)))
        return [*older, KeptVersion(_version(data), info.st_mtime, len(data))]

    def read_version(self, key: str, version: str) -> Stored | None:
        """The current document or the kept one whose bytes have ``version``; ``None`` if gone."""
        path = self._path_with_history(key)
        current = self._current_with_stat(path)
        if current is None:
            return None
        if _version(current[0]) == version:
            return Stored(data=current[0], version=version)
        for found_data, _ in self._kept_files(path, key):
            if _version(found_data) == version:
                return Stored(data=found_data, version=version)
        return None

    def _path_with_history(self, key: str) -> str:
        """``key``'s path, or HistoryNotKept when this store keeps no older versions."""
        path = self.path(key)
        if self._history == 0:
            raise HistoryNotKept("file:// opened with history=0 keeps no older versions")
        return path

    def _current_with_stat(self, path: str) -> tuple[bytes, os.stat_result] | None:
        """The document's bytes and stat; ``None`` (once the store is known) if there is none."""
        try:
            current = read_with_stat(path)
        except OSError as exc:
            raise StoreUnavailable(f"cannot read from the file:// store ({exc.strerror})") from exc
        if current is None:
            self._state()
        return current

    def _kept_files(self, path: str, key: str) -> Iterator[tuple[bytes, os.stat_result]]:
        """Bytes and stat of each kept version of ``key`` that is a regular file, oldest first."""
        kept = self._listed_kept(os.path.dirname(path), key)
        try:
            for _, kept_path in sorted(kept.items()):
                found = read_with_stat(kept_path, follow=False)
                if found is not None:
                    yield found
        except OSError as exc:
            raise StoreUnavailable(f"cannot read from the file:// store ({exc.strerror})") from exc

    @staticmethod
    def _listed_kept(directory: str, key: str) -> dict[int, str]:
        """:func:`.kept_versions`, an unreadable folder being StoreUnavailable."""
        try:
            return kept_versions(directory, key + _SUFFIX)
        except OSError as exc:
            raise StoreUnavailable(f"cannot list the file:// store ({exc.strerror})") from exc

    def keys(self) -> Iterator[str]:
        if self._state() == "absent":
            return
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
            raise StoreUnavailable("the file:// store changed while it was listed") from None
        except OSError as exc:
            raise StoreUnavailable(f"cannot list the file:// store ({exc.strerror})") from exc

    @property
    def options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"lock_timeout": self._lock_timeout, "create": self._create}
        if self._history != _DEFAULTS.history:
            options["history"] = self._history
        return options
