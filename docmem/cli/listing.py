"""A whole store's keys, listed before a command walks them (``stats``, ``rekey``)."""

from __future__ import annotations

from docmem.backend import Backend

from .bars import new_bar
from .report import Reporter

__all__ = ["listed"]


def listed(store: Backend, report: Reporter) -> list[str]:
    """Every key, counted on the bar as the listing goes (its total is unknown until the end)."""
    bar = new_bar(report, total=None, unit="key", desc="listing")
    keys: list[str] = []
    listing = store.keys()  # a Backend's listing, not a dict's
    try:
        for key in listing:
            keys.append(key)
            bar.update(1)
    finally:
        bar.close()
    return keys
