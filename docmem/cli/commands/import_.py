"""``docmem import FILE``: every document of an export file created in the store, checked first.

Into a store that already holds documents it creates none of the file's it
lacks without ``--create-missing`` (a scope an operator deleted since the
export would come back): it says how many, and which, first. Running it
again with the flag after an interruption finishes it: documents already
there with the same bytes are skipped.
"""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO

from docmem.backend import Backend
from docmem.provider.transfer import ExportSummary, check_export, plan_import
from docmem.provider.transfer.importer import import_checked

from ..bars import Bars, human_bytes
from ..command import Command
from ..flags import add_output, add_store, add_workers
from ..report import Reporter, counted
from ..store import open_from
from ..transfer import opened

__all__ = ["COMMAND"]


class Import(Command):
    help = "create every document of an export file in the store"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        add_workers(parser, doing="read or written")
        parser.add_argument("file", metavar="FILE", help="the export file; - for stdin")
        parser.add_argument(
            "--create-missing",
            action="store_true",
            help="also when the store already holds documents, create those of the file it "
            "lacks (to finish an interrupted import, or to merge); a scope deleted since the "
            "export comes back",
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Create every document of FILE in the store; the whole file is checked first."""
        report.note(file=arguments.file)
        with opened(arguments.file) as file, open_from(arguments) as store:
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


COMMAND = Import()


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
