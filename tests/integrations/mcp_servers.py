"""What the MCP tests start and mint: signing keys and tokens, servers on free loopback ports.

Every server binds its socket before it starts (port 0, so never a port
another process holds), waits for readiness with a deadline, and is always
stopped, also when the test fails.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer

ISSUER = "https://id.example.test"
AUDIENCE = "docmem-mcp-tests"
#: The console script the project installs, next to this interpreter.
DOCMEM = Path(sys.executable).parent / "docmem"
DEADLINE = 20.0


@dataclass(frozen=True)
class SigningKey:
    """An RSA key pair an issuer signs tokens with; ``kid`` names it in a JWKS."""

    private: rsa.RSAPrivateKey
    kid: str

    @classmethod
    def generate(cls, kid: str) -> SigningKey:
        return cls(rsa.generate_private_key(public_exponent=65537, key_size=2048), kid)

    @property
    def public(self) -> rsa.RSAPublicKey:
        return self.private.public_key()

    def public_pem(self) -> bytes:
        return self.public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def jwk(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.public))
        return {**found, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def token(
        self,
        subject: str,
        *,
        issuer: str = ISSUER,
        audience: str = AUDIENCE,
        lifetime: float = 300,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        body = {"iss": issuer, "aud": audience, "sub": subject, "iat": now}
        body["exp"] = now + int(lifetime)
        body.update(claims)
        return jwt.encode(body, self.private, algorithm="RS256", headers={"kid": self.kid})


def listening_socket() -> socket.socket:
    """A socket bound to a free loopback port and listening: nobody can take the port first."""
    sock = socket.create_server(("127.0.0.1", 0))
    sock.set_inheritable(True)
    return sock


def free_port() -> int:
    """A loopback port free a moment ago, for a server in another process to bind."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def serving_http(server: MCPServer) -> Iterator[str]:
    """``server`` as streamable HTTP on a free loopback port in a thread; yields the /mcp URL."""
    sock = listening_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        server.streamable_http_app(host="127.0.0.1"), log_level="warning", lifespan="on"
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while not running.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        running.should_exit = True
        thread.join(DEADLINE)
        sock.close()


@contextlib.contextmanager
def serving_jwks(keys: Sequence[SigningKey]) -> Iterator[tuple[str, list[int]]]:
    """A JWKS of ``keys`` at a loopback URL; yields the URL and a list counting its fetches."""
    body = json.dumps({"keys": [key.jwk() for key in keys]}).encode()
    fetches: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetches.append(1)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/jwks.json", fetches
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(DEADLINE)


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token is not None else {}


def http_client(url: str, token: str | None, *, mode: str = "auto") -> Client:
    """An MCP client of the server at ``url`` sending ``token`` as its bearer token."""
    transport = streamable_http_client(
        url, http_client=httpx2.AsyncClient(headers=bearer(token), timeout=DEADLINE)
    )
    return Client(transport, mode=mode)


def post(
    url: str,
    token: str | None,
    message: Mapping[str, Any],
    *,
    headers: Mapping[str, str] | None = None,
) -> httpx2.Response:
    """One raw JSON-RPC POST, as a client that has not negotiated anything would send it."""
    sent = {
        **bearer(token),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        **(headers or {}),
    }
    return httpx2.post(url, json=dict(message), headers=sent, timeout=DEADLINE)


def host_environment(tmp: Path) -> dict[str, str]:
    """What an MCP host gives a stdio server: PATH and HOME, nothing of docmem's."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp)}


@contextlib.contextmanager
def stopped(process: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """``process``, terminated (then killed) on the way out, whatever happened."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(DEADLINE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(DEADLINE)


def wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    """Return once something accepts connections on ``port``; fail if ``process`` exits first."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError("the server did not listen in time")
