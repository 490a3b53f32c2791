"""An entry's provenance as the operator reads it: one line for a person, the record for JSON.

``show --provenance``, ``inspect`` and ``audit`` print the same words for
the same record, so an operator who finds an entry with one command knows
it again in the others. Ids (mutation, session) are the application's own
and are printed; the entry's text never appears here.
"""

from __future__ import annotations

from typing import Any

from docmem.provider.provenance import Provenance

__all__ = ["NO_PROVENANCE", "described", "fields"]

#: What an entry saved before docmem recorded provenance is said to have.
NO_PROVENANCE = "no provenance (saved before docmem recorded it)"


def described(made: Provenance | None) -> str:
    """``saved TIME by WHO, mutation ID[, session ID][; restored TIME by revert ID]``."""
    if made is None:
        return NO_PROVENANCE
    record = made.to_dict()
    if made.by == "revert":  # brought back by a revert; its own save left no record
        return (
            f"brought back {record['saved_at']} by revert {made.mutation} "
            "(saved before docmem recorded provenance)"
        )
    line = f"saved {record['saved_at']} by {made.by}, mutation {made.mutation}"
    if made.session is not None:
        line += f", session {made.session}"
    if made.restored is not None:
        line += f"; restored {record['restored_at']} by revert {made.restored.mutation}"
    return line


def fields(made: Provenance | None) -> dict[str, Any] | None:
    """The record as ``--json`` gives it (:meth:`Provenance.to_dict`), ``None`` if there is none."""
    return None if made is None else made.to_dict()
