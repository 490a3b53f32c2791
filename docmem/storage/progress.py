"""What a long operator operation (fence, export, import, verify, migrate) reports as it goes.

The library only counts; the command line turns the counts into progress
bars (tqdm, on a terminal). Counts and sizes only, never content.
"""

from __future__ import annotations

__all__ = ["NO_PROGRESS", "Progress"]


class Progress:
    """Receives a phase at a time and its documents as they are done; this base ignores all.

    Subclass it and override what you show. Calls come from the thread that
    runs the operation, one phase after another: ``begin``, any number of
    ``advance``, ``end``; ``note`` between phases.
    """

    def begin(self, phase: str, total: int | None) -> None:
        """A phase starts (``"fencing"``, ``"exporting"``...) with ``total`` documents, if known."""

    def advance(self, documents: int = 1, nbytes: int = 0) -> None:
        """``documents`` more are done, holding ``nbytes`` bytes."""

    def end(self) -> None:
        """The phase is over (also when it failed)."""

    def note(self, text: str) -> None:
        """A step finished: one content-free line for a person (a migration's steps)."""


#: The progress of an operation nobody watches.
NO_PROGRESS = Progress()
