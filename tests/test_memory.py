"""FileMemory: the provider's promises on the built-in stores and a scripted one."""

from __future__ import annotations

import asyncio
import threading

import pytest
from wrappers import ScriptedBackend

import docmem
from docmem import journal
from docmem.backends.memory import MemoryBackend
from docmem.document import MAX_INDEX, MemoryDocument, parse, render_recall, serialize
from docmem.errors import VersionConflict
from docmem.journal import JournalRecord


def stored_bytes(mem: docmem.BoundMemory) -> bytes | None:
    stored = mem._store.read(mem.scope.storage_key)
    return stored.data if stored else None


def put_document(mem: docmem.BoundMemory, document: MemoryDocument) -> None:
    stored = mem._store.read(mem.scope.storage_key)
    mem._store.write(
        mem.scope.storage_key, serialize(document), expected=stored.version if stored else None
    )


# -- save / remove / recall ------------------------------------------------------


def test_missing_document_recalls_nothing(mem: docmem.BoundMemory) -> None:
    assert mem.recall() == []
    assert mem.read() is None
    assert mem.inspect("never") is None


def test_save_then_recall_one_keyed_message(mem: docmem.BoundMemory) -> None:
    result = mem.save("  Prefers   metric\nunits. ", mutation_id="m1")
    assert result == docmem.SaveResult("saved", 0, 1)
    [message] = mem.recall()
    assert message.id == "document"
    assert message.item_key == docmem.keys.item_key("document")
    assert message.revision == 1
    assert message.content.endswith("\n\n0: Prefers metric units.")
    assert message.content.startswith("# Memory: user\n\n")
    assert (message.namespace_key, message.scope_key) == (
        mem.scope.namespace_key,
        mem.scope.scope_key,
    )


def test_duplicate_save_is_a_noop_without_write(mem: docmem.BoundMemory) -> None:
    mem.save("Likes tea.", mutation_id="m1")
    before = stored_bytes(mem)
    result = mem.save("Likes   tea.", mutation_id="m2")
    assert result == docmem.SaveResult("duplicate", 0, 1)
    assert stored_bytes(mem) == before
    assert mem.inspect("m2") is None  # no-ops are not journaled


def test_remove_and_absent_remove(mem: docmem.BoundMemory) -> None:
    mem.save("a", mutation_id="s0")
    mem.save("b", mutation_id="s1")
    assert mem.remove(0, mutation_id="r0") == docmem.RemoveResult("removed", 0, 3)
    before = stored_bytes(mem)
    assert mem.remove(0, mutation_id="r1") == docmem.RemoveResult("absent", 0, 3)
    assert mem.remove(99, mutation_id="r2") == docmem.RemoveResult("absent", 99, 3)
    assert stored_bytes(mem) == before
    document = mem.read()
    assert document is not None
    assert dict(document.entries) == {1: "b"}


def test_remove_on_missing_document_is_absent(mem: docmem.BoundMemory) -> None:
    assert mem.remove(0, mutation_id="r") == docmem.RemoveResult("absent", 0, 0)
    assert mem.read() is None


@pytest.mark.parametrize("index", [-1, True, 1.0, "1", None])
def test_remove_rejects_bad_index(mem: docmem.BoundMemory, index: object) -> None:
    with pytest.raises(docmem.InvalidArgument) as caught:
        mem.remove(index, mutation_id="r")  # type: ignore[arg-type]
    assert caught.value.outcome == "not_committed"


def test_indexes_are_monotonic_and_never_reused(mem: docmem.BoundMemory) -> None:
    for i in range(3):
        mem.save(f"note {i}", mutation_id=f"s{i}")
    mem.remove(2, mutation_id="r2")
    assert mem.save("after removing the highest", mutation_id="s3").index == 3
    mem.erase(mutation_id="e")
    assert mem.save("after erase", mutation_id="s4").index == 4


