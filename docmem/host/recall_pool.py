"""The worker threads that read a turn's slots at once.

Three slots on S3 then cost about one round trip instead of three. The
caller's thread does the first read itself; a pool thread that reaches here
again (a provider that recalls through another runtime) reads inline, so the
pool never waits on itself. Each read runs in a copy of the caller's context
(contextvars: a host's tracing context goes along). A child forked while the
pool had threads has none of them, and starts a pool of its own.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["run_all"]

_T = TypeVar("_T")
_R = TypeVar("_R")

_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


class _InPool(threading.local):
    active = False


#: Set in the pool's own threads, which never wait on the pool themselves.
_in_pool = _InPool()


def run_all(work: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
    """``[work(item) for item in items]``, run concurrently; the first failure in order raises.

    Every call finishes before anything is raised, so no read outlives the
    caller's call. One item, or a caller that is a pool thread, runs inline.
    """
    if len(items) < 2 or _in_pool.active:
        return [work(item) for item in items]
    rest = [_pool().submit(contextvars.copy_context().run, work, item) for item in items[1:]]
    try:
        first = work(items[0])
    finally:
        concurrent.futures.wait(rest)
    return [first] + [future.result() for future in rest]


def _mark_worker() -> None:
    _in_pool.active = True


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool, started on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(
                max_workers=16, thread_name_prefix="docmem-recall", initializer=_mark_worker
            )
        return _POOL


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's pool threads: it starts its own pool."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)
