"""Progress bars for the commands that walk a store: tqdm on stderr, on a terminal only.

:func:`new_bar` makes one bar (``stats``, ``rekey``, ``audit``, ``revert``),
and :func:`echo` prints a result line on stdout without tearing it; :class:`Bars` is the
:class:`docmem.progress.Progress` of the transfer commands, one bar per
phase (count, rate and ETA from tqdm, the bytes as its postfix), and prints
the steps a migration notes. With ``--quiet``, ``--json`` or on a pipe there
is no bar.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

from docmem.storage.progress import Progress

from .report import Reporter

__all__ = ["Bar", "Bars", "echo", "human_bytes", "new_bar"]


class Bar(Protocol):
    """What a command does with a bar: tqdm's, or the stand-in that draws nothing."""

    def update(self, n: float | None = 1) -> bool | None: ...
    def close(self) -> None: ...


class _NoBar:
    """What stands in for the progress bar on a pipe or with ``--quiet``."""

    def update(self, n: float | None = 1) -> bool | None:
        return None

    def close(self) -> None:
        return None


def new_bar(report: Reporter, *, total: int | None, unit: str, desc: str) -> Bar:
    """A tqdm bar on stderr where :attr:`Reporter.progress` allows one, else a stand-in."""
    if not report.progress:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)


def echo(bar: Bar, text: str) -> None:
    """Print ``text`` on stdout now, the bar (if any) cleared first and drawn again after.

    For commands that print each result as it comes (``audit``, ``revert
    --scopes``): a line written under a bar on the same terminal would
    otherwise be torn by its next redraw.
    """
    if isinstance(bar, _NoBar):
        print(text, flush=True)
        return
    from tqdm import tqdm

    tqdm.write(text, file=sys.stdout)
    sys.stdout.flush()


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
        self._bytes = 0
        self._bar = new_bar(self._report, total=total, unit="doc", desc=phase)

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
