"""``docmem export | import | verify | fence | unfence``: a store to a file and back, checked.

``export FILE`` writes the file as :func:`docmem.transfer.files.published`
does (mode 0600, under a temporary name in the same folder, renamed into
place once its trailer is written), so an interrupted export never leaves a
file that looks whole (``-`` streams to stdout, which then carries nothing
else); from an encrypted store it warns that the file is plaintext.
``import`` and ``verify`` read the file twice (every check first, then the
work), so ``-`` (stdin) is copied to a temporary file first. A path that
cannot be opened is ``invalid_argument`` naming it, never a crash.

``import`` into a store that already holds documents creates none of the
file's it lacks without ``--create-missing`` (a scope an operator deleted
since the export would come back): it says how many, and which, first.
Running it again with the flag after an interruption finishes it:
documents already there with the same bytes are skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from docmem.backend import Backend
from docmem.provider.fencing import FenceReport
from docmem.provider.fencing import fence as fence_store
from docmem.provider.fencing import unfence as unfence_store
from docmem.provider.transfer import (
    ExportSummary,
    check_export,
    encrypts,
    export_store,
    plan_import,
    verify_store,
)
from docmem.provider.transfer.files import published, readable
from docmem.provider.transfer.importer import import_checked

from .bars import Bars, human_bytes
from .parser import UsageError
from .report import Reporter, counted
from .store import open_from

__all__ = ["export", "fence", "import_", "unfence", "verify"]


def _summary_fields(summary: ExportSummary) -> dict[str, Any]:
    return {
        "source": summary.source,
        "created": summary.created,
        "fenced": summary.fenced,
        "fence": summary.fence,
        "documents": summary.documents,
        "bytes": summary.bytes,
        "logical_digest": summary.logical_digest,
        "sha256": summary.sha256,
    }


def export(arguments: argparse.Namespace, report: Reporter) -> int:
    """Write the store's documents, in key order, to FILE (``-``: stdout)."""
    to_stdout = arguments.file == "-"
    if to_stdout and arguments.json:
        raise UsageError("--json needs an export FILE: with -, stdout carries the export")
    if to_stdout:
        report.quiet = True
    report.note(file=arguments.file)
    with open_from(arguments) as store:
        bars = Bars(report)
        options = {"fence_id": arguments.fence, "workers": arguments.workers, "progress": bars}
        if to_stdout:
            summary = export_store(store, sys.stdout.buffer, **options)
        else:
            with published(arguments.file) as file:
                summary = export_store(store, file, **options)
        plaintext = _warn_if_plaintext(store, arguments.file, report)
    fenced = (
        f"; the store stays fenced (fence id {summary.fence}): `docmem unfence --id "
        f"{summary.fence}` lifts it"
        if summary.fence
        else ""
    )
    text = (
        f"exported {counted(summary.documents, 'document')} ({human_bytes(summary.bytes)}) "
        f"to {arguments.file}; logical digest {summary.logical_digest}{fenced}"
    )
    return report.done(text, **_summary_fields(summary), source_encrypted=plaintext)


def _warn_if_plaintext(store: Backend, file: str, report: Reporter) -> bool:
    """Warn when an encrypted store's export is written (it is plaintext); whether it was."""
    if not encrypts(store):
        return False
    where = "the export on stdout" if file == "-" else f"the export file {file}"
    report.warn(
        f"the store is encrypted, but {where} is not: it holds every memory in plaintext; "
        "keep it where only those who hold the keyring can read it, and delete it when done"
    )
    return True


@contextlib.contextmanager
def _opened(path: str) -> Iterator[BinaryIO]:
    """The export file to read (twice); stdin copied to a temporary file first."""
    if path != "-":
        with readable(path) as file:
            yield file
        return
    with tempfile.TemporaryFile(prefix="docmem-import-") as file:
        shutil.copyfileobj(sys.stdin.buffer, file)
        file.seek(0)
        yield file


