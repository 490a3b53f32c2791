"""Where a command's outcome goes: human text or one JSON object on stdout, errors on stderr.

Human output is for a person at a terminal; ``--json`` prints exactly one
JSON object per command, success or docmem error, on one line, with the
fields docs/cli.md lists. A failure is also one line on stderr starting with
the error's code, then docmem's message, then what to do about it
(:mod:`docmem.cli.advice`). Nothing here sees memory text except what a
command hands over to show.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from docmem.errors import DocmemError
from docmem.provider.transfer.words import counted

from .advice import advice

__all__ = ["Reporter", "counted"]


class Reporter:
    """One command's output; ``fields`` are known facts (key, mutation id) every answer carries."""

    def __init__(self, command: str, *, json: bool, quiet: bool) -> None:
        self.command = command
        self.json = json
        self.quiet = quiet
        self.fields: dict[str, Any] = {}
        self._advice: str | None = None

    def note(self, **fields: Any) -> None:
        """Remember facts for the answer, also if the command fails later (say, the key)."""
        self.fields.update(fields)

    def advise(self, hint: str) -> None:
        """What to do about the error the command is about to raise, instead of the usual advice."""
        self._advice = hint

    @contextlib.contextmanager
    def advising(self, hint: str) -> Iterator[None]:
        """``hint`` for an error that leaves the block; the usual advice once it ends well.

        For a check whose refusal the command knows the way out of (a flag
        to pass), while the command's later errors keep their own advice.
        """
        self._advice = hint
        yield
        self._advice = None

    def warn(self, text: str) -> None:
        """A warning on stderr, also with ``--quiet`` and ``--json``: a risk the operator took.

        Never on stdout, which may carry the export itself (``export -``) or the JSON answer.
        """
        print(f"warning: {text}", file=sys.stderr, flush=True)

    @property
    def progress(self) -> bool:
        """Whether to draw a progress bar: on a terminal only, never with ``--quiet``."""
        return not self.quiet and sys.stderr.isatty()

    def say(self, text: str) -> None:
        """A line of human output now (checks as they run); nothing with --json or --quiet."""
        if not (self.json or self.quiet):
            print(text, flush=True)

    def done(self, text: str | None, *, shown: bool = False, **fields: Any) -> int:
        """Report success: ``text`` for a person, ``fields`` for --json. Returns exit code 0.

        ``shown`` marks text that is the command's very result (show's document),
        printed also with ``--quiet``.
        """
        if self.json:
            self._emit({"command": self.command, "ok": True, **self.fields, **fields})
        elif text is not None and (shown or not self.quiet):
            print(text)
        return 0

    def failed(self, error: DocmemError) -> int:
        """Report a docmem error: one line on stderr (and the JSON object). Returns 1."""
        hint = self._advice or advice(error, self.fields)
        line = f"{error.code}: {error.message}"
        print(f"{line}; {hint}" if hint else line, file=sys.stderr)
        if self.json:
            problem = {
                "code": error.code,
                "message": error.message,
                "outcome": error.outcome,
                "hint": hint,
            }
            self._emit({"command": self.command, "ok": False, **self.fields, "error": problem})
        return 1

    def crashed(self, error: Exception) -> int:
        """Report an unexpected exception by its type only (its text may quote anything)."""
        name = type(error).__name__
        message = f"an unexpected {name}: a bug in docmem or a plug-in"
        hint = "run the command again with --debug for the traceback and report it"
        print(f"internal_error: {message}; {hint}", file=sys.stderr)
        if self.json:
            problem = {"code": "internal_error", "message": message, "outcome": None, "hint": hint}
            self._emit({"command": self.command, "ok": False, **self.fields, "error": problem})
        return 1

    def _emit(self, answer: dict[str, Any]) -> None:
        print(json.dumps(answer, ensure_ascii=False, allow_nan=False))
