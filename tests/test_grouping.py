"""The group-commit queue on its own (docmem.provider.grouping): no store, only threads.

``run_batch`` here answers each member with the batch it was in, so a test
sees which members shared a batch and that nobody is left waiting.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from docmem.provider.grouping import CommitQueue, Member

KEY = "memkey1_test"


class Batches:
    """A run_batch that parks its first batch until released, and records every batch."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, batch: list[Member[Any, Any]]) -> list[Member[Any, Any]]:
        names = [member.work for member in batch]
        self.seen.append(names)
        if len(self.seen) == 1:
            self.entered.set()
            assert self.release.wait(10)
        for member in batch:
            member.finish(names)
        return []


def _lines(queue: CommitQueue) -> int:
    line = queue._lines.get(KEY)
    return len(line.waiting) if line is not None else 0


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def _interrupted_member(name: str, *, after_promotion: bool) -> Member[Any, Any]:
    """A member whose caller is interrupted while waiting (before or after being promoted)."""

    class Interrupted(Member[Any, Any]):
        def wait_for_turn(self) -> None:
            if after_promotion:
                super().wait_for_turn()
            raise KeyboardInterrupt

    return Interrupted(name)


@pytest.mark.parametrize("after_promotion", [False, True])
def test_a_caller_interrupted_while_waiting_strands_nobody(after_promotion: bool) -> None:
    queue = CommitQueue()
    batches = Batches()
    with ThreadPoolExecutor(4) as pool:
        first: Future[Any] = pool.submit(queue.submit, KEY, Member("first"), batches)
        assert batches.entered.wait(10)
        interrupted = pool.submit(
            queue.submit, KEY, _interrupted_member("gone", after_promotion=after_promotion), batches
        )
        if not after_promotion:
            _until(lambda: interrupted.done())  # withdrew before any batch took it
        else:
            _until(lambda: _lines(queue) == 1)
        later: Future[Any] = pool.submit(queue.submit, KEY, Member("later"), batches)
        _until(lambda: _lines(queue) == (2 if after_promotion else 1))
        batches.release.set()
        assert first.result(10) == ["first"]
        assert isinstance(interrupted.exception(10), KeyboardInterrupt)
        assert later.result(10) == ["later"]
    assert "gone" not in [name for batch in batches.seen for name in batch]
    assert queue._lines == {}


def test_the_queue_takes_the_waiting_in_order_and_drops_an_empty_line() -> None:
    queue = CommitQueue()
    batches = Batches()
    with ThreadPoolExecutor(6) as pool:
        first: Future[Any] = pool.submit(queue.submit, KEY, Member("first"), batches)
        assert batches.entered.wait(10)
        rest: list[Future[Any]] = []
        for n in range(4):
            rest.append(pool.submit(queue.submit, KEY, Member(f"m{n}"), batches))
            _until(lambda: _lines(queue) == len(rest))
        batches.release.set()
        assert first.result(10) == ["first"]
        assert [future.result(10) for future in rest] == [["m0", "m1", "m2", "m3"]] * 4
    assert batches.seen == [["first"], ["m0", "m1", "m2", "m3"]]
    assert queue._lines == {}
