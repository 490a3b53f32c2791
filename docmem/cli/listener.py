"""The listening socket of the commands that serve HTTP (``docmem mcp --http``, ``docmem console``).

asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on connections of
a socket whose protocol is ``IPPROTO_TCP``, and ``socket.create_server``
leaves it 0. Then uvicorn's two writes of a response (its head, its body)
wait for the client's delayed ACK: about 40 ms per request on a connection
kept alive, which every MCP client and every browser keeps.
"""

from __future__ import annotations

import socket

__all__ = ["listen"]


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (0: any free port) whose connections send at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    created = socket.create_server((host, port), family=family)
    return socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, fileno=created.detach())