def test_index_exhausted_at_2_53_minus_1(mem: docmem.BoundMemory) -> None:
    put_document(mem, MemoryDocument({MAX_INDEX: "last one"}, last=MAX_INDEX, revision=5))
    with pytest.raises(docmem.IndexExhausted) as caught:
        mem.save("one more", mutation_id="s")
    assert caught.value.outcome == "not_committed"
    assert mem.remove(MAX_INDEX, mutation_id="r").status == "removed"


def test_index_just_below_exhaustion_still_works(mem: docmem.BoundMemory) -> None:
    put_document(mem, MemoryDocument({}, last=MAX_INDEX - 1, revision=5))
    assert mem.save("the very last", mutation_id="s").index == MAX_INDEX


# -- limits --------------------------------------------------------------------


def test_max_characters_is_inclusive(store: docmem.Backend, scope: docmem.LockedScope) -> None:
    text = "Exactly fits."
    expected = render_recall(MemoryDocument({0: text}, last=0), "user")
    exact = docmem.FileMemory(store, max_characters=len(expected)).bind(scope, slot="user")
    assert exact.save(text, mutation_id="fits").status == "saved"
    [message] = exact.recall()
    assert len(message.content) == len(expected)


def test_one_character_past_the_limit_is_refused(
    store: docmem.Backend, scope: docmem.LockedScope
) -> None:
    text = "One too many."
    needed = len(render_recall(MemoryDocument({0: text}, last=0), "user"))
    tight = docmem.FileMemory(store, max_characters=needed - 1).bind(scope, slot="user")
    with pytest.raises(docmem.LimitExceeded) as caught:
        tight.save(text, mutation_id="s")
    message = str(caught.value)
    # nothing to remove yet: the note itself is too long
    assert "too long for this memory" in message
    assert f"{needed:,} characters, at most {needed - 1:,}" in message
    assert text not in message
    assert caught.value.outcome == "not_committed"
    assert tight.read() is None


def test_full_memory_says_what_is_used_and_needed(
    store: docmem.Backend, scope: docmem.LockedScope
) -> None:
    first, second = "First note.", "Second note."
    used = len(render_recall(MemoryDocument({0: first}, last=0), "user"))
    needed = len(render_recall(MemoryDocument({0: first, 1: second}, last=1), "user"))
    tight = docmem.FileMemory(store, max_characters=needed - 1).bind(scope, slot="user")
    tight.save(first, mutation_id="s1")
    with pytest.raises(docmem.LimitExceeded) as caught:
        tight.save(second, mutation_id="s2")
    message = str(caught.value)
    assert message.startswith(f"memory is full: {used:,} of {needed - 1:,} characters used")
    assert f"this note needs {needed - used:,}" in message
    assert "remove an entry by index first" in message


def test_limit_counts_code_points(store: docmem.Backend, scope: docmem.LockedScope) -> None:
    text = "\U0001f600" * 10  # 40 UTF-8 bytes, 10 code points
    needed = len(render_recall(MemoryDocument({0: text}, last=0), "user"))
    exact = docmem.FileMemory(store, max_characters=needed).bind(scope, slot="user")
    assert exact.save(text, mutation_id="s").status == "saved"


def test_duplicate_save_succeeds_when_full(
    store: docmem.Backend, scope: docmem.LockedScope
) -> None:
    text = "Full."
    needed = len(render_recall(MemoryDocument({0: text}, last=0), "user"))
    full = docmem.FileMemory(store, max_characters=needed).bind(scope, slot="user")
    full.save(text, mutation_id="s1")
    with pytest.raises(docmem.LimitExceeded):
        full.save("Another.", mutation_id="s2")
    assert full.save(text, mutation_id="s3").status == "duplicate"


