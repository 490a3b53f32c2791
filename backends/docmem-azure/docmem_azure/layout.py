"""Is this prefix a docmem-fsspec store? Then docmem-azure must refuse it, never read it as empty.

``az://`` URLs were served by docmem-fsspec, which keeps each key as a
folder of commit-log objects, ``<prefix>/<key>/<16 hex>.md``
(``docmem_fsspec.folders``); docmem-azure keeps ``<prefix>/<key>.md``. Opened
natively, such a store would look empty, and the first save would start
every scope's memory afresh beside the old one. So once per process and
store, before the first read or write, one listing with a delimiter looks at
the names directly under the prefix: a folder named like a docmem key means
the prefix holds a docmem-fsspec store, and the store is refused with
StoreNotConfigured saying how to open or move it.

At the container's root, where other stores' prefixes live side by side,
only folders named like the keys :class:`docmem.FileMemory` writes
(``memkey1_...``) count; under a prefix, any docmem key does.
"""

from __future__ import annotations

from typing import Any

from docmem.backend import fsspec_key_folder as fsspec_folder
from docmem.backend import refuse_fsspec_layout

from .errors import azure_answers

__all__ = ["PAGE", "check_layout", "fsspec_folder"]

#: Names asked for: one request, enough to pass a few leftover probe objects.
PAGE = 32


def check_layout(container: Any, name: str, prefix: str, *, scheme: str) -> None:
    """One listing of ``prefix`` with a delimiter; StoreNotConfigured if it holds key folders.

    ``container`` is a ``ContainerClient`` (its own retries for reads),
    ``name`` the container's name for messages, ``scheme`` the URL's.
    """
    start = f"{prefix}/" if prefix else ""
    with azure_answers("layout", container=name):
        pages = container.walk_blobs(
            name_starts_with=start or None, delimiter="/", results_per_page=PAGE
        ).by_page()
        page = list(next(pages, ()))
    listed = (str(getattr(item, "name", "") or "") for item in page)
    refuse_fsspec_layout(
        (folder[len(start) : -1] for folder in listed if folder.endswith("/")),
        at_root=not prefix,
        url=f"{scheme}://{name}/{prefix}" if prefix else f"{scheme}://{name}",
        plugin="docmem-azure",
    )
