"""Counts in words, for the content-free lines the transfer code and the command line print.

One helper for both, so ``1 document`` and ``2 documents`` are spelled the
same in a library message and in a command's answer. Kept apart from the
rest of :mod:`docmem.transfer` (whose names load on first use), so the
command line's reporting can import it without loading the transfer code.
"""

from __future__ import annotations

__all__ = ["counted"]


def counted(number: int, word: str) -> str:
    """``1 entry``, ``2 entries``, ``1,024 bytes``: a count with its word in the right number."""
    if number != 1:
        consonant_y = word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u")
        word = word[:-1] + "ies" if consonant_y else word + "s"
    return f"{number:,} {word}"
