"""An HTTP proxy on 127.0.0.1 that makes fake-gcs-server ignore ``ifGenerationMatch``.

It forwards every request to the emulator with that query parameter removed:
the server a precondition never reaches, which is what a store that ignores
it looks like to the client. gcsfs sends a create as one upload with
``ifGenerationMatch=0`` in the query, so through the proxy a second create of
one name replaces the first. :attr:`GenerationStripper.stripped` counts the
requests it took the parameter from, so a test can tell that the proxy was on
the path at all.

One thread per client connection (HTTP/1.1 keep-alive), one upstream
connection per request. Request bodies must carry a ``Content-Length``
(gcsfs's do); a chunked one is answered with 501 rather than forwarded
wrong. The proxy only listens on, and connects to, 127.0.0.1.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["GenerationStripper"]

_LOOPBACK = "127.0.0.1"
_STRIPPED = "ifGenerationMatch"
#: Not passed on either way: they describe one connection, and the body is re-framed.
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
}


class GenerationStripper:
    """``with GenerationStripper(upstream) as proxy: proxy.url``; see the module docstring."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in (_LOOPBACK, "localhost"):
            raise ValueError("the proxy only forwards to http://127.0.0.1")
        self.upstream_port = parts.port or 80
        self.stripped = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((_LOOPBACK, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{_LOOPBACK}:{self._server.server_address[1]}"

    def __enter__(self) -> GenerationStripper:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def strip(self, target: str) -> str:
        """``target`` without the precondition, counted if it had one."""
        parts = urlsplit(target)
        query = parse_qsl(parts.query, keep_blank_values=True)
        kept = [(name, value) for name, value in query if name != _STRIPPED]
        if len(kept) == len(query):
            return target
        with self._lock:
            self.stripped += 1
        return urlunsplit(("", "", parts.path, urlencode(kept), parts.fragment))


def _handler_for(proxy: GenerationStripper) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The head and the body go out in separate writes: without this, Nagle's algorithm
        # and the client's delayed ACK hold each answer back some 40 ms.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self._forward()

        do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

        def log_message(self, *_: Any) -> None:  # quiet: pytest shows stderr on failures
            pass

        def _forward(self) -> None:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                self.send_error(501, "chunked request bodies are not supported")
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            upstream = http.client.HTTPConnection(_LOOPBACK, proxy.upstream_port, timeout=30)
            try:
                upstream.request(self.command, proxy.strip(self.path), body, headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response_only(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                if self.command == "HEAD":
                    self.send_header("Content-Length", answer.getheader("Content-Length") or "0")
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                upstream.close()

    return Handler
