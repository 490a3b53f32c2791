"""Importing an export: the whole file checked first, then create-only writes, never an overwrite.

Every record is written with ``expected=None``. A key already holding the
very bytes is skipped, so running the same import again after a Ctrl-C or a
kill finishes it; a key holding anything else stops the import
(TransferRefused). Fences are cleared on the way in: the bytes written are
:func:`docmem.fencing.unfenced` of the record's, so a fenced document is
never created.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import BinaryIO, Literal

from .._parallel import ordered
from ..backend import Backend
from ..errors import ScopeFenced, StoreBusy, TransferRefused, VersionConflict, WriteOutcomeUnknown
from ..fencing import store_fence
from ..progress import NO_PROGRESS, Progress
from ..retry import RetryPolicy
from .reader import CheckedRecord, ExportSummary, check_export, checked_records

__all__ = ["ImportReport", "import_store"]

_POLICY = RetryPolicy(max_attempts=16, max_seconds=60.0)
_Outcome = Literal["created", "skipped", "conflict"]


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
    store: Backend, source: BinaryIO, *, workers: int = 8, progress: Progress = NO_PROGRESS
) -> ImportReport:
    """Import the export in ``source`` (a seekable binary file) into ``store``.

    Raises ExportInvalid, before any write, for a file that fails a check;
    ScopeFenced for a fenced destination; TransferRefused at the first key
    that holds other bytes: what was written stays (the records before it,
    and those already in flight), nothing further is tried, and a re-run
    skips what is there.
    """
    summary = check_export(source, progress=progress)
    return import_checked(store, source, summary, workers=workers, progress=progress)


def import_checked(
    store: Backend,
    source: BinaryIO,
    summary: ExportSummary,
    *,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
    versions: dict[str, str] | None = None,
) -> ImportReport:
    """:func:`import_store` for a file :func:`check_export` already passed.

    ``versions``, if given, receives each imported key's version in the
    store (for :func:`docmem.transfer.verify.verify_versions`).
    """
    fenced = store_fence(store)
    if fenced is not None:
        raise ScopeFenced(
            f"the destination store is fenced (fence id {fenced}); an import never writes "
            "into a fenced store"
        )
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
