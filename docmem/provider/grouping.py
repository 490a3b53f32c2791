"""Group commit: the mutations one process makes of one key, queued behind one leader.

Threads of one process that change the same document at once would otherwise
race each other on compare-and-swap: every round all but one lose, back off
and read again. Instead each mutation joins its key's line. The first in line
leads: it takes up to :data:`MAX_BATCH` mutations from the front (its own
first), runs them as one batch (one read, one conditional write:
:mod:`docmem.commit`), hands each member its own result, and passes the lead
to the next in line. Only one batch per key is in flight, so these threads
never race each other; other processes still arbitrate by compare-and-swap.

Nothing here reads or writes a store: this module is the queue alone.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ..errors import DocmemError, StoreUnavailable

__all__ = ["MAX_BATCH", "CommitQueue", "Member"]

_W = TypeVar("_W")
_R = TypeVar("_R")

#: At most this many mutations share one write. Every member's journal record
#: must still be in the document the write leaves behind, so that an unknown
#: outcome can be settled for each by reading (the journal keeps 32 records):
#: half of that leaves room for the records of other writers between a lost
#: answer and the read that settles it.
MAX_BATCH = 16


class Member(Generic[_W, _R]):
    """One caller's place in a line: the work it carries, and its answer once given.

    ``work`` (of type ``_W``) is opaque here: :mod:`docmem.commit` puts a
    mutation and its bookkeeping in it, and the answer is of type ``_R``.
    The caller's thread blocks in :meth:`wait_for_turn` until the member is
    finished or promoted to lead.
    """

    def __init__(self, work: _W) -> None:
        self.work = work
        self.finished = False
        self._result: _R | None = None
        self._error: BaseException | None = None
        # Made only for a member that waits (under the queue's lock, before any
        # leader can see it): a lone mutation, the common case, never needs one.
        self._woken: threading.Event | None = None

    def finish(self, result: _R) -> None:
        """The member's mutation is decided: ``result`` is what its caller gets."""
        self._result = result
        self.finished = True
        self._wake()

    def fail(self, error: BaseException) -> None:
        """The member's mutation is decided: its caller raises ``error``."""
        self._error = error
        self.finished = True
        self._wake()

    def answer(self) -> _R:
        """The result, or raise the error, of a finished member."""
        assert self.finished, "a member is answered once finished"
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # finish() set it

    def promote(self) -> None:
        """Wake the member's caller to lead the next batch."""
        self._wake()

    def will_wait(self) -> None:
        """Prepare to :meth:`wait_for_turn`; call it before anyone else can see the member."""
        self._woken = threading.Event()

    def wait_for_turn(self) -> None:
        """Block until :meth:`finish`, :meth:`fail` or :meth:`promote`."""
        woken = self._woken
        assert woken is not None, "will_wait() comes first"
        woken.wait()
        woken.clear()

    def _wake(self) -> None:
        if self._woken is not None:
            self._woken.set()


class _Line:
    """The members of one key waiting for a batch, and which of them leads now."""

    def __init__(self) -> None:
        self.waiting: list[Member[Any, Any]] = []
        self.leader: Member[Any, Any] | None = None


#: Runs one batch until each member is finished, or spilled: returned to wait
#: for a later batch, in order (see :func:`docmem.commit.commit_batch`).
RunBatch = Callable[[list[Member[Any, Any]]], list[Member[Any, Any]]]


class CommitQueue:
    """The lines of one provider's keys; thread-safe, and reset in a forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: dict[str, _Line] = {}
        _queues.add(self)

    def submit(self, key: str, member: Member[Any, _R], run_batch: RunBatch) -> _R:
        """Queue ``member`` on ``key``; lead a batch when its turn comes; its answer."""
        with self._lock:
            line = self._lines.get(key)
            if line is None:
                line = self._lines[key] = _Line()
            leads = line.leader is None
            if leads:
                line.leader = member
            else:
                member.will_wait()
            line.waiting.append(member)
        if not leads:
            try:
                member.wait_for_turn()
            except BaseException:  # interrupted (KeyboardInterrupt): never strand the line
                self._withdraw(key, line, member)
                raise
        if not member.finished:
            self._lead(key, line, run_batch)
        return member.answer()

    def _withdraw(self, key: str, line: _Line, member: Member[Any, Any]) -> None:
        """Take a caller that stopped waiting out of ``line``; pass the lead on if it had it.

        A member a batch already carries stays in it: its change may be made,
        as a write the caller stopped waiting for may land.
        """
        with self._lock:
            if member in line.waiting:
                line.waiting.remove(member)
            if line.leader is member:
                self._pass_lead(key, line)

    def _lead(self, key: str, line: _Line, run_batch: RunBatch) -> None:
        """Run the batch at the front of ``line``, then pass the lead on (also on failure)."""
        with self._lock:
            batch, line.waiting = line.waiting[:MAX_BATCH], line.waiting[MAX_BATCH:]
        spilled: list[Member[Any, Any]] = []
        try:
            spilled = run_batch(batch)
        finally:
            for member in batch:
                if not member.finished and member not in spilled:
                    member.fail(_interrupted())  # a batch that died of a bug strands no caller
            with self._lock:
                line.waiting[:0] = spilled
                self._pass_lead(key, line)

    def _pass_lead(self, key: str, line: _Line) -> None:
        """Promote the first in ``line``, or drop the line when nobody waits; hold the lock."""
        if line.waiting:
            line.leader = line.waiting[0]
            line.leader.promote()
        else:
            line.leader = None
            del self._lines[key]

    def _forget(self) -> None:
        """In a forked child: the parent's leaders and waiters do not exist here."""
        self._lock = threading.Lock()
        self._lines = {}


def _interrupted() -> DocmemError:
    error = StoreUnavailable(
        "the batch this change was written in failed unexpectedly; it may or may not be applied"
    )
    error.outcome = "unknown"
    return error


_queues: weakref.WeakSet[CommitQueue] = weakref.WeakSet()


def _forget_after_fork() -> None:
    for queue in list(_queues):
        queue._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
