"""An HTTP proxy on 127.0.0.1 that rewrites headers between a client and Azurite.

``strip``: request headers removed before forwarding. Removing ``If-Match``
and ``If-None-Match`` makes Azurite a server that ignores conditional
writes. SharedKey signs those headers (they are in its string-to-sign), so a
store reaching the proxy with the account key would only meet 403s; the tests
give it a SAS instead, which signs the URL's resource and permissions, never
the headers. ``add``: response headers added to every answer
(``x-ms-version-id``: an account that keeps blob versions, which Azurite
cannot be). :attr:`HeaderProxy.seen` records (method, query, stripped) per
request, so a test can tell what was sent and that the proxy was on the path.

One thread per client connection (HTTP/1.1 keep-alive), one upstream
connection per request; request bodies must carry a ``Content-Length`` (the
Azure SDK's do). The proxy only listens on, and connects to, 127.0.0.1.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["HeaderProxy"]

_LOOPBACK = "127.0.0.1"
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
}


class HeaderProxy:
    """``with HeaderProxy(upstream, strip=..., add=...) as proxy: proxy.url``; see the module."""

    def __init__(
        self,
        upstream: str,
        *,
        strip: tuple[str, ...] = (),
        add: Mapping[str, str] | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in (_LOOPBACK, "localhost"):
            raise ValueError("the proxy only forwards to http://127.0.0.1")
        self.upstream_port = parts.port or 80
        self.strip = {name.lower() for name in strip}
        self.add = dict(add or {})
        self.seen: list[tuple[str, str, tuple[str, ...]]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((_LOOPBACK, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{_LOOPBACK}:{self._server.server_address[1]}"

    def __enter__(self) -> HeaderProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def stripped(self) -> int:
        """How many requests had a header taken away."""
        with self._lock:
            return sum(1 for _, _, names in self.seen if names)

    def note(self, method: str, query: str, names: tuple[str, ...]) -> None:
        with self._lock:
            self.seen.append((method, query, names))


def _handler_for(proxy: HeaderProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _relay(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {}
            stripped = []
            for name, value in self.headers.items():
                if name.lower() in proxy.strip:
                    stripped.append(name.lower())
                elif name.lower() not in _HOP_BY_HOP:
                    headers[name] = value
            if body is not None:
                headers["Content-Length"] = str(length)
            proxy.note(self.command, urlsplit(self.path).query, tuple(sorted(stripped)))
            upstream = http.client.HTTPConnection(_LOOPBACK, proxy.upstream_port, timeout=30)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response_only(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in _HOP_BY_HOP:
                        self.send_header(name, value)
                for name, value in proxy.add.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                upstream.close()

        do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _relay

    return Handler
