"""Progress bars for the transfer commands: tqdm on stderr, on a terminal only.

A :class:`docmem.progress.Progress` that draws one bar per phase (count,
rate and ETA from tqdm, the bytes as its postfix) and prints the steps a
migration notes. With ``--quiet``, ``--json`` or on a pipe there is no bar.
"""

from __future__ import annotations

import sys
from typing import Any

from docmem.progress import Progress

from .report import Reporter

__all__ = ["Bars", "human_bytes"]


def human_bytes(count: int) -> str:
    """``512 B``, ``3.1 kB``, ``2.0 MB``: decimal units, as tqdm's own."""
    size = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{count:,} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


class Bars(Progress):
    """The command's bars and step lines; a bar only where :attr:`Reporter.progress` allows."""

    def __init__(self, report: Reporter) -> None:
        self._report = report
        self._bar: Any = None
        self._bytes = 0

    def begin(self, phase: str, total: int | None) -> None:
        self.end()
        if not self._report.progress:
            return
        from tqdm import tqdm

        self._bytes = 0
        self._bar = tqdm(
            total=total, unit="doc", desc=phase, file=sys.stderr, leave=False, dynamic_ncols=True
        )

    def advance(self, documents: int = 1, nbytes: int = 0) -> None:
        if self._bar is None:
            return
        self._bytes += nbytes
        self._bar.set_postfix_str(human_bytes(self._bytes), refresh=False)
        self._bar.update(documents)

    def end(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def note(self, text: str) -> None:
        self._report.say(text)
