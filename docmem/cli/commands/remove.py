"""``docmem remove INDEX``: the entry at an index removed, under a mutation id it prints."""

from __future__ import annotations

import argparse

from ..address import resolve
from ..command import Command
from ..flags import add_mutation_id, add_output, add_scope, add_store
from ..memory import PLAIN_SLOT, bound, done_at_index, mutation_id_of, replayed
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]


class Remove(Command):
    help = "remove the entry at an index"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)
        add_mutation_id(parser)
        parser.add_argument("index", metavar="INDEX", type=int, help="the entry's index")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Remove the entry at INDEX; an index with no entry is a no-op."""
        address = resolve(arguments)
        mutation_id = mutation_id_of(arguments)
        report.note(**address.fields(), mutation_id=mutation_id)
        with open_from(arguments) as store:
            result = bound(store, address, PLAIN_SLOT).remove(
                arguments.index, mutation_id=mutation_id
            )
        if result.status == "removed":
            line = f"removed memory {result.index} at revision {result.revision}"
        elif result.status == "replayed":
            line = replayed(result.revision)
        else:
            line = f"no memory {result.index}, nothing removed (revision {result.revision})"
        return done_at_index(report, line, mutation_id, result)


COMMAND = Remove()
