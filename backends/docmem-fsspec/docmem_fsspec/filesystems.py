"""The filesystem behind a store: its class, the root path it understands, its clients.

A protocol resolves to the class fsspec registers for it (a missing one names
the extra that installs it), and the dialect judges that exact class
(:mod:`docmem_fsspec.dialects`). Clients are built with fsspec's instance
and listing caches off, since a cached listing would hide other writers'
versions; a second client serves the creates where the dialect sends them
with other options (retries off).
"""

from __future__ import annotations

import os
from typing import Any

import fsspec

from docmem.errors import DocmemError, StoreNotConfigured

from .dialects import Dialect

__all__ = ["LOCAL_PROTOCOLS", "build_filesystems", "filesystem_class", "root_path"]

#: Protocols of the local filesystem, whose root must carry the store marker.
LOCAL_PROTOCOLS = ("file", "local")
#: Which extra installs the implementation of a protocol.
_EXTRAS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
}


def filesystem_class(protocol: str) -> type[Any]:
    """fsspec's class for ``protocol``; a missing implementation names its extra."""
    try:
        return fsspec.get_filesystem_class(protocol)  # type: ignore[no-any-return]
    except (ImportError, ValueError) as exc:
        extra = _EXTRAS.get(protocol)
        advice = f"pip install 'agent-docmem-fsspec[{extra}]'" if extra else "install it"
        raise StoreNotConfigured(
            f"fsspec has no usable implementation of {protocol!r} ({type(exc).__name__}): {advice}"
        ) from None


def root_path(fs_class: type[Any], root: str, *, local: bool) -> str:
    """The root as the filesystem names paths (absolute on the local disk); ``""`` if none."""
    if local:
        return os.path.abspath(root) if root else ""
    return str(fs_class._strip_protocol(root)).rstrip("/") if root else ""


def build_filesystems(
    fs_class: type[Any], dialect: Dialect, storage_options: dict[str, Any], *, protocol: str
) -> tuple[Any, Any]:
    """(reader, writer), prepared by the dialect: one client twice where it serves both."""
    # Listing caches would hide other writers' versions: every listing asks the store.
    fixed = {"skip_instance_cache": True, "use_listings_cache": False}
    try:
        reader = fs_class(**storage_options, **fixed)
        writer_options = dialect.writer_options(storage_options)
        if writer_options is None:
            dialect.prepare(reader, writer=True)
            return reader, reader
        writer = fs_class(**writer_options, **fixed)
        dialect.prepare(reader, writer=False)
        dialect.prepare(writer, writer=True)
        return reader, writer
    except DocmemError:
        raise
    except Exception as exc:
        raise StoreNotConfigured(
            f"cannot open the {protocol} filesystem ({type(exc).__name__}): "
            "check the storage options"
        ) from None
