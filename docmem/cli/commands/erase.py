"""``docmem erase --yes``: a scope's memory emptied (right to be forgotten), under a mutation id."""

from __future__ import annotations

import argparse

from ..address import resolve
from ..command import Command, UsageError
from ..flags import add_mutation_id, add_output, add_scope, add_store
from ..memory import PLAIN_SLOT, bound, mutation_id_of, replayed
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]


class Erase(Command):
    help = "empty a scope's memory (right to be forgotten)"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)
        add_mutation_id(parser)
        parser.add_argument("--yes", action="store_true", help="confirm: erase cannot be undone")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Empty the scope's memory (the next recall shows the empty state); needs ``--yes``."""
        address = resolve(arguments)
        if not arguments.yes:
            raise UsageError("erase empties this scope's memory for good: pass --yes to confirm")
        mutation_id = mutation_id_of(arguments)
        report.note(**address.fields(), mutation_id=mutation_id)
        with open_from(arguments) as store:
            result = bound(store, address, PLAIN_SLOT).erase(mutation_id=mutation_id)
        if result.status == "erased":
            line = f"erased: the memory is empty at revision {result.revision}"
        elif result.status == "replayed":
            line = replayed(result.revision)
        else:
            line = "no memory is stored, nothing erased"
        return report.done(
            f"{line}; mutation id {mutation_id}", status=result.status, revision=result.revision
        )


COMMAND = Erase()
