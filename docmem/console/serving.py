"""Where the console may listen and which ``Host`` values reach it.

The listening socket is ``docmem mcp``'s (:func:`docmem.cli.listener.listen`:
Nagle off, so a page on a kept-alive connection is not held ~40 ms).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

__all__ = ["LOOPBACK_NAMES", "accepted_hosts", "is_loopback", "is_unspecified"]

#: Host names that mean this machine, whatever resolves them.
LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(address: str) -> bool:
    """Whether binding ``address`` exposes the console to this machine only."""
    if address.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def is_unspecified(address: str) -> bool:
    """Whether ``address`` means every address (``0.0.0.0``, ``::``): no one Host to expect."""
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False


def accepted_hosts(host: str, port: int, extra: Iterable[str] = ()) -> list[str]:
    """The ``Host`` values a browser sends for the console at ``host:port``, and ``extra``.

    On loopback, ``127.0.0.1``, ``localhost`` and ``[::1]`` all reach it; on
    another address, only that address (and the names a proxy is given as).
    """
    names = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(host) else []
    spelled = f"[{host}]" if ":" in host else host
    if spelled not in names:
        names.append(spelled)
    return [f"{name}:{port}" for name in names] + list(extra)
