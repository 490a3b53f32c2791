"""``docmem inspect MUTATION_ID``: whether a mutation landed, from the document's journal.

For a save whose entry is still there, also that entry's provenance (when,
by whom, in which session): the journal answers "did it land", the
provenance "where did this come from".
"""

from __future__ import annotations

import argparse

from ..address import resolve
from ..command import Command
from ..flags import add_output, add_scope, add_store
from ..memory import PLAIN_SLOT, bound
from ..provenance import described, fields
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]


class Inspect(Command):
    help = "say whether a mutation landed"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)
        parser.add_argument(
            "mutation_id", metavar="MUTATION_ID", help="the id save/remove/erase/revert used"
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Whether a mutation landed: its record in the journal, if it is still there."""
        address = resolve(arguments)
        mutation_id: str = arguments.mutation_id
        report.note(**address.fields(), mutation_id=mutation_id)
        with open_from(arguments) as store:
            record = bound(store, address, PLAIN_SLOT).inspect(mutation_id)
        if record is None:
            return report.done(
                f"mutation {mutation_id} has no record here: it changed nothing (it never "
                "landed, or was a no-op), or its record is gone (the journal keeps the last 32 "
                "writes, an erase only its own)",
                landed=False,
                op=None,
                outcome=None,
                index=None,
                revision=None,
                provenance=None,
            )
        if record.index is not None:
            what = f"{record.outcome} memory {record.index}"
        else:  # an erase or a revert: the whole memory
            what = f"{record.outcome} the memory"
        line = f"mutation {mutation_id} landed: {what} at revision {record.revision}"
        if record.provenance is not None:
            line += f"\nmemory {record.index}: {described(record.provenance)}"
        return report.done(
            line,
            landed=True,
            op=record.op,
            outcome=record.outcome,
            index=record.index,
            revision=record.revision,
            provenance=fields(record.provenance),
        )


COMMAND = Inspect()
