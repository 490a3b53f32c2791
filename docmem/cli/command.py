"""What a command is to the parser and the driver, and what it may raise besides a docmem error.

Each module of :mod:`docmem.cli.commands` defines one :class:`Command`: its
summary, the flags it takes (:meth:`Command.configure`, the shared ones from
:mod:`docmem.cli.flags`) and the code that runs it, so a command's flags are
declared next to the code that reads them.
"""

from __future__ import annotations

import abc
import argparse
from typing import ClassVar

from .report import Reporter

__all__ = ["Command", "MissingExtra", "UsageError"]


class Command(abc.ABC):
    """One subcommand: its one-line summary, its flags and its run."""

    #: The summary ``docmem --help`` lists, and the subcommand's own description.
    help: ClassVar[str]
    #: Its flags need an optional extra: ``docmem --help`` lists it, only ``docmem NAME`` builds it.
    extra: ClassVar[bool] = False
    #: It runs until stopped: its warnings reach stderr without ``--debug``.
    server: ClassVar[bool] = False

    @abc.abstractmethod
    def configure(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's flags to its subparser (may raise :class:`MissingExtra`)."""

    @abc.abstractmethod
    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Run with the parsed flags; the exit code."""


class UsageError(Exception):
    """Flags that parse but do not go together (no scope, two, erase without --yes): exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MissingExtra(Exception):
    """``docmem mcp`` without the ``mcp`` extra installed."""

    message = 'docmem mcp needs the mcp extra: pip install "agent-docmem[mcp]"'

    def __init__(self, cause: BaseException) -> None:
        super().__init__(self.message)
        self.cause = cause
