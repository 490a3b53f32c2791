"""Does the store really refuse a second create of one name? Checked before the first write.

A filesystem class is accepted for what its client *sends* (see
:mod:`docmem_fsspec.dialects`); whether the store honours it is another
matter. A server that ignores the precondition (an emulator, a gateway in
front of the store, or a GCS zonal bucket, where gcsfs's
``ExtendedGcsFileSystem`` writes without one) accepts every create, so two
writers that build on the same version both "win" and one update silently
replaces the other. So before the first create through a store, once per
store object and process (again in a forked child), :func:`check` creates a
probe object under the store's root, creates it a second time, which must be
refused, and removes it. A store that fails is refused with
:class:`docmem.errors.ConditionsNotHonoured`, in the words docmem-s3's probe uses.

The probe object is ``<root>/.docmem-probe-<random>``: beside the key folders,
never in one, so one a crash left behind is never taken for a document (keys
have no dots, and only what lies in a key's folder is read). No folder of its
own: the local filesystem, and buckets with a hierarchical namespace, would
keep that folder after the object is gone.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from docmem.errors import (
    ConditionsNotHonoured,
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
)

from .dialects import Dialect

__all__ = ["PROBE_PREFIX", "ConditionsNotHonoured", "check"]

#: How the name of a probe object starts; it lies directly under the store's root.
PROBE_PREFIX = ".docmem-probe-"

#: Check names as docmem-s3's probe words them.
_CREATED = "create of a new object succeeds"
_REFUSED = "a second create of the same object is refused"


def check(dialect: Dialect, reader: Any, writer: Any, root: str, *, scheme: str) -> None:
    """Create one probe object twice: the second create must be refused.

    ``StoreUnavailable`` if a request fails (nothing of the caller's was
    written), :class:`ConditionsNotHonoured` if a check does not hold.
    """
    path = f"{root}/{PROBE_PREFIX}{uuid.uuid4().hex}"
    try:
        if not _create(dialect, writer, path, b"docmem probe 1", scheme=scheme):
            raise ConditionsNotHonoured.failed(scheme, [_CREATED])
        if _create(dialect, writer, path, b"docmem probe 2", scheme=scheme):
            raise ConditionsNotHonoured.failed(scheme, [_REFUSED])
    finally:
        _remove(reader, path)  # also after a failed create, which may have landed


def _create(dialect: Dialect, writer: Any, path: str, data: bytes, *, scheme: str) -> bool:
    """Whether the store accepted the create (``False``: it refused the name as taken).

    Any other failure is the probe failing, and nothing of the caller's was
    written (not even by a create whose outcome is unknown): the caller's
    write is ``StoreUnavailable``.
    """
    try:
        dialect.create(writer, path, data)
    except VersionConflict:
        return False
    except StoreNotConfigured:
        raise
    except DocmemError as error:
        raise StoreUnavailable(f"the {scheme} probe failed: {error.message}") from None
    return True


def _remove(reader: Any, path: str) -> None:
    # Best effort: a probe object left behind is harmless and never read as a key.
    with contextlib.suppress(Exception):
        reader.rm_file(path)
