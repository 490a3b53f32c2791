"""The flags of ``export``, ``import``, ``verify``, ``migrate``, ``fence`` and ``unfence``.

Kept here, argparse only, so the parser stays one small call away from them
(``docmem/cli/parser.py`` calls :func:`add_transfer_commands`); the commands
themselves are in :mod:`docmem.cli.transfer_commands` and
:mod:`docmem.cli.migrate_command`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["TRANSFER_COMMANDS", "add_transfer_commands"]

#: Each command's implementation as ``module:function`` (merged into the parser's table).
TRANSFER_COMMANDS = {
    "export": ".transfer_commands:export",
    "import": ".transfer_commands:import_",
    "verify": ".transfer_commands:verify",
    "migrate": ".migrate_command:run",
    "fence": ".transfer_commands:fence",
    "unfence": ".transfer_commands:unfence",
}

_Add = Callable[[str, str, list[argparse.ArgumentParser]], argparse.ArgumentParser]


def add_transfer_commands(
    add: _Add,
    store: argparse.ArgumentParser,
    output: argparse.ArgumentParser,
    positive: Callable[[str], int],
) -> None:
    """Add the transfer commands through the parser's ``add`` (name, summary, parents)."""
    workers = argparse.ArgumentParser(add_help=False)
    workers.add_argument(
        "--workers", type=positive, default=8, help="documents read or written at once (default: 8)"
    )
    on_store = [store, output, workers]
    export = add("export", "write every document of the store to a docmem-export/1 file", on_store)
    export.add_argument("file", metavar="FILE", help="the export file to write; - for stdout")
    export.add_argument(
        "--fence",
        metavar="ID",
        help="fence the store first (it stays fenced): consistent for the whole store",
    )
    imported = add("import", "create every document of an export file in the store", on_store)
    imported.add_argument("file", metavar="FILE", help="the export file; - for stdin")
    imported.add_argument(
        "--create-missing",
        action="store_true",
        help="also when the store already holds documents, create those of the file it lacks "
        "(to finish an interrupted import, or to merge); a scope deleted since the export "
        "comes back",
    )
    verify = add("verify", "check an export file, and the store against it", on_store)
    verify.add_argument("file", metavar="FILE", help="the export file; - for stdin")
    verify.add_argument(
        "--file-only", action="store_true", help="check the file alone, not a store"
    )
    for name, summary in (
        ("fence", "fence the whole store for a migration: saves are refused, recall works"),
        ("unfence", "lift a fence: saves are accepted again"),
    ):
        fenced = add(name, summary, on_store)
        fenced.add_argument("--id", required=True, metavar="ID", help="the migration's fence id")
    migrate = add(
        "migrate", "move a store into an empty one under a fence, verified", [output, workers]
    )
    migrate.add_argument("source", metavar="SRC", help="the store to move (it stays fenced)")
    migrate.add_argument("destination", metavar="DST", help="the empty store to move it into")
    migrate.add_argument(
        "--id", metavar="ID", help="the migration's fence id; the same id resumes (default: new)"
    )
    migrate.add_argument(
        "--rollback",
        action="store_true",
        help="lift the fence on SRC, unless DST has accepted writes since the import (needs --id)",
    )
    migrate.add_argument(
        "--keep-export",
        metavar="FILE",
        help="keep the export file the migration wrote (mode 0600; plaintext, even from an "
        "encrypted SRC)",
    )
    migrate.add_argument(
        "--read-back",
        action="store_true",
        help="verify by reading every copied document back, even where DST lists versions",
    )
    migrate.add_argument(
        "--decrypt",
        action="store_true",
        help="allow an encrypted SRC into a plaintext DST: every memory is stored there in "
        "plaintext",
    )
