"""Verifying a store against an export: the same keys, the same documents, the same digest.

Every document of the store is read back (``workers`` at a time) and hashed
as the logical digest hashes it, without its fence, so a fenced source and
its unfenced copy both verify against the same export. The report names
missing, different and extra documents by key, never by content.

Right after an import, a store that lists versions (``listed_versions``: an
S3 listing carries ETags) is verified without reading every document back:
each key must be listed with exactly the version the import's own write
returned, so it holds the bytes that write stored and nothing changed it
since (:func:`verify_versions`). Any difference is then looked at by reading.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ...backend import Backend
from ...errors import DocumentCorrupt, TransferRefused
from ...storage.parallel import ordered
from ...storage.progress import NO_PROGRESS, Progress
from ..document import parse
from ..fencing import FENCE_KEY, listed, unfenced
from .format import LogicalDigest
from .reader import ExportSummary, check_export, checked_records
from .words import counted

__all__ = ["VerifyReport", "verify_checked", "verify_store", "verify_versions"]

#: How many keys of each kind a report names (the counts are always whole).
_NAMED = 20


@dataclass(frozen=True)
class VerifyReport:
    """A store compared with an export: counts, both logical digests, what differs, by key."""

    #: Documents in the export.
    documents: int
    #: Documents in the store (the fence marker not counted).
    store_documents: int
    logical_digest: str
    store_digest: str
    #: How many export keys the store lacks, hold other documents, or the export lacks.
    missing: int
    different: int
    extra: int
    #: Up to 20 keys of each kind, ascending.
    missing_keys: tuple[str, ...]
    different_keys: tuple[str, ...]
    extra_keys: tuple[str, ...]
    #: Store documents that carry a fence (a fenced source; never a fresh import).
    fenced: int
    #: ``read``: every document read back; ``versions``: the store's listing of versions.
    method: str = "read"

    @property
    def ok(self) -> bool:
        """Every key present, nothing else, every document equal, and so the digests."""
        same = self.logical_digest == self.store_digest
        return same and not (self.missing or self.different or self.extra)

    def refusal(self) -> TransferRefused:
        """The error to raise when it is not :attr:`ok`: the counts and the first keys."""
        parts = []
        for count, keys, what in (
            (self.missing, self.missing_keys, "missing"),
            (self.different, self.different_keys, "different"),
            (self.extra, self.extra_keys, "not in the export"),
        ):
            if count:
                parts.append(f"{count:,} {what} (first: {keys[0]})")
        problems = "; ".join(parts) or "the logical digests differ"
        return TransferRefused(
            f"the store does not match the export: {problems}; "
            f"the export holds {counted(self.documents, 'document')}, the store "
            f"{self.store_documents:,}"
        )


def _joined(
    store_keys: list[str], records: Iterator[tuple[str, str]]
) -> Iterator[tuple[str, str | None, bool]]:
    """Both sorted key lists merged: ``(key, export hash or None, whether the store has it)``."""
    stored = iter(store_keys)
    current = next(stored, None)
    for key, logical in records:
        while current is not None and current < key:
            yield current, None, True
            current = next(stored, None)
        present = current == key
        if present:
            current = next(stored, None)
        yield key, logical, present
    while current is not None:
        yield current, None, True
        current = next(stored, None)


def _looked_at(
    store: Backend, item: tuple[str, str | None, bool]
) -> tuple[str, str | None, bytes | None, bool]:
    """``(key, export hash, the store's unfenced bytes or None, whether they carry a fence)``."""
    key, logical, present = item
    if not present:
        return key, logical, None, False
    found = store.read(key)
    if found is None:
        return key, logical, None, False
    plain = unfenced(found.data)
    fenced = plain != found.data
    if not fenced:
        with contextlib.suppress(DocumentCorrupt):
            fenced = parse(found.data).fence is not None
    return key, logical, plain, fenced


def _kind(digest: LogicalDigest, key: str, logical: str | None, plain: bytes | None) -> str | None:
    """What one key is (``missing``, ``different``, ``extra``, ``None``: equal); hashes it in."""
    if plain is None:
        return "missing" if logical is not None else None
    found = digest.add_unfenced(key, plain)
    if logical is None:
        return "extra"
    return "different" if found != logical else None


def verify_store(
    store: Backend, source: BinaryIO, *, workers: int = 8, progress: Progress = NO_PROGRESS
) -> VerifyReport:
    """Compare ``store`` with the export in ``source`` (checked first, ExportInvalid if bad)."""
    summary = check_export(source, progress=progress)
    return verify_checked(store, source, summary, workers=workers, progress=progress)


def verify_checked(
    store: Backend,
    source: BinaryIO,
    summary: ExportSummary,
    *,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
) -> VerifyReport:
    """:func:`verify_store` for a file :func:`check_export` already passed."""
    store_keys = listed(store)
    records = ((record.key, record.logical) for record in checked_records(source, summary))
    digest = LogicalDigest()
    named: dict[str, list[str]] = {"missing": [], "different": [], "extra": []}
    counts = dict.fromkeys(("missing", "different", "extra", "fenced", "present"), 0)
    progress.begin("verifying", max(len(store_keys), summary.documents))
    try:
        work = ordered(lambda item: _looked_at(store, item), _joined(store_keys, records), workers)
        with contextlib.closing(work):
            for key, logical, plain, fenced in work:
                kind = _kind(digest, key, logical, plain)
                if plain is not None:
                    counts["present"] += 1
                    counts["fenced"] += fenced
                if kind is not None:
                    counts[kind] += 1
                    if len(named[kind]) < _NAMED:
                        named[kind].append(key)
                progress.advance(1, len(plain) if plain is not None else 0)
    finally:
        progress.end()
    return VerifyReport(
        documents=summary.documents,
        store_documents=counts["present"],
        logical_digest=summary.logical_digest,
        store_digest=digest.hexdigest(),
        missing=counts["missing"],
        different=counts["different"],
        extra=counts["extra"],
        missing_keys=tuple(named["missing"]),
        different_keys=tuple(named["different"]),
        extra_keys=tuple(named["extra"]),
        fenced=counts["fenced"],
    )


def verify_versions(
    store: Backend,
    source: BinaryIO,
    summary: ExportSummary,
    versions: dict[str, str],
    *,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
) -> VerifyReport | None:
    """Verify an import by the store's listing of versions; ``None`` if the store lists none.

    ``versions`` are what :func:`~docmem.transfer.importer.import_checked`
    collected: every record's key and its version right after the import
    wrote (or found) the record's unfenced bytes. Each must be listed with
    that very version, and nothing else: then the store holds exactly those
    bytes, whose logical digest the import's own checked read of the file
    recomputed and compared with the trailer, so the store's digest is the
    export's without reading a document. On any difference the store is
    verified again by reading (:func:`verify_checked`), for a report that
    names what differs.
    """
    listing = store.listed_versions()
    if listing is None:
        return None
    progress.begin("verifying", summary.documents)
    try:
        current = {key: version for key, version in listing if key != FENCE_KEY}
        progress.advance(len(current), 0)
    finally:
        progress.end()
    complete = len(versions) == summary.documents == len(current)
    if not (complete and all(current.get(key) == version for key, version in versions.items())):
        return verify_checked(store, source, summary, workers=workers, progress=progress)
    return VerifyReport(
        documents=summary.documents,
        store_documents=len(current),
        logical_digest=summary.logical_digest,
        store_digest=summary.logical_digest,
        missing=0,
        different=0,
        extra=0,
        missing_keys=(),
        different_keys=(),
        extra_keys=(),
        fenced=0,
        method="versions",
    )
