"""``docmem mcp``: the flags of the MCP server and serving it, over stdio or streamable HTTP.

The ``docmem`` command line owns ``--store`` (and ``DOCMEM_STORE``) and
imports this module only for its ``mcp`` subcommand; it calls
:func:`add_cli_arguments` while building that subcommand's parser and
:func:`run_cli` with the parsed flags and the opened store.

Each slot ``S`` keeps its memory under the namespace ``<--namespace>:S`` and
the scope :func:`docmem.by_principal` gives: ``--principal`` over stdio, the
token's issuer and subject over HTTP. The namespace is always a flag: a host
starts a stdio server with a whitelisted environment, so
``DOCMEM_ENVIRONMENT`` would silently be missing.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from docmem.backend import Backend
from docmem.cli.listener import listen
from docmem.errors import DocmemError, InvalidArgument, InvalidScope
from docmem.host.slot import MemorySlot, Principal, ScopeContext, by_principal
from docmem.provider.keys import namespace_key
from docmem.provider.memory import FileMemory
from docmem.provider.tools import check_slot_name

from .mcp_auth import JwtVerifier, check_jwks_url, load_public_key
from .mcp_server import access_token_principal, docmem_mcp_server, fixed_principal

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["add_cli_arguments", "run_cli"]

_PROG = "docmem mcp"
_DEFAULT_SLOT = "user"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: The loggers of docmem and its plug-ins, which the command line gives their handler.
_LOGGERS = ("docmem", "docmem_s3", "docmem_fsspec")


class _Slot(NamedTuple):
    name: str
    description: str | None = None


_T = TypeVar("_T")


class _Address(NamedTuple):
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _argument(check: Callable[[str], _T]) -> Callable[[str], _T]:
    """An argparse type from one of docmem's checks: its refusal becomes a usage error."""

    def convert(text: str) -> _T:
        try:
            return check(text)
        except DocmemError as error:
            problem = error.message
        raise argparse.ArgumentTypeError(problem)

    return convert


def _checked_namespace(text: str) -> str:
    if not text.strip():
        raise InvalidArgument("the namespace is blank: name the deployment, e.g. acme:prod")
    namespace_key(f"{text}:{_DEFAULT_SLOT}")  # the slot's namespace must be a valid one
    return text


_namespace = _argument(_checked_namespace)
_principal = _argument(Principal.parse)
_slot_name = _argument(check_slot_name)


