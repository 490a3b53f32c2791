"""Importing an export: the whole file checked first, then create-only writes, never an overwrite.

Every record is written with ``expected=None``. A key already holding the
very bytes is skipped, so running the same import again after a Ctrl-C or a
kill finishes it; a key holding anything else stops the import
(TransferRefused). Fences are cleared on the way in: the bytes written are
:func:`docmem.fencing.unfenced` of the record's, so a fenced document is
never created.

An import into a store that already holds documents creates none of the
file's that it lacks unless asked to (``create_missing``): an export is a
snapshot, and a scope an operator deleted since (``Backend.delete``, which
leaves no trace) is, to the store, just a scope it lacks. Into an empty
store there is nothing to bring back, and the import goes ahead. The
refusal (:meth:`ImportPlan.refusal`) counts and names by key what would be
created, before anything is written; finishing an interrupted import of the
same file, or merging two stores, is then the operator's explicit choice.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import BinaryIO, Literal

from ...backend import Backend
from ...errors import ScopeFenced, StoreBusy, TransferRefused, VersionConflict, WriteOutcomeUnknown
from ...storage.parallel import ordered
from ...storage.progress import NO_PROGRESS, Progress
from ..fencing import listed, store_fence
from ..retry import RetryPolicy
from .reader import CheckedRecord, ExportSummary, check_export, checked_records
from .words import counted

__all__ = ["ImportPlan", "ImportReport", "import_store", "plan_import"]

_POLICY = RetryPolicy(max_attempts=16, max_seconds=60.0)
_Outcome = Literal["created", "skipped", "conflict"]
#: How many missing keys a plan names (the count is always whole).
_NAMED = 20


@dataclass(frozen=True)
class ImportPlan:
    """What an import would create, known before it writes: the file's keys the store lacks."""

    #: Documents the store holds now (the fence marker not counted).
    store_documents: int
    #: Records of the file whose key the store lacks: the documents an import would create.
    missing: int
    #: Up to 20 of them, ascending; none named when the store is empty (nothing to tell apart).
    missing_keys: tuple[str, ...]

    @property
    def recreates(self) -> bool:
        """Whether the import would add scopes to a store that already holds documents.

        Such a scope may be one deleted since the export: only an operator
        can tell it from an interrupted import's remainder or a merge.
        """
        return self.store_documents > 0 and self.missing > 0

    def refusal(self) -> TransferRefused:
        """The error when :attr:`recreates` and the caller did not ask to create them."""
        first = f" (first: {self.missing_keys[0]})" if self.missing_keys else ""
        return TransferRefused(
            f"the store already holds {counted(self.store_documents, 'document')} and lacks "
            f"{counted(self.missing, 'document')} of the export{first}, which an import would "
            "create: a scope deleted since the export would come back this way; nothing was "
            "written"
        )


def plan_import(
    store: Backend, source: BinaryIO, summary: ExportSummary, *, progress: Progress = NO_PROGRESS
) -> ImportPlan:
    """What importing the checked export in ``source`` into ``store`` would create; no write.

    One listing of the store; the file is read again only when the store
    holds documents (into an empty store every record is created).
    """
    present = set(listed(store))
    if not present:
        return ImportPlan(0, summary.documents, ())
    missing = 0
    named: list[str] = []
    progress.begin("planning", summary.documents)
    try:
        for record in checked_records(source, summary):
            if record.key not in present:
                missing += 1
                if len(named) < _NAMED:
                    named.append(record.key)
            progress.advance(1, len(record.data))
    finally:
        progress.end()
    return ImportPlan(len(present), missing, tuple(named))


@dataclass(frozen=True)
class ImportReport:
    """What an import did: documents in the file, created now, found already there."""

    documents: int
    created: int
    skipped: int
    bytes: int
    #: The export's logical digest (docs/export-format.md).
    logical_digest: str


def _create(store: Backend, record: CheckedRecord) -> tuple[_Outcome, str]:
    """Create one document; if its key exists, compare the bytes and never write over them.

    Returns the outcome and the version the document has now (the write's,
    or the read's that found it there).
    """
    data = record.unfenced
    lost_answer = False
    for _ in _POLICY.attempts():
        try:
            version = store.write(record.key, data, expected=None)
        except VersionConflict:
            pass
        except WriteOutcomeUnknown:
            lost_answer = True
        else:
            return "created", version
        found = store.read(record.key)
        if found is None:
            continue  # the lost write did not land (or the key was deleted): create it again
        if found.data != data:
            return "conflict", found.version
        return ("created" if lost_answer else "skipped"), found.version
    raise StoreBusy(f"the create of {record.key} kept failing; run the import again")


def import_store(
    store: Backend,
    source: BinaryIO,
    *,
    create_missing: bool = False,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
) -> ImportReport:
    """Import the export in ``source`` (a seekable binary file) into ``store``.

    Raises ExportInvalid, before any write, for a file that fails a check;
    ScopeFenced for a fenced destination; TransferRefused, before any
    write, when the store holds documents and lacks some of the file's
    (:class:`ImportPlan`), unless ``create_missing``; TransferRefused at the
    first key that holds other bytes: what was written stays (the records
    before it, and those already in flight), nothing further is tried, and
    a re-run (with ``create_missing``) skips what is there.
    """
    summary = check_export(source, progress=progress)
    return import_checked(
        store,
        source,
        summary,
        create_missing=create_missing,
        workers=workers,
        progress=progress,
    )


def import_checked(
    store: Backend,
    source: BinaryIO,
    summary: ExportSummary,
    *,
    create_missing: bool = False,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
    versions: dict[str, str] | None = None,
) -> ImportReport:
    """:func:`import_store` for a file :func:`check_export` already passed.

    ``versions``, if given, receives each imported key's version in the
    store (for :func:`docmem.transfer.verify.verify_versions`). A migration
    passes ``create_missing``: its preflight found the destination empty, or
    the migration its own.
    """
    fenced = store_fence(store)
    if fenced is not None:
        raise ScopeFenced(
            f"the destination store is fenced (fence id {fenced}); an import never writes "
            "into a fenced store"
        )
    if not create_missing:
        plan = plan_import(store, source, summary, progress=progress)
        if plan.recreates:
            raise plan.refusal()
    created = skipped = total = 0
    progress.begin("importing", summary.documents)
    try:
        records = checked_records(source, summary)
        work = ordered(lambda r: (r, _create(store, r)), records, workers)
        with contextlib.closing(work):  # no write goes on after a refusal
            for record, (outcome, version) in work:
                if outcome == "conflict":
                    raise TransferRefused(
                        f"{record.key} already holds other bytes in the destination; an "
                        "import never overwrites: stopped there (what was written stays, "
                        "and a re-run skips it)"
                    )
                if versions is not None:
                    versions[record.key] = version
                if outcome == "created":
                    created += 1
                else:
                    skipped += 1
                total += len(record.unfenced)
                progress.advance(1, len(record.unfenced))
    finally:
        progress.end()
    return ImportReport(summary.documents, created, skipped, total, summary.logical_digest)
