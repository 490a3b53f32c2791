"""Group commit: mutations of one key made at once share one read and one conditional write.

Each test parks one write (``ScriptedBackend.hold_next_write``) so that the
mutations started meanwhile queue behind it in a known order and then go as
one batch; every member's answer is checked against the stored document.
"""

from __future__ import annotations

import functools
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from wrappers import ScriptedBackend

import docmem
from docmem.provider.grouping import MAX_BATCH

FAST = docmem.RetryPolicy(base=0.0, cap=0.0)


class Rig:
    """A scripted store, a memory over it, and a pool to start mutations in."""

    def __init__(self, scope: docmem.LockedScope, inner: docmem.Backend | None = None) -> None:
        self.backend = ScriptedBackend(inner)
        self.memory = docmem.FileMemory(self.backend, retry=FAST)
        self.scope = scope
        self.mem = self.memory.bind(scope, slot="user")
        self.pool = ThreadPoolExecutor(max_workers=MAX_BATCH + 8)

    def queued(self) -> int:
        """Mutations waiting in this key's line (the batch in flight not counted)."""
        assert self.memory._queue is not None
        line = self.memory._queue._lines.get(self.scope.storage_key)
        return len(line.waiting) if line is not None else 0

    def has_queued(self, count: int) -> bool:
        return self.queued() == count

    def behind_a_held_write(self, calls: list[Callable[[], Any]]) -> list[Future[Any]]:
        """Start a save whose write is parked, queue ``calls`` in order behind it, release.

        Returns the futures: the parked save's first, then one per call.
        """
        release = self.backend.hold_next_write()
        first = self.pool.submit(self.mem.save, "the leader's note", mutation_id="lead")
        assert self.backend.held.wait(10), "the first write never started"
        futures = [first]
        for queued, call in enumerate(calls, start=1):
            futures.append(self.pool.submit(call))
            _wait_until(functools.partial(self.has_queued, queued))
        release.set()
        for future in futures:
            future.exception(timeout=30)  # every caller answered, none hung
        return futures

    def document(self) -> docmem.MemoryDocument:
        document = self.mem.read()
        assert document is not None
        return document


@pytest.fixture
def rig(scope: docmem.LockedScope) -> Iterator[Rig]:
    built = Rig(scope)
    yield built
    built.pool.shutdown(wait=True)


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the mutation never queued"
        time.sleep(0.001)


def save_call(rig: Rig, text: str, mutation_id: str) -> Callable[[], docmem.SaveResult]:
    return lambda: rig.mem.save(text, mutation_id=mutation_id)


def _error(future: Future[Any]) -> docmem.DocmemError:
    error = future.exception()
    assert isinstance(error, docmem.DocmemError), error
    return error


# -- one batch, one write ----------------------------------------------------------


def test_saves_queued_behind_a_write_share_the_next_one(rig: Rig) -> None:
    texts = [f"queued note {n}" for n in range(6)]
    futures = rig.behind_a_held_write(
        [save_call(rig, text, f"q{n}") for n, text in enumerate(texts)]
    )
    results = [future.result() for future in futures[1:]]
    assert futures[0].result() == docmem.SaveResult("saved", 0, 1)
    # Arrival order: each member decided on the document the ones before it left.
    assert results == [docmem.SaveResult("saved", n + 1, n + 2) for n in range(6)]
    assert len(rig.backend.writes) == 2
    document = rig.document()
    assert document.revision == 7
    assert [document.entries[result.index] for result in results] == texts
    for n, result in enumerate(results):
        assert rig.mem.inspect(f"q{n}") == docmem.MutationRecord(
            "save", "saved", result.index, result.revision
        )


def test_a_batch_holds_at_most_max_batch_mutations(rig: Rig) -> None:
    count = MAX_BATCH + 4
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(count)])
    assert [future.result().status for future in futures] == ["saved"] * (count + 1)
    assert len(rig.backend.writes) == 3  # the parked one, 16, then 4
    assert rig.document().revision == count + 1
    assert sorted(rig.document().entries) == list(range(count + 1))


def test_a_refused_member_fails_alone_and_the_rest_commit(scope: docmem.LockedScope) -> None:
    rig = Rig(scope)
    rig.memory.max_characters = 300  # room for three short notes, not for 200 more characters
    futures = rig.behind_a_held_write(
        [
            save_call(rig, "short one", "a"),
            save_call(rig, "x" * 200, "too-long"),
            lambda: rig.mem.remove(99, mutation_id="absent"),
            save_call(rig, "short two", "b"),
        ]
    )
    refused = _error(futures[2])
    assert isinstance(refused, docmem.LimitExceeded)
    assert refused.outcome == "not_committed"
    assert futures[3].result() == docmem.RemoveResult("absent", 99, 2)
    assert futures[1].result() == docmem.SaveResult("saved", 1, 2)
    assert futures[4].result() == docmem.SaveResult("saved", 2, 3)
    assert list(rig.document().entries.values()) == ["the leader's note", "short one", "short two"]
    assert rig.mem.inspect("too-long") is None
    rig.pool.shutdown()


