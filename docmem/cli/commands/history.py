"""``docmem history``: the versions the store keeps of a scope, each read as a document.

Every store answers the same way (:meth:`docmem.backend.Backend.history`,
read through :func:`docmem.provider.history.kept_revisions`): ``file://``
and ``memory://`` keep the last versions of each document, docmem-fsspec its
commit log, docmem-s3 a versioned bucket's versions. A store that keeps none
says why in its own terms (``HistoryNotKept``), and the command prints that
and succeeds: no history is an answer, not a failure. Each version is listed
with its revision (what ``docmem revert --to`` takes), its entry count and
what made it (the op of its own journal record), never its text: ``docmem
show --at VERSION`` shows one.
"""

from __future__ import annotations

import argparse
from typing import Any

from docmem.errors import HistoryNotKept
from docmem.provider.history import KeptRevision

from ..address import resolve
from ..command import Command
from ..flags import add_output, add_scope, add_store
from ..memory import PLAIN_SLOT, bound
from ..moments import iso_milliseconds, milliseconds_of_seconds
from ..report import Reporter, counted
from ..store import open_from

__all__ = ["COMMAND"]

_HEADER = ("version", "modified (UTC)", "bytes", "revision", "entries", "change")


class History(Command):
    help = "list the versions the store keeps of a scope"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """List the versions oldest first, or say why the store keeps none."""
        address = resolve(arguments)
        report.note(**address.fields())
        with open_from(arguments) as store:
            try:
                kept = bound(store, address, PLAIN_SLOT).history()
            except HistoryNotKept as refusal:
                return report.done(refusal.message, supported=False, versions=[])
        versions = [_row(revision) for revision in kept]
        if not versions:
            return report.done(
                f"no versions are stored under {address.key}", supported=True, versions=[]
            )
        lines = [
            f"{address.key}: {counted(len(versions), 'version')} "
            "kept, oldest first; `docmem show --at VERSION` shows one",
            "",
            _table(versions),
        ]
        return report.done("\n".join(lines), supported=True, versions=versions)


COMMAND = History()


def _row(kept: KeptRevision) -> dict[str, Any]:
    """One version's row: the store's facts, and what its document says (never its text)."""
    modified = kept.kept.modified
    document = kept.document
    return {
        "version": kept.kept.version,
        "modified": None
        if modified is None
        else iso_milliseconds(milliseconds_of_seconds(modified)),
        "bytes": kept.kept.size,
        "state": kept.state,
        "revision": kept.revision,
        "entries": None if document is None else len(document.entries),
        "op": kept.op,
    }


def _table(versions: list[dict[str, Any]]) -> str:
    def cell(value: object) -> str:
        return "-" if value is None else str(value)

    rows = [_HEADER] + [
        (
            row["version"],
            cell(row["modified"]).replace("T", " ").rstrip("Z"),
            f"{row['bytes']:,}",
            cell(row["revision"]),
            cell(row["entries"]),
            # What made it; for a version that cannot be read, why: gone or corrupt.
            row["op"] or (row["state"] if row["state"] != "ok" else "-"),
        )
        for row in versions
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_HEADER))]
    numeric = {2, 3, 4}
    return "\n".join(
        "  ".join(
            text.rjust(width) if column in numeric else text.ljust(width)
            for column, (text, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )
