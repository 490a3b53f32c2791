"""Fences: an operator's migration id that stops every change to a store while it moves.

A fence has two parts (docs/design.md, section 4.3):

- each document's header field ``fence``, set and lifted by conditional
  writes: every save, remove and erase refuses a fenced document
  (:mod:`docmem.mutation`), while recall goes on reading it;
- the store-level marker, a header-only docmem document under the reserved
  key :data:`FENCE_KEY` whose ``fence`` names the migration: a document that
  does not exist yet has no header to carry a fence, so
  :class:`docmem.FileMemory` reads the marker before it creates a scope's
  document, and again after, and a new scope is refused too.

Only the fence id is ever recorded, never anything of the operator's. The
marker is set before any document is fenced and lifted after the last one
is unfenced, and both walks are idempotent: run again with the same id, they
finish what an interrupted run left.
"""

from __future__ import annotations

import collections
import logging
import re
from dataclasses import dataclass, replace

from ..backend import Backend
from ..errors import (
    DocmemError,
    DocumentCorrupt,
    InvalidArgument,
    ScopeFenced,
    StoreBusy,
    TransferRefused,
    VersionConflict,
    WriteOutcomeUnknown,
)
from ..storage.parallel import ordered
from ..storage.progress import NO_PROGRESS, Progress
from .document import MAX_DOCUMENT_BYTES, MemoryDocument, parse, serialize, serialize_shrinking
from .retry import RetryPolicy

__all__ = [
    "FENCE_KEY",
    "FenceReport",
    "check_fence_id",
    "confirm_create",
    "fence",
    "fence_document",
    "listed",
    "refuse_create_if_fenced",
    "store_fence",
    "unfence",
    "unfenced",
]

logger = logging.getLogger("docmem")

#: The reserved storage key of the store-level fence marker (no scope's key looks like it:
#: those start with ``memkey1_``). Exports, imports and verification leave it out.
FENCE_KEY = "docmem-fence"

#: The same rule the document header applies to its ``fence`` field.
_FENCE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
#: A fence must win against busy writers, who back off when they lose: a longer budget.
_POLICY = RetryPolicy(max_attempts=64, max_seconds=60.0)
#: At most this many listings by one fence walk (each after the previous one found new keys).
_MAX_LISTINGS = 16

_FENCED_STORE = "this memory is being migrated; new memories cannot be saved for now"
_LATE_CREATE = (
    "this memory is being migrated; this note may not be kept: save it again after the migration"
)


def check_fence_id(fence_id: object) -> str:
    """``fence_id`` if it is 1-128 characters of ``[A-Za-z0-9._:-]``, else InvalidArgument."""
    if not isinstance(fence_id, str) or not _FENCE_ID.fullmatch(fence_id):
        raise InvalidArgument("a fence id is 1-128 characters of [A-Za-z0-9._:-]")
    return fence_id


@dataclass(frozen=True)
class FenceReport:
    """What :func:`fence` or :func:`unfence` did: documents seen, changed, already so, left."""

    fence_id: str
    #: Documents looked at (the marker not counted).
    documents: int
    #: Documents this call fenced (or unfenced).
    changed: int
    #: Documents that already were as asked.
    unchanged: int
    #: :func:`unfence` only: documents fenced by another migration, left as they are.
    other: int = 0
    #: Whether this call set (or lifted) the store-level marker itself.
    marker_changed: bool = False


def listed(store: Backend) -> list[str]:
    """Every document's key in ascending order, the fence marker left out."""
    listing = store.keys()  # a Backend's listing, not a dict's
    return sorted(key for key in listing if key != FENCE_KEY)


def unfenced(data: bytes) -> bytes:
    """``data`` without its header's ``fence`` field; bytes that are no docmem document unchanged.

    For a plaintext docmem document this is the same bytes with
    ``,"fence":"<id>"`` taken out of line 1 (the header is canonical, the
    field last): what the logical digest of an export hashes, and what an
    import writes.
    """
    try:
        document = parse(data)
    except DocumentCorrupt:
        return data
    return data if document.fence is None else serialize(replace(document, fence=None))


# -- the store-level marker --------------------------------------------------------------


