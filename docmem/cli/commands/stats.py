"""``docmem stats``: every document of a store counted, the largest and the corrupt named by key.

It lists every key, then reads and parses each document (``--workers`` at a
time, in a bounded window, so a store of millions of keys holds only the
list of keys in memory) and reports counts and sizes, never content. On a
terminal a progress bar (tqdm: count, rate and ETA) runs on stderr; on a
pipe or with ``--quiet`` there is none.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from docmem.backend import Backend, Stored
from docmem.errors import DocumentCorrupt
from docmem.provider.document import parse
from docmem.storage.parallel import ordered

from ..bars import new_bar
from ..command import Command
from ..flags import add_output, add_store, add_workers, positive
from ..listing import listed
from ..report import Reporter, counted
from ..store import open_from

__all__ = ["COMMAND", "Tally"]


@dataclass
class Tally:
    """What the walk found: counts, the ``top`` largest documents, the corrupt ones."""

    top: int
    keys: int = 0
    documents: int = 0
    entries: int = 0
    bytes: int = 0
    vanished: int = 0
    #: (-bytes, key, entries or None): a few more than ``top`` between trims.
    _largest: list[tuple[int, str, int | None]] = field(default_factory=list)
    corrupt: list[dict[str, str]] = field(default_factory=list)

    def add(self, key: str, stored: Stored | None) -> None:
        """Count one key's document (``None``: deleted since it was listed)."""
        self.keys += 1
        if stored is None:
            self.vanished += 1
            return
        size = len(stored.data)
        self.documents += 1
        self.bytes += size
        entries: int | None = None
        try:
            entries = len(parse(bytes(stored.data)).entries)
        except DocumentCorrupt as error:
            self.corrupt.append({"key": key, "reason": error.message})
        if entries is not None:
            self.entries += entries
        # Kept as (-size, key): sorted, the largest come first, ties by key.
        self._largest.append((-size, key, entries))
        if len(self._largest) >= 2 * self.top + 64:
            self._largest.sort()
            del self._largest[self.top :]

    def largest(self) -> list[dict[str, Any]]:
        """The largest documents, largest first (ties by key)."""
        ordered = sorted(self._largest)[: self.top]
        return [{"key": key, "bytes": -size, "entries": entries} for size, key, entries in ordered]

    def fields(self) -> dict[str, Any]:
        """The answer's fields (docs/cli.md)."""
        return {
            "keys": self.keys,
            "documents": self.documents,
            "entries": self.entries,
            "bytes": self.bytes,
            "vanished": self.vanished,
            "largest": self.largest(),
            "corrupt": sorted(self.corrupt, key=lambda row: row["key"]),
        }


class Stats(Command):
    help = "count documents, entries and bytes; find corrupt documents"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_output(parser)
        parser.add_argument(
            "--top", type=positive, default=5, help="how many of the largest documents (default: 5)"
        )
        add_workers(parser, doing="read")

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Walk the whole store and report what it holds."""
        tally = Tally(top=arguments.top)
        with open_from(arguments) as store:
            keys = listed(store, report)
            bar = new_bar(report, total=len(keys), unit="doc", desc="reading")
            try:
                for key, stored in _read_all(store, keys, arguments.workers):
                    tally.add(key, stored)
                    bar.update(1)
            finally:
                bar.close()
        return report.done(_human(tally), **tally.fields())


COMMAND = Stats()


def _read_all(store: Backend, keys: list[str], workers: int) -> Iterator[tuple[str, Stored | None]]:
    """Each key with its document, in order, at most ``workers * 4`` reads in flight."""
    return ordered(lambda key: (key, store.read(key)), keys, workers)


def _human(tally: Tally) -> str:
    if tally.keys == 0:
        return "0 keys: the store holds no documents"
    counts = (
        (tally.keys, "key"),
        (tally.documents, "document"),
        (tally.entries, "entry"),
        (tally.bytes, "byte"),
    )
    lines = [", ".join(counted(number, word) for number, word in counts)]
    if tally.vanished:
        lines.append(f"{counted(tally.vanished, 'document')} deleted while the store was read")
    largest = tally.largest()
    if largest:
        lines.append("largest documents:")
        width = max(len(f"{row['bytes']:,}") for row in largest)
        for row in largest:
            entries = "corrupt" if row["entries"] is None else counted(row["entries"], "entry")
            lines.append(f"  {row['bytes']:>{width},} bytes  {row['key']}  {entries}")
    corrupt = tally.fields()["corrupt"]
    if corrupt:
        lines.append(
            f"{counted(len(corrupt), 'corrupt document')} (docmem never overwrites one: "
            "repair or remove each):"
        )
        lines.extend(f"  {row['key']}  {row['reason']}" for row in corrupt)
    return "\n".join(lines)
