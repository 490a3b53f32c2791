"""A fault-injecting HTTP/1.1 proxy on 127.0.0.1, in front of a real object-store server.

For a plug-in's fault campaign (docmem-s3's is the model): the store's
client talks to the proxy as if it were the server (an
``http://127.0.0.1:port`` endpoint, path-style). Each request the campaign's
``faultable`` callable calls ``"campaign"`` (for S3, an object under
``bucket/prefix``: :meth:`FaultProxy.for_prefix`) gets one fault drawn from
a seeded :class:`FaultPlan`; everything else (the first-write probe's
objects, other prefixes, listings) passes through untouched, so the store's
check of its server sees an honest server and the campaign measures the
data path alone. An injected error's body is the server's kind of error
(``error_response``; S3's XML by default), and the version faults act on the
header that carries the version (``version_header``; ``ETag`` by default).

Faults (:data:`FAULTS`):

``pass``         forward, answer as the server did
``delay``        wait a little (below the client's read timeout), then forward
``stall``        wait past the client's read timeout, then forward: the write
                 may land after the client gave up
``reset``        reset the client's connection without forwarding anything
``drop``         forward (a write lands), then reset instead of answering
``500``/``503``  answer an S3 error without forwarding
``403``          answer ``AccessDenied`` without forwarding: credentials lacking a permission
``landed-500``/``landed-503``  forward (a write lands), answer an S3 error
``cut``          forward, send the headers (full ``Content-Length``) and half
                 of the body, then close; an answer without a body is cut
                 inside its header block
``cut-reset``    the same, but the connection is reset after the partial
                 answer instead of closed
``blank-etag``   forward, answer with ``ETag: ""`` (the ``version_header``)
                 where the server sent one
``empty-etag``   forward, answer with an empty ``ETag:`` value where the server
                 sent one (sent back as an empty ``If-Match``, LocalStack and
                 SeaweedFS both apply the PUT unconditionally, while they refuse
                 ``If-Match: ""`` with a 412)
``no-etag``      forward, answer without the ``ETag`` header

Wire handling: one thread per client connection, keep-alive honoured;
request bodies by ``Content-Length`` or chunked transfer encoding (forwarded
as received). botocore turns a ``bytes`` PutObject body into a file object
and so sends ``Expect: 100-continue`` (``botocore.handlers.add_expect_header``)
with a ``Content-Length``; the proxy answers ``100 Continue`` itself, reads
the body and forwards the request without ``Expect`` (an unsigned header,
``botocore.auth.SIGNED_HEADERS_BLACKLIST``), so the signature still holds.
Every forwarded request gets its own upstream connection, closed after the
answer. :meth:`FaultProxy.close` stops accepting, resets every open socket
and joins every thread (a stalled forward is abandoned, never sent late
after the proxy stopped), so once it returns nothing more reaches the server.
The proxy only listens on, and connects to, 127.0.0.1.
"""

from __future__ import annotations

import collections
import contextlib
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

__all__ = ["FAULTS", "FaultPlan", "FaultProxy", "Logged", "s3_error"]

FAULTS = (
    "pass",
    "delay",
    "stall",
    "reset",
    "drop",
    "500",
    "503",
    "403",
    "landed-500",
    "landed-503",
    "cut",
    "cut-reset",
    "blank-etag",
    "empty-etag",
    "no-etag",
)

_LOOPBACK = "127.0.0.1"
_MAX_LINE = 65_536
_MAX_HEADERS = 200
_MAX_BODY = 16 * 1024 * 1024
_IDLE_TIMEOUT = 30.0
_UPSTREAM_TIMEOUT = 30.0
_ERROR_CODES = {403: "AccessDenied", 500: "InternalError", 503: "ServiceUnavailable"}
_REASONS = {403: "Forbidden", 500: "Internal Server Error", 503: "Service Unavailable"}

Headers = list[tuple[str, str]]


