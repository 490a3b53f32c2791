"""``docmem revert``: undo what was saved since a revision, in one scope or in many.

After a prompt injection made an agent save instructions as facts, the
operator finds the scopes (``docmem audit``), looks at what a revert would
do (``--dry-run``: the entries it would take out and bring back, and the
revision that was computed on), then reverts. A revert is a mutation like a
save (docs/design.md, section 3.1): journaled under a mutation id, so the
same command again has no second effect, and conditional on the revision
its plan was computed on, so a save that lands in between refuses it
instead of being undone unseen. It is itself undone by reverting to the
revision before it, which the store keeps like any other.

``--scopes FILE`` reverts every scope whose storage key the file lists
(``docmem audit --keys-only`` writes one), ``--workers`` at a time, each on
its own and reported on its own line; ``--before TIME`` picks, per scope,
the newest version kept at or before that instant. One mutation id covers
the run, so after a Ctrl-C or a failure the same command with that
``--mutation-id`` finishes it without reverting any scope twice.
"""

from __future__ import annotations

import argparse
import collections
from typing import Any

from docmem.errors import DocmemError, RevertRefused
from docmem.provider.memory import FileMemory
from docmem.storage.parallel import ordered

from ..address import by_storage_key, resolve
from ..bars import echo, new_bar
from ..command import Command, UsageError
from ..flags import add_mutation_id, add_output, add_scope, add_store, add_workers, positive
from ..memory import mutation_id_of
from ..moments import instant
from ..report import Reporter, counted
from ..reverting import Outcome, Target, revert_scope
from ..scopelist import read_keys
from ..store import open_from

__all__ = ["COMMAND"]

#: The scope flags, which ``--scopes`` replaces.
_SCOPE_FLAGS = ("namespace", "scope", "scalar_scope", "principal", "issuer", "key")
#: The order in which the summary counts outcomes.
_STATUSES = ("planned", "reverted", "unchanged", "replayed", "refused", "failed")


