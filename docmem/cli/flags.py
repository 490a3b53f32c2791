"""The flags several commands take, each declared once; a command adds those it reads.

Each ``add_*`` adds its flags to a command's parser in the order ``--help``
lists them, so a command's configure reads as its help: ``add_store``, then
``add_scope``, ``add_output``, ``add_mutation_id``, then its own flags.
"""

from __future__ import annotations

import argparse

__all__ = [
    "add_fence_id",
    "add_mutation_id",
    "add_output",
    "add_scope",
    "add_store",
    "add_workers",
    "positive",
]


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (counts of workers, writers, rows)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("must be a whole number of at least 1")
    return value


def add_store(parser: argparse.ArgumentParser) -> None:
    """``--store URL`` (read by :func:`docmem.cli.store.open_from`)."""
    parser.add_argument(
        "--store",
        metavar="URL",
        help="the store, e.g. file:///var/lib/agent/memory or s3://bucket/prefix "
        "(default: $DOCMEM_STORE; there is no default store)",
    )


def add_scope(parser: argparse.ArgumentParser) -> None:
    """The ``scope`` group: the spellings :func:`docmem.cli.address.resolve` accepts."""
    named = parser.add_argument_group(
        "scope", "--namespace with --scope parts, --scalar-scope or --principal; or --key"
    )
    named.add_argument("--namespace", metavar="NS", help="the memory's namespace")
    named.add_argument(
        "--scope",
        metavar="PART",
        action="append",
        help="one part of a tuple scope; repeat in order (--scope user --scope u_123)",
    )
    named.add_argument(
        "--scalar-scope", metavar="VALUE", help="a scope that is one string, not a tuple"
    )
    named.add_argument(
        "--principal",
        metavar="KIND:AUTHENTICATOR:ID",
        help="the scope docmem.by_principal gives this principal",
    )
    named.add_argument("--issuer", metavar="URL", help="the principal's issuer (with --principal)")
    named.add_argument("--key", metavar="memkey1_...", help="the scope's storage key")


def add_output(parser: argparse.ArgumentParser) -> None:
    """``--json``, ``--quiet`` (read by the driver's Reporter) and ``--debug`` (the driver's)."""
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object (fields in docs/cli.md)"
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print nothing on success (show: the document only)"
    )
    parser.add_argument(
        "--debug", action="store_true", help="on failure, print the traceback; log docmem's debug"
    )


def add_mutation_id(parser: argparse.ArgumentParser) -> None:
    """``--mutation-id ID``, of the commands that change a scope (save, remove, erase)."""
    parser.add_argument(
        "--mutation-id",
        metavar="ID",
        help="the mutation's id, to retry it safely (default: a fresh one, printed)",
    )


def add_workers(parser: argparse.ArgumentParser, *, doing: str) -> None:
    """``--workers N`` (default 8): how many documents the command is ``doing`` at once."""
    parser.add_argument(
        "--workers", type=positive, default=8, help=f"documents {doing} at once (default: 8)"
    )


def add_fence_id(parser: argparse.ArgumentParser) -> None:
    """``--id ID``, required: the fence that ``fence`` sets and ``unfence`` lifts."""
    parser.add_argument("--id", required=True, metavar="ID", help="the migration's fence id")