@dataclass(frozen=True)
class FaultPlan:
    """Which fault each faultable request gets: seeded weighted draws, in arrival order.

    ``weights`` maps fault names to relative weights (missing ones are 0).
    ``methods`` limits faults to these HTTP methods (the others pass).
    ``delay`` bounds the ``delay`` fault; ``stall`` is the ``stall`` wait,
    meant to exceed the client's read timeout.
    """

    seed: int
    weights: Mapping[str, float]
    methods: frozenset[str] = frozenset({"GET", "PUT", "HEAD", "DELETE"})
    delay: tuple[float, float] = (0.02, 0.2)
    stall: float = 1.5

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(FAULTS))
        if unknown:
            raise ValueError(f"unknown faults: {', '.join(unknown)}")
        if not any(weight > 0 for weight in self.weights.values()):
            raise ValueError("a fault plan needs one positive weight")

    def describe(self) -> str:
        """The plan in one line, for assertion messages."""
        weights = ", ".join(f"{name}={w:g}" for name, w in self.weights.items() if w > 0)
        return f"seed={self.seed} methods={sorted(self.methods)} weights={{{weights}}}"


@dataclass(frozen=True)
class Logged:
    """One request the proxy saw: method, what it was for, the fault, the server's status."""

    number: int
    method: str
    target: str  # "campaign" (faultable), "probe" or "other"
    fault: str
    status: int | None  # the upstream status, None when nothing was forwarded or it failed


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: Headers
    body: bytes  # raw, as framed on the wire (chunked framing kept)

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None


@dataclass
class _Response:
    status: int
    reason: str
    version: str
    headers: Headers
    body: bytes  # raw, as framed on the wire
    closes: bool  # the server would close after it (or its body runs to EOF)


class _Closed(Exception):
    """The peer closed the connection cleanly between requests."""


class _Malformed(Exception):
    """The bytes are not the HTTP/1.1 this proxy expects."""


def _read_line(rfile: BinaryIO) -> bytes:
    line = rfile.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _Malformed("line too long")
    return line


def _read_headers(rfile: BinaryIO) -> Headers:
    headers: Headers = []
    while True:
        line = _read_line(rfile)
        if not line:
            raise _Malformed("connection closed inside the header block")
        if line in (b"\r\n", b"\n"):
            return headers
        if len(headers) >= _MAX_HEADERS:
            raise _Malformed("too many headers")
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise _Malformed("header line without a colon")
        headers.append((name.strip(), value.strip()))


def _get(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    lname = name.lower()
    for key, value in headers:
        if key.lower() == lname:
            return value
    return None


def _read_exactly(rfile: BinaryIO, size: int) -> bytes:
    if size > _MAX_BODY:
        raise _Malformed("body too large")
    data = rfile.read(size)
    if len(data) != size:
        raise _Malformed("connection closed inside a body")
    return data


def _read_chunked(rfile: BinaryIO) -> bytes:
    """A chunked body, raw: size lines, data, the last chunk and any trailers."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = _read_line(rfile)
        parts.append(line)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _Malformed("bad chunk size") from None
        total += size
        if total > _MAX_BODY:
            raise _Malformed("body too large")
        if size == 0:
            while True:  # trailers, then the blank line
                trailer = _read_line(rfile)
                if not trailer:
                    raise _Malformed("connection closed inside trailers")
                parts.append(trailer)
                if trailer in (b"\r\n", b"\n"):
                    return b"".join(parts)
        parts.append(_read_exactly(rfile, size + 2))


def _read_body(rfile: BinaryIO, headers: Headers) -> tuple[bytes, bool]:
    """(raw body, whether it was delimited): chunked, Content-Length, or none."""
    encoding = _get(headers, "Transfer-Encoding")
    if encoding is not None and "chunked" in encoding.lower():
        return _read_chunked(rfile), True
    length = _get(headers, "Content-Length")
    if length is not None:
        try:
            size = int(length)
        except ValueError:
            raise _Malformed("bad Content-Length") from None
        return _read_exactly(rfile, size), True
    return b"", False


def _serialize_head(first_line: str, headers: Headers) -> bytes:
    lines = [first_line, *(f"{name}: {value}" for name, value in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1")


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0): the peer sees ECONNRESET, not a clean EOF."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def s3_error(status: int) -> tuple[str, bytes]:
    """An S3 error answer's content type and body, as :class:`FaultProxy` injects it."""
    code = _ERROR_CODES.get(status, "InternalError")
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>injected by faultproxy</Message>"
        "<RequestId>faultproxy</RequestId></Error>"
    ).encode()
    return "application/xml", body


