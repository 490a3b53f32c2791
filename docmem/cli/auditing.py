"""Which entries ``docmem audit`` lists: its filters over each entry's provenance.

An entry matches when its provenance meets every filter given; without a
filter every entry with provenance matches. An entry with none (saved before
docmem recorded provenance) cannot be placed by any filter, so it is listed
only with ``--include-unknown``, and then whatever the filters say: an audit
after an incident must not hide what it cannot rule out. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from docmem.provider.document import MemoryDocument
from docmem.provider.provenance import Provenance

__all__ = ["Filters", "Found", "found_in"]


@dataclass(frozen=True)
class Filters:
    """The filters given: each ``None`` (or empty, or false) when not given.

    ``since`` and ``until`` bound the save's time, in milliseconds since the
    epoch, both inclusive; ``by`` is the set of "who asked" values listed;
    ``restored`` keeps only entries a revert brought back.
    """

    since: int | None = None
    until: int | None = None
    session: str | None = None
    mutation_prefix: str | None = None
    by: frozenset[str] = frozenset()
    restored: bool = False
    include_unknown: bool = False

    def matches(self, made: Provenance | None) -> bool:
        """Whether an entry with this provenance is listed."""
        if made is None:
            return self.include_unknown
        return (
            (self.since is None or made.at >= self.since)
            and (self.until is None or made.at <= self.until)
            and (self.session is None or made.session == self.session)
            and (self.mutation_prefix is None or made.mutation.startswith(self.mutation_prefix))
            and (not self.by or made.by in self.by)
            and (not self.restored or made.restored is not None or made.by == "revert")
        )


@dataclass(frozen=True)
class Found:
    """One entry an audit lists: where it is, its text, and its provenance."""

    key: str
    revision: int
    index: int
    text: str
    provenance: Provenance | None


def found_in(key: str, document: MemoryDocument, filters: Filters) -> Iterator[Found]:
    """The entries of ``document`` that ``filters`` match, by index."""
    for index, text in document.entries.items():
        made = document.provenance.get(index)
        if filters.matches(made):
            yield Found(key, document.revision, index, text, made)