def import_(arguments: argparse.Namespace, report: Reporter) -> int:
    """Create every document of FILE in the store; the whole file is checked first."""
    report.note(file=arguments.file)
    with _opened(arguments.file) as file, open_from(arguments) as store:
        bars = Bars(report)
        summary = check_export(file, progress=bars)
        if not arguments.create_missing:
            _refuse_recreating(store, file, summary, bars, report)
        try:
            result = import_checked(
                store,
                file,
                summary,
                create_missing=True,  # asked for, or the store holds nothing to bring back
                workers=arguments.workers,
                progress=bars,
            )
        except KeyboardInterrupt:
            print(
                "the import stopped part-way: run the same command again with "
                "--create-missing to finish it",
                file=sys.stderr,
            )
            raise
    text = (
        f"imported {counted(result.documents, 'document')} ({human_bytes(result.bytes)}): "
        f"{result.created:,} created, {result.skipped:,} already there; "
        f"logical digest {result.logical_digest}"
    )
    return report.done(
        text,
        documents=result.documents,
        created=result.created,
        skipped=result.skipped,
        bytes=result.bytes,
        logical_digest=result.logical_digest,
    )


def _refuse_recreating(
    store: Backend, file: BinaryIO, summary: ExportSummary, bars: Bars, report: Reporter
) -> None:
    """Refuse, saying how many and which, to create scopes in a store that holds documents.

    One of them may be a scope an operator deleted since the export; the
    command cannot tell it from an interrupted import's remainder, so the
    operator says which it is, with ``--create-missing``.
    """
    plan = plan_import(store, file, summary, progress=bars)
    if not plan.recreates:
        return
    report.note(
        store_documents=plan.store_documents,
        missing=plan.missing,
        missing_keys=list(plan.missing_keys),
    )
    report.advise(
        "if no scope was deleted from this store since the export (an interrupted import of "
        "this file, or a merge), run it again with --create-missing; --json names the first "
        "keys it would create"
    )
    raise plan.refusal()


def verify(arguments: argparse.Namespace, report: Reporter) -> int:
    """Check FILE; unless ``--file-only``, check the store holds exactly its documents."""
    report.note(file=arguments.file)
    with _opened(arguments.file) as file:
        bars = Bars(report)
        if arguments.file_only:
            summary = check_export(file, progress=bars)
            report.note(**_summary_fields(summary))
            text = (
                f"the file passes every check: {counted(summary.documents, 'document')}, "
                f"logical digest {summary.logical_digest}"
            )
            return report.done(text, matches=None)
        with open_from(arguments) as store:
            result = verify_store(store, file, workers=arguments.workers, progress=bars)
    report.note(
        documents=result.documents,
        store_documents=result.store_documents,
        logical_digest=result.logical_digest,
        store_digest=result.store_digest,
        missing=result.missing,
        different=result.different,
        extra=result.extra,
        missing_keys=list(result.missing_keys),
        different_keys=list(result.different_keys),
        extra_keys=list(result.extra_keys),
        fenced=result.fenced,
        matches=result.ok,
    )
    if not result.ok:
        report.advise("docmem verify --json lists the first keys of each kind")
        raise result.refusal()
    text = (
        f"the store matches the export: {counted(result.documents, 'document')}, "
        f"logical digest {result.logical_digest}"
    )
    if result.fenced:
        text += f" ({counted(result.fenced, 'document')} of the store fenced)"
    return report.done(text)


def _fence_fields(result: FenceReport) -> dict[str, Any]:
    return {
        "fence_id": result.fence_id,
        "documents": result.documents,
        "changed": result.changed,
        "unchanged": result.unchanged,
        "other": result.other,
    }


def fence(arguments: argparse.Namespace, report: Reporter) -> int:
    """Fence the store: the marker, then every document; run again to finish."""
    report.note(fence_id=arguments.id)
    with open_from(arguments) as store:
        result = fence_store(store, arguments.id, workers=arguments.workers, progress=Bars(report))
    text = (
        f"fenced the store under {result.fence_id}: {counted(result.changed, 'document')} "
        f"fenced now, {result.unchanged:,} already; saves are refused until `docmem unfence "
        f"--id {result.fence_id}`"
    )
    return report.done(text, **_fence_fields(result))


def unfence(arguments: argparse.Namespace, report: Reporter) -> int:
    """Lift the fence: every document it holds, then the marker."""
    report.note(fence_id=arguments.id)
    with open_from(arguments) as store:
        result = unfence_store(
            store, arguments.id, workers=arguments.workers, progress=Bars(report)
        )
    other = f"; {result.other:,} fenced by another id left as they are" if result.other else ""
    text = (
        f"lifted fence {result.fence_id}: {counted(result.changed, 'document')} unfenced, "
        f"{result.unchanged:,} were not fenced{other}"
    )
    return report.done(text, **_fence_fields(result))