def test_a_duplicate_in_the_same_batch_is_a_noop(rig: Rig) -> None:
    futures = rig.behind_a_held_write(
        [save_call(rig, "same text", "a"), save_call(rig, "same text", "b")]
    )
    first, second = futures[1].result(), futures[2].result()
    assert first == docmem.SaveResult("saved", 1, 2)
    assert (second.status, second.index) == ("duplicate", 1)
    assert list(rig.document().entries.values()).count("same text") == 1
    assert rig.mem.inspect("b") is None


def test_one_request_twice_in_a_batch_takes_effect_once(rig: Rig) -> None:
    futures = rig.behind_a_held_write(
        [save_call(rig, "once", "same-id"), save_call(rig, "once", "same-id")]
    )
    assert futures[1].result() == futures[2].result() == docmem.SaveResult("saved", 1, 2)
    assert rig.document().revision == 2


def test_one_request_twice_in_a_batch_shares_its_unknown_outcome(
    scope: docmem.LockedScope,
) -> None:
    rig = Rig(scope)
    rig.memory.retry = docmem.RetryPolicy(max_attempts=1)
    rig.backend.script = ["ok", "unsent"]
    futures = rig.behind_a_held_write(
        [
            save_call(rig, "once", "same-id"),
            save_call(rig, "once", "same-id"),
            save_call(rig, "other", "same-id"),
        ]
    )
    first, second, other = (_error(future) for future in futures[1:])
    assert isinstance(first, docmem.StoreBusy)
    assert isinstance(second, docmem.StoreBusy)
    # Either could still land with the write whose answer was lost.
    assert first.outcome == second.outcome == "unknown"
    assert isinstance(other, docmem.StoreBusy)
    assert other.outcome == "not_committed"  # never in any write
    rig.pool.shutdown()


def test_an_id_reused_for_another_request_in_a_batch_conflicts(rig: Rig) -> None:
    futures = rig.behind_a_held_write(
        [save_call(rig, "first", "reused"), save_call(rig, "other", "reused")]
    )
    assert futures[1].result() == docmem.SaveResult("saved", 1, 2)
    conflict = _error(futures[2])
    assert isinstance(conflict, docmem.MutationConflict)
    assert conflict.outcome == "not_committed"
    assert "other" not in rig.document().entries.values()


def test_an_erase_waits_for_the_next_batch_so_no_record_is_dropped(rig: Rig) -> None:
    futures = rig.behind_a_held_write(
        [
            save_call(rig, "before the erase", "a"),
            lambda: rig.mem.erase(mutation_id="erase"),
            save_call(rig, "after the erase", "b"),
        ]
    )
    assert futures[1].result() == docmem.SaveResult("saved", 1, 2)
    assert futures[2].result() == docmem.EraseResult("erased", 3)
    assert futures[3].result() == docmem.SaveResult("saved", 2, 4)
    assert len(rig.backend.writes) == 3  # the erase would have dropped the save's record
    assert list(rig.document().entries.values()) == ["after the erase"]
    assert rig.backend.purged == [rig.scope.storage_key]


# -- unknown outcomes, settled for every member ---------------------------------------


def test_a_lost_answer_of_a_batch_is_settled_for_every_member(rig: Rig) -> None:
    rig.backend.script = ["ok", "lost"]
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(4)])
    assert [future.result() for future in futures[1:]] == [
        docmem.SaveResult("saved", n + 1, n + 2) for n in range(4)
    ]
    assert len(rig.backend.writes) == 2  # settled by reading, not sent again
    assert rig.document().revision == 5


def test_an_unsent_batch_is_written_again_once(rig: Rig) -> None:
    rig.backend.script = ["ok", "unsent"]
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(4)])
    assert [future.result().status for future in futures] == ["saved"] * 5
    assert len(rig.backend.writes) == 3
    assert rig.document().revision == 5
    assert len(rig.document().entries) == 5


def test_a_delayed_batch_that_lands_later_is_recognised(rig: Rig) -> None:
    rig.backend.script = ["ok", "delayed"]
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(3)])
    assert [future.result() for future in futures[1:]] == [
        docmem.SaveResult("saved", n + 1, n + 2) for n in range(3)
    ]
    assert len(rig.backend.writes) == 2
    assert rig.document().revision == 4


def test_another_writer_at_the_batchs_revisions_means_it_did_not_land(rig: Rig) -> None:
    other = docmem.FileMemory(rig.backend.inner).bind(rig.scope, slot="user")
    rig.backend.script = ["ok", "unsent"]

    def interloper() -> None:
        for n in range(3):
            other.save(f"other {n}", mutation_id=f"o{n}")

    rig.backend.interloper = interloper
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(3)])
    results = [future.result() for future in futures[1:]]
    assert [result.status for result in results] == ["saved"] * 3
    document = rig.document()
    assert document.revision == 7
    assert [document.entries[result.index] for result in results] == [f"note {n}" for n in range(3)]
    assert sorted(document.entries.values()).count("note 0") == 1


