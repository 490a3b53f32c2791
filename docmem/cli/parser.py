"""The argument parser, assembled from the commands' list (:mod:`docmem.cli.commands`).

Every flag belongs to a subcommand (``docmem show --json ...``, never
``docmem --json show``), so the first argument always names the command: only
that command's module is imported and only its subparser built. Without a
command name first (``docmem --help``, a mistyped command) every command is
built, so usage errors read as they always did, except that one whose flags
need an extra (``mcp``) is only listed.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from .commands import NAMES, load

__all__ = ["Parsers", "build_parser"]

_DESCRIPTION = (
    "Look at and fix docmem memory without writing Python. A scope is named by "
    "--namespace with --scope parts (or --principal), or by its storage --key; the store by "
    "--store URL or DOCMEM_STORE. Exit codes: 0 success, 1 a docmem error, 2 a usage error."
)


@dataclass(frozen=True)
class Parsers:
    """The top-level parser and each built command's own (for a usage error found after parsing)."""

    top: argparse.ArgumentParser
    commands: dict[str, argparse.ArgumentParser]


def build_parser(argv: Sequence[str]) -> Parsers:
    """The parser for ``argv``: the command its first argument names, else every command.

    Raises :class:`~docmem.cli.command.MissingExtra` when that command's flags
    need an extra that is not installed.
    """
    from docmem._version import __version__

    # No abbreviated flags: a script's --mut must not change meaning when a flag is added.
    top = argparse.ArgumentParser(prog="docmem", description=_DESCRIPTION, allow_abbrev=False)
    top.add_argument("--version", action="version", version=f"docmem {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    asked = argv[0] if argv and argv[0] in NAMES else None
    commands: dict[str, argparse.ArgumentParser] = {}
    for name in NAMES if asked is None else (asked,):
        command = load(name)
        if command.extra and name != asked:  # listed in --help, never parsed
            commands[name] = sub.add_parser(name, help=command.help, add_help=False)
            continue
        parser = sub.add_parser(
            name, help=command.help, description=command.help, allow_abbrev=False
        )
        command.configure(parser)
        commands[name] = parser
    return Parsers(top, commands)
