"""Durable file creation on a local POSIX disk, shared by the local stores.

A name becomes durable only when the directory holding it is fsynced, and a
new directory's name lives in its parent: these helpers sync both, so a save
that returned survives a power cut. Files are opened with ``O_NOFOLLOW`` (a
planted symlink is refused, not written through), ``O_CLOEXEC`` (a child
started meanwhile inherits no descriptor) and mode ``0o600`` (memory is
private to the store's owner).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator

__all__ = [
    "ensure_directory",
    "fsync_directory",
    "link_new_file",
    "rewrite_own_file",
    "write_new_file",
]

_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
_NEW_FILE_MODE = 0o600


def write_new_file(path: str, data: bytes) -> None:
    """Create ``path`` (which must not exist), write all of ``data`` and fsync it.

    ``O_EXCL`` with ``O_NOFOLLOW`` means the bytes land in a file this call
    made, never in one someone else prepared under that name; and because it
    is ours, a failed write (a full disk) removes it again.
    """
    fd = os.open(path, _NEW_FILE_FLAGS, _NEW_FILE_MODE)
    with _removed_on_failure(path):
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def rewrite_own_file(path: str, data: bytes) -> bool:
    """Overwrite ``path`` with exactly ``data`` and fsync it; False, untouched, if it is not ours.

    For a file whose contents are no longer needed, reused as a new file's
    inode: on ext4 freeing an inode and its blocks and allocating new ones
    costs more than the write itself (docs/design.md, section 4, "History on file://"). Only a
    regular file (``O_NOFOLLOW``) owned by this user that no other name
    shares is written, so the bytes cannot land in a file reachable another
    way (the current document, should the old name be a second name of it).
    A failed write removes the file, as :func:`write_new_file` does.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == os.geteuid()):
            return False
        with _removed_on_failure(path):
            _write_all(fd, data)
            if info.st_size > len(data):
                os.ftruncate(fd, len(data))
            os.fsync(fd)
    finally:
        os.close(fd)
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@contextlib.contextmanager
def _removed_on_failure(path: str) -> Iterator[None]:
    """Unlink ``path``, a file of ours being written, if the block fails."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def fsync_directory(directory: str) -> None:
    """Make the names in ``directory`` (created, renamed, removed) durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_directory(directory: str) -> None:
    """Create ``directory`` and its missing parents durably.

    Each parent that gained an entry is fsynced too: otherwise a crash could
    lose a document whose save had already returned. Costs one ``stat`` once
    the directory exists.
    """
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if parent != directory:
        ensure_directory(parent)
    with contextlib.suppress(FileExistsError):  # a racing writer made it: still sync it
        os.mkdir(directory)
    fsync_directory(parent)


def link_new_file(path: str, data: bytes, *, temp: str) -> bool:
    """Give ``path`` the contents ``data`` unless the name exists; never overwrite.

    The bytes go to ``temp`` (a fresh name in the same directory) and are
    fsynced before ``os.link`` publishes them, so ``path`` never exists half
    written; ``link`` fails on an existing name where ``rename`` would
    replace it. ``temp`` is removed in every case. Returns False when ``path``
    already existed. The directory is not fsynced here: the caller does it,
    because a failure at that point means "linked, maybe not durable".
    """
    write_new_file(temp, data)  # a taken temp name raises here, with nothing to undo
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return True