# -- cancels and failures --------------------------------------------------------------


def test_a_member_cancelled_while_queued_is_not_made(rig: Rig) -> None:
    cancel = threading.Event()
    cancellable = rig.memory.bind(rig.scope, slot="user", cancel=cancel)

    def cancelled_save() -> docmem.SaveResult:
        return cancellable.save("never made", mutation_id="cancelled")

    release = rig.backend.hold_next_write()
    first = rig.pool.submit(rig.mem.save, "the leader's note", mutation_id="lead")
    assert rig.backend.held.wait(10)
    waiting = rig.pool.submit(cancelled_save)
    _wait_until(lambda: rig.queued() == 1)
    other = rig.pool.submit(save_call(rig, "made", "made"))
    _wait_until(lambda: rig.queued() == 2)
    cancel.set()
    release.set()
    error = waiting.exception(timeout=30)
    assert isinstance(error, docmem.Cancelled)
    assert error.outcome == "not_committed"
    assert first.result(timeout=30).status == other.result(timeout=30).status == "saved"
    assert "never made" not in rig.document().entries.values()


def test_a_store_failure_reaches_every_member_with_its_own_outcome(rig: Rig) -> None:
    rig.backend.script = ["ok", "lost"]
    inner_read = rig.backend.inner.read
    reads = 0

    def failing_read(key: str) -> docmem.Stored | None:
        nonlocal reads
        reads += key == rig.scope.storage_key
        # The third read of the document: the one that would settle the batch's lost answer.
        if reads == 3 and key == rig.scope.storage_key:
            raise docmem.StoreUnavailable("scripted: the store went away")
        return inner_read(key)

    rig.backend.inner.read = failing_read  # type: ignore[method-assign]
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(3)])
    errors = [_error(future) for future in futures[1:]]
    assert all(isinstance(error, docmem.StoreUnavailable) for error in errors)
    assert [error.outcome for error in errors] == ["unknown"] * 3
    assert len({id(error) for error in errors}) == 3  # each member its own copy


def test_a_bug_fails_the_leader_with_it_and_strands_no_one(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner_write = rig.backend.inner.write
    writes = 0

    def buggy_write(key: str, data: bytes, *, expected: str | None) -> str:
        nonlocal writes
        writes += 1
        if writes == 2:
            raise RuntimeError("scripted bug")
        return inner_write(key, data, expected=expected)

    monkeypatch.setattr(rig.backend.inner, "write", buggy_write)
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(3)])
    assert isinstance(futures[1].exception(), RuntimeError)
    for future in futures[2:]:
        error = _error(future)
        assert isinstance(error, docmem.StoreUnavailable)
        assert error.outcome == "unknown"
    assert rig.mem.save("afterwards", mutation_id="later").status == "saved"
    assert rig.queued() == 0


# -- the switch, pickling, fork -----------------------------------------------------------


def test_group_commit_can_be_switched_off(store: docmem.Backend, scope: docmem.LockedScope) -> None:
    memory = docmem.FileMemory(store, group_commit=False)
    assert memory.group_commit is False
    assert docmem.FileMemory(store).group_commit is True
    assert pickle.loads(pickle.dumps(memory)).group_commit is False
    mem = memory.bind(scope, slot="user")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda n: mem.save(f"n {n}", mutation_id=f"m{n}"), range(12)))
    assert sorted(result.index for result in results) == list(range(12))
    document = mem.read()
    assert document is not None
    assert document.revision == 12


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_group_commit_must_be_a_bool(store: docmem.Backend, bad: object) -> None:
    with pytest.raises(docmem.InvalidArgument, match="group_commit"):
        docmem.FileMemory(store, group_commit=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_wait_for_the_parents_leader(
    scope: docmem.LockedScope, tmp_path: Path
) -> None:
    rig = Rig(scope, docmem.open_store(f"file://{tmp_path}?create=true"))
    release = rig.backend.hold_next_write()
    first = rig.pool.submit(rig.mem.save, "parent note", mutation_id="parent")
    assert rig.backend.held.wait(10)  # the parent's leader is mid-batch at fork
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            code = 0 if rig.mem.save("child note", mutation_id="child").status == "saved" else 1
        finally:
            os._exit(code if "code" in locals() else 2)
    deadline = time.monotonic() + 10
    while (status := os.waitpid(pid, os.WNOHANG)) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    if status == (0, 0):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    release.set()
    assert first.result(timeout=30).status == "saved"
    rig.pool.shutdown()
    assert status != (0, 0), "the child hung behind the parent's leader"
    assert os.waitstatus_to_exitcode(status[1]) == 0
    assert set(rig.document().entries.values()) == {"child note", "parent note"}
