"""Exporting a store: every document, in key order, to one ``docmem-export/1`` stream.

Each document is read once, so the export is consistent per scope. For a
whole-store consistent copy the store is fenced first (:func:`export_store`
with ``fence_id``): then nothing changes while it is read, and a document
found unfenced (a scope created just as the fence went up) is fenced before
its bytes are taken. Reads run ``workers`` at a time; records are written in
key order.
"""

from __future__ import annotations

from typing import BinaryIO

from ...backend import Backend, Stored
from ...errors import DocumentCorrupt, TransferRefused
from ...storage.parallel import ordered
from ...storage.progress import NO_PROGRESS, Progress
from ..document import parse
from ..fencing import check_fence_id, fence, fence_document, listed
from .format import FORMAT, ExportWriter, Header, now
from .reader import ExportSummary
from .words import counted

__all__ = ["export_store", "late_keys", "write_export"]


def _fenced_read(store: Backend, key: str, fence_id: str | None) -> Stored | None:
    """``key``'s document; under a fence, fenced by it first if it was not yet."""
    stored = store.read(key)
    if fence_id is None or stored is None:
        return stored
    try:
        current = parse(stored.data).fence
    except DocumentCorrupt:
        current = None  # refenced() refuses it, by key
    if current == fence_id:
        return stored
    fence_document(store, key, fence_id)
    return store.read(key)


def write_export(
    store: Backend,
    out: BinaryIO,
    *,
    fence_id: str | None = None,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
    created: str | None = None,
) -> tuple[ExportSummary, list[str]]:
    """Write the export of ``store`` as it is now (fenced or not); the summary and the keys.

    With ``fence_id`` every document written carries that fence (the store
    is expected to be fenced already, see :func:`docmem.fence`).
    """
    if fence_id is not None:
        check_fence_id(fence_id)
    keys = listed(store)
    header = Header(
        format=FORMAT,
        created=created or now(),
        source=store.url,
        fenced=fence_id is not None,
        fence=fence_id,
    )
    writer = ExportWriter(out, header)
    progress.begin("exporting", len(keys))
    exported: list[str] = []
    try:
        reads = ordered(lambda key: (key, _fenced_read(store, key, fence_id)), keys, workers)
        for key, stored in reads:
            if stored is None:
                progress.advance(1, 0)
                continue  # deleted (an operator's purge) since the listing
            writer.add(key, stored.data)
            exported.append(key)
            progress.advance(1, len(stored.data))
    finally:
        progress.end()
    trailer = writer.finish()
    out.flush()
    summary = ExportSummary(
        created=header.created,
        source=header.source,
        fenced=header.fenced,
        fence=header.fence,
        documents=trailer.documents,
        bytes=trailer.bytes,
        logical_digest=trailer.logical_digest,
        sha256=trailer.sha256,
    )
    return summary, exported


def late_keys(store: Backend, exported: list[str]) -> list[str]:
    """Keys the store lists now that an export did not hold: scopes created meanwhile."""
    known = set(exported)
    return [key for key in listed(store) if key not in known]


def export_store(
    store: Backend,
    out: BinaryIO,
    *,
    fence_id: str | None = None,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
    created: str | None = None,
) -> ExportSummary:
    """Export every document of ``store`` to ``out`` (docs/export-format.md).

    Without ``fence_id`` each document is as it was when read (consistent
    per scope, while agents go on writing). With it the store is fenced
    first (:func:`docmem.fence`: it stays fenced afterwards), so the export
    is consistent for the whole store; a scope that appears during the
    export makes it TransferRefused (run it again: the fence stays up, and
    the next one holds it). ``created`` overrides the header's time (tests).
    """
    if fence_id is not None:
        fence(store, fence_id, workers=workers, progress=progress)
    summary, exported = write_export(
        store, out, fence_id=fence_id, workers=workers, progress=progress, created=created
    )
    if fence_id is not None:
        late = late_keys(store, exported)
        if late:
            raise TransferRefused(
                f"{counted(len(late), 'document')} appeared while the fenced store was exported "
                f"(first: {late[0]}); export again with the same fence id"
            )
    return summary
