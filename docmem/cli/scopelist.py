"""A file of storage keys, one a line: the scopes ``docmem revert --scopes`` works on.

The list is what ``docmem audit --keys-only`` prints (or any ``memkey1_...``
keys an operator collected), so a file written by one command is read by
the other. Blank lines and lines starting with ``#`` are skipped; a key
listed twice is reverted once. ``-`` reads stdin. A file that cannot be read
or a line that is not a key is ``invalid_argument`` naming the path or the
line number, never the line (it may hold anything).
"""

from __future__ import annotations

import errno
import os
import sys

from docmem.errors import InvalidArgument

from .address import is_storage_key

__all__ = ["read_keys"]

_PROBLEMS = {
    errno.ENOENT: "there is no such file",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENOTDIR: "a part of its path is not a folder",
}


def read_keys(path: str) -> list[str]:
    """The storage keys listed in ``path`` (``-``: stdin), in order, each once."""
    if path == "-":
        text = sys.stdin.read()
    else:
        problem: str | None = None
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            problem = _PROBLEMS.get(error.errno or 0) or type(error).__name__
        except UnicodeDecodeError:
            problem = "it is not UTF-8 text"
        if problem is not None:  # raised here: no OSError as its context
            raise InvalidArgument(f"cannot read the scopes file {os.fspath(path)!r}: {problem}")
    keys: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        key = line.strip()
        if not key or key.startswith("#"):
            continue
        if not is_storage_key(key):
            raise InvalidArgument(
                f"line {number:,} of the scopes file is not a storage key (memkey1_ followed "
                "by 43 base64url characters, as `docmem audit --keys-only` prints them)"
            )
        keys[key] = None
    return list(keys)