class Revert(Command):
    help = "make a scope's entries those of an older revision (many scopes with --scopes)"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)
        add_mutation_id(parser)
        which = parser.add_argument_group("revision", "exactly one of --to and --before")
        which.add_argument(
            "--to",
            type=positive,
            metavar="REVISION",
            help="the revision to go back to (`docmem history` lists the kept ones)",
        )
        which.add_argument(
            "--before",
            type=instant,
            metavar="TIME",
            help="the newest revision kept at or before this ISO 8601 time "
            "(2026-12-02T07:46:52Z; without a zone, UTC)",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print what the revert would take out and bring back; write nothing",
        )
        parser.add_argument(
            "--expected-revision",
            type=positive,
            metavar="REVISION",
            help="the revision the dry run was computed on: refuse if the memory moved on since",
        )
        parser.add_argument(
            "--scopes",
            metavar="FILE",
            help="revert every scope whose storage key FILE lists, one a line "
            "(`docmem audit --keys-only` prints them; - reads stdin)",
        )
        add_workers(parser, doing="reverted")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Revert one scope, or each scope of ``--scopes``; exit 1 if one was refused or failed."""
        if (arguments.to is None) == (arguments.before is None):
            raise UsageError("give the revision: --to REVISION or --before TIME (one of them)")
        target = Target(arguments.to, arguments.before)
        if arguments.scopes is None:
            return _one(arguments, target, report)
        if any(getattr(arguments, name) is not None for name in _SCOPE_FLAGS):
            raise UsageError("--scopes names the scopes: drop --key, --namespace and the scope")
        if arguments.expected_revision is not None:
            raise UsageError(
                "--expected-revision goes with one scope: with --scopes, each scope's revert "
                "is conditional on the revision its own plan was computed on"
            )
        return _many(arguments, target, report)


COMMAND = Revert()


def _one(arguments: argparse.Namespace, target: Target, report: Reporter) -> int:
    """One scope: its plan printed entry by entry, then (unless a dry run) the revert."""
    address = resolve(arguments)
    dry_run: bool = arguments.dry_run
    mutation_id = None if dry_run else mutation_id_of(arguments)
    report.note(**address.fields())
    if mutation_id is not None:
        report.note(mutation_id=mutation_id)
    report.note(dry_run=dry_run, **target.fields())
    with open_from(arguments) as store:
        outcome = revert_scope(
            store,
            FileMemory(store),
            address,
            target,
            mutation_id=mutation_id,
            expected_revision=arguments.expected_revision,
        )
    diff = _diff(outcome)
    lines = [
        f"{'-' if row['change'] == 'removed' else '+'} {row['index']}: {row['text']}"
        for row in diff
    ]
    if outcome.status == "planned":
        lines.insert(0, f"{address.key}: {outcome.line()}")
        lines.append(
            f"nothing was written; to revert: docmem revert --key {address.key} "
            f"--to {outcome.to_revision} --expected-revision {outcome.planned_on}"
        )
    elif mutation_id is None:
        lines.append(f"{address.key}: {outcome.line()}; nothing was written")
    else:
        lines.append(f"{address.key}: {outcome.line()}; mutation id {mutation_id}")
    plan = outcome.plan
    fields = outcome.fields()
    del fields["key"], fields["error"]
    return report.done(
        "\n".join(lines),
        shown=dry_run,  # the plan is what a dry run was asked for: printed also with --quiet
        **fields,
        unchanged=None if plan is None else plan.changes.unchanged,
        diff=diff,
    )


def _diff(outcome: Outcome) -> list[dict[str, Any]]:
    """The entries taken out and brought back, with their text: what the operator reviews."""
    plan = outcome.plan
    if plan is None or outcome.status not in ("planned", "reverted"):
        return []
    changes = plan.changes
    rows = [
        {"change": "removed", "index": index, "text": changes.removed.get(index)}
        for index in outcome.removed
    ]
    rows += [
        {"change": "restored", "index": index, "text": changes.added.get(index)}
        for index in outcome.restored
    ]
    return rows


def _many(arguments: argparse.Namespace, target: Target, report: Reporter) -> int:
    """Each listed scope on its own: a line per scope as it ends, then the counts."""
    keys = read_keys(arguments.scopes)
    dry_run: bool = arguments.dry_run
    mutation_id = None if dry_run else mutation_id_of(arguments)
    if mutation_id is not None:
        report.note(mutation_id=mutation_id)
    report.note(dry_run=dry_run, **target.fields())
    outcomes: list[Outcome] = []
    with open_from(arguments) as store:
        memory = FileMemory(store)

        def one(key: str) -> Outcome:
            try:
                return revert_scope(
                    store, memory, by_storage_key(key), target, mutation_id=mutation_id
                )
            except RevertRefused as refusal:
                return Outcome(key, "refused", arguments.to, error=refusal)
            except DocmemError as error:  # one scope's failure: reported, the others go on
                return Outcome(key, "failed", arguments.to, error=error)

        if mutation_id is not None and keys:
            report.say(
                f"reverting {counted(len(keys), 'scope')} under mutation id {mutation_id} "
                f"(the same command with --mutation-id {mutation_id} resumes it, reverting "
                "no scope twice)"
            )
        doing = "planning" if dry_run else "reverting"
        bar = new_bar(report, total=len(keys), unit="scope", desc=doing)
        try:
            for outcome in ordered(one, keys, arguments.workers):
                outcomes.append(outcome)
                if not (report.json or report.quiet):
                    echo(bar, f"{outcome.key}  {outcome.line()}")
                bar.update(1)
        finally:
            bar.close()
    counts: collections.Counter[str] = collections.Counter()
    counts.update(outcome.status for outcome in outcomes)
    fields: dict[str, Any] = {status: counts[status] for status in _STATUSES}
    fields["scopes"] = [outcome.fields() for outcome in outcomes]
    summary = _summary(len(keys), counts)
    stopped = [outcome for outcome in outcomes if outcome.stopped]
    if not stopped:
        return report.done(summary, **fields)
    report.note(**fields)
    report.say(summary)
    failed = next((o.error for o in stopped if o.status == "failed"), None)
    verb = "would not be" if dry_run else "was not" if len(stopped) == 1 else "were not"
    message = (
        f"{counted(len(stopped), 'scope')} of {len(keys):,} {verb} reverted "
        f"({counts['refused']:,} refused, {counts['failed']:,} failed); each is listed above"
    )
    if dry_run or mutation_id is None:
        report.advise("fix the scopes listed or drop them from the file, then run it again")
    else:
        report.advise(
            f"once fixed, the same command with --mutation-id {mutation_id} retries them "
            "and leaves the scopes already reverted as they are"
        )
    error: DocmemError = RevertRefused(message) if failed is None else type(failed)(message)
    return report.failed(error)


def _summary(total: int, counts: collections.Counter[str]) -> str:
    if total == 0:
        return "0 scopes: the file lists none"
    done = ", ".join(f"{counts[status]:,} {status}" for status in _STATUSES if counts[status])
    return f"{counted(total, 'scope')}: {done}"