def store_fence(store: Backend) -> str | None:
    """The fence id of the store-level marker, or ``None`` (no marker, or one lifted).

    A marker that does not parse is refused (DocumentCorrupt): a store that
    may be fenced must not take new documents.
    """
    stored = store.read(FENCE_KEY)
    if stored is None:
        return None
    return _marker(stored.data).fence


def _marker(data: bytes) -> MemoryDocument:
    try:
        return parse(data)
    except DocumentCorrupt:
        pass  # raised below, outside the handler
    raise DocumentCorrupt(
        f"the store's fence marker (key {FENCE_KEY}) is corrupt; repair or remove it by hand"
    )


def _set_marker(store: Backend, fence_id: str, *, lift: bool) -> bool:
    """Fence (or, with ``lift``, unfence) the marker by a conditional write; True if this did."""
    for _ in _POLICY.attempts():
        stored = store.read(FENCE_KEY)
        marker = _marker(stored.data) if stored is not None else None
        current = marker.fence if marker is not None else None
        if (lift and current is None) or (not lift and current == fence_id):
            return False
        if current is not None and current != fence_id:
            raise ScopeFenced(
                f"the store is fenced by another migration (fence id {current}); "
                "finish or roll back that one first"
            )
        revision = marker.revision + 1 if marker is not None else 1
        target = MemoryDocument({}, revision=revision, fence=None if lift else fence_id)
        expected = stored.version if stored is not None else None
        try:
            store.write(FENCE_KEY, serialize(target), expected=expected)
        except (VersionConflict, WriteOutcomeUnknown):
            continue  # read again: what is there now decides
        return True
    raise StoreBusy("the store's fence marker kept changing; run the command again")


# -- documents -----------------------------------------------------------------------------


def _refenced(store: Backend, key: str, fence_id: str, *, lift: bool) -> tuple[str, int]:
    """Fence (or lift the fence of) one document: its state afterwards and its size.

    The state is ``changed``, ``unchanged``, ``other`` (lifting: another
    migration's fence, left alone) or ``vanished`` (deleted since listed). A
    lost race is read again and retried, so a writer that was mid-save either
    landed before the fence (and is kept) or meets it (and is refused).
    """
    for _ in _POLICY.attempts():
        stored = store.read(key)
        if stored is None:
            return "vanished", 0
        document = _document(key, stored.data)
        if lift:
            if document.fence is None:
                return "unchanged", len(stored.data)
            if document.fence != fence_id:
                return "other", len(stored.data)
            data = serialize(replace(document, fence=None))
        else:
            if document.fence == fence_id:
                return "unchanged", len(stored.data)
            if document.fence is not None:
                raise ScopeFenced(
                    f"document {key} is fenced by another migration (fence id "
                    f"{document.fence}); finish or roll back that one first"
                )
            data = _fenced_bytes(key, document, fence_id)
        try:
            store.write(key, data, expected=stored.version)
        except (VersionConflict, WriteOutcomeUnknown):
            continue
        return "changed", len(data)
    raise StoreBusy(f"the fence of {key} kept losing to writers; run the command again")


def fence_document(store: Backend, key: str, fence_id: str) -> bool:
    """Fence one document by ``fence_id`` (conditional writes); True if this call changed it."""
    state, _ = _refenced(store, key, check_fence_id(fence_id), lift=False)
    return state == "changed"


def _document(key: str, data: bytes) -> MemoryDocument:
    try:
        return parse(data)
    except DocumentCorrupt:
        pass
    raise DocumentCorrupt(
        f"document {key} is not a plaintext docmem document and cannot be fenced "
        "(an encrypted store is fenced through its encrypting URL; a corrupt one is "
        "repaired or removed first)"
    )


def _fenced_bytes(key: str, document: MemoryDocument, fence_id: str) -> bytes:
    """The fenced document's bytes, within the byte cap: the oldest journal records go first."""
    _, data = serialize_shrinking(replace(document, fence=fence_id))
    if len(data) > MAX_DOCUMENT_BYTES:
        raise TransferRefused(
            f"document {key} is too close to the {MAX_DOCUMENT_BYTES:,}-byte cap to carry a "
            "fence; remove an entry from it first"
        )
    return data