def test_document_byte_limit(store: docmem.Backend, scope: docmem.LockedScope) -> None:
    big = docmem.FileMemory(store, max_characters=10**7).bind(scope, slot="user")
    message, saved = "", 0
    for i in range(100):
        try:
            big.save(f"{i:03d} " + "x" * 2000, mutation_id=f"s{i}")
        except docmem.LimitExceeded as error:
            message = str(error)
            break
        saved += 1
    assert 20 < saved < 40
    assert "65,536 bytes" in message
    stored = store.read(scope.storage_key)
    assert stored is not None
    assert len(stored.data) <= 65536
    assert len(parse(stored.data).entries) == saved
    # removing never fails a limit
    assert big.remove(0, mutation_id="r").status == "removed"


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "4000"])
def test_max_characters_must_be_a_positive_int(store: docmem.Backend, bad: object) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.FileMemory(store, max_characters=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_rejected(mem: docmem.BoundMemory, text: str) -> None:
    with pytest.raises(docmem.ContentRejected):
        mem.save(text, mutation_id="s")
    assert mem.read() is None


# -- the journal: replay, conflicts, inspect -------------------------------------


def test_replay_returns_recorded_outcome_without_second_effect(mem: docmem.BoundMemory) -> None:
    first = mem.save("Lives in Berlin.", mutation_id="sess/call_1")
    mem.save("Other.", mutation_id="sess/call_2")
    before = stored_bytes(mem)
    assert mem.save("Lives in Berlin.", mutation_id="sess/call_1") == first
    assert stored_bytes(mem) == before
    removed = mem.remove(0, mutation_id="sess/call_3")
    assert mem.remove(0, mutation_id="sess/call_3") == removed


def test_replay_after_the_entry_was_removed_does_not_resave(mem: docmem.BoundMemory) -> None:
    mem.save("Temporary.", mutation_id="a")
    mem.remove(0, mutation_id="b")
    assert mem.save("Temporary.", mutation_id="a") == docmem.SaveResult("saved", 0, 1)
    document = mem.read()
    assert document is not None
    assert dict(document.entries) == {}


def test_reused_id_with_different_request_is_mutation_conflict(mem: docmem.BoundMemory) -> None:
    mem.save("First.", mutation_id="same")
    before = stored_bytes(mem)
    with pytest.raises(docmem.MutationConflict) as caught:
        mem.save("Second.", mutation_id="same")
    assert caught.value.outcome == "not_committed"
    with pytest.raises(docmem.MutationConflict):
        mem.remove(0, mutation_id="same")
    assert stored_bytes(mem) == before


def test_inspect_reports_recorded_mutations(mem: docmem.BoundMemory) -> None:
    mem.save("a", mutation_id="s")
    mem.remove(0, mutation_id="r")
    assert mem.inspect("s") == docmem.MutationRecord("save", "saved", 0, 1)
    assert mem.inspect("r") == docmem.MutationRecord("remove", "removed", 0, 2)
    assert mem.inspect("other") is None


def test_journal_keeps_the_last_32_writing_mutations(mem: docmem.BoundMemory) -> None:
    for i in range(40):
        mem.save(f"n{i}", mutation_id=f"s{i}")
    assert mem.inspect("s7") is None
    assert mem.inspect("s8") == docmem.MutationRecord("save", "saved", 8, 9)
    document = mem.read()
    assert document is not None
    assert len(document.journal) == 32


def test_journal_records_match_the_design_digests(mem: docmem.BoundMemory) -> None:
    mem.save("Prefers metric units.", mutation_id="sess-1/call_0")
    document = mem.read()
    assert document is not None
    assert document.journal == (
        JournalRecord("9GskCKFMJqGS4sVp3b_2EA", "gYZdHJtrp3H_SUKJzARokg", 1, "save", "saved", 0),
    )


@pytest.mark.parametrize("mutation_id", ["", "x" * 1025, "\ud800"])
def test_bad_mutation_ids_are_refused(mem: docmem.BoundMemory, mutation_id: str) -> None:
    with pytest.raises(docmem.InvalidArgument):
        mem.save("a", mutation_id=mutation_id)


# -- truthful outcomes under ambiguous writes ------------------------------------


@pytest.fixture
def scripted(scope: docmem.LockedScope) -> tuple[ScriptedBackend, docmem.BoundMemory]:
    backend = ScriptedBackend()
    fast = docmem.RetryPolicy(base=0.0, cap=0.0)
    return backend, docmem.FileMemory(backend, retry=fast).bind(scope, slot="user")


def test_lost_response_is_reconciled_to_committed_once(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory],
) -> None:
    backend, mem = scripted
    mem.save("before", mutation_id="s0")
    backend.script = ["lost"]
    assert mem.save("exactly once", mutation_id="s1") == docmem.SaveResult("saved", 1, 2)
    document = mem.read()
    assert document is not None
    assert list(document.entries.values()).count("exactly once") == 1
    assert document.revision == 2
    assert mem.inspect("s1") == docmem.MutationRecord("save", "saved", 1, 2)
    assert len(backend.writes) == 2  # the lost one was not sent again


