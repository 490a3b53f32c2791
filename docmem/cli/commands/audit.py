"""``docmem audit``: every entry of a store whose provenance matches, for an incident review.

"Which memories did the model save during that session, or since that
run?" It lists every key, sorts them, then reads and parses each document
(``--workers`` at a time, in a bounded window, as ``stats``) and prints each
entry whose provenance matches every filter given (docmem/cli/auditing.py),
one line each, as it goes. ``--keys-only`` prints each matching scope's key
once instead: the file ``docmem revert --scopes`` reads.

A walk of a large store can stop (Ctrl-C, a store that fails): keys are
walked in sorted order, so the command then says which key it finished last
and ``--after KEY`` resumes after it, and exits non-zero. Corrupt documents
are counted and named by key, never read past; the walk goes on.
"""

from __future__ import annotations

import argparse
import bisect
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from docmem.backend import Backend
from docmem.errors import Cancelled, DocmemError, DocumentCorrupt
from docmem.provider.document import MemoryDocument, Skimmed, parse, skim
from docmem.provider.provenance import STORED_BY
from docmem.storage.parallel import ordered

from ..advice import advice
from ..auditing import Filters, Found, found_in
from ..bars import Bar, echo, new_bar
from ..command import Command, UsageError
from ..driver import EXIT_INTERRUPTED
from ..flags import add_output, add_store, add_workers
from ..listing import listed
from ..moments import instant, milliseconds
from ..provenance import fields as provenance_fields
from ..report import Reporter, counted
from ..store import open_from

__all__ = ["COMMAND", "Tally"]

#: What a key's read gave: its document, its header alone when no entry of it can match
#: (:func:`docmem.provider.document.skim`), ``None`` (deleted since listed), or why it is corrupt.
Read = MemoryDocument | Skimmed | DocumentCorrupt | None


@dataclass
class Tally:
    """What the walk found so far; ``last`` is the last key it finished, for ``--after``."""

    keep_matches: bool
    scopes: int = 0
    entries: int = 0
    unknown: int = 0
    matched: int = 0
    vanished: int = 0
    last: str | None = None
    matched_keys: list[str] = field(default_factory=list)
    matches: list[dict[str, Any]] = field(default_factory=list)
    corrupt: list[dict[str, str]] = field(default_factory=list)

    def add(self, key: str, read: Read, filters: Filters) -> list[Found]:
        """Count one key's document and return its matching entries."""
        self.scopes += 1
        found: list[Found] = []
        if read is None:
            self.vanished += 1
        elif isinstance(read, DocumentCorrupt):
            self.corrupt.append({"key": key, "reason": read.message})
        elif isinstance(read, Skimmed):
            self.entries += read.entries
            self.unknown += read.entries - len(read.provenance)
        else:
            self.entries += len(read.entries)
            self.unknown += sum(1 for index in read.entries if index not in read.provenance)
            found = list(found_in(key, read, filters))
        if found:
            self.matched += len(found)
            self.matched_keys.append(key)
            if self.keep_matches:
                self.matches.extend(_match_fields(each) for each in found)
        self.last = key
        return found

    def fields(self) -> dict[str, Any]:
        """The answer's fields (docs/cli.md)."""
        return {
            "scopes": self.scopes,
            "entries": self.entries,
            "matched": self.matched,
            "matched_scopes": len(self.matched_keys),
            "unknown": self.unknown,
            "vanished": self.vanished,
            "corrupt": self.corrupt,
            "matches": self.matches,
            "matched_keys": self.matched_keys,
        }


