"""fsspec+file:// survives SIGKILL mid-save with garbage collection running.

A seeded campaign: in each round two writer processes save to one scope of a
store opened with ``retain=1`` and a short ``grace``, so every save also
collects old versions and sweeps temporary files, and each writer is killed
with SIGKILL at a random moment: while writing a create's temporary file,
between it and the link, in the listing after the create, in the middle of
garbage collection. Each writer reports a save on a pipe right after it
returned (one ``os.write``, so the parent reads it before the kill's effects),
and after the kills the document must parse and hold every reported save.
Temporary files that killed writers left are swept once they are older than
the grace period: none may outlive a write that comes after it.
``DOCMEM_LONG_CAMPAIGN=1`` runs ten times as many rounds (nightly).

The writers (which stop saving after ``MAX_SAVES`` and retry a ``StoreBusy``,
as the core's campaign does) and the per-round checks come from
:mod:`docmem.testing.campaigns`.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import docmem
from docmem.testing import campaigns
from docmem.testing.campaigns import Writers
from docmem_fsspec import FsspecBackend

ROUNDS = campaigns.campaign_rounds()
WRITERS = 2
GRACE = 0.2
#: What the store adds to grace for stores that keep whole seconds, and a margin.
SWEPT_AFTER = GRACE + 1.0 + 0.3
OPTIONS = f"retain=1&grace={GRACE}&max_staleness=0.1"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[FsspecBackend]:
    opened = docmem.open_store(f"fsspec+file://{tmp_path / 'store'}?create=true&{OPTIONS}")
    assert isinstance(opened, FsspecBackend)
    yield opened
    opened.close()


@pytest.fixture
def writers(store: FsspecBackend) -> Iterator[Writers]:
    # As a service opens it: without create=true.
    yield from campaigns.running_writers(f"fsspec+file://{store.root}?{OPTIONS}", writers=WRITERS)


def _stale_temps(folder: Path, *, older_than: float) -> list[str]:
    """Temporary files in ``folder`` whose time is more than ``older_than`` s before now."""
    now = time.time()
    return sorted(
        entry.name
        for entry in os.scandir(folder)
        if entry.name.startswith(".tmp-") and entry.stat().st_mtime < now - older_than
    )


@pytest.mark.slow
def test_sigkill_campaign_with_collection_never_tears_loses_or_litters(
    store: FsspecBackend, writers: Writers
) -> None:
    mem = campaigns.victim_memory(store)
    mem.save("before the campaign", mutation_id="setup")  # creates the store and its marker
    folder = Path(store.folder(campaigns.victim_scope().storage_key))
    rng = random.Random(20261201)

    def kill(tag: str, pids: list[int]) -> None:
        for n in range(len(pids)):
            writers.wait_until_ready(f"{tag}w{n}")
        if rng.random() < 0.7:  # mostly well inside the save loop; sometimes in the first save
            writers.wait_for_a_save(f"{tag}w")  # either writer: one may starve
        for pid in pids:
            time.sleep(rng.uniform(0, 0.01))
            os.kill(pid, signal.SIGKILL)

    left_by_kills: set[str] = set()
    # Each round checks that the writers died of the kills and no acknowledged save is lost.
    for round_number in writers.rounds(ROUNDS, store, kill=kill):
        left_by_kills.update(_stale_temps(folder, older_than=0))
        # The next write sweeps what killed writers left more than the grace period ago.
        mem.save(f"after round {round_number}", mutation_id=f"check-{round_number}")
        assert _stale_temps(folder, older_than=SWEPT_AFTER) == [], f"round {round_number}"
        if round_number % 5 == 4:  # keep the document small, and purge amid the campaign
            mem.erase(mutation_id=f"erase-{round_number}")
            writers.acknowledged.clear()
    time.sleep(SWEPT_AFTER)
    mem.save("after the campaign", mutation_id="teardown")
    assert _stale_temps(folder, older_than=0) == [], "temporary files outlived collection"
    versions = sorted(name for name in os.listdir(folder) if name.endswith(".md"))
    assert len(versions) <= 2, f"garbage collection left {len(versions)} versions"
    document = mem.read()
    assert document is not None
    assert "after the campaign" in document.entries.values()
    print(f"{ROUNDS} rounds of {WRITERS} kills; {len(left_by_kills)} temporary files left by kills")