def _error_response(status: int, error: Callable[[int], tuple[str, bytes]]) -> bytes:
    content_type, body = error(status)
    headers = [
        ("Content-Type", content_type),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    ]
    return _serialize_head(f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", headers) + body


class FaultProxy:
    """The proxy: ``with FaultProxy(upstream, plan, faultable) as proxy: proxy.url``.

    ``upstream`` is the server's ``http://127.0.0.1:port`` URL. ``faultable``
    says, from the method and the unquoted request path, whether a request
    may get a fault; :meth:`for_prefix` builds the usual one. With
    ``with_query`` it gets the path and the raw query (``/bucket?versions&prefix=...``),
    to tell apart calls on one path (ListObjectVersions from GetBucketVersioning).
    ``error_response`` gives an injected error's content type and body for its
    status (:func:`s3_error` by default); ``version_header`` names the header
    the ``*-etag`` faults blank or remove.
    """

    def __init__(
        self,
        upstream: str,
        plan: FaultPlan,
        faultable: Callable[[str, str], str],
        *,
        log_size: int = 10_000,
        with_query: bool = False,
        error_response: Callable[[int], tuple[str, bytes]] = s3_error,
        version_header: str = "ETag",
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or parts.hostname not in (_LOOPBACK, "localhost"):
            raise ValueError("the fault proxy only forwards to http://127.0.0.1")
        self._upstream = (_LOOPBACK, parts.port or 80)
        self.plan = plan
        self._classify = faultable
        self._with_query = with_query
        self._error = error_response
        self._version_header = version_header.lower()
        self._random = random.Random(plan.seed)
        self._choices = [name for name in FAULTS if plan.weights.get(name, 0) > 0]
        self._weights = [float(plan.weights[name]) for name in self._choices]
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._counter = 0
        self.log: collections.deque[Logged] = collections.deque(maxlen=log_size)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((_LOOPBACK, 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self._acceptor = threading.Thread(target=self._accept, name="faultproxy", daemon=True)
        self._acceptor.start()

    @staticmethod
    def for_prefix(bucket: str, prefix: str) -> Callable[[str, str], str]:
        """Objects under ``bucket/prefix/`` are "campaign", its probe objects "probe"."""
        base = f"/{bucket}/{prefix.strip('/')}/"

        def classify(method: str, path: str) -> str:
            if not path.startswith(base) or len(path) == len(base):
                return "other"
            return "probe" if path[len(base) :].startswith(".docmem-probe/") else "campaign"

        return classify

    @property
    def url(self) -> str:
        return f"http://{_LOOPBACK}:{self.port}"

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def counts(self) -> dict[str, int]:
        """How often each fault was applied to campaign requests."""
        with self._lock:
            tally = collections.Counter(e.fault for e in self.log if e.target == "campaign")
        return dict(sorted(tally.items()))

    def summary(self) -> str:
        """The plan and the faults applied, in one line, for assertion messages."""
        with self._lock:
            seen = len(self.log)
        applied = ", ".join(f"{name}x{n}" for name, n in self.counts().items())
        return f"fault plan {self.plan.describe()}; {seen} requests; applied: {applied or 'none'}"

    def close(self, timeout: float = 10.0) -> None:
        """Stop: no new connections, every socket reset, every thread joined."""
        self._stopping.set()
        self._acceptor.join(timeout)
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
            threads = list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            alive = [thread for thread in self._threads if thread.is_alive()]
            for sock in list(self._sockets):
                _reset(sock)
            self._sockets.clear()
        if alive:
            raise RuntimeError(f"faultproxy: {len(alive)} connection threads did not stop")

    # -- internals -------------------------------------------------------------

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _untrack(self, sock: socket.socket, *, reset: bool = False) -> None:
        with self._lock:
            self._sockets.discard(sock)
        if reset:
            _reset(sock)
        else:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(_IDLE_TIMEOUT)
            with self._lock:
                if self._stopping.is_set():
                    _reset(client)
                    return
                self._sockets.add(client)
                thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
                self._threads.add(thread)
            thread.start()

    def _draw(self, method: str, target: str) -> tuple[int, str]:
        with self._lock:
            self._counter += 1
            number = self._counter
            if target != "campaign" or method not in self.plan.methods:
                return number, "pass"
            return number, self._random.choices(self._choices, self._weights)[0]

    def _record(self, entry: Logged) -> None:
        with self._lock:
            self.log.append(entry)

    def _serve(self, client: socket.socket) -> None:
        reset = False
        rfile = client.makefile("rb")
        try:
            while not self._stopping.is_set():
                try:
                    request = self._read_request(client, rfile)
                    keep, reset = self._handle(client, request)
                except (_Closed, _Malformed, OSError):
                    return
                if not keep:
                    return
        finally:
            rfile.close()  # the descriptor closes (or resets) only once its file is closed
            self._untrack(client, reset=reset)
            with self._lock:
                self._threads.discard(threading.current_thread())

    def _read_request(self, client: socket.socket, rfile: BinaryIO) -> _Request:
        line = _read_line(rfile)
        while line in (b"\r\n", b"\n"):  # tolerated between requests
            line = _read_line(rfile)
        if not line:
            raise _Closed()
        parts = line.decode("latin-1").rstrip("\r\n").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Malformed("bad request line")
        method, target, version = parts
        headers = _read_headers(rfile)
        expect = _get(headers, "Expect")
        if expect is not None and expect.lower() == "100-continue":
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            headers = [(k, v) for k, v in headers if k.lower() != "expect"]
        body, _ = _read_body(rfile, headers)
        return _Request(method, target, version, headers, body)

    def _handle(self, client: socket.socket, request: _Request) -> tuple[bool, bool]:
        """Apply one fault; (keep the connection, reset it on closing)."""
        parts = urlsplit(request.target)
        path = unquote(parts.path)
        if self._with_query and parts.query:
            path = f"{path}?{parts.query}"
        target = self._classify(request.method, path)
        number, fault = self._draw(request.method, target)

        def log(status: int | None) -> None:
            self._record(Logged(number, request.method, target, fault, status))

        if fault == "reset":
            log(None)
            return False, True
        if fault in ("403", "500", "503"):
            log(None)
            client.sendall(_error_response(int(fault), self._error))
            return False, False
        if fault == "delay":
            low, high = self.plan.delay
            with self._lock:
                wait = self._random.uniform(low, high)
            if self._stopping.wait(wait):
                log(None)
                return False, True
        if fault == "stall" and self._stopping.wait(self.plan.stall):
            log(None)  # stopped meanwhile: abandoned, never sent after close()
            return False, True
        try:
            response = self._forward(request)
        except (OSError, _Malformed):
            log(None)
            return False, True
        log(response.status)
        if fault == "drop":
            return False, True
        if fault in ("landed-500", "landed-503"):
            client.sendall(_error_response(int(fault.split("-")[1]), self._error))
            return False, False
        headers = response.headers
        if fault in ("blank-etag", "empty-etag"):
            blank = '""' if fault == "blank-etag" else ""
            headers = [(k, blank if k.lower() == self._version_header else v) for k, v in headers]
        elif fault == "no-etag":
            headers = [(k, v) for k, v in headers if k.lower() != self._version_header]
        head = _serialize_head(f"{response.version} {response.status} {response.reason}", headers)
        if fault in ("cut", "cut-reset"):
            if response.body:
                client.sendall(head + response.body[: len(response.body) // 2])
            else:
                client.sendall(head[: len(head) // 2])
            return False, fault == "cut-reset"
        client.sendall(head + response.body)
        wants_close = (request.header("Connection") or "").lower() == "close"
        return not (response.closes or wants_close), False

    def _forward(self, request: _Request) -> _Response:
        upstream = socket.create_connection(self._upstream, timeout=_UPSTREAM_TIMEOUT)
        self._track(upstream)
        with contextlib.ExitStack() as stack:
            stack.callback(self._untrack, upstream)
            head = _serialize_head(
                f"{request.method} {request.target} {request.version}", request.headers
            )
            upstream.sendall(head + request.body)
            rfile = upstream.makefile("rb")
            stack.callback(rfile.close)
            while True:
                line = _read_line(rfile)
                if not line:
                    raise _Malformed("the server closed without answering")
                parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
                if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                    raise _Malformed("bad status line")
                if not parts[1].isdigit():
                    raise _Malformed("bad status code")
                version, status = parts[0], int(parts[1])
                reason = parts[2] if len(parts) > 2 else ""
                headers = _read_headers(rfile)
                if 100 <= status < 200:
                    continue  # interim answers are not passed on (Expect was answered here)
                break
            closes = (_get(headers, "Connection") or "").lower() == "close"
            if request.method == "HEAD" or status in (204, 304):
                body = b""
            else:
                body, delimited = _read_body(rfile, headers)
                if not delimited:
                    body = rfile.read(_MAX_BODY)
                    closes = True
            return _Response(status, reason, version, headers, body, closes)
