"""A small HTTP/1.1 relay on 127.0.0.1 that cuts chosen answers of a real server mid-body.

It stands for a connection lost while an answer is on its way: the status
line and headers arrive, then half the body, then the connection closes.
Two framings: ``"chunked"`` re-sends the body as one chunk that ends short
(the reader sees the stream end inside a chunk, and urllib3 raises), and
``"length"`` keeps the Content-Length and sends less (botocore reads with
``enforce_content_length=False``, so it gets the short body without error).
``rewrite`` may also replace a whole body, as a broken server would send it.
Requests are relayed one at a time per connection (botocore never pipelines);
``Expect: 100-continue`` is answered by the relay itself, so the server sees
plain requests with a Content-Length.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import BinaryIO

#: Decides from the request line (b"GET /bucket/key HTTP/1.1") and the answer's status.
CutRule = Callable[[bytes, int], bool]
#: Given the request line, the status and the body: a replacement body, or None to keep it.
Rewrite = Callable[[bytes, int, bytes], "bytes | None"]
_FRAMING = (b"content-length", b"transfer-encoding")


def never(request_line: bytes, status: int) -> bool:
    return False


def _read_head(stream: BinaryIO) -> list[bytes] | None:
    """The start line and header lines of one message, or None at a clean end of stream."""
    lines: list[bytes] = []
    while True:
        line = stream.readline(65537)
        if not line:
            return lines if lines else None
        if line in (b"\r\n", b"\n"):
            if lines:
                return lines
            continue
        lines.append(line.rstrip(b"\r\n"))


def _header(lines: list[bytes], name: bytes) -> bytes | None:
    for line in lines[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def _read_body(stream: BinaryIO, lines: list[bytes], *, has_body: bool) -> bytes:
    """The body exactly as sent: by Content-Length, chunks, or until the stream ends."""
    if not has_body:
        return b""
    length = _header(lines, b"content-length")
    if length is not None:
        return stream.read(int(length))
    if (_header(lines, b"transfer-encoding") or b"").lower() == b"chunked":
        raw = b""
        while True:
            size_line = stream.readline()
            raw += size_line
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (trailer := stream.readline()) not in (b"\r\n", b"\n", b""):
                    raw += trailer
                return raw + b"\r\n"
            raw += stream.read(size + 2)
    return stream.read()


def _head_bytes(lines: list[bytes]) -> bytes:
    return b"\r\n".join(lines) + b"\r\n\r\n"


class CuttingProxy:
    """Relays to ``target_port``; an answer ``cut`` picks loses the second half of its body."""

    def __init__(self, target_port: int, cut: CutRule = never, framing: str = "chunked") -> None:
        self.target_port = target_port
        self.cut = cut
        self.framing = framing
        self.rewrite: Rewrite = lambda request_line, status, body: None
        self.cuts = 0
        self._lock = threading.Lock()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(32)
        self.port = int(self.server.getsockname()[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        with client, upstream:
            from_client = client.makefile("rb")
            from_server = upstream.makefile("rb")
            try:
                while self._exchange(client, upstream, from_client, from_server):
                    pass
            except (OSError, ValueError):
                return

    def _exchange(
        self,
        client: socket.socket,
        upstream: socket.socket,
        from_client: BinaryIO,
        from_server: BinaryIO,
    ) -> bool:
        """Relay one request and its answer; False when the connection is to end."""
        request = _read_head(from_client)
        if request is None:
            return False
        if (_header(request, b"expect") or b"").lower() == b"100-continue":
            request = [line for line in request if not line.lower().startswith(b"expect:")]
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        framed = any(_header(request, name) is not None for name in _FRAMING)
        body = _read_body(from_client, request, has_body=framed)
        upstream.sendall(_head_bytes(request) + body)
        answer = _read_head(from_server)
        if answer is None:
            return False
        status = int(answer[0].split()[1])
        method = request[0].split(b" ", 1)[0]
        has_body = method != b"HEAD" and status not in (204, 304) and status >= 200
        payload = _read_body(from_server, answer, has_body=has_body)
        replaced = self.rewrite(request[0], status, payload)
        if replaced is not None and _header(answer, b"content-length") is not None:
            answer = [line for line in answer if not line.lower().startswith(b"content-length:")]
            answer.append(b"Content-Length: %d" % len(replaced))
            payload = replaced
        if payload and _header(answer, b"content-length") and self.cut(request[0], status):
            with self._lock:
                self.cuts += 1
            client.sendall(self._cut(answer, payload))
            return False  # closing now leaves the body short of what was announced
        client.sendall(_head_bytes(answer) + payload)
        return True

    def _cut(self, answer: list[bytes], payload: bytes) -> bytes:
        half = payload[: len(payload) // 2]
        if self.framing == "length":
            return _head_bytes(answer) + half
        head = [line for line in answer if not line.lower().startswith(b"content-length:")]
        head.append(b"Transfer-Encoding: chunked")
        return _head_bytes(head) + f"{len(payload):x}\r\n".encode() + half

    def close(self) -> None:
        self.server.close()
