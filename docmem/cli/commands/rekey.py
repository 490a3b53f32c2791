"""``docmem rekey``: move every document of an encrypted store to the keyring's primary key.

It lists every key, then re-encrypts each document still under another key
(``--workers`` at a time, in a bounded window) with a conditional write over
the version it read, so a save in between is never lost: the document is read
again and re-encrypted. A document already under the primary is only looked
at (its envelope header, no key service call), so a run that was
interrupted, or that met a failure, is resumed by running it again. Once a
run reports every document under the primary, the old keys can be removed.
On a terminal a progress bar (tqdm) runs on stderr; on a pipe or with
``--quiet`` there is none. Never prints content.
"""

from __future__ import annotations

import argparse
import collections
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from docmem.errors import DocmemError, StoreNotConfigured
from docmem.storage.parallel import ordered

from ..bars import new_bar
from ..command import Command
from ..flags import add_output, add_store, add_workers
from ..listing import listed
from ..report import Reporter, counted
from ..store import open_from

if TYPE_CHECKING:
    from docmem.storage.encryption import EncryptedStore

__all__ = ["COMMAND", "Tally"]


@dataclass
class Tally:
    """What the run did: a count per outcome, and each document it could not re-encrypt."""

    keys: int = 0
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    failed: list[dict[str, str]] = field(default_factory=list)
    first_error: DocmemError | None = None

    def add(self, key: str, outcome: str | DocmemError) -> None:
        self.keys += 1
        if isinstance(outcome, DocmemError):
            self.failed.append({"key": key, "code": outcome.code, "reason": outcome.message})
            self.first_error = self.first_error or outcome
        else:
            self.counts[outcome] += 1

    def fields(self, primary: str) -> dict[str, Any]:
        """The answer's fields (docs/cli.md)."""
        return {
            "primary": primary,
            "keys": self.keys,
            "rekeyed": self.counts["rekeyed"],
            "encrypted": self.counts["encrypted"],
            "current": self.counts["current"],
            "vanished": self.counts["absent"],
            "failed": sorted(self.failed, key=lambda row: row["key"]),
        }


class Rekey(Command):
    help = "re-encrypt every document of an encrypted store to its primary key"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        add_workers(parser, doing="re-encrypted")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Re-encrypt every document to the primary key; exit 1 if any could not be."""
        from docmem.storage.encryption import EncryptedStore

        tally = Tally()
        with open_from(arguments) as store:
            if not isinstance(store, EncryptedStore):
                raise StoreNotConfigured(
                    "docmem rekey works on an encrypted store: pass its URL as encrypted+ and the "
                    "store's URL, with its keyring (encrypted+file:///path?keyring=file:KEYRING)"
                )
            primary = store.keyring.primary.key_id
            report.note(primary=primary)
            keys = listed(store, report)
            bar = new_bar(report, total=len(keys), unit="doc", desc="rekeying")
            try:
                for key, outcome in _rekey_all(store, keys, arguments.workers):
                    tally.add(key, outcome)
                    bar.update(1)
            finally:
                bar.close()
        fields = tally.fields(primary)
        if tally.first_error is None:
            return report.done(_human(tally, primary), **fields)
        report.note(**fields)
        report.say(_human(tally, primary))
        report.advise("fix or remove each document listed, then run docmem rekey again")
        failure = type(tally.first_error)(
            f"{counted(len(tally.failed), 'document')} of {counted(tally.keys, 'key')} could "
            f"not be re-encrypted to key {primary!r} (first: {tally.first_error.code}); they "
            "still need the keys they are under"
        )
        return report.failed(failure)


COMMAND = Rekey()


def _rekey_all(
    store: EncryptedStore, keys: list[str], workers: int
) -> Iterator[tuple[str, str | DocmemError]]:
    """Each key with what rekeying it did, in order, at most ``workers * 4`` in flight."""

    def rekey(key: str) -> str | DocmemError:
        try:
            outcome: str = store.rekey(key)
        except DocmemError as error:  # one document's failure: reported, the walk goes on
            return error
        return outcome

    return ordered(lambda key: (key, rekey(key)), keys, workers)


def _human(tally: Tally, primary: str) -> str:
    if tally.keys == 0:
        return "0 keys: the store holds no documents"
    lines = [f"{counted(tally.keys, 'key')}, primary key {primary!r}:"]
    rows = (
        ("rekeyed", "re-encrypted from an older key"),
        ("encrypted", "encrypted from plaintext"),
        ("current", "already under the primary key"),
        ("absent", "deleted while the store was read"),
    )
    for outcome, meaning in rows:
        if tally.counts[outcome]:
            lines.append(f"  {counted(tally.counts[outcome], 'document')} {meaning}")
    if tally.failed:
        lines.append(f"  {counted(len(tally.failed), 'document')} not re-encrypted:")
        rows_failed = sorted(tally.failed, key=lambda row: row["key"])
        lines.extend(f"    {row['key']}  {row['code']}: {row['reason']}" for row in rows_failed)
    else:
        lines.append("every document is under the primary key: older keys may now be removed")
    return "\n".join(lines)
