"""The ``docmem`` command line: an operator's look at a store, one scope or all of it.

::

    docmem show    --store URL --namespace NS --scope user --scope u_123
    docmem save    --store URL --key memkey1_... "Prefers metric units." --mutation-id op-1
    docmem inspect --store URL --key memkey1_... op-1
    docmem stats   --store URL
    docmem audit   --store URL --session sess-1 --keys-only > scopes.txt
    docmem revert  --store URL --scopes scopes.txt --before 2026-12-02T07:00:00Z --dry-run

Commands: ``show | save TEXT | remove INDEX | erase | inspect MUTATION_ID |
history | revert | audit | probe | stats | rekey | keyring | export | import |
verify | fence | unfence | migrate | mcp``; ``docs/cli.md`` lists every flag, JSON field
and exit code (0 success, 1 a docmem error whose one-line message starts with
its code, 2 a usage error). This module imports nothing of its own at load
time: the parser and each command are imported when used, so
``docmem --version`` does no more than print.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``docmem`` command and return its exit code; never raises but SystemExit.

    ``argv`` are the arguments after the program name (default ``sys.argv[1:]``).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments == ["--version"]:
        from docmem._version import __version__

        print(f"docmem {__version__}")
        return 0
    from .driver import run

    return run(arguments)
