"""Bounded parallelism for operator walks over a store: results in order, a few in flight.

Object stores are latency-bound, so an export, an import or a fence runs
several requests at once; a store of millions of keys must still not be
queued all at once. ``concurrent.futures`` is imported only when a walk
runs, never by ``import docmem``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Generator, Iterable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["ordered"]

_T = TypeVar("_T")
_R = TypeVar("_R")


def ordered(
    function: Callable[[_T], _R], items: Iterable[_T], workers: int
) -> Generator[_R, None, None]:
    """``function(item)`` for each item, yielded in the items' order.

    At most ``workers`` calls run at once and ``4 * workers`` are queued; with
    one worker every call runs in the caller's thread. When the consumer
    stops early (an error, Ctrl-C), queued calls are cancelled and running
    ones finish before this returns, so nothing runs on behind its back.
    """
    if workers <= 1:
        for item in items:
            yield function(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    window = workers * 4
    pending: collections.deque[Future[_R]] = collections.deque()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="docmem-walk") as pool:
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
