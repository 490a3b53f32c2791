"""Canary checks: memory text and raw scope values must never reach an error or a log.

An error tracker ships an exception's message, its ``repr``, its ``args`` and
those of every exception in its chain, ``__context__`` included (``raise ...
from None`` only hides the context from tracebacks). :func:`all_text` gathers
exactly that, so a test can put a canary through an error path and assert it
is nowhere. The conformance suite runs such a test on every store; a host or
plug-in can use the same helpers for its own paths.
"""

from __future__ import annotations

import json

from ..provider.document import MemoryDocument, serialize

__all__ = ["CANARY", "SCOPE_CANARY", "all_text", "chain", "corrupt_documents"]

#: A memory text no message, log line or exception chain may contain.
CANARY = "CANARY-7f3a9c-memory-text"
#: A raw scope value that may only ever appear as part of a digest.
SCOPE_CANARY = "SCOPE-CANARY-u_8d1e"


def chain(error: BaseException) -> list[BaseException]:
    """Every exception reachable through ``__cause__`` and ``__context__``, each once."""
    found: list[BaseException] = []
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or any(current is seen for seen in found):
            continue
        found.append(current)
        pending.extend([current.__cause__, current.__context__])
    return found


def all_text(error: BaseException) -> str:
    """str, repr and args of the error and of every exception in its chain."""
    parts: list[str] = []
    for link in chain(error):
        parts.extend([str(link), repr(link), *map(str, link.args), *map(repr, link.args)])
    return "\n".join(parts)


def corrupt_documents() -> dict[str, bytes]:
    """Stored bytes that break the format around :data:`CANARY`, by what they would leak.

    A decode error holds the whole document; a validation error quotes the
    header value it refused; a line error could quote the line.
    """
    good = serialize(MemoryDocument({0: CANARY}, last=0, revision=1))
    return {
        "invalid UTF-8": good.replace(CANARY.encode(), b"\xff" + CANARY.encode()),
        "header field": good.replace(b'"rev":1', json.dumps({"r": CANARY})[1:-1].encode()),
        "double space": good + b"1:  " + CANARY.encode() + b"\n",
    }
