"""``docmem console``: the operator console (:mod:`docmem.console`) served on this machine.

On loopback (the default, 127.0.0.1) it prints a one-time login link, as
Jupyter does; ``--bind`` to any other address is refused unless JWT sign-in
is configured (``--issuer``, ``--audience`` and ``--jwks-url`` or
``--jwt-key-file``, as ``docmem mcp`` takes them), and then only tokens whose
operator claim (``--operator-claim``, default ``docmem:operator``) is
``true`` sign in. Never anonymous. Each action is logged content-free on
stderr. Needs the ``console`` extra (JWT sign-in also the ``mcp`` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ..command import Command, MissingExtra, UsageError
from ..flags import add_store, positive
from ..listener import listen
from ..report import Reporter
from ..store import open_from

__all__ = ["COMMAND"]

_PROG = "docmem console"


class _MissingConsoleExtra(MissingExtra):
    message = 'docmem console needs the console extra: pip install "agent-docmem[console]"'


class _MissingMcpExtra(MissingExtra):
    message = (
        'JWT sign-in reuses the MCP server\'s verifier: pip install "agent-docmem[console,mcp]"'
    )


def _port(text: str) -> int:
    if text.isdigit() and 0 <= int(text) < 65536:
        return int(text)
    raise argparse.ArgumentTypeError("expected a port number, 0 for any free port")


def _public_url(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc and parts.path in ("", "/"):
        return text
    raise argparse.ArgumentTypeError("expected http(s)://HOST[:PORT], without a path")


class Console(Command):
    help = "serve the operator console: find, see, fix a scope's memory in a browser"
    server = True

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        parser.add_argument("--debug", action="store_true", help="on failure, print the traceback")
        parser.add_argument(
            "--port", type=_port, default=8765, help="the port (default: 8765; 0: any free one)"
        )
        parser.add_argument(
            "--bind",
            default="127.0.0.1",
            metavar="ADDR",
            help="the address to listen on (default: 127.0.0.1); any other than loopback "
            "needs JWT sign-in",
        )
        parser.add_argument(
            "--public-url",
            type=_public_url,
            metavar="URL",
            help="the URL operators open, behind a reverse proxy: its host is accepted, "
            "and https marks the session cookie Secure",
        )
        parser.add_argument(
            "--max-characters",
            type=positive,
            default=4000,
            help="the max_characters the application binds its memory with (default: 4000)",
        )
        parser.add_argument(
            "--link-minutes",
            type=positive,
            default=10,
            help="how long the one-time login link works (default: 10 minutes)",
        )
        tokens = parser.add_argument_group("operator sign-in with JWTs (needs the mcp extra)")
        source = tokens.add_mutually_exclusive_group()
        source.add_argument("--jwks-url", metavar="URL", help="the issuer's JWKS (https)")
        source.add_argument(
            "--jwt-key-file", metavar="PATH", help="a PEM public key that signs the tokens"
        )
        tokens.add_argument("--issuer", metavar="URL", help="the tokens' iss, exactly")
        tokens.add_argument("--audience", metavar="AUD", help="the tokens' aud, exactly")
        tokens.add_argument(
            "--operator-claim",
            default="docmem:operator",
            metavar="CLAIM",
            help="the claim that must be true for a token to sign an operator in "
            "(default: docmem:operator)",
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Open the store, then serve until stopped (Ctrl-C: 130)."""
        with _needs(_MissingConsoleExtra):
            import uvicorn

            from docmem.console import ConsoleSettings, console_app
            from docmem.console.auth import LoginLinks, Sessions
            from docmem.console.serving import accepted_hosts, is_loopback, is_unspecified
        operators = _operators(arguments)
        loopback = is_loopback(arguments.bind)
        if not loopback and operators is None:
            raise UsageError(
                "--bind to an address other than loopback needs JWT sign-in: --issuer, "
                "--audience and --jwks-url or --jwt-key-file"
            )
        if is_unspecified(arguments.bind) and arguments.public_url is None:
            raise UsageError(
                f"--bind {arguments.bind} listens on every address: give --public-url, the URL "
                "operators open, so the console knows which Host to answer"
            )
        with open_from(arguments) as store:
            try:
                listener = listen(arguments.bind, arguments.port)
            except OSError as error:
                reason = error.strerror or type(error).__name__
                print(
                    f"{_PROG}: cannot listen on {arguments.bind}:{arguments.port}: {reason}",
                    file=sys.stderr,
                )
                return 1
            port = listener.getsockname()[1]
            public = urlsplit(arguments.public_url) if arguments.public_url else None
            links = LoginLinks(lifetime=60.0 * arguments.link_minutes) if loopback else None
            settings = ConsoleSettings(
                store=store,
                hosts=accepted_hosts(arguments.bind, port, [public.netloc] if public else []),
                links=links,
                operators=operators,
                sessions=Sessions(),
                max_characters=arguments.max_characters,
                secure_cookie=public is not None and public.scheme == "https",
            )
            app = console_app(settings)
            _log_actions()
            base = arguments.public_url.rstrip("/") if public else _base(arguments.bind, port)
            print(f"{_PROG}: serving {store.url} on {base}/", file=sys.stderr, flush=True)
            if links is not None:
                print(
                    f"{_PROG}: open {base}/login?token={links.issue()} "
                    f"(works once, for {arguments.link_minutes} minutes)",
                    flush=True,
                )
            if operators is not None:
                print(f"{_PROG}: operators sign in at {base}/signin", file=sys.stderr, flush=True)
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
            server = uvicorn.Server(config)
            try:
                server.run(sockets=[listener])
            except KeyboardInterrupt:
                return 130
        return 0


COMMAND = Console()


def _base(host: str, port: int) -> str:
    spelled = f"[{host}]" if ":" in host else host
    return f"http://{spelled}:{port}"


def _operators(arguments: argparse.Namespace) -> Any:
    """The JWT sign-in the flags configure, or ``None``; UsageError for half a configuration."""
    given = [arguments.jwks_url, arguments.jwt_key_file, arguments.issuer, arguments.audience]
    if all(value is None for value in given):
        return None
    if arguments.issuer is None or arguments.audience is None:
        raise UsageError("JWT sign-in needs --issuer and --audience")
    if arguments.jwks_url is None and arguments.jwt_key_file is None:
        raise UsageError("JWT sign-in needs --jwks-url or --jwt-key-file")
    if not arguments.operator_claim.strip():
        raise UsageError("--operator-claim must not be blank")
    with _needs(_MissingMcpExtra):
        from docmem.console.auth import OperatorTokens
        from docmem.integrations.mcp_auth import JwtVerifier, load_public_key
    key = None if arguments.jwt_key_file is None else load_public_key(arguments.jwt_key_file)
    verifier = JwtVerifier(
        issuer=arguments.issuer, audience=arguments.audience, key=key, jwks_url=arguments.jwks_url
    )
    return OperatorTokens(verifier, arguments.operator_claim)


def _log_actions() -> None:
    """The action log (content-free) on stderr at INFO, while the rest of docmem logs WARNING."""
    logger = logging.getLogger("docmem.console")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


@contextlib.contextmanager
def _needs(missing: type[MissingExtra]) -> Iterator[None]:
    """An import that fails for want of an extra raises ``missing``."""
    try:
        yield
    except ImportError as error:
        if (error.name or "").startswith("docmem"):
            raise
        raise missing(error) from error
