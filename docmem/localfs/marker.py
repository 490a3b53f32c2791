"""The marker file that tells a local store's root from an empty folder (stable).

A root that is a mount point is still a folder after its volume is
unmounted: empty, and on the disk underneath. Read as a store it would look
like an empty memory, so a local store's root holds :data:`MARKER`, written
once when the store is created. ``file://`` and docmem-fsspec's local dialect
share the name and the way it is written, so either reads a root the other
created.
"""

from __future__ import annotations

import contextlib
import os

from .durable import fsync_directory, link_new_file
from .flock import exclusive

__all__ = ["MARKER", "MARKER_CONTENT", "publish_marker"]

#: The file whose presence in the root says "this directory is a docmem store".
MARKER = ".docmem-store"
MARKER_CONTENT = b"docmem store\n"
#: Where a marker is written before it is linked into place: ``.docmem-store.tmp-...``.
_TEMP = ".tmp-"


def publish_marker(root: str, *, lock_timeout: float) -> None:
    """Give the existing folder ``root`` its store marker, durably, never over one.

    Under the marker's own lock, so any marker temp found there is a crashed
    creator's and goes first, as with documents. The root is fsynced also when
    another creator linked the marker a moment ago. Raises OSError, or
    LockTimeout when the lock stays held; for ``fsspec+file://`` too.
    """
    with exclusive(os.path.join(root, MARKER + ".lock"), lock_timeout):
        with contextlib.suppress(OSError), os.scandir(root) as entries:
            for entry in entries:
                if entry.name.startswith(MARKER + _TEMP):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(entry.path)
        temp = os.path.join(root, f"{MARKER}{_TEMP}{os.getpid()}-{os.urandom(4).hex()}")
        link_new_file(os.path.join(root, MARKER), MARKER_CONTENT, temp=temp)
        fsync_directory(root)
