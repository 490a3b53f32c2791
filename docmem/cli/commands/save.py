"""``docmem save TEXT``: one entry saved through FileMemory, under a mutation id it prints.

The entry's provenance says ``by "cli"``, so an audit tells an operator's
fix from what the model or the application saved.
"""

from __future__ import annotations

import argparse
import sys

from ..address import resolve
from ..command import Command
from ..flags import add_mutation_id, add_output, add_scope, add_store, positive
from ..memory import bound, done_at_index, mutation_id_of, replayed
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]


class Save(Command):
    help = "save one entry"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)
        add_mutation_id(parser)
        parser.add_argument("text", metavar="TEXT", help="the entry's text; - reads it from stdin")
        parser.add_argument(
            "--slot",
            default="user",
            help="the slot whose rendering the size limit counts (default: user)",
        )
        parser.add_argument(
            "--max-characters",
            type=positive,
            default=4000,
            help="the application's FileMemory max_characters (default: 4000)",
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Save one entry (``-`` reads the text from stdin); a text already there is a no-op."""
        address = resolve(arguments)
        mutation_id = mutation_id_of(arguments)
        report.note(**address.fields(), mutation_id=mutation_id)
        text: str = sys.stdin.read() if arguments.text == "-" else arguments.text
        with open_from(arguments) as store:
            memory = bound(store, address, arguments.slot, max_characters=arguments.max_characters)
            result = memory.save(text, mutation_id=mutation_id, made_by="cli")
        if result.status == "saved":
            line = f"saved as memory {result.index} at revision {result.revision}"
        elif result.status == "replayed":
            line = replayed(result.revision)
        else:
            line = (
                f"already saved as memory {result.index}, unchanged at revision {result.revision}"
            )
        return done_at_index(report, line, mutation_id, result)


COMMAND = Save()
