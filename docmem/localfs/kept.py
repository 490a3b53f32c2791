"""Kept versions of a document: the files ``<document>.~<n>`` beside it (``file://`` history).

A ``file://`` write hard-links the document it is about to replace under
the document's name, ``.~`` and a number, one more than the newest kept
version's, so the number orders the versions whatever the clock's
resolution (docs/design.md, section 4). These helpers name, list, read and
remove those files; when to keep one, how many, and the lock around it
stay with the store. Every helper takes the document's file name, not a
key, so the rule for a key's file name is written only once, in the store.
A kept name ends in ``.~<n>``, not ``.md``, and does not start with
``.tmp-``: the store's listing of keys never takes one, nor does its
temp-file sweep.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat

__all__ = [
    "KEPT",
    "KEPT_NUMBER",
    "kept_name",
    "kept_number",
    "kept_versions",
    "read_with_stat",
    "remove_kept",
]

#: Between a document's name and a kept version's number: ``<key>.md.~<n>``.
KEPT = ".~"
#: A kept version's number as written: no sign, no leading zero, at most 18 digits.
KEPT_NUMBER = re.compile(r"0|[1-9][0-9]{0,17}")


def kept_name(document: str, number: int) -> str:
    """``<document>.~<number>``, the name :func:`kept_number` reads back.

    No other document's names start like it: ``file://`` names a document
    ``<key>.md``, and a key has no ``.``.
    """
    return f"{document}{KEPT}{number}"


def kept_number(name: str, document: str) -> int | None:
    """The number of ``document``'s kept version named ``name``; ``None`` if it names none."""
    prefix = f"{document}{KEPT}"
    if not name.startswith(prefix) or not KEPT_NUMBER.fullmatch(name[len(prefix) :]):
        return None
    return int(name[len(prefix) :])


def kept_versions(directory: str, document: str) -> dict[int, str]:
    """The path of every kept version of ``document`` in ``directory``, by number: one listing."""
    try:
        with os.scandir(directory) as entries:
            numbered = ((kept_number(entry.name, document), entry.path) for entry in entries)
            return {number: path for number, path in numbered if number is not None}
    except (FileNotFoundError, NotADirectoryError):
        return {}


def read_with_stat(path: str, *, follow: bool = True) -> tuple[bytes, os.stat_result] | None:
    """The file's bytes and its ``fstat``, ``None`` if it is not there.

    A kept version is read with ``follow=False``: a symlink planted under
    its name is not a kept version, and is never read through.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if not follow and exc.errno == errno.ELOOP:
            return None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 17):
            chunks.append(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def remove_kept(directory: str, document: str) -> None:
    """Unlink every kept version of ``document``.

    Call it holding the document's lock, then sync ``directory``.
    """
    for path in kept_versions(directory, document).values():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
