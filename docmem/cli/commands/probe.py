"""``docmem probe``: does the store really honour conditional writes? Checked, never assumed.

A store with checks of its own runs them (:meth:`docmem.Backend.check_server`:
on ``s3://``, also under ``encrypted+``, docmem-s3's probe, with ETag checks,
a race of concurrent creates and whether the bucket keeps older versions);
every other store runs the backend contract's (:mod:`docmem.cli.checks`).
"""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from docmem.errors import StoreUnavailable

from ..checks import contract_checks
from ..command import Command
from ..flags import add_output, add_store, positive
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]


class Probe(Command):
    help = "check that the store honours conditional writes"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        parser.add_argument(
            "--writers", type=positive, default=8, help="concurrent writers to race (default: 8)"
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Run the store's probe and print each check; exit 1 if any failed."""
        writers: int = arguments.writers
        with open_from(arguments) as store:
            scheme = urlsplit(store.url).scheme
            own = store.check_server(writers=writers)  # ConditionsNotHonoured names a miss
            if own is not None:
                report.note(probe=own.by)
                report.say(f"probe: {own.by}'s conditional-write checks on {scheme}://")
                for name, value in own.facts.items():
                    report.note(**{name: value})
                    report.say(f"{name}: {value}")
                checks = list(own.checks)
            else:
                report.note(probe="contract")
                report.say(
                    f"probe: the backend contract's checks on {scheme}:// (on a key of its own)"
                )
                checks = contract_checks(store, writers)
        rows = [{"name": name, "passed": passed} for name, passed in checks]
        report.note(checks=rows)
        for name, passed in checks:
            report.say(f"{'ok' if passed else 'FAILED':<6}  {name}")
        failed = [name for name, passed in checks if not passed]
        if failed:
            report.advise("docmem must not share this store between writers: use one that passes")
            raise StoreUnavailable(
                "the store does not honour conditional writes as docmem needs them, so "
                f"concurrent updates would be lost or fail; failed: {'; '.join(failed)}"
            )
        return report.done(
            f"all {len(checks)} checks passed: docmem can share this store between writers",
            passed=True,
        )


COMMAND = Probe()
