"""``docmem show``: a scope's memory as the model sees it (its recall message), if it has one.

``--at VERSION`` shows an older version instead (``docmem history`` lists
them); ``--provenance`` shows, under each entry, where it came from (when,
by whom, under which mutation and session, whether a revert brought it
back), which the model never sees. ``--json`` always carries each entry's
provenance.
"""

from __future__ import annotations

import argparse

from docmem.backend import Backend
from docmem.errors import InvalidArgument
from docmem.provider.document import MemoryDocument, parse, render_recall
from docmem.provider.tools import check_slot_name

from ..address import resolve
from ..command import Command
from ..flags import add_output, add_scope, add_store
from ..memory import bound
from ..provenance import described, fields
from ..report import Reporter, counted
from ..store import open_from

__all__ = ["COMMAND"]


class Show(Command):
    help = "print a scope's memory as the model sees it"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)
        parser.add_argument(
            "--slot", default="user", help="the slot name in the heading (default: user)"
        )
        parser.add_argument(
            "--at",
            metavar="VERSION",
            help="an older version, from `docmem history`",
        )
        parser.add_argument(
            "--provenance",
            action="store_true",
            help="under each entry, when and by whom it was saved (instead of the recall message)",
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Print the document, or say that none is stored."""
        address = resolve(arguments)
        slot = check_slot_name(arguments.slot)
        report.note(**address.fields(), slot=slot)
        with open_from(arguments) as store:
            document: MemoryDocument | None
            if arguments.at is not None:
                report.note(version=arguments.at)
                document = _older(store, address.key, arguments.at)
            else:
                document = bound(store, address, slot).read()
        if document is None:
            return report.done(
                f"no memory is stored under {address.key}",
                exists=False,
                revision=None,
                last_index=None,
                fence=None,
                entries=[],
                rendered=None,
            )
        rendered = render_recall(document, slot)
        count = len(document.entries)
        at = "" if arguments.at is None else f" (version {arguments.at})"
        header = f"{address.key}{at}  revision {document.revision}, {counted(count, 'entry')}"
        body = _with_provenance(document) if arguments.provenance else rendered
        return report.done(
            body if report.quiet else f"{header}\n\n{body}",
            shown=True,
            exists=True,
            revision=document.revision,
            last_index=document.last,
            fence=document.fence,
            entries=[
                {"index": index, "text": text, "provenance": fields(document.provenance.get(index))}
                for index, text in document.entries.items()
            ],
            rendered=rendered,
        )


COMMAND = Show()


def _with_provenance(document: MemoryDocument) -> str:
    """Each entry as ``index: text``, its provenance on the line under it."""
    if not document.entries:
        return "(no entries)"
    lines: list[str] = []
    for index, text in document.entries.items():
        lines.append(f"{index}: {text}")
        lines.append(f"    {described(document.provenance.get(index))}")
    return "\n".join(lines)


def _older(store: Backend, key: str, version: str) -> MemoryDocument:
    """An older version of the document (HistoryNotKept from a store that keeps none)."""
    stored = store.read_version(key, version)
    if stored is None:
        raise InvalidArgument(
            "that version of this key is not kept (collected, purged or never written): "
            "`docmem history` lists the versions there are"
        )
    return parse(bytes(stored.data))