def test_lost_response_on_create_is_reconciled(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory],
) -> None:
    backend, mem = scripted
    backend.script = ["lost"]
    assert mem.save("first ever", mutation_id="s") == docmem.SaveResult("saved", 0, 1)
    assert len(backend.writes) == 1


def test_unsent_write_is_retried_under_the_same_id(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory],
) -> None:
    backend, mem = scripted
    mem.save("before", mutation_id="s0")
    backend.script = ["unsent", "unsent"]
    assert mem.save("eventually", mutation_id="s1") == docmem.SaveResult("saved", 1, 2)
    assert len(backend.writes) == 4
    assert backend.writes[1][1] == backend.writes[2][1] == backend.writes[3][1]


def test_delayed_write_landing_later_is_recognised(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory],
) -> None:
    backend, mem = scripted
    mem.save("before", mutation_id="s0")
    backend.script = ["delayed"]
    assert mem.save("late", mutation_id="s1") == docmem.SaveResult("saved", 1, 2)
    document = mem.read()
    assert document is not None
    assert dict(document.entries) == {0: "before", 1: "late"}


def test_other_writer_at_our_revision_means_ours_did_not_land(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory], scope: docmem.LockedScope
) -> None:
    backend, mem = scripted
    mem.save("before", mutation_id="s0")
    other = docmem.FileMemory(backend.inner).bind(scope, slot="user")

    def someone_else_writes() -> None:
        other.save("someone else", mutation_id="other")

    backend.script = ["unsent"]
    backend.interloper = someone_else_writes
    assert mem.save("mine", mutation_id="s1") == docmem.SaveResult("saved", 2, 3)
    assert len(backend.writes) == 3  # s0, the unknown one at rev 2, the retry at rev 3
    document = mem.read()
    assert document is not None
    assert dict(document.entries) == {0: "before", 1: "someone else", 2: "mine"}


def test_journal_moved_past_the_unknown_write_is_ambiguous(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory], scope: docmem.LockedScope
) -> None:
    backend, mem = scripted
    mem.save("before", mutation_id="s0")
    other = docmem.FileMemory(backend.inner).bind(scope, slot="user")

    def many_writes() -> None:
        for i in range(33):
            other.save(f"other {i}", mutation_id=f"o{i}")

    backend.script = ["unsent"]
    backend.interloper = many_writes
    with pytest.raises(docmem.MutationAmbiguous) as caught:
        mem.save("mine", mutation_id="s1")
    assert caught.value.outcome == "unknown"
    assert len(backend.writes) == 2  # never re-applied
    document = mem.read()
    assert document is not None
    assert "mine" not in document.entries.values()


def test_conflicts_back_off_then_store_busy_without_unconditional_write(
    scope: docmem.LockedScope,
) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=5, base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    mem.save("first", mutation_id="s0")
    backend.script = ["conflict"] * 10
    with pytest.raises(docmem.StoreBusy) as caught:
        mem.save("second", mutation_id="s1")
    assert caught.value.outcome == "not_committed"
    assert len(backend.writes) == 1 + 5
    assert all(expected is not None for _, _, expected in backend.writes[1:])