def _address(text: str) -> _Address:
    """``PORT`` (on 127.0.0.1), ``HOST:PORT`` or ``[IPV6]:PORT``."""
    host, _, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]") if host.startswith("[") else host
    if not port.isdigit() or not 0 < int(port) < 65536 or (":" in host and "[" not in text):
        raise argparse.ArgumentTypeError("expected PORT, HOST:PORT or [IPV6]:PORT")
    return _Address(host or "127.0.0.1", int(port))


_key_file = _argument(load_public_key)
_jwks_url = _argument(check_jwks_url)


def _http_url(text: str) -> str:
    """An http(s) URL with a host: what MCP authorization names issuers and resources by."""
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        return text
    raise argparse.ArgumentTypeError("expected an http(s) URL")


def _nonblank(text: str) -> str:
    if text.strip():
        return text
    raise argparse.ArgumentTypeError("must not be blank")


class _SlotAction(argparse.Action):
    """``--slot NAME``, repeatable; each may be followed by its own ``--description``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        slots: list[_Slot] = list(getattr(namespace, self.dest) or [])
        if any(slot.name == values for slot in slots):
            parser.error(f"argument --slot: slot {values!r} is given twice")
        slots.append(_Slot(values))
        setattr(namespace, self.dest, slots)


class _DescriptionAction(argparse.Action):
    """``--description TEXT``: describes the ``--slot`` just before it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        slots: list[_Slot] = list(getattr(namespace, "slots", None) or [])
        if not slots:
            parser.error("argument --description: give it after the --slot it describes")
        if slots[-1].description is not None:
            parser.error(f"argument --description: slot {slots[-1].name!r} has one already")
        if not values.strip():
            parser.error("argument --description: a description must not be blank")
        slots[-1] = slots[-1]._replace(description=values)
        namespace.slots = slots


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every ``docmem mcp`` flag to ``parser`` except ``--store``, which the CLI adds."""
    parser.description = (
        "Serve docmem memory to an MCP host: over stdio for one principal, or over "
        "streamable HTTP for many, each request's scope taken from its verified bearer token."
    )
    parser.add_argument(
        "--namespace",
        required=True,
        type=_namespace,
        metavar="NS",
        help="the deployment's namespace; slot S keeps its memory under NS:S (required)",
    )
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--principal",
        type=_principal,
        metavar="KIND:AUTHENTICATOR:ID",
        help="serve over stdio, for this one principal (as docmem.by_principal keys it)",
    )
    who.add_argument(
        "--http",
        type=_address,
        metavar="[HOST:]PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp (HOST defaults to 127.0.0.1)",
    )
    parser.add_argument(
        "--slot",
        dest="slots",
        action=_SlotAction,
        type=_slot_name,
        metavar="NAME",
        help=f"a memory slot, repeatable (default: one slot named {_DEFAULT_SLOT!r})",
    )
    parser.add_argument(
        "--description",
        action=_DescriptionAction,
        metavar="TEXT",
        help="what the --slot just before it is for, prepended to its tool descriptions",
    )
    tokens = parser.add_argument_group("bearer tokens (with --http)")
    source = tokens.add_mutually_exclusive_group()
    source.add_argument(
        "--jwks-url", type=_jwks_url, metavar="URL", help="the issuer's JWKS (https)"
    )
    source.add_argument(
        "--jwt-key-file",
        type=_key_file,
        metavar="PATH",
        help="a PEM public key or certificate that signs the tokens",
    )
    tokens.add_argument(
        "--issuer", type=_http_url, metavar="URL", help="the tokens' iss, exactly (an http(s) URL)"
    )
    tokens.add_argument(
        "--audience", type=_nonblank, metavar="AUD", help="the tokens' aud, exactly"
    )
    tokens.add_argument(
        "--resource-url",
        type=_http_url,
        metavar="URL",
        help="this server's public URL: publish RFC 9728 metadata naming the issuer, and "
        "accept the URL's Host from a reverse proxy in front of a loopback address",
    )


def _usage_problem(arguments: argparse.Namespace) -> str | None:
    """What is wrong with how the flags combine (argparse checks each flag's own value)."""
    token_flags = ("jwks_url", "jwt_key_file", "issuer", "audience", "resource_url")
    given = [name for name in token_flags if getattr(arguments, name, None) is not None]
    if arguments.http is None:
        if given:
            flag = "--" + given[0].replace("_", "-")
            return f"argument {flag}: only with --http (over stdio, --principal names the caller)"
        return None
    if arguments.jwks_url is None and arguments.jwt_key_file is None:
        return "--http needs --jwks-url or --jwt-key-file to verify bearer tokens"
    for name in ("issuer", "audience"):
        if getattr(arguments, name) is None:
            return f"--http needs --{name}"
    return None


def run_cli(arguments: argparse.Namespace, store: Backend) -> int:
    """Serve until stopped; the exit code.

    0 when the host closed stdin (stdio), 1 for a docmem error (one line
    starting with its code) or an address that cannot be bound, 2 for flags
    that do not go together, 130 when interrupted (Ctrl-C). Over HTTP a
    SIGTERM shuts down gracefully, then ends the process with SIGTERM's own
    status (what uvicorn does, and what service managers expect).
    """
    problem = _usage_problem(arguments)
    if problem is not None:
        print(f"{_PROG}: error: {problem}", file=sys.stderr)
        return 2
    with _one_log_path():
        return _serve(arguments, store)


def _serve(arguments: argparse.Namespace, store: Backend) -> int:
    """Build the server and serve it; :func:`run_cli`'s exit codes."""
    try:
        server = _server(arguments, store)
    except DocmemError as error:
        if getattr(arguments, "debug", False):
            raise
        print(f"{error.code}: {error.message}", file=sys.stderr)
        return 1
    try:
        if arguments.http is None:
            server.run("stdio")  # returns when the host closes stdin
            return 0
        return _serve_http(server, arguments.http, arguments.resource_url)
    except KeyboardInterrupt:
        return 130


@contextlib.contextmanager
def _one_log_path() -> Iterator[None]:
    """While serving, a docmem logger with handlers of its own writes through them only.

    Building an ``MCPServer`` gives the root logger the SDK's handler
    (``logging.basicConfig``), and every record also goes up to the root:
    the handler the command line gave docmem's loggers (``--debug``) and the
    SDK's would each print every line. So a logger that has its own stops
    propagating while the server runs; docmem then logs exactly as every
    other command does (with ``--debug`` once, without it not at all), and the
    SDK's handler keeps the SDK's own lines. A logger without handlers still
    propagates, so an application calling :func:`run_cli` loses nothing.
    """
    detached = [
        logger
        for logger in map(logging.getLogger, _LOGGERS)
        if logger.handlers and logger.propagate
    ]
    for logger in detached:
        logger.propagate = False
    try:
        yield
    finally:
        for logger in detached:
            logger.propagate = True


def _server(arguments: argparse.Namespace, store: Backend) -> MCPServer:
    memory = FileMemory(store)
    slots = [
        MemorySlot(
            slot.name,
            memory,
            scope=by_principal,
            namespace=f"{arguments.namespace}:{slot.name}",
            description=slot.description,
        )
        for slot in (arguments.slots or [_Slot(_DEFAULT_SLOT)])
    ]
    for slot in slots:  # a long namespace may fit one slot's name and not another's
        assert isinstance(slot.namespace, str)
        namespace_key(slot.namespace)
    if arguments.http is None:
        if by_principal(ScopeContext(principal=arguments.principal)) is None:
            raise InvalidScope(
                "this principal has no memory of its own (anonymous, runtime or blank): "
                "give --principal a user or service, e.g. user:local:me"
            )
        return docmem_mcp_server(slots, scope_context=fixed_principal(arguments.principal))
    verifier = JwtVerifier(
        issuer=arguments.issuer,
        audience=arguments.audience,
        key=arguments.jwt_key_file,
        jwks_url=arguments.jwks_url,
    )
    return docmem_mcp_server(
        slots,
        scope_context=access_token_principal(),
        token_verifier=verifier,
        auth=verifier.auth_settings(resource_url=arguments.resource_url),
    )


def _serve_http(server: MCPServer, address: _Address, public_url: str | None) -> int:
    import uvicorn  # with the mcp extra; only the HTTP form needs it

    try:
        listener = listen(address.host, address.port)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        print(f"{_PROG}: store_unavailable: cannot listen on {address}: {reason}", file=sys.stderr)
        return 1
    app = server.streamable_http_app(
        host=address.host, transport_security=_behind_proxy(address, public_url)
    )
    # A listen stream stays open as long as its client: without a bound, SIGTERM would
    # wait for every client to hang up (and a service manager then sends SIGKILL).
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    print(f"{_PROG}: serving streamable HTTP on http://{address}/mcp", file=sys.stderr, flush=True)
    web = _interruptible(config)
    web.run(sockets=[listener])
    # uvicorn re-raises the SIGINT it shut down for (KeyboardInterrupt: 130), unless the
    # process inherited SIGINT ignored (a background job of a shell): 130 all the same.
    return 130 if web.interrupted else 0


def _interruptible(config: Any) -> Any:
    """A ``uvicorn.Server`` that remembers whether a SIGINT stopped it."""
    import uvicorn

    class Server(uvicorn.Server):
        interrupted = False

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.interrupted = self.interrupted or sig == signal.SIGINT
            super().handle_exit(sig, frame)

    return Server(config)


def _behind_proxy(address: _Address, public_url: str | None) -> TransportSecuritySettings | None:
    """On loopback the SDK accepts only loopback Host headers (DNS rebinding protection).

    A reverse proxy in front passes the public host, so with ``--resource-url``
    that host (and its origin) is accepted too; without it, the SDK's default.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    parts = urlsplit(public_url) if public_url else None
    if parts is None or not parts.netloc or address.host not in _LOOPBACK:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", parts.netloc],
        allowed_origins=[
            "http://127.0.0.1:*",
            "http://localhost:*",
            "http://[::1]:*",
            f"{parts.scheme}://{parts.netloc}",
        ],
    )
