"""``docmem mcp``: the MCP server of :mod:`docmem.integrations.mcp`, on the store given here.

The command line owns ``--store`` (and ``DOCMEM_STORE``) and ``--debug``;
every other flag of ``docmem mcp`` is the integration's
(``add_cli_arguments``, see :mod:`docmem.cli.parser`), and so is serving
(``run_cli``) until the host stops the server.
"""

from __future__ import annotations

import argparse

from .report import Reporter
from .store import open_from

__all__ = ["run"]


def run(arguments: argparse.Namespace, report: Reporter) -> int:
    """Open the store, then serve until stopped; the integration's exit code."""
    from docmem.integrations import mcp as integration  # the parser has imported it already

    with open_from(arguments) as store:
        code: int = integration.run_cli(arguments, store)
    return code
