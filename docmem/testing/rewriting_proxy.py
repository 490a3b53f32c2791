"""A forwarding HTTP proxy on 127.0.0.1 whose rewriting is given by two callables.

For a plug-in's tests: put it between a store and the emulator it talks to,
and make the emulator look like a server it cannot be (one that ignores a
precondition, that answers a 304, that keeps blob versions). Every request
is forwarded to the upstream server; on its way ``rewrite_request`` may
change its target, headers or body (:class:`Request`, in place), and on the
way back ``rewrite_answer`` may change the answer (:class:`Answer`, in
place: status, reason, headers, body). Both run on the proxy's threads, so a
callable that counts must hold a lock of its own.

Two rewritings are here because more than one distribution uses them:
:class:`GenerationStripper` drops ``ifGenerationMatch`` from every request
(a GCS server that ignores the precondition; docmem-fsspec's and
docmem-gcs's tests), and :class:`Revalidator` answers a download with
``ifGenerationNotMatch`` naming the current generation with a 304, as GCS
does and fake-gcs-server does not (docmem-gcs's tests and its benchmark).
A rewriting used by one plug-in's tests alone lives in that plug-in's tests.

Wire handling: one thread per client connection (HTTP/1.1 keep-alive), one
upstream connection per request, closed after the answer. Hop-by-hop headers
(and ``Host`` and ``Content-Length``) are not passed on either way: the body
is re-framed by ``Content-Length`` both ways. A request body must carry a
``Content-Length``; a chunked one is answered with 501 rather than forwarded
wrong. A ``HEAD`` answer carries the upstream's ``Content-Length``. The proxy
only listens on, and connects to, 127.0.0.1. Unlike
:mod:`docmem.testing.faultproxy` (raw sockets, faults on the wire), this one
speaks HTTP through :mod:`http.server` and :mod:`http.client` and never breaks
a connection on purpose.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["Answer", "GenerationStripper", "Request", "Revalidator", "RewritingProxy"]

_LOOPBACK = "127.0.0.1"
#: Not passed on either way: they describe one connection, and the body is re-framed.
_HOP_BY_HOP = frozenset(
    {
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
)


@dataclass
class Request:
    """A request on its way upstream; ``rewrite_request`` may change any field."""

    method: str
    #: Path and query, as the client sent them.
    target: str
    #: The end-to-end headers (no hop-by-hop ones), one value a name.
    headers: dict[str, str]
    body: bytes | None


@dataclass
class Answer:
    """The upstream's answer on its way back; ``rewrite_answer`` may change any field."""

    status: int
    reason: str
    #: The end-to-end headers, in order; a name may repeat.
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: Empty for ``HEAD``, whose ``Content-Length`` is the upstream's.
    body: bytes = b""

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or None."""
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


_Proxy = TypeVar("_Proxy", bound="RewritingProxy")
RequestRewrite = Callable[[Request], None]
AnswerRewrite = Callable[[Request, Answer], None]


def _unchanged_request(request: Request) -> None:
    pass


def _unchanged_answer(request: Request, answer: Answer) -> None:
    pass


class RewritingProxy:
    """``with RewritingProxy(upstream, rewrite_request=..., rewrite_answer=...) as proxy:
    proxy.url``; see the module docstring. ``upstream`` is ``http://127.0.0.1:port``
    (or ``localhost``); its path, if any, is not used: requests keep their own."""

    def __init__(
        self,
        upstream: str,
        *,
        rewrite_request: RequestRewrite = _unchanged_request,
        rewrite_answer: AnswerRewrite = _unchanged_answer,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in (_LOOPBACK, "localhost"):
            raise ValueError("the proxy only forwards to http://127.0.0.1")
        self.upstream_port = parts.port or 80
        self.rewrite_request = rewrite_request
        self.rewrite_answer = rewrite_answer
        self._server = ThreadingHTTPServer((_LOOPBACK, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{_LOOPBACK}:{self._server.server_address[1]}"

    def __enter__(self: _Proxy) -> _Proxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting and wait for the serving thread (open keep-alive threads are daemons)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def forward(self, request: Request) -> Answer:
        """Rewrite ``request``, send it upstream, and return the rewritten answer."""
        self.rewrite_request(request)
        upstream = http.client.HTTPConnection(_LOOPBACK, self.upstream_port, timeout=30)
        try:
            upstream.request(request.method, request.target, request.body, request.headers)
            response = upstream.getresponse()
            answer = Answer(
                response.status,
                response.reason,
                [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP],
                response.read(),
            )
            head_length = response.getheader("Content-Length") or "0"
        finally:
            upstream.close()
        if request.method == "HEAD":
            answer.headers.append(("Content-Length", head_length))
        self.rewrite_answer(request, answer)
        return answer


def _handler_for(proxy: RewritingProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The head and the body go out in separate writes: without this, Nagle's algorithm
        # and the client's delayed ACK hold each answer back some 40 ms.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                self.send_error(501, "chunked request bodies are not supported")
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            answer = proxy.forward(Request(self.command, self.path, headers, body))
            self.send_response_only(answer.status, answer.reason)
            for name, value in answer.headers:
                self.send_header(name, value)
            if self.command != "HEAD":
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer.body)

        do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

        def log_message(self, *_: Any) -> None:  # quiet: pytest shows stderr on failures
            pass

    return Handler


class GenerationStripper(RewritingProxy):
    """A proxy that makes fake-gcs-server ignore ``ifGenerationMatch``.

    It forwards every request with that query parameter removed: the server a
    precondition never reaches, which is what a store that ignores it looks like
    to the client. gcsfs sends a create as one upload with ``ifGenerationMatch=0``
    in the query, so through the proxy a second create of one name replaces the
    first. :attr:`stripped` counts the requests it took the parameter from, so a
    test can tell that the proxy was on the path at all.
    """

    def __init__(self, upstream: str) -> None:
        self.stripped = 0
        self._lock = threading.Lock()
        super().__init__(upstream, rewrite_request=self._rewrite)

    def strip(self, target: str) -> str:
        """``target`` without the precondition, counted if it had one."""
        parts = urlsplit(target)
        query = parse_qsl(parts.query, keep_blank_values=True)
        kept = [(name, value) for name, value in query if name != "ifGenerationMatch"]
        if len(kept) == len(query):
            return target
        with self._lock:
            self.stripped += 1
        return urlunsplit(("", "", parts.path, urlencode(kept), parts.fragment))

    def _rewrite(self, request: Request) -> None:
        request.target = self.strip(request.target)


class Revalidator(RewritingProxy):
    """A proxy that answers ``ifGenerationNotMatch`` downloads with a 304, as GCS does.

    fake-gcs-server ignores ``ifGenerationNotMatch`` on a media download and sends
    the body; GCS answers 304 with no body when the object's generation is the one
    named. For a download that named the generation the emulator's answer carries
    (``X-Goog-Generation``), this proxy answers 304 instead: the store's 304 path
    against the real emulator behind it. :attr:`not_modified` counts those answers.
    """

    def __init__(self, upstream: str) -> None:
        self.not_modified = 0
        self._lock = threading.Lock()
        super().__init__(upstream, rewrite_answer=self._rewrite)

    def _rewrite(self, request: Request, answer: Answer) -> None:
        named = parse_qs(urlsplit(request.target).query).get("ifGenerationNotMatch", [])
        current = answer.header("X-Goog-Generation")
        if answer.status != 200 or current is None or current not in named:
            return
        with self._lock:
            self.not_modified += 1
        answer.status, answer.reason = 304, "Not Modified"
        answer.headers = [("X-Goog-Generation", current)]
        answer.body = b""
