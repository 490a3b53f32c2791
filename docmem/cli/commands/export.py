"""``docmem export FILE``: every document of the store, in key order, to a docmem-export/1 file.

The file is written as :func:`docmem.transfer.files.published` does (mode
0600, under a temporary name in the same folder, renamed into place once its
trailer is written), so an interrupted export never leaves a file that looks
whole (``-`` streams to stdout, which then carries nothing else); from an
encrypted store it warns that the file is plaintext.
"""

from __future__ import annotations

import argparse
import sys

from docmem.backend import Backend
from docmem.provider.transfer import encrypts, export_store
from docmem.provider.transfer.files import published

from ..bars import Bars, human_bytes
from ..command import Command, UsageError
from ..flags import add_output, add_store, add_workers
from ..report import Reporter, counted
from ..store import open_from
from ..transfer import summary_fields

__all__ = ["COMMAND"]


class Export(Command):
    help = "write every document of the store to a docmem-export/1 file"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        add_workers(parser, doing="read or written")
        parser.add_argument("file", metavar="FILE", help="the export file to write; - for stdout")
        parser.add_argument(
            "--fence",
            metavar="ID",
            help="fence the store first (it stays fenced): consistent for the whole store",
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
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
        return report.done(text, **summary_fields(summary), source_encrypted=plaintext)


COMMAND = Export()


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
