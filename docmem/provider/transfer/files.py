"""The operator's export files: read one, or write one whole, mode 0600, never through a link.

An export holds every memory of a store (in plaintext, even from an
encrypted store), so docmem writes one the way it writes nothing else: a
new file, mode 0600 whatever the umask, under a temporary name beside the
path, renamed into place once complete. An interrupted write leaves no file
that looks whole; a file already at the path keeps its bytes until the new
one replaces it (its inode is never truncated, so a hard link to it keeps
them for good); a symlink at the path is replaced, never followed.
``docmem export`` and ``docmem migrate --keep-export`` both write through
:func:`published`.

A path that cannot be opened is the operator's mistake, not a bug in
docmem: InvalidArgument naming the path (the operator's own words) and its
problem, never an OSError that the command line would report as a crash.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from typing import BinaryIO

from ...errors import InvalidArgument

__all__ = ["check_writable", "published", "readable"]

#: What an operator reads for the usual reasons a path cannot be opened.
_PROBLEMS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENOTDIR: "a part of its path is not a folder",
    errno.EROFS: "the file system is read-only",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ENOSPC: "no space is left on the device",
}


def _problem(error: OSError, *, missing: str) -> str:
    """``error`` in an operator's words; ``missing`` says what ENOENT means here."""
    if error.errno == errno.ENOENT:
        return missing
    if error.errno in _PROBLEMS:
        return _PROBLEMS[error.errno]
    return os.strerror(error.errno) if error.errno else type(error).__name__


def _refused(verb: str, path: str | os.PathLike[str], problem: str) -> InvalidArgument:
    return InvalidArgument(f"cannot {verb} the export file {os.fspath(path)!r}: {problem}")


@contextlib.contextmanager
def readable(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """The export file at ``path``, open to read; InvalidArgument if it cannot be opened."""
    file = _open_to_read(path)
    with file:
        yield file


def _open_to_read(path: str | os.PathLike[str]) -> BinaryIO:
    try:
        return open(path, "rb")  # readable() closes it
    except OSError as error:
        problem = _problem(error, missing="there is no such file")
    raise _refused("read", path, problem)  # outside the except: no OSError as its context


def _temporary(path: str | os.PathLike[str]) -> tuple[int, str]:
    """A new file beside ``path`` (mkstemp: mode 0600, created exclusively, through no link)."""
    if os.path.isdir(path):
        raise _refused("write", path, "it is a folder, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    prefix = f".{os.path.basename(os.fspath(path))}."
    try:
        return tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=folder)
    except OSError as error:
        problem = _problem(error, missing="its folder does not exist")
    raise _refused("write", path, problem)


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise now, before any work, if :func:`published` could not write ``path``.

    A migration checks its ``--keep-export`` path before it fences the
    source, rather than after the first round's export.
    """
    handle, temp = _temporary(path)
    os.close(handle)
    os.unlink(temp)


def _replace(temp: str, path: str | os.PathLike[str]) -> None:
    try:
        os.replace(temp, path)  # renames over a symlink, never through it
        return
    except OSError as error:
        problem = _problem(error, missing="its folder is gone")
    raise _refused("write", path, problem)


@contextlib.contextmanager
def published(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A new file (mode 0600, read and write) that becomes ``path`` only if the block ends well.

    On any failure, or a Ctrl-C, the temporary file is removed and ``path``
    is as it was.
    """
    handle, temp = _temporary(path)
    try:
        with os.fdopen(handle, "w+b") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        _replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
