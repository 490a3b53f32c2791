"""``docmem unfence --id ID``: a fence lifted, every document it holds then its marker."""

from __future__ import annotations

import argparse

from docmem.provider.fencing import unfence

from ..bars import Bars
from ..command import Command
from ..flags import add_fence_id, add_output, add_store, add_workers
from ..report import Reporter, counted
from ..store import open_from
from ..transfer import fence_fields

__all__ = ["COMMAND"]


class Unfence(Command):
    help = "lift a fence: saves are accepted again"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        add_workers(parser, doing="read or written")
        add_fence_id(parser)

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Lift the fence: every document it holds, then the marker."""
        report.note(fence_id=arguments.id)
        with open_from(arguments) as store:
            result = unfence(store, arguments.id, workers=arguments.workers, progress=Bars(report))
        other = f"; {result.other:,} fenced by another id left as they are" if result.other else ""
        text = (
            f"lifted fence {result.fence_id}: {counted(result.changed, 'document')} unfenced, "
            f"{result.unchanged:,} were not fenced{other}"
        )
        return report.done(text, **fence_fields(result))


COMMAND = Unfence()
