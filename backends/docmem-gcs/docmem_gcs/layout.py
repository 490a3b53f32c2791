"""Is this prefix a docmem-fsspec store? Checked once per process and store, before any request.

``gs://`` used to be docmem-fsspec's scheme, and docmem-fsspec keeps each key
as a folder of commit-log objects, ``<prefix>/<key>/<16 hex>.md``, where this
plug-in keeps one object, ``<prefix>/<key>.md``. Opened here, such a store
would read as empty: every memory silently gone. So before the first read or
write through a store, once per process and (endpoint, bucket, prefix), one
listing with a delimiter asks for the first few names under the prefix; a
folder named like a docmem key means the prefix holds a docmem-fsspec store,
and the store refuses with StoreNotConfigured, saying how to open or move it.

The same request shows the bucket exists and the credentials work: a missing
bucket is StoreNotConfigured here, where fake-gcs-server's downloads would
answer a bare 404 that looks like a missing object. Which names count, and
the refusal, are :func:`docmem.backend.refuse_fsspec_layout`'s.
"""

from __future__ import annotations

from typing import Any

from docmem.backend import refuse_fsspec_layout

from .errors import gcs_answers

__all__ = ["PAGE", "check_layout", "foreign_folders"]

#: Names asked for: a docmem-fsspec store's root holds nothing but key folders (and its
#: probe objects), so its first page names a folder.
PAGE = 8


def foreign_folders(prefixes: Any, listed_under: str) -> list[str]:
    """The listed sub-prefixes of ``listed_under``, relative to it and without their slash."""
    return [
        name[len(listed_under) : -1]
        for name in prefixes or ()
        if isinstance(name, str) and name.startswith(listed_under) and name.endswith("/")
    ]


def check_layout(client: Any, bucket: str, prefix: str, *, timeout: Any, url: str) -> None:
    """One listing of ``prefix``'s first names; StoreNotConfigured for a docmem-fsspec store."""
    under = f"{prefix}/" if prefix else ""
    with gcs_answers("list", bucket=bucket):
        iterator = client.list_blobs(
            bucket,
            prefix=under,
            delimiter="/",
            max_results=PAGE,
            retry=None,
            timeout=timeout,
        )
        page = next(iterator.pages, None)
        prefixes = () if page is None else page.prefixes
    refuse_fsspec_layout(
        foreign_folders(prefixes, under), at_root=not prefix, url=url, plugin="docmem-gcs"
    )
