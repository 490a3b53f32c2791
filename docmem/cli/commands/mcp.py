"""``docmem mcp``: the MCP server of :mod:`docmem.integrations.mcp`, on the store given here.

The command line owns ``--store`` (and ``DOCMEM_STORE``) and ``--debug``;
every other flag is the integration's (``add_cli_arguments``), and so is
serving (``run_cli``) until the host stops the server. The integration needs
the ``mcp`` extra, so its flags are built only for ``docmem mcp`` itself:
``docmem --help`` lists the command without importing it.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from ..command import Command, MissingExtra
from ..flags import add_store
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]


class Mcp(Command):
    help = (
        "serve memory to an MCP host (stdio, or HTTP with bearer tokens; needs agent-docmem[mcp])"
    )
    extra = True
    server = True

    def configure(self, parser: argparse.ArgumentParser) -> None:
        with _needs_the_extra():
            from docmem.integrations.mcp import add_cli_arguments
        add_store(parser)
        parser.add_argument("--debug", action="store_true", help="on failure, print the traceback")
        add_cli_arguments(parser)

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Open the store, then serve until stopped; the integration's exit code."""
        from docmem.integrations.mcp import run_cli  # configure has imported it already

        with open_from(arguments) as store:
            code: int = run_cli(arguments, store)
        return code


COMMAND = Mcp()


@contextlib.contextmanager
def _needs_the_extra() -> Iterator[None]:
    """An import that fails for want of the extra raises :class:`MissingExtra`."""
    try:
        yield
    except ImportError as error:
        if (error.name or "").startswith("docmem"):
            raise  # docmem's own module is missing: a broken installation, not the extra
        raise MissingExtra(error) from error