def test_store_busy_after_unknown_reports_unknown(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=3, base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    backend.script = ["unsent", "conflict", "conflict"]
    with pytest.raises(docmem.StoreBusy) as caught:
        mem.save("x", mutation_id="s")
    assert caught.value.outcome == "unknown"


def test_retry_budget_has_a_time_limit(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=10**6, max_seconds=0.05, base=0.001, cap=0.002)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    backend.script = ["conflict"] * 10**6
    with pytest.raises(docmem.StoreBusy):
        mem.save("x", mutation_id="s")
    assert len(backend.writes) < 10**4


def test_full_jitter_delays_stay_within_bounds() -> None:
    policy = docmem.RetryPolicy(base=0.005, cap=0.25)
    assert policy.delay(0) == 0.0
    for attempt in range(1, 40):
        assert 0.0 <= policy.delay(attempt) <= min(0.25, 0.005 * 2**attempt)


# -- corruption, fences, unavailability ------------------------------------------


def test_corrupt_document_is_never_overwritten(mem: docmem.BoundMemory) -> None:
    mem.save("good", mutation_id="s0")
    stored = mem._store.read(mem.scope.storage_key)
    assert stored is not None
    corrupt = stored.data.replace(b"0: good", b"0:  good")
    mem._store.write(mem.scope.storage_key, corrupt, expected=stored.version)
    for call in (
        lambda: mem.save("new", mutation_id="s1"),
        lambda: mem.remove(0, mutation_id="r"),
        lambda: mem.erase(mutation_id="e"),
        mem.recall,
    ):
        with pytest.raises(docmem.DocumentCorrupt):
            call()
    assert stored_bytes(mem) == corrupt


def test_fenced_scope_refuses_writes_but_recalls(mem: docmem.BoundMemory) -> None:
    put_document(mem, MemoryDocument({0: "a"}, last=0, revision=1, fence="mig-1"))
    before = stored_bytes(mem)
    for call in (
        lambda: mem.save("b", mutation_id="s"),
        lambda: mem.remove(0, mutation_id="r"),
        lambda: mem.erase(mutation_id="e"),
    ):
        with pytest.raises(docmem.ScopeFenced) as caught:
            call()
        assert caught.value.outcome == "not_committed"
    assert stored_bytes(mem) == before
    assert mem.recall()[0].content.endswith("0: a")


def test_unavailable_store_is_an_error_never_empty(scope: docmem.LockedScope) -> None:
    store = MemoryBackend()
    mem = docmem.FileMemory(store).bind(scope, slot="user")
    mem.save("a", mutation_id="s")
    store.close()
    with pytest.raises(docmem.StoreUnavailable):
        mem.recall()
    with pytest.raises(docmem.StoreUnavailable) as caught:
        mem.save("b", mutation_id="s2")
    assert caught.value.outcome == "not_committed"


# -- erase -----------------------------------------------------------------------


def test_erase_empties_keeps_last_and_purges_history(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory],
) -> None:
    backend, mem = scripted
    mem.save("a", mutation_id="s0")
    mem.save("b", mutation_id="s1")
    assert mem.erase(mutation_id="e") == docmem.EraseResult("erased", 3)
    assert backend.purged == [mem.scope.storage_key]
    document = mem.read()
    assert document is not None
    assert (dict(document.entries), document.last, document.revision) == ({}, 1, 3)
    assert [record.op for record in document.journal] == ["erase"]
    assert mem.recall()[0].content.endswith("\n\nNo memories are saved.")
    assert mem.inspect("e") == docmem.MutationRecord("erase", "erased", None, 3)


def test_erase_of_missing_document_is_a_noop(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory],
) -> None:
    backend, mem = scripted
    assert mem.erase(mutation_id="e") == docmem.EraseResult("absent", 0)
    assert backend.writes == []
    assert backend.purged == []
    assert mem.recall() == []


