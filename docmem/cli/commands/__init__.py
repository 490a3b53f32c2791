"""The ``docmem`` subcommands, one module each: its summary, its flags and the code that runs it.

A command's module is imported only when it is the one run (or for
``docmem --help``), so ``docmem show`` never loads the transfer machinery,
and ``docmem mcp``'s flags, which need the ``mcp`` extra, are built for it alone.
"""

from __future__ import annotations

import importlib
import keyword

from ..command import Command

__all__ = ["NAMES", "load"]

#: Every command, in the order ``docmem --help`` lists them; each is the module of its name.
NAMES = (
    "show",
    "save",
    "remove",
    "erase",
    "inspect",
    "history",
    "revert",
    "audit",
    "probe",
    "stats",
    "rekey",
    "keyring",
    "export",
    "import",
    "verify",
    "fence",
    "unfence",
    "migrate",
    "mcp",
    "console",
)


def load(name: str) -> Command:
    """The command ``name`` (one of :data:`NAMES`); a keyword's module ends in ``_`` (import_)."""
    module = importlib.import_module(
        f".{name}_" if keyword.iskeyword(name) else f".{name}", __name__
    )
    command: Command = module.COMMAND
    return command
