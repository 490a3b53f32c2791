"""An exclusive lock on a lock file, across threads and processes alike (POSIX).

``flock`` on a descriptor opened for this one acquisition: ``flock`` locks
belong to the open file description, so two threads of one process exclude
each other exactly as two processes do, and closing the descriptor (also by
a crash) releases the lock. The lock file is never removed, which avoids the
unlink-while-locked race. It costs a few microseconds where the ``filelock``
package costs several hundred per acquisition, which matters on the save path.

A child forked while some thread holds a lock inherits that descriptor, and
with it the lock: the child closes every such descriptor at once (closing
releases nothing while the parent still has its own; ``LOCK_UN`` would).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator

__all__ = ["LockTimeout", "exclusive"]

_FIRST_WAIT = 0.0005
_LONGEST_WAIT = 0.01

_held: set[int] = set()
_held_guard = threading.Lock()


class LockTimeout(Exception):
    """The lock stayed taken for longer than the timeout."""


def _before_fork() -> None:
    _held_guard.acquire()


def _after_fork_in_parent() -> None:
    _held_guard.release()


def _after_fork_in_child() -> None:
    global _held_guard
    for fd in _held:
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()
    _held_guard = threading.Lock()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child,
)


@contextlib.contextmanager
def exclusive(path: str, timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the ``with`` block."""
    with _held_guard:  # a fork cannot come between opening and registering
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        _held.add(fd)
    try:
        deadline = time.monotonic() + timeout
        wait = _FIRST_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(path) from None
                time.sleep(wait)
                wait = min(wait * 2, _LONGEST_WAIT)
        yield
    finally:
        with _held_guard:
            _held.discard(fd)
            os.close(fd)