# -- concurrency and async -------------------------------------------------------


def test_threads_saving_on_one_scope_lose_nothing(mem: docmem.BoundMemory) -> None:
    def worker(n: int) -> None:
        for i in range(10):
            mem.save(f"thread {n} note {i}", mutation_id=f"t{n}-{i}")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    document = mem.read()
    assert document is not None
    assert len(document.entries) == 40
    assert sorted(document.entries) == list(range(40))
    assert document.revision == 40


def test_async_twins(mem: docmem.BoundMemory) -> None:
    async def scenario() -> None:
        assert await mem.arecall() == []
        saved = await mem.asave("async note", mutation_id="a1")
        assert saved == docmem.SaveResult("saved", 0, 1)
        assert (await mem.arecall())[0].revision == 1
        assert (await mem.aread()) is not None
        assert await mem.ainspect("a1") == docmem.MutationRecord("save", "saved", 0, 1)
        assert (await mem.aremove(0, mutation_id="a2")).status == "removed"
        assert (await mem.aerase(mutation_id="a3")).status == "erased"
        results = await asyncio.gather(
            *(mem.asave(f"parallel {i}", mutation_id=f"p{i}") for i in range(8))
        )
        assert sorted(result.index for result in results) == list(range(1, 9))

    asyncio.run(scenario())


def test_replayed_concurrent_duplicates_resolve_to_one_entry(
    store: docmem.Backend, scope: docmem.LockedScope
) -> None:
    mems = [docmem.FileMemory(store).bind(scope, slot="user") for _ in range(4)]
    results: list[docmem.SaveResult] = []
    lock = threading.Lock()

    def worker(mem: docmem.BoundMemory) -> None:
        result = mem.save("same text", mutation_id="one-request")
        with lock:
            results.append(result)

    threads = [threading.Thread(target=worker, args=(m,)) for m in mems]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {(r.status, r.index, r.revision) for r in results} == {("saved", 0, 1)}


def test_bind_and_tools_do_no_io(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    reads: list[str] = []
    original = backend.inner.read

    def counting_read(key: str) -> docmem.Stored | None:
        reads.append(key)
        return original(key)

    backend.inner.read = counting_read  # type: ignore[method-assign]
    mem = docmem.FileMemory(backend).bind(scope, slot="user")
    mem.tools()
    assert reads == []
    assert backend.writes == []


def test_version_conflict_is_internal(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    mem = docmem.FileMemory(backend, retry=docmem.RetryPolicy(base=0, cap=0)).bind(
        scope, slot="user"
    )
    backend.script = ["conflict", "conflict"]
    assert mem.save("x", mutation_id="s").status == "saved"
    assert issubclass(VersionConflict, docmem.DocmemError)


def test_request_digest_covers_the_id() -> None:
    assert journal.request_digest("a", "save", "x") != journal.request_digest("b", "save", "x")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", docmem.ContentRejected),
        ("bell\u0007", docmem.ContentRejected),
        ("x" * 3000, docmem.LimitExceeded),
        ("AKIAIOSFODNN7EXAMPLE", docmem.SecretDetected),
    ],
)
def test_refused_saves_report_not_committed(
    mem: docmem.BoundMemory, text: str, error: type[docmem.DocmemError]
) -> None:
    with pytest.raises(error) as caught:
        mem.save(text, mutation_id="s")
    assert caught.value.outcome == "not_committed"
    with pytest.raises(docmem.InvalidArgument) as bad_id:
        mem.save("fine", mutation_id="")
    assert bad_id.value.outcome == "not_committed"


