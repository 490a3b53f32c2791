"""Synchronous work awaited from async code, without importing asyncio at start-up.

Backends are synchronous, so every async twin runs its sync method in a
worker thread (with a copy of the caller's context). asyncio costs about as
much to import as the rest of docmem, and a command line or an MCP server
that never awaits a twin should not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["in_thread"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


async def in_thread(function: Callable[_P, _R], /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """``await asyncio.to_thread(function, *args, **kwargs)``, importing asyncio only now."""
    import asyncio

    return await asyncio.to_thread(function, *args, **kwargs)
