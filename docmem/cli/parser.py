"""The argument parser: the commands, their flags, and the lazily built ``mcp`` subcommand.

Every flag belongs to a subcommand (``docmem show --json ...``, never
``docmem --json show``), so the first argument always names the command.
That lets the ``mcp`` subcommand be built only when it is the one asked for:
its flags come from :mod:`docmem.integrations.mcp` (``add_cli_arguments``),
which needs the ``mcp`` extra, and any other command never imports it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from .transfer_parser import TRANSFER_COMMANDS, add_transfer_commands

__all__ = ["COMMANDS", "MissingExtra", "Parsers", "UsageError", "build_parser"]

#: Each command's implementation as ``module:function``, imported when the command runs.
COMMANDS = {
    "show": ".scope_commands:show",
    "save": ".scope_commands:save",
    "remove": ".scope_commands:remove",
    "erase": ".scope_commands:erase",
    "inspect": ".scope_commands:inspect",
    "history": ".history:run",
    "probe": ".probe:run",
    "stats": ".stats:run",
    "rekey": ".rekey_command:run",
    "keyring": ".keyring_command:run",
    **TRANSFER_COMMANDS,
    "mcp": ".mcp_command:run",
}

_DESCRIPTION = (
    "Look at and fix docmem memory without writing Python. A scope is named by "
    "--namespace with --scope parts (or --principal), or by its storage --key; the store by "
    "--store URL or DOCMEM_STORE. Exit codes: 0 success, 1 a docmem error, 2 a usage error."
)


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


@dataclass(frozen=True)
class Parsers:
    """The top-level parser and each command's own (for a usage error found after parsing)."""

    top: argparse.ArgumentParser
    commands: dict[str, argparse.ArgumentParser]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError("must be a whole number of at least 1")
    return value