def test_lost_answer_on_the_last_attempt_is_still_settled(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=1, base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    backend.script = ["lost"]
    assert mem.save("landed", mutation_id="s") == docmem.SaveResult("saved", 0, 1)
    assert len(backend.writes) == 1


def test_unsent_write_on_the_last_attempt_is_reported_unknown(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=1, base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    backend.script = ["unsent"]
    with pytest.raises(docmem.StoreBusy) as caught:
        mem.save("in flight", mutation_id="s")
    assert caught.value.outcome == "unknown"
    assert "may still be applied" in str(caught.value)


def test_unsent_write_then_another_writer_is_not_committed(scope: docmem.LockedScope) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=1, base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    other = docmem.FileMemory(backend.inner).bind(scope, slot="user")

    def someone_else_writes() -> None:
        other.save("someone else", mutation_id="other")

    backend.script = ["unsent"]
    backend.interloper = someone_else_writes
    with pytest.raises(docmem.StoreBusy) as caught:
        mem.save("mine", mutation_id="s")
    assert caught.value.outcome == "not_committed"  # the record at our revision is another's


def test_memories_pickle_and_work_after_unpickling(scope: docmem.LockedScope) -> None:
    import pickle

    store = docmem.open_store("memory://pickled-memories")
    memory = docmem.FileMemory(store, max_characters=500)
    bound = memory.bind(scope, slot="user")
    bound.save("before pickling", mutation_id="p1")
    copy = pickle.loads(pickle.dumps(bound))
    assert copy.slot == "user"
    assert copy.scope == scope
    assert copy._memory.max_characters == 500
    assert copy.save("after pickling", mutation_id="p2").index == 1
    assert [m.content for m in bound.recall()] == [m.content for m in copy.recall()]
    assert pickle.loads(pickle.dumps(memory)).max_characters == 500


class _StaleCacheBackend(MemoryBackend):
    """A store whose read_recent answers from a snapshot that may be out of date."""

    recent_reads_may_be_stale = True

    def __init__(self) -> None:
        super().__init__()
        self.snapshot: dict[str, docmem.Stored | None] = {}
        self.reads = 0

    def read(self, key: str) -> docmem.Stored | None:
        self.reads += 1
        return super().read(key)

    def read_recent(self, key: str) -> docmem.Stored | None:
        if key in self.snapshot:
            return self.snapshot[key]
        return self.read(key)


def test_a_noop_decided_on_a_stale_cache_is_confirmed(scope: docmem.LockedScope) -> None:
    store = _StaleCacheBackend()
    mem = docmem.FileMemory(store).bind(scope, slot="user")
    mem.save("note", mutation_id="s1")
    store.snapshot[scope.storage_key] = store.read(scope.storage_key)  # has "note"
    mem.remove(0, mutation_id="r1")  # the snapshot still shows it
    # duplicate on the stale snapshot, but the fresh read shows it is gone: saved again
    assert mem.save("note", mutation_id="s2") == docmem.SaveResult("saved", 1, 3)
    # a write based on a stale snapshot conflicts once and lands on a fresh read
    before = store.reads
    assert mem.save("other", mutation_id="s3").index == 2
    assert store.reads == before + 1


def test_a_refusal_decided_on_a_stale_cache_is_confirmed(scope: docmem.LockedScope) -> None:
    store = _StaleCacheBackend()
    first, second = "First note.", "Second note."
    needed = len(render_recall(MemoryDocument({1: second}, last=1), "user"))
    mem = docmem.FileMemory(store, max_characters=needed).bind(scope, slot="user")
    mem.save(first, mutation_id="s1")
    store.snapshot[scope.storage_key] = store.read(scope.storage_key)  # full with "First note."
    mem.remove(0, mutation_id="r1")
    # Full on the stale snapshot; the fresh read has room.
    assert mem.save(second, mutation_id="s2") == docmem.SaveResult("saved", 1, 3)
    # A fence seen only in a stale snapshot does not refuse either.
    fenced = MemoryDocument({1: second}, last=1, revision=3, fence="mig-1")
    store.snapshot[scope.storage_key] = docmem.Stored(serialize(fenced), "stale")
    assert mem.remove(1, mutation_id="r2").status == "removed"
