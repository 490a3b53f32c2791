"""``docmem fence --id ID``: the whole store fenced for a migration; saves refused, recall works.

The marker first, then every document; run again to finish an interrupted one.
"""

from __future__ import annotations

import argparse

from docmem.provider.fencing import fence

from ..bars import Bars
from ..command import Command
from ..flags import add_fence_id, add_output, add_store, add_workers
from ..report import Reporter, counted
from ..store import open_from
from ..transfer import fence_fields

__all__ = ["COMMAND"]


class Fence(Command):
    help = "fence the whole store for a migration: saves are refused, recall works"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        add_workers(parser, doing="read or written")
        add_fence_id(parser)

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Fence the store: the marker, then every document; run again to finish."""
        report.note(fence_id=arguments.id)
        with open_from(arguments) as store:
            result = fence(store, arguments.id, workers=arguments.workers, progress=Bars(report))
        text = (
            f"fenced the store under {result.fence_id}: {counted(result.changed, 'document')} "
            f"fenced now, {result.unchanged:,} already; saves are refused until `docmem unfence "
            f"--id {result.fence_id}`"
        )
        return report.done(text, **fence_fields(result))


COMMAND = Fence()