def _walk(
    store: Backend, fence_id: str, *, lift: bool, workers: int, progress: Progress
) -> collections.Counter[str]:
    """Every document (re)fenced; listed again until a listing finds no key not yet done.

    While fencing, the marker is already up, so a listing that finds nothing
    new means every scope created before the marker has been fenced.
    """
    done: set[str] = set()
    counts: collections.Counter[str] = collections.Counter()
    phase = "unfencing" if lift else "fencing"
    for _ in range(_MAX_LISTINGS):
        keys = [key for key in listed(store) if key not in done]
        if not keys:
            return counts
        progress.begin(phase, len(keys))
        try:
            work = ordered(lambda key: _refenced(store, key, fence_id, lift=lift), keys, workers)
            for state, size in work:
                counts[state] += 1
                progress.advance(1, size)
        finally:
            progress.end()
        done.update(keys)
        if lift:
            return counts  # new documents are refused while the marker is up: one pass
    raise StoreBusy("documents kept appearing while the store was fenced; run it again")


def fence(
    store: Backend, fence_id: str, *, workers: int = 8, progress: Progress = NO_PROGRESS
) -> FenceReport:
    """Fence the whole store for migration ``fence_id``: the marker first, then every document.

    From then on saves, removes and erases fail with ScopeFenced (outcome
    ``not_committed``), new scopes included, while recall keeps working. A
    store or document fenced by another id is refused; one already fenced by
    this id is left as it is, so running it again finishes an interrupted run.
    """
    fence_id = check_fence_id(fence_id)
    marked = _set_marker(store, fence_id, lift=False)
    counts = _walk(store, fence_id, lift=False, workers=workers, progress=progress)
    return _report(fence_id, counts, marked)


def unfence(
    store: Backend, fence_id: str, *, workers: int = 8, progress: Progress = NO_PROGRESS
) -> FenceReport:
    """Lift fence ``fence_id``: every document fenced by it, then the marker.

    Documents fenced by another id are left fenced (counted in ``other``); a
    marker held by another id is refused. Idempotent, like :func:`fence`.
    """
    fence_id = check_fence_id(fence_id)
    current = store_fence(store)
    if current is not None and current != fence_id:
        raise ScopeFenced(
            f"the store is fenced by another migration (fence id {current}), not {fence_id}"
        )
    counts = _walk(store, fence_id, lift=True, workers=workers, progress=progress)
    marked = _set_marker(store, fence_id, lift=True)
    return _report(fence_id, counts, marked)


def _report(fence_id: str, counts: collections.Counter[str], marked: bool) -> FenceReport:
    return FenceReport(
        fence_id=fence_id,
        documents=counts["changed"] + counts["unchanged"] + counts["other"],
        changed=counts["changed"],
        unchanged=counts["unchanged"],
        other=counts["other"],
        marker_changed=marked,
    )


# -- what FileMemory asks before and after it creates a document -------------------------


def refuse_create_if_fenced(store: Backend) -> None:
    """Before creating a scope's document: ScopeFenced while the store-level marker is up."""
    if store_fence(store) is not None:
        raise ScopeFenced(_FENCED_STORE)


def confirm_create(store: Backend, key: str) -> None:
    """After creating ``key``'s document: did a fence go up meanwhile?

    No marker now means it went up (if at all) after the document existed,
    so the fence walk, which lists after setting it, finds the document. A
    marker now means the walk may have listed before the document existed:
    the document is fenced here, so nothing more lands on it, and the save
    is reported ScopeFenced with outcome ``unknown`` (kept in this store,
    perhaps not carried to the new one), never ``saved``. A failure of the
    look itself is reported with outcome ``unknown`` too: the document
    exists, but whether a fence went up is not known.
    """
    try:
        fence_id = store_fence(store)
    except DocmemError as error:
        error.outcome = "unknown"
        raise
    if fence_id is None:
        return
    try:
        fence_document(store, key, fence_id)
    except DocmemError as error:  # the migration fences it anyway when its export reads it
        logger.info("docmem: could not fence the new document %s (%s)", key, error.code)
    raise ScopeFenced(_LATE_CREATE, outcome="unknown")