class Audit(Command):
    help = "list the entries whose provenance matches (a time window, a session, a run, who)"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        which = parser.add_argument_group(
            "filters", "an entry is listed when its provenance matches every filter given"
        )
        which.add_argument(
            "--since", type=instant, metavar="TIME", help="saved at or after this ISO 8601 time"
        )
        which.add_argument(
            "--until", type=instant, metavar="TIME", help="saved at or before this ISO 8601 time"
        )
        which.add_argument("--session", metavar="ID", help="saved in this session (exact)")
        which.add_argument(
            "--mutation-prefix",
            metavar="PREFIX",
            help="saved by a mutation whose id starts so (a model's are SESSION/CALL)",
        )
        which.add_argument(
            "--by",
            action="append",
            choices=sorted(STORED_BY),
            help="saved by a model's tool call, the API, the command line, or brought back "
            "by a revert; repeatable",
        )
        which.add_argument(
            "--restored", action="store_true", help="only entries a revert brought back"
        )
        which.add_argument(
            "--include-unknown",
            action="store_true",
            help="also list every entry with no provenance (saved before docmem recorded it)",
        )
        parser.add_argument(
            "--keys-only",
            action="store_true",
            help="print each matching scope's storage key once (for docmem revert --scopes)",
        )
        parser.add_argument(
            "--after",
            metavar="KEY",
            help="start after this key (resume a walk that stopped; keys go in sorted order)",
        )
        add_workers(parser, doing="read")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Walk the store in key order and list what matches; exit non-zero if stopped early."""
        filters = _filters(arguments)
        keys_only: bool = arguments.keys_only
        if keys_only and report.json:
            raise UsageError("--keys-only is for a file of keys; --json has them in matched_keys")
        after: str | None = arguments.after
        report.note(after=after)
        tally = Tally(keep_matches=report.json)
        stop: DocmemError | None = None
        with open_from(arguments) as store:
            keys = sorted(listed(store, report))
            if after is not None:
                keys = keys[bisect.bisect_right(keys, after) :]
            bar = new_bar(report, total=len(keys), unit="doc", desc="auditing")
            try:
                for key, read in _read_all(store, keys, arguments.workers, filters):
                    found = tally.add(key, read, filters)
                    _print(bar, report, found, keys_only=keys_only)
                    bar.update(1)
            except KeyboardInterrupt:
                stop = Cancelled(
                    f"the audit was interrupted after {counted(tally.scopes, 'scope')} "
                    f"of {len(keys):,}"
                )
            except DocmemError as error:  # the store failed: what was walked stands
                stop = error
            finally:
                bar.close()
        summary = _human(tally, filters)
        if stop is None:
            if keys_only:
                _aside(report, summary)
                return report.done(None, **tally.fields(), resume_after=None)
            return report.done(summary, **tally.fields(), resume_after=None)
        return _stopped(report, tally, stop, summary, keys_only=keys_only)


COMMAND = Audit()


def _filters(arguments: argparse.Namespace) -> Filters:
    since = None if arguments.since is None else milliseconds(arguments.since)
    until = None if arguments.until is None else milliseconds(arguments.until)
    if since is not None and until is not None and since > until:
        raise UsageError("--since is after --until: no entry can match")
    return Filters(
        since=since,
        until=until,
        session=arguments.session,
        mutation_prefix=arguments.mutation_prefix,
        by=frozenset(arguments.by or ()),
        restored=arguments.restored,
        include_unknown=arguments.include_unknown,
    )


def _read_all(
    store: Backend, keys: list[str], workers: int, filters: Filters
) -> Iterator[tuple[str, Read]]:
    """Each key with its document, in key order, at most ``workers * 4`` in flight.

    A document whose header shows no entry ``filters`` can match is only
    skimmed: parsing every entry line is most of an audit's work, and the
    walk runs it under one interpreter lock. Its entry lines are then not
    checked (``docmem stats`` and ``verify`` do that).
    """

    def read(key: str) -> tuple[str, Read]:
        stored = store.read(key)
        if stored is None:
            return key, None
        data = bytes(stored.data)
        try:
            skimmed = skim(data)
            if not _may_match(skimmed, filters):
                return key, skimmed
            return key, parse(data)
        except DocumentCorrupt as corrupt:  # counted and named; the walk goes on
            return key, corrupt

    return ordered(read, keys, workers)


def _may_match(skimmed: Skimmed, filters: Filters) -> bool:
    """Whether an entry of the skimmed document could be listed: then it is parsed whole."""
    if filters.include_unknown and skimmed.entries > len(skimmed.provenance):
        return True
    return any(filters.matches(made) for made in skimmed.provenance.values())


def _print(bar: Bar, report: Reporter, found: list[Found], *, keys_only: bool) -> None:
    """A key's matches as they are found: its lines, or (``--keys-only``) its key once.

    They are the command's result, so ``--quiet`` prints them too (without the summary).
    """
    if report.json or not found:
        return
    if keys_only:
        echo(bar, found[0].key)
        return
    for each in found:
        echo(bar, _line(each))


def _line(found: Found) -> str:
    """``KEY  INDEX  SAVED_AT  BY  SESSION  MUTATION  TEXT``, ``-`` for what is not known."""
    made = found.provenance
    if made is None:
        facts = ["-", "-", "-", "-"]
    else:
        record = made.to_dict()
        facts = [str(record["saved_at"]), made.by, made.session or "-", made.mutation]
    return "  ".join([found.key, str(found.index), *facts, found.text])


def _match_fields(found: Found) -> dict[str, Any]:
    return {
        "key": found.key,
        "revision": found.revision,
        "index": found.index,
        "text": found.text,
        "provenance": provenance_fields(found.provenance),
    }


def _human(tally: Tally, filters: Filters) -> str:
    line = (
        f"{counted(tally.scopes, 'scope')} walked: {counted(tally.matched, 'entry')} matched "
        f"in {counted(len(tally.matched_keys), 'scope')}"
    )
    if tally.unknown and not filters.include_unknown:
        line += (
            f"; {counted(tally.unknown, 'entry')} without provenance (saved before docmem "
            "recorded it) not listed: --include-unknown lists them"
        )
    if tally.vanished:
        line += f"; {counted(tally.vanished, 'document')} deleted while the store was read"
    lines = [line]
    if tally.corrupt:
        lines.append(
            f"{counted(len(tally.corrupt), 'corrupt document')} not audited (docmem never "
            "overwrites one: repair or remove each):"
        )
        lines.extend(f"  {row['key']}  {row['reason']}" for row in tally.corrupt)
    return "\n".join(lines)


def _aside(report: Reporter, text: str) -> None:
    """The summary of ``--keys-only`` on stderr: stdout holds only keys."""
    if not report.quiet:
        print(text, file=sys.stderr, flush=True)


def _stopped(
    report: Reporter, tally: Tally, stop: DocmemError, summary: str, *, keys_only: bool
) -> int:
    """The walk stopped early: what it found, then how to resume after the last key it finished."""
    report.note(**tally.fields(), resume_after=tally.last)
    if keys_only:
        _aside(report, summary)
    else:
        report.say(summary)
    resume = (
        "no scope was finished: run the same command again"
        if tally.last is None
        else f"resume with the same command and --after {tally.last}"
    )
    usual = advice(stop, report.fields) if not isinstance(stop, Cancelled) else None
    report.advise(resume if usual is None else f"{usual}; then {resume}")
    code = report.failed(stop)
    return EXIT_INTERRUPTED if isinstance(stop, Cancelled) else code
