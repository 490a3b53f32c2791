"""Reading projected copies in tests: the marker checked, then set aside for comparison."""

from __future__ import annotations

import docmem


def unmarked(item: docmem.ProjectedRecall) -> str:
    """``item.content`` without its marker, after checking the marker names ``item.slot``."""
    assert docmem.recalled_slot(item.content) == item.slot, "a copy without its slot's marker"
    first, newline, rest = item.content.partition("\n")
    suffix = f" <!-- docmem:recall {item.slot} -->"
    assert first.endswith(suffix)
    return first.removesuffix(suffix) + newline + rest
