"""A proxy on 127.0.0.1 that answers ``ifGenerationNotMatch`` downloads as GCS does.

fake-gcs-server ignores ``ifGenerationNotMatch`` on a media download and
sends the body (``test_gcs_protocol.py`` pins it). GCS answers 304 with no
body when the object's generation is the one named. This proxy forwards
every request and, for a download that named the generation the emulator's
answer carries (``X-Goog-Generation``), answers 304 instead: the store's
304 path against the real emulator behind it. :attr:`Revalidator.not_modified`
counts those answers.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["Revalidator"]

_LOOPBACK = "127.0.0.1"
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


class Revalidator:
    """``with Revalidator(upstream) as proxy: proxy.url``; see the module docstring."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in (_LOOPBACK, "localhost"):
            raise ValueError("the proxy only forwards to http://127.0.0.1")
        self.upstream_port = parts.port or 80
        self.not_modified = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((_LOOPBACK, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{_LOOPBACK}:{self._server.server_address[1]}"

    def __enter__(self) -> Revalidator:
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def counted(self) -> None:
        with self._lock:
            self.not_modified += 1


def _handler_for(proxy: Revalidator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            self._forward()

        do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

        def log_message(self, *_: Any) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            upstream = http.client.HTTPConnection(_LOOPBACK, proxy.upstream_port, timeout=30)
            try:
                upstream.request(self.command, self.path, body, headers)
                answer = upstream.getresponse()
                data = answer.read()
            finally:
                upstream.close()
            named = parse_qs(urlsplit(self.path).query).get("ifGenerationNotMatch", [])
            current = answer.getheader("X-Goog-Generation")
            if answer.status == 200 and current is not None and current in named:
                proxy.counted()
                self.send_response_only(304, "Not Modified")
                self.send_header("X-Goog-Generation", current)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response_only(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in _HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
