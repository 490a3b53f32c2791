"""What the commands on one scope share: the FileMemory they bind, their mutation id, their lines.

Each goes through :class:`docmem.FileMemory`, as an application would, so a
save from the command line meets the same limits, secret filter, conflict
loop and journal. ``save``, ``remove`` and ``erase`` always run under a
mutation id, the given ``--mutation-id`` or a fresh one, and print it: the
same command again with that id has no second effect, and ``inspect`` finds
its record.
"""

from __future__ import annotations

import argparse

from docmem.backend import Backend
from docmem.provider.journal import fresh_mutation_id
from docmem.provider.memory import BoundMemory, FileMemory
from docmem.provider.mutation import RemoveResult, SaveResult

from .address import Address
from .report import Reporter

__all__ = ["PLAIN_SLOT", "bound", "done_at_index", "mutation_id_of", "replayed"]

#: The slot a command binds when it renders nothing (the slot shapes only the rendering).
PLAIN_SLOT = "user"


def bound(
    store: Backend, address: Address, slot: str, *, max_characters: int = 4000
) -> BoundMemory:
    """The scope's memory as an application with ``max_characters`` binds it."""
    return FileMemory(store, max_characters=max_characters).bind(address.scope, slot=slot)


def mutation_id_of(arguments: argparse.Namespace) -> str:
    """``--mutation-id``, or a fresh one."""
    given: str | None = arguments.mutation_id
    return fresh_mutation_id() if given is None else given


def replayed(revision: int) -> str:
    """The line for a mutation id among the journal's older ids (docs/design.md, section 5)."""
    return f"this mutation id was applied before; nothing changed (revision {revision})"


def done_at_index(
    report: Reporter, line: str, mutation_id: str, result: SaveResult | RemoveResult
) -> int:
    """The report of a save or remove: its line, then what ``--json`` gives."""
    return report.done(
        f"{line}; mutation id {mutation_id}",
        status=result.status,
        index=result.index,
        revision=result.revision,
    )
