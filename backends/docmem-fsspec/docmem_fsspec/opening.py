"""What a docmem-fsspec URL and its options mean, before anything is opened.

``fsspec+<protocol>://<root>`` names any fsspec protocol, and ``abfs://`` and
``abfss://`` name theirs directly. ``gs://``, ``gcs://`` and ``az://`` belong to
the native plug-ins (agent-docmem-gcs, agent-docmem-azure), which store one
object per key where docmem-fsspec keeps a commit log: the same bucket is
``fsspec+gs://`` here. The URL query and the
keywords are split once: docmem-fsspec's own options, checked here, and the
rest, which go to the filesystem unread (:mod:`docmem_fsspec.filesystems`).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

import msgspec

from docmem.errors import StoreNotConfigured
from docmem.options import Seconds, split_options

__all__ = ["DIRECT_SCHEMES", "FsspecOptions", "Opening", "parse_url"]

#: Schemes served directly; anything else is ``fsspec+<protocol>://``.
DIRECT_SCHEMES = ("abfs", "abfss")
#: Schemes docmem-fsspec served directly before the native plug-ins took them.
_NATIVE = {"gs": "agent-docmem-gcs", "gcs": "agent-docmem-gcs", "az": "agent-docmem-azure"}


class FsspecOptions(msgspec.Struct, frozen=True, kw_only=True):
    """docmem-fsspec's own options (URL query or keywords; see :mod:`docmem.options`).

    Every other option goes to the filesystem; :class:`FsspecBackend` documents each one.
    """

    retain: Annotated[
        int,
        msgspec.Meta(
            ge=1, description="a whole number of at least 1 (the newest version always stays)"
        ),
    ] = 8
    grace: Seconds = 600.0
    max_staleness: Seconds = 60.0
    assume_atomic_create: bool = False
    cache_size: Annotated[
        int, msgspec.Meta(ge=0, description="a whole number of at least 0 (keys remembered)")
    ] = 1024
    create: bool = False

    def __post_init__(self) -> None:
        # A version seen longer ago than grace may be collected (docs/design.md, section 4.1).
        if self.max_staleness >= self.grace:
            raise ValueError("max_staleness must be less than grace")


class Opening(msgspec.Struct, frozen=True, kw_only=True):
    """A URL with its options, read: what :class:`FsspecBackend` is built from."""

    protocol: str
    root: str
    scheme: str
    options: FsspecOptions
    #: Everything that is not one of :class:`FsspecOptions`, for the filesystem.
    storage_options: dict[str, Any]


def parse_url(url: str, options: dict[str, Any]) -> Opening:
    """Read ``url`` and ``options`` (keywords win over the query); no I/O."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme.startswith("fsspec+"):
        protocol = scheme[len("fsspec+") :]
    elif scheme in DIRECT_SCHEMES:
        protocol = scheme
    elif scheme in _NATIVE:
        raise StoreNotConfigured(
            f"{scheme}:// is served by {_NATIVE[scheme]}, one object per key; docmem-fsspec "
            f"opens the same bucket as fsspec+{scheme}://"
        )
    else:
        raise StoreNotConfigured(
            "docmem-fsspec URLs are fsspec+<protocol>://... (for example fsspec+s3://bucket) "
            f"or one of {', '.join(s + '://' for s in DIRECT_SCHEMES)}"
        )
    ours, rest = split_options(FsspecOptions, url, options, scheme=scheme)
    storage = dict(rest.pop("storage_options", None) or {})
    storage.update(rest)
    return Opening(
        protocol=protocol,
        root=parts.netloc + parts.path,
        scheme=scheme,
        options=ours,
        storage_options=storage,
    )
