"""The store at a glance: ``docmem stats``'s walk, plus the two distributions the console draws.

One pass over every key, reading ``workers`` documents at a time exactly as
``docmem stats`` does (its :class:`~docmem.cli.commands.stats.Tally` counts
documents, entries, bytes, the largest and the corrupt), and, per document,
which size bucket it falls in against the 65,536-byte cap and how full its
recall is against ``max_characters``. Counts only: no text leaves a document.
The probe (which writes a probe key) is not part of this walk; it runs only
when an operator asks (:func:`probe_verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from docmem.backend import Backend, Stored
from docmem.cli.checks import contract_checks
from docmem.cli.commands.stats import Tally
from docmem.errors import DocumentCorrupt
from docmem.provider.document import MAX_DOCUMENT_BYTES, parse, recall_length
from docmem.provider.fencing import store_fence
from docmem.provider.transfer import encrypts
from docmem.storage.parallel import ordered

from .charts import Bar

__all__ = ["BUCKETS", "Probe", "StoreShape", "probe_verdict", "walk_store"]

#: Size and fullness are each drawn in this many buckets of equal width.
BUCKETS = 10


@dataclass
class StoreShape:
    """What the overview shows: the stats tally and the two distributions."""

    max_characters: int
    slot: str
    tally: Tally = field(default_factory=lambda: Tally(top=5))
    sizes: list[int] = field(default_factory=lambda: [0] * BUCKETS)
    fullness: list[int] = field(default_factory=lambda: [0] * (BUCKETS + 1))
    empty: int = 0
    encrypted: bool = False
    fence: str | None = None

    def add(self, key: str, stored: Stored | None) -> None:
        """Count one key's document (``None``: deleted since it was listed)."""
        self.tally.add(key, stored)
        if stored is None:
            return
        size = len(stored.data)
        self.sizes[min(BUCKETS - 1, size * BUCKETS // MAX_DOCUMENT_BYTES)] += 1
        try:
            document = parse(bytes(stored.data))
        except DocumentCorrupt:
            return  # the tally lists it by key
        if not document.entries:
            self.empty += 1
        used = recall_length(document, self.slot)
        self.fullness[min(BUCKETS, used * BUCKETS // self.max_characters)] += 1

    def scope_bars(self) -> list[Bar]:
        """Keys, documents, empty documents, entries and corrupt documents."""
        tally = self.tally
        return [
            Bar("keys", tally.keys),
            Bar("documents", tally.documents),
            Bar("empty (erased)", self.empty),
            Bar("entries", tally.entries),
            Bar("corrupt", len(tally.corrupt), warning=True),
        ]

    def size_bars(self) -> list[Bar]:
        """Documents by size, in tenths of the 65,536-byte cap."""
        step = MAX_DOCUMENT_BYTES // BUCKETS
        return [
            Bar(f"{n * step // 1024}-{(n + 1) * step // 1024} KiB", count, warning=n == BUCKETS - 1)
            for n, count in enumerate(self.sizes)
        ]

    def fullness_bars(self) -> list[Bar]:
        """Documents by how much of ``max_characters`` their recall uses; past it, a warning."""
        bars = [
            Bar(f"{n * 10}-{(n + 1) * 10}%", count) for n, count in enumerate(self.fullness[:-1])
        ]
        bars.append(Bar("over the limit", self.fullness[-1], warning=True))
        return bars


def walk_store(
    store: Backend, *, max_characters: int, slot: str = "user", workers: int = 8
) -> StoreShape:
    """Read every document of ``store`` once and return its shape (``docmem stats``'s walk)."""
    shape = StoreShape(max_characters=max_characters, slot=slot)
    shape.encrypted = encrypts(store)
    shape.fence = store_fence(store)
    keys = list(store.keys())  # a Backend's listing, as `docmem stats` takes it
    for key, stored in ordered(lambda key: (key, store.read(key)), keys, workers):
        shape.add(key, stored)
    return shape


@dataclass(frozen=True)
class Probe:
    """The probe's verdict: whose checks ran, each check, and the store's facts."""

    by: str
    scheme: str
    checks: tuple[tuple[str, bool], ...]
    facts: tuple[tuple[str, str], ...] = ()

    @property
    def passed(self) -> bool:
        """Whether every check passed: docmem may share this store between writers."""
        return all(passed for _name, passed in self.checks)


def probe_verdict(store: Backend, *, writers: int = 8) -> Probe:
    """``docmem probe``'s checks: the store's own (``check_server``), else the contract's."""
    scheme = urlsplit(store.url).scheme
    own = store.check_server(writers=writers)  # ConditionsNotHonoured names a miss
    if own is not None:
        facts = tuple((name, str(value)) for name, value in own.facts.items())
        return Probe(own.by, scheme, tuple(own.checks), facts)
    return Probe("the backend contract", scheme, tuple(contract_checks(store, writers)))