def _flags() -> dict[str, argparse.ArgumentParser]:
    """The groups of flags commands share, as parent parsers."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--store",
        metavar="URL",
        help="the store, e.g. file:///var/lib/agent/memory or s3://bucket/prefix "
        "(default: $DOCMEM_STORE; there is no default store)",
    )
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument(
        "--json", action="store_true", help="print one JSON object (fields in docs/cli.md)"
    )
    output.add_argument(
        "--quiet", action="store_true", help="print nothing on success (show: the document only)"
    )
    output.add_argument(
        "--debug", action="store_true", help="on failure, print the traceback; log docmem's debug"
    )
    address = argparse.ArgumentParser(add_help=False)
    named = address.add_argument_group(
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
    mutation = argparse.ArgumentParser(add_help=False)
    mutation.add_argument(
        "--mutation-id",
        metavar="ID",
        help="the mutation's id, to retry it safely (default: a fresh one, printed)",
    )
    return {"store": store, "output": output, "address": address, "mutation": mutation}


def build_parser(*, mcp: bool = False) -> Parsers:
    """The whole parser; with ``mcp`` the ``mcp`` subcommand gets its real flags.

    Raises :class:`MissingExtra` when ``mcp`` is asked for and cannot be imported.
    """
    from docmem._version import __version__

    # No abbreviated flags: a script's --mut must not change meaning when a flag is added.
    top = argparse.ArgumentParser(prog="docmem", description=_DESCRIPTION, allow_abbrev=False)
    top.add_argument("--version", action="version", version=f"docmem {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    flags = _flags()
    scoped = [flags["store"], flags["address"], flags["output"]]
    commands: dict[str, argparse.ArgumentParser] = {}

    def add(
        name: str, summary: str, parents: list[argparse.ArgumentParser]
    ) -> argparse.ArgumentParser:
        parser = sub.add_parser(
            name, help=summary, description=summary, parents=parents, allow_abbrev=False
        )
        commands[name] = parser
        return parser

    show = add("show", "print a scope's memory as the model sees it", scoped)
    show.add_argument("--slot", default="user", help="the slot name in the heading (default: user)")
    show.add_argument(
        "--at", metavar="VERSION", help="an older version, from `docmem history` (docmem-fsspec)"
    )
    save = add("save", "save one entry", [*scoped, flags["mutation"]])
    save.add_argument("text", metavar="TEXT", help="the entry's text; - reads it from stdin")
    save.add_argument(
        "--slot",
        default="user",
        help="the slot whose rendering the size limit counts (default: user)",
    )
    save.add_argument(
        "--max-characters",
        type=_positive,
        default=4000,
        help="the application's FileMemory max_characters (default: 4000)",
    )
    remove = add("remove", "remove the entry at an index", [*scoped, flags["mutation"]])
    remove.add_argument("index", metavar="INDEX", type=int, help="the entry's index")
    erase = add(
        "erase", "empty a scope's memory (right to be forgotten)", [*scoped, flags["mutation"]]
    )
    erase.add_argument("--yes", action="store_true", help="confirm: erase cannot be undone")
    inspect = add("inspect", "say whether a mutation landed", scoped)
    inspect.add_argument("mutation_id", metavar="MUTATION_ID", help="the id save/remove/erase used")
    add("history", "list a scope's older versions, where the store keeps them", scoped)
    probe = add(
        "probe",
        "check that the store honours conditional writes",
        [flags["store"], flags["output"]],
    )
    probe.add_argument(
        "--writers", type=_positive, default=8, help="concurrent writers to race (default: 8)"
    )
    stats = add(
        "stats",
        "count documents, entries and bytes; find corrupt documents",
        [flags["store"], flags["output"]],
    )
    stats.add_argument(
        "--top", type=_positive, default=5, help="how many of the largest documents (default: 5)"
    )
    stats.add_argument(
        "--workers", type=_positive, default=8, help="documents read at once (default: 8)"
    )
    _add_encryption(add, [flags["store"], flags["output"]], [flags["output"]])
    add_transfer_commands(add, flags["store"], flags["output"], _positive)
    _add_mcp(sub, commands, flags["store"], real=mcp)
    return Parsers(top, commands)


def _add_encryption(
    add: Callable[[str, str, list[argparse.ArgumentParser]], argparse.ArgumentParser],
    store: list[argparse.ArgumentParser],
    output: list[argparse.ArgumentParser],
) -> None:
    """``rekey`` and ``keyring`` (client-side encryption; docmem/cli/rekey_command.py)."""
    rekey = add(
        "rekey", "re-encrypt every document of an encrypted store to its primary key", store
    )
    rekey.add_argument(
        "--workers", type=_positive, default=8, help="documents re-encrypted at once (default: 8)"
    )
    keyring = add("keyring", "add, list or remove the keys of a local keyring file", output)
    keyring.add_argument("action", choices=("add", "primary", "remove", "list"))
    keyring.add_argument(
        "file", metavar="FILE", help="the keyring file (created by add, mode 0600)"
    )
    keyring.add_argument("key_id", metavar="ID", nargs="?", help="the key id (not for list)")
    keyring.add_argument("--primary", action="store_true", help="add: make the new key primary")


def _add_mcp(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    commands: dict[str, argparse.ArgumentParser],
    store: argparse.ArgumentParser,
    *,
    real: bool,
) -> None:
    summary = (
        "serve memory to an MCP host (stdio, or HTTP with bearer tokens; needs agent-docmem[mcp])"
    )
    if not real:  # listed in --help, never parsed: `docmem mcp ...` builds the real one
        commands["mcp"] = sub.add_parser("mcp", help=summary, add_help=False)
        return
    try:
        from docmem.integrations import mcp as integration
    except ImportError as error:
        if (error.name or "").startswith("docmem"):
            raise  # docmem's own module is missing: a broken installation, not the extra
        raise MissingExtra(error) from error
    parser = sub.add_parser(
        "mcp",
        help=summary,
        description=summary,
        parents=[store],
        conflict_handler="resolve",
        allow_abbrev=False,
    )
    parser.add_argument("--debug", action="store_true", help="on failure, print the traceback")
    integration.add_cli_arguments(parser)
    commands["mcp"] = parser
