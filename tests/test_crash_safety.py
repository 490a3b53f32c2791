"""file:// survives SIGKILL mid-save: the document always parses, acknowledged saves persist.

A seeded campaign: in each round two writer processes save to one scope and
are killed with SIGKILL at random moments: in the middle of a save, holding
the key's lock, between the temp file and the rename. Each writer reports a
save on a pipe right after it returned, so the parent knows every save that
was acknowledged. After the kills the document must parse and hold every
acknowledged save, and the next write must leave no crashed writer's temp
file behind. ``DOCMEM_LONG_CAMPAIGN=1`` runs ten times as many rounds (nightly).

The writers and the per-round checks come from :mod:`docmem.testing.campaigns`.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from docmem.storage.builtin.local import LocalBackend
from docmem.testing import campaigns
from docmem.testing.campaigns import Writers

ROUNDS = campaigns.campaign_rounds()
WRITERS = 2


@pytest.fixture
def writers(tmp_path: Path) -> Iterator[Writers]:
    yield from campaigns.running_writers(f"file://{tmp_path / 'store'}", writers=WRITERS)


def _temps(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.startswith(".tmp-"))


@pytest.mark.process
@pytest.mark.slow
def test_sigkill_campaign_never_tears_loses_or_litters(tmp_path: Path, writers: Writers) -> None:
    backend = LocalBackend(tmp_path / "store", create=True)
    mem = campaigns.victim_memory(backend)
    mem.save("before the campaign", mutation_id="setup")  # creates the store and its marker
    directory = Path(backend.path(campaigns.victim_scope().storage_key)).parent
    rng = random.Random(20261130)

    def kill(tag: str, pids: list[int]) -> None:
        for n, pid in enumerate(pids):
            # Mostly kill well inside the save loop; sometimes during the first save.
            saved = rng.random() < 0.7
            writers.wait_until_ready(f"{tag}w{n}")
            if saved:
                writers.wait_for_a_save(f"{tag}w{n}-")
            time.sleep(rng.uniform(0, 0.004))
            os.kill(pid, signal.SIGKILL)

    left_by_kills = 0
    # Each round checks that the writers died of the kills and no acknowledged save is lost.
    for round_number in writers.rounds(ROUNDS, backend, kill=kill):
        left_by_kills += len(_temps(directory))
        # The next write collects what the killed writers left behind.
        mem.save(f"after round {round_number}", mutation_id=f"check-{round_number}")
        assert _temps(directory) == [], f"round {round_number} left temp files"
        # Empty the memory so the document stays far below its size limit.
        mem.erase(mutation_id=f"erase-{round_number}")
        writers.acknowledged.clear()
    print(f"{ROUNDS} rounds of {WRITERS} kills; {left_by_kills} temp files left by the kills")
