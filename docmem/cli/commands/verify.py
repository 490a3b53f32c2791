"""``docmem verify FILE``: an export file checked, then (unless ``--file-only``) the store."""

from __future__ import annotations

import argparse

from docmem.provider.transfer import check_export, verify_store

from ..bars import Bars
from ..command import Command
from ..flags import add_output, add_store, add_workers
from ..report import Reporter, counted
from ..store import open_from
from ..transfer import opened, summary_fields

__all__ = ["COMMAND"]


class Verify(Command):
    help = "check an export file, and the store against it"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        add_workers(parser, doing="read or written")
        parser.add_argument("file", metavar="FILE", help="the export file; - for stdin")
        parser.add_argument(
            "--file-only", action="store_true", help="check the file alone, not a store"
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Check FILE; unless ``--file-only``, check the store holds exactly its documents."""
        report.note(file=arguments.file)
        with opened(arguments.file) as file:
            bars = Bars(report)
            if arguments.file_only:
                summary = check_export(file, progress=bars)
                report.note(**summary_fields(summary))
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


COMMAND = Verify()
