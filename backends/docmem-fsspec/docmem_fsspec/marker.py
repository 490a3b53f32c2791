"""The marker file that tells a local store's root from an empty folder.

A root that is a mount point is still a folder after its volume is
unmounted: empty, and on the disk underneath. Read as a store, it would look
like an empty memory, and the next save would write to the wrong disk. So a
local store's root holds ``.docmem-store`` (the name the core's ``file://``
backend uses too), and every listing and every create requires it. The
store's creation writes it (``create=true``, which makes a missing root or
takes over a folder without the marker: use it once to create a store on a
volume that may be unmounted, never in the service that opens it every day).
A root written by an earlier release, without a marker but with docmem
objects in it, is read as it is and gets its marker on its next write.
Object stores need none: a bucket or container has no mount point, and a
missing one is already an error.
"""

from __future__ import annotations

import logging
import os
import re
import stat

from docmem.errors import StoreBusy, StoreUnavailable
from docmem.localfs.durable import ensure_directory
from docmem.localfs.flock import LockTimeout
from docmem.localfs.marker import MARKER, MARKER_CONTENT, publish_marker

__all__ = ["MARKER", "MARKER_CONTENT", "require_store"]

logger = logging.getLogger("docmem_fsspec")

#: How long creating the marker may wait for another creator (it takes milliseconds).
_MARKER_LOCK_SECONDS = 10.0
_KEY_FOLDER = re.compile(r"[A-Za-z0-9_-]{1,200}")
_LOG_OBJECT = re.compile(r"[0-9a-f]{16}\.(md|tombstone|purge)")
_MISSING_ROOT = (
    "the fsspec+file store's root does not exist: is the volume mounted? Create the store "
    "by opening it with create=true"
)
_MISSING = (
    "no docmem store at the fsspec root (marker .docmem-store missing): is the volume "
    "mounted? To start a new store in this folder, open it with create=true"
)


def require_store(root: str, *, create: bool, writing: bool) -> bool:
    """Check that ``root`` is a docmem store; ``False`` when it may be created but is not yet.

    With ``create``, a missing root or marker is made by the first write
    (``writing``), and the store reads as empty before that. Without it, a
    root without the marker is refused unless it already holds docmem
    objects: then it is a store from an earlier release, read as it is and
    marked by its next write.
    """
    if _marker_present(root):
        return True
    exists = _is_folder(root)
    if exists and _holds_docmem_objects(root):
        if writing:
            logger.info("docmem-fsspec: marking an existing store root with %s", MARKER)
            _write_marker(root)
        return True
    if not create:
        if not exists:
            raise StoreUnavailable(_MISSING_ROOT)
        raise StoreUnavailable(_MISSING)
    if not writing:
        return False
    if not exists:
        _make_folders(root)
    _write_marker(root)
    return True


def _marker_present(root: str) -> bool:
    try:
        found = os.stat(os.path.join(root, MARKER))
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise StoreUnavailable(f"cannot reach the fsspec+file store ({exc.strerror})") from None
    if not stat.S_ISREG(found.st_mode):
        raise StoreUnavailable(f"the fsspec+file store marker {MARKER} is not a regular file")
    return True


def _is_folder(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise StoreUnavailable(f"cannot reach the fsspec+file store ({exc.strerror})") from None


def _holds_docmem_objects(root: str) -> bool:
    """Whether some key folder under ``root`` holds an object of a commit log."""
    try:
        with os.scandir(root) as folders:
            for folder in folders:
                if (
                    _KEY_FOLDER.fullmatch(folder.name)
                    and folder.is_dir(follow_symlinks=False)
                    and _folder_holds_log(folder.path)
                ):
                    return True
    except OSError as exc:
        raise StoreUnavailable(f"cannot list the fsspec+file store ({exc.strerror})") from None
    return False


def _folder_holds_log(folder: str) -> bool:
    with os.scandir(folder) as objects:
        return any(_LOG_OBJECT.fullmatch(found.name) for found in objects)


def _make_folders(path: str) -> None:
    """Create ``path`` and its missing parents, each new name made durable in its parent."""
    try:
        ensure_directory(path)
    except OSError as exc:
        raise StoreUnavailable(f"cannot create the fsspec+file root ({exc.strerror})") from None


def _write_marker(root: str) -> None:
    """Publish the marker as the core's ``file://`` does, crash leftovers collected.

    See :func:`docmem.localfs.marker.publish_marker`: under a lock, durable,
    never over an existing marker.
    """
    try:
        publish_marker(root, lock_timeout=_MARKER_LOCK_SECONDS)
    except LockTimeout:
        raise StoreBusy(
            f"the fsspec+file store's marker lock was held for more than {_MARKER_LOCK_SECONDS:g} s"
        ) from None
    except OSError as exc:
        raise StoreUnavailable(f"cannot mark the fsspec+file store ({exc.strerror})") from None
