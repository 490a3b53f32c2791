"""Run the real ``docmem`` console script and record what it did as a transcript.

A transcript is what an operator would see in a terminal, one step after
another: the command line, its stdout, its stderr (each line marked
``stderr|``) and its exit code. The golden files in ``golden/`` are such
transcripts; ``DOCMEM_UPDATE_GOLDEN=1`` rewrites them from the current
output (then read the diff before committing it).

Every run gets an explicit, minimal environment, so nothing of the
developer's (``DOCMEM_STORE``, AWS variables, a terminal width) leaks in,
and ``PYTHONDONTWRITEBYTECODE=1``, so no ``__pycache__`` lands in the checkout.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DOCMEM", "GOLDEN", "VOLATILE", "Ran", "Transcript", "base_environment", "docmem"]

#: The console script pip installed next to this interpreter.
DOCMEM = Path(sys.executable).parent / "docmem"
GOLDEN = Path(__file__).resolve().parent / "golden"
#: What differs between runs of one session, by pattern: the time a save was asked for or a
#: version written (ISO 8601, as provenance and history print it) and file://'s version
#: tokens (a digest of the bytes, which hold those times). Keys are 43 characters too, but
#: always after their ``memkey1_`` prefix, which the lookbehind refuses.
VOLATILE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?Z?"), "<time>"),
    (re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])"), "<version>"),
)


def base_environment(**extra: str) -> dict[str, str]:
    """What a run sees: PATH, HOME, a UTF-8 locale, no bytecode, a fixed width; ``extra``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "COLUMNS": "100",
    }
    env.update(extra)
    return env


@dataclass(frozen=True)
class Ran:
    """One run of the console script."""

    arguments: tuple[str, ...]
    code: int
    stdout: str
    stderr: str


def docmem(
    *arguments: str,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> Ran:
    """Run ``docmem ARGUMENTS`` in a subprocess and wait for it."""
    done = subprocess.run(
        [str(DOCMEM), *arguments],
        env=dict(base_environment() if env is None else env),
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        timeout=timeout,
        check=False,
    )
    return Ran(tuple(arguments), done.returncode, done.stdout, done.stderr)


@dataclass
class Transcript:
    """Runs steps in one environment, records them, and compares the record to a golden file.

    ``replace`` maps text that differs between runs (a temporary directory)
    to a stable placeholder in the record; :data:`VOLATILE` does the same by
    pattern for what every run writes anew (times, version tokens).
    """

    env: dict[str, str]
    replace: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    steps: list[str] = field(default_factory=list)

    def run(self, *arguments: str, stdin: str | None = None) -> Ran:
        """Run one step and record it."""
        ran = docmem(*arguments, env=self.env, stdin=stdin, cwd=self.cwd)
        self.steps.append(self._record(ran, stdin))
        return ran

    def _record(self, ran: Ran, stdin: str | None) -> str:
        words = [_shown(self._stable(word)) for word in ["docmem", *ran.arguments]]
        line = "$ " + ("" if stdin is None else f"printf %s {_shown(stdin)} | ") + " ".join(words)
        lines = [line]
        lines.extend(ran.stdout.splitlines())
        errors = ran.stderr.splitlines()
        if ran.code == 2:
            # argparse's usage block wraps differently across Python versions: keep the verdict.
            errors = [text for text in errors if not text.startswith(("usage:", " "))]
        lines.extend(f"stderr| {text}" for text in errors)
        lines.append(f"exit {ran.code}")
        return self._stable("\n".join(lines))

    def _stable(self, text: str) -> str:
        """``text`` with what differs between runs replaced by its placeholder."""
        for raw, placeholder in sorted(self.replace.items(), key=lambda item: -len(item[0])):
            text = text.replace(raw, placeholder)
        for pattern, placeholder in VOLATILE:
            text = pattern.sub(placeholder, text)
        return text

    def text(self) -> str:
        return "\n\n".join(self.steps) + "\n"

    def check(self, name: str) -> None:
        """Compare the whole record with ``golden/<name>.txt`` (or rewrite it when updating)."""
        path = GOLDEN / f"{name}.txt"
        if os.environ.get("DOCMEM_UPDATE_GOLDEN") == "1":
            path.write_text(self.text(), encoding="utf-8")
            return
        assert path.exists(), f"no golden file {path.name}: run with DOCMEM_UPDATE_GOLDEN=1"
        expected = path.read_text(encoding="utf-8")
        assert self.text() == expected, _diff(expected, self.text(), path.name)


def _shown(text: str) -> str:
    """A command-line word as a shell would need it; a long one as its length."""
    if len(text) > 80:
        return f"<{len(text):,} characters>"
    return shlex.quote(text)


def _diff(expected: str, actual: str, name: str) -> str:
    import difflib

    lines: Sequence[str] = list(
        difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), f"golden/{name}", "actual", lineterm=""
        )
    )
    return "the transcript differs from its golden file:\n" + "\n".join(lines)
