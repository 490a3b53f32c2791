"""FileMemory: the provider's promises on the built-in stores and a scripted one."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import pytest
from wrappers import ScriptedBackend

import docmem
import docmem.provider.keys
from docmem.backend import LruCache
from docmem.errors import VersionConflict
from docmem.provider import journal
from docmem.provider.commit import KeyIO
from docmem.provider.document import (
    MAX_DOCUMENT_BYTES,
    MAX_ENTRY_BYTES,
    MAX_INDEX,
    MemoryDocument,
    parse,
    render_recall,
    serialize,
)
from docmem.provider.journal import JournalRecord
from docmem.provider.mutation import (
    Done,
    Erase,
    EraseResult,
    NoOp,
    Refused,
    Remove,
    RemoveResult,
    Save,
    SaveResult,
    Write,
)
from docmem.storage.builtin.inmemory import MemoryBackend


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
    assert message.item_key == docmem.provider.keys.item_key("document")
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


def test_a_late_replay_of_a_save_never_undoes_an_erase(mem: docmem.BoundMemory) -> None:
    mem.save("Lives at 12 Elm Street.", mutation_id="m1")
    mem.erase(mutation_id="gdpr-1")
    # A retry queue delivering the save late: recognised, not applied again.
    assert mem.save("Lives at 12 Elm Street.", mutation_id="m1") == docmem.SaveResult(
        "replayed", None, 2
    )
    document = mem.read()
    assert document is not None
    assert dict(document.entries) == {}
    assert document.revision == 2
    assert [record.op for record in document.journal] == ["erase"]


def _churn(mem: docmem.BoundMemory, writes: int, prefix: str) -> None:
    """``writes`` writing mutations that leave the document's entries as they were."""
    for n in range(writes // 2):
        index = mem.save(f"{prefix} {n}", mutation_id=f"{prefix}-s{n}").index
        assert index is not None
        mem.remove(index, mutation_id=f"{prefix}-r{n}")
    if writes % 2:
        mem.save(f"{prefix} last", mutation_id=f"{prefix}-last")


@pytest.mark.slow
def test_the_ids_an_erase_drops_stay_recognised_for_the_window(mem: docmem.BoundMemory) -> None:
    mem.save("Lives at 12 Elm Street.", mutation_id="m1")
    mem.erase(mutation_id="gdpr-1")
    # The erase keeps the ids it drops among the older ids: they age out only
    # as any other id does, once 352 newer writing mutations (the erase's own
    # among them) follow.
    _churn(mem, journal.MAX_RECORDS + journal.MAX_OLDER_IDS - 2, "later")
    assert mem.save("Lives at 12 Elm Street.", mutation_id="m1").status == "replayed"
    assert mem.remove(0, mutation_id="m1").status == "replayed"  # the id, whatever the request
    document = mem.read()
    assert document is not None
    assert "Lives at 12 Elm Street." not in document.entries.values()


def test_a_replay_after_the_journal_rolled_over_has_no_second_effect(
    mem: docmem.BoundMemory,
) -> None:
    saved = mem.save("Lives at 12 Elm Street.", mutation_id="m1")
    assert saved.index is not None
    mem.remove(saved.index, mutation_id="r1")
    _churn(mem, 40, "later")  # past the 32 whole records
    assert mem.inspect("m1") is None  # its whole record is gone...
    replayed = mem.save("Lives at 12 Elm Street.", mutation_id="m1")  # ...its id is not
    assert replayed.status == "replayed"
    assert mem.remove(saved.index, mutation_id="r1").status == "replayed"
    document = mem.read()
    assert document is not None
    assert "Lives at 12 Elm Street." not in document.entries.values()


@pytest.mark.slow
def test_the_replay_window_is_the_newest_352_writing_mutations(mem: docmem.BoundMemory) -> None:
    window = journal.MAX_RECORDS + journal.MAX_OLDER_IDS
    assert window == 352  # 11 times the 32 whole records (docs/design.md, section 5)
    mem.save("first", mutation_id="m1")
    _churn(mem, window - 1, "a")  # m1 is now the oldest of the newest 352
    # Its text is still there: the replay names the entry, and writes nothing.
    assert mem.save("first", mutation_id="m1") == docmem.SaveResult("replayed", 0, window)
    mem.save("one more", mutation_id="m-last")
    # Past the window the id is new again: a text still present is a duplicate.
    assert mem.save("first", mutation_id="m1").status == "duplicate"


def test_the_tool_tells_the_model_a_replay_changed_nothing(mem: docmem.BoundMemory) -> None:
    tools = mem.tools()
    save = tools["user__save_memory"]
    assert save.call({"text": "Likes tea."}, call_id="c1", session_id="s").text == (
        "Saved as memory 0."
    )
    mem.erase(mutation_id="e")
    again = save.call({"text": "Likes tea."}, call_id="c1", session_id="s")
    assert not again.is_error
    assert again.text == "This call was already carried out earlier; nothing was changed now."
    assert mem.recall()[0].content.endswith("No memories are saved.")


def test_erase_whose_purge_fails_reports_committed(
    scripted: tuple[ScriptedBackend, docmem.BoundMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend, mem = scripted
    mem.save("a", mutation_id="s0")

    def refuse(key: str) -> None:
        raise docmem.StoreUnavailable("scripted: purge refused")

    monkeypatch.setattr(backend, "purge_history", refuse)
    with pytest.raises(docmem.StoreUnavailable) as caught:
        mem.erase(mutation_id="e")
    assert caught.value.outcome == "committed"  # the erase is stored; only the purge failed
    assert mem.inspect("e") == docmem.MutationRecord("erase", "erased", None, 2)


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


# -- removing and erasing at the byte cap ----------------------------------------


def _record(number: int, rev: int, index: int) -> JournalRecord:
    mutation_id = f"old-{number}"
    return JournalRecord(
        journal.id_digest(mutation_id),
        journal.request_digest(mutation_id, "save", f"note {number}"),
        rev,
        "save",
        "saved",
        index,
    )


def _document_at_cap(records: tuple[JournalRecord, ...], revision: int) -> MemoryDocument:
    """A valid document of exactly MAX_DOCUMENT_BYTES bytes whose entry 0 is one character."""
    entries = {0: "a"}
    index = 1
    while True:
        document = MemoryDocument(entries, last=99, revision=revision, journal=records)
        room = MAX_DOCUMENT_BYTES - len(serialize(document))
        overhead = len(f"{index}: \n")
        if room <= overhead + MAX_ENTRY_BYTES:
            assert room > overhead
            entries[index] = "x" * (room - overhead)
            break
        entries[index] = "x" * MAX_ENTRY_BYTES
        index += 1
    document = MemoryDocument(entries, last=99, revision=revision, journal=records)
    assert len(serialize(document)) == MAX_DOCUMENT_BYTES
    assert parse(serialize(document)) == document
    return document


def test_remove_at_the_cap_drops_the_oldest_journal_records(mem: docmem.BoundMemory) -> None:
    records = tuple(_record(n, rev=n + 1, index=n + 10) for n in range(3))
    before = _document_at_cap(records, revision=3)
    put_document(mem, before)
    # The remove's record is longer than the one-character line it frees.
    assert mem.remove(0, mutation_id="r") == docmem.RemoveResult("removed", 0, 4)
    data = stored_bytes(mem)
    assert data is not None
    assert len(data) <= MAX_DOCUMENT_BYTES
    after = parse(data)
    assert dict(after.entries) == {k: v for k, v in before.entries.items() if k != 0}
    assert after.journal[:-1] == records[1:]  # only the oldest one went
    assert mem.inspect("r") == docmem.MutationRecord("remove", "removed", 0, 4)
    assert mem.remove(0, mutation_id="r") == docmem.RemoveResult("removed", 0, 4)  # a replay


def test_remove_at_the_cap_with_no_journal_still_removes(mem: docmem.BoundMemory) -> None:
    # An operator-written document: nothing to drop but the remove's own record.
    put_document(mem, _document_at_cap((), revision=0))
    assert mem.remove(0, mutation_id="r") == docmem.RemoveResult("removed", 0, 1)
    data = stored_bytes(mem)
    assert data is not None
    after = parse(data)
    assert 0 not in after.entries
    assert after.revision == 1
    assert after.journal == ()
    assert len(data) <= MAX_DOCUMENT_BYTES
    # No record: a retry finds the entry gone, without a second effect.
    assert mem.remove(0, mutation_id="r") == docmem.RemoveResult("absent", 0, 1)
    # With that line gone, the next remove keeps its record.
    assert mem.remove(1, mutation_id="r2").status == "removed"
    assert mem.inspect("r2") == docmem.MutationRecord("remove", "removed", 1, 2)


def test_erase_at_the_cap(mem: docmem.BoundMemory) -> None:
    put_document(mem, _document_at_cap((_record(0, rev=1, index=5),), revision=7))
    assert mem.erase(mutation_id="e") == docmem.EraseResult("erased", 8)
    assert mem.recall()[0].content.endswith("No memories are saved.")


def test_save_at_the_cap_is_still_refused(mem: docmem.BoundMemory) -> None:
    put_document(mem, _document_at_cap(tuple(_record(n, n + 1, n) for n in range(3)), 3))
    before = stored_bytes(mem)
    with pytest.raises(docmem.LimitExceeded):
        mem.save("b", mutation_id="s")
    assert stored_bytes(mem) == before


# -- cancellation ----------------------------------------------------------------


class _CountingBackend(ScriptedBackend):
    """A scripted store that counts reads and can set an event on a write."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.cancel_on_write: threading.Event | None = None

    def read(self, key: str) -> docmem.Stored | None:
        self.reads += 1
        return super().read(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        if self.cancel_on_write is not None:
            self.cancel_on_write.set()
        return super().write(key, data, expected=expected)


def test_a_set_cancel_event_refuses_every_call_before_the_store(
    scope: docmem.LockedScope,
) -> None:
    backend = _CountingBackend()
    memory = docmem.FileMemory(backend)
    memory.bind(scope, slot="user").save("kept", mutation_id="s0")
    reads, writes = backend.reads, len(backend.writes)
    cancel = threading.Event()
    cancel.set()
    mem = memory.bind(scope, slot="user", cancel=cancel)
    for read in (mem.read, mem.recall, lambda: mem.inspect("s0")):
        with pytest.raises(docmem.Cancelled) as caught:
            read()
        assert caught.value.code == "cancelled"
        assert caught.value.outcome is None
    for mutate in (
        lambda: mem.save("new", mutation_id="s1"),
        lambda: mem.remove(0, mutation_id="r1"),
        lambda: mem.erase(mutation_id="e1"),
    ):
        with pytest.raises(docmem.Cancelled) as caught:
            mutate()
        assert caught.value.outcome == "not_committed"
    assert (backend.reads, len(backend.writes)) == (reads, writes)
    # An unset event changes nothing.
    assert memory.bind(scope, slot="user", cancel=threading.Event()).read() is not None


def test_the_provider_protocol_passes_the_cancel_event(scope: docmem.LockedScope) -> None:
    backend = _CountingBackend()
    memory = docmem.FileMemory(backend)
    cancel = threading.Event()
    recall_context = docmem.RecallContext("turn_started", "user", scope, "op", [], cancel=cancel)
    tools_context = docmem.ToolsContext("user", scope, "op", [], cancel=cancel)
    tools = memory.tools(tools_context)
    assert memory.recall(recall_context) == []
    cancel.set()
    with pytest.raises(docmem.Cancelled):
        memory.recall(recall_context)
    result = tools["save_memory"].call({"text": "late"}, call_id="c", session_id="s")
    assert result.is_error
    assert "cancelled" in result.text
    assert backend.writes == []


class _SlowPolicy(docmem.RetryPolicy):
    def delay(self, attempt: int) -> float:
        return 30.0


def test_cancel_stops_retrying_after_a_conflict(scope: docmem.LockedScope) -> None:
    backend = _CountingBackend()
    cancel = threading.Event()
    slow = _SlowPolicy()  # a backoff the cancel must cut short
    mem = docmem.FileMemory(backend, retry=slow).bind(scope, slot="user", cancel=cancel)
    backend.script = ["conflict"] * 5
    backend.cancel_on_write = cancel
    started = time.monotonic()
    with pytest.raises(docmem.Cancelled) as caught:
        mem.save("x", mutation_id="s")
    assert time.monotonic() - started < 5
    assert caught.value.outcome == "not_committed"
    assert len(backend.writes) == 1


@pytest.mark.parametrize(
    ("mode", "interloper", "outcome"),
    [("unsent", False, "unknown"), ("unsent", True, "not_committed"), ("lost", False, None)],
)
def test_cancel_after_an_ambiguous_write_settles_it_once(
    scope: docmem.LockedScope, mode: str, interloper: bool, outcome: str | None
) -> None:
    backend = _CountingBackend()
    cancel = threading.Event()
    fast = docmem.RetryPolicy(base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=fast).bind(scope, slot="user", cancel=cancel)
    other = docmem.FileMemory(backend.inner).bind(scope, slot="user")
    if interloper:
        backend.interloper = lambda: other.save("someone else", mutation_id="other")
    backend.script = [mode]
    backend.cancel_on_write = cancel
    if outcome is None:  # the write landed: the settling read proves it
        assert mem.save("mine", mutation_id="s") == docmem.SaveResult("saved", 0, 1)
    else:
        with pytest.raises(docmem.Cancelled) as caught:
            mem.save("mine", mutation_id="s")
        assert caught.value.outcome == outcome
    assert len(backend.writes) == 1


def test_bind_refuses_a_cancel_that_is_not_an_event(scope: docmem.LockedScope) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.FileMemory(MemoryBackend()).bind(scope, slot="user", cancel=True)  # type: ignore[arg-type]


def test_a_pickled_bound_memory_has_no_cancel_event(scope: docmem.LockedScope) -> None:
    import pickle

    cancel = threading.Event()
    cancel.set()
    store = docmem.open_store("memory://pickled-cancel")
    bound = docmem.FileMemory(store).bind(scope, slot="user", cancel=cancel)
    assert pickle.loads(pickle.dumps(bound)).recall() == []


# -- the retry policy ------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_attempts", float("inf")),
        ("max_attempts", None),
        ("max_attempts", float("nan")),
        ("max_attempts", True),
        ("max_attempts", 0),
        ("max_attempts", -3),
        ("max_attempts", 2.5),
        ("max_attempts", 3.0),
        ("max_attempts", "32"),
        ("max_seconds", float("nan")),
        ("max_seconds", float("inf")),
        ("max_seconds", None),
        ("max_seconds", 0),
        ("max_seconds", -1.0),
        ("max_seconds", 10**400),
        ("max_seconds", False),
        ("base", float("nan")),
        ("base", float("inf")),
        ("base", None),
        ("base", -0.1),
        ("base", "0.005"),
        ("cap", float("nan")),
        ("cap", float("-inf")),
        ("cap", None),
        ("cap", -1),
    ],
)
def test_retry_policy_refuses_bad_values_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(docmem.InvalidArgument, match=field):
        docmem.RetryPolicy(**{field: value})  # type: ignore[arg-type]


def test_retry_policy_accepts_integers_and_zero_waits() -> None:
    policy = docmem.RetryPolicy(max_attempts=1, max_seconds=1, base=0, cap=0)
    assert policy.delay(5) == 0.0


def test_file_memory_refuses_a_retry_that_is_not_a_policy(store: docmem.Backend) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.FileMemory(store, retry={"max_attempts": 3})  # type: ignore[arg-type]


# -- what a backend returns ------------------------------------------------------


class _AnsweringBackend(MemoryBackend):
    """A store whose reads answer ``answer`` instead of what it holds."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer

    def read(self, key: str) -> docmem.Stored | None:
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize(
    "answer",
    [
        docmem.Stored("0: text", "v1"),  # type: ignore[arg-type]
        docmem.Stored(None, "v1"),  # type: ignore[arg-type]
        docmem.Stored(123, "v1"),  # type: ignore[arg-type]
        docmem.Stored(b"", ""),
        docmem.Stored(b"", None),  # type: ignore[arg-type]
        docmem.Stored(b"", 5),  # type: ignore[arg-type]
        (b"data", "v1"),
        b"data",
    ],
    ids=[
        "str",
        "none-data",
        "int",
        "empty-version",
        "none-version",
        "int-version",
        "tuple",
        "bytes",
    ],
)
def test_a_broken_read_answer_is_store_unavailable(
    scope: docmem.LockedScope, answer: object
) -> None:
    mem = docmem.FileMemory(_AnsweringBackend(answer)).bind(scope, slot="user")
    with pytest.raises(docmem.StoreUnavailable):
        mem.recall()
    for mutate in (
        lambda: mem.save("x", mutation_id="s"),
        lambda: mem.remove(0, mutation_id="r"),
        lambda: mem.erase(mutation_id="e"),
    ):
        with pytest.raises(docmem.StoreUnavailable) as caught:
            mutate()
        assert caught.value.outcome == "not_committed"


@pytest.mark.parametrize("convert", [bytearray, memoryview])
def test_bytes_like_read_answers_are_accepted(scope: docmem.LockedScope, convert: type) -> None:
    inner = MemoryBackend()
    docmem.FileMemory(inner).bind(scope, slot="user").save("kept", mutation_id="s0")
    stored = inner.read(scope.storage_key)
    assert stored is not None

    class BytesLike(MemoryBackend):
        def read(self, key: str) -> docmem.Stored | None:
            found = inner.read(key)
            return None if found is None else docmem.Stored(convert(found.data), found.version)

        def write(self, key: str, data: bytes, *, expected: str | None) -> str:
            return inner.write(key, data, expected=expected)

    mem = docmem.FileMemory(BytesLike()).bind(scope, slot="user")
    assert mem.recall()[0].content.endswith("0: kept")
    assert mem.save("more", mutation_id="s1").index == 1
    assert mem.recall()[0].content.endswith("1: more")


# -- exception chains carry no memory text ---------------------------------------

CANARY = "Canary-7f3a-Zebra"


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _carries(error: BaseException, canary: str) -> bool:
    for link in _chain(error):
        parts = [repr(link), str(link), *map(repr, link.args)]
        parts += [repr(getattr(link, name, "")) for name in ("object", "doc", "msg")]
        parts += [repr(value) for value in vars(link).values()]
        if any(canary in part or canary.encode() in part.encode() for part in parts):
            return True
    return False


@pytest.mark.parametrize(
    "data",
    [
        f'<!-- docmem/1 {{"last":0,"rev":1,"ops":[]}} -->\n0: {CANARY} \xff\n'.encode("latin-1"),
        f'<!-- docmem/1 {{"last":0,"rev":1,"ops":[],"{CANARY}":1}} -->\n0: a\n'.encode(),
        f'<!-- docmem/1 {{"last":0,"rev":1,"ops":[["{CANARY}"]]}} -->\n0: a\n'.encode(),
        f'<!-- docmem/1 {{"last":"{CANARY}","rev":1,"ops":[]}} -->\n0: a\n'.encode(),
        f'<!-- docmem/1 {{"last":0,"rev":1,"ops":[],"fence":"{CANARY}"\n'.encode(),
    ],
    ids=["utf-8", "unknown-field", "bad-record", "bad-type", "malformed"],
)
def test_corrupt_documents_raise_without_memory_text_in_the_chain(
    scope: docmem.LockedScope, data: bytes
) -> None:
    store = MemoryBackend()
    store.write(scope.storage_key, data, expected=None)
    mem = docmem.FileMemory(store).bind(scope, slot="user")
    for call in (
        mem.recall,
        lambda: mem.save("new", mutation_id="s"),
        lambda: mem.remove(0, mutation_id="r"),
    ):
        with pytest.raises(docmem.DocumentCorrupt) as caught:
            call()
        assert not _carries(caught.value, CANARY)
    stored = store.read(scope.storage_key)
    assert stored is not None
    assert stored.data == data


def test_a_surrogate_mutation_id_is_refused_without_the_id_in_the_chain(
    mem: docmem.BoundMemory,
) -> None:
    with pytest.raises(docmem.InvalidArgument) as caught:
        mem.save("a", mutation_id=f"{CANARY}\udc80")
    assert not _carries(caught.value, CANARY)


# -- the pieces of the conflict loop ---------------------------------------------


@dataclasses.dataclass(frozen=True)
class _RecordingPolicy(docmem.RetryPolicy):
    """A policy that waits not at all and records which attempts it backed off before."""

    backed_off: list[int] = dataclasses.field(default_factory=list)

    def delay(self, attempt: int) -> float:
        self.backed_off.append(attempt)
        return 0.0


def test_attempts_are_numbered_and_bounded_by_max_attempts() -> None:
    policy = _RecordingPolicy(max_attempts=4)
    attempts = policy.attempts()
    assert [attempt.number for attempt in attempts] == [0, 1, 2, 3]
    assert policy.backed_off == [1, 2, 3]
    assert attempts.cancelled is False


def test_an_attempt_that_retries_at_once_skips_the_next_back_off() -> None:
    policy = _RecordingPolicy(max_attempts=4)
    for attempt in policy.attempts():
        if attempt.number == 1:
            attempt.retry_at_once()
    assert policy.backed_off == [1, 3]


def test_attempts_stop_at_the_deadline_but_always_make_the_first() -> None:
    policy = docmem.RetryPolicy(max_attempts=10**6, max_seconds=0.02, base=0.0, cap=0.0)
    numbers = []
    for attempt in policy.attempts():
        numbers.append(attempt.number)
        time.sleep(0.03)
    assert numbers == [0]


def test_a_set_cancel_stops_the_attempts_before_the_first() -> None:
    cancel = threading.Event()
    cancel.set()
    attempts = docmem.RetryPolicy().attempts(cancel=cancel)
    assert list(attempts) == []
    assert attempts.cancelled is True


def test_a_cancel_cuts_a_back_off_short_and_ends_the_attempts() -> None:
    cancel = threading.Event()
    attempts = _SlowPolicy().attempts(cancel=cancel)
    started = time.monotonic()
    numbers = []
    for attempt in attempts:
        numbers.append(attempt.number)
        threading.Timer(0.05, cancel.set).start()
    assert numbers == [0]
    assert attempts.cancelled is True
    assert time.monotonic() - started < 5


def _save(text: str, mutation_id: str = "s", max_characters: int = 4000) -> Save:
    return Save(
        text,
        mutation_id,
        slot="user",
        max_characters=max_characters,
        secret_filter=docmem.default_secret_filter,
        at=1_700_000_000_000,
    )


def test_a_save_decides_write_noop_refused_or_done() -> None:
    save = _save("Likes tea.")
    first = save.decide(None)
    assert isinstance(first, Write)
    assert first.result == SaveResult("saved", 0, 1)
    assert first.data == serialize(first.document)
    assert parse(first.data) == first.document
    assert save.decide(first.document) == Done(SaveResult("saved", 0, 1))
    again = _save("Likes   tea.", mutation_id="s2")
    assert again.decide(first.document) == NoOp(SaveResult("duplicate", 0, 1))
    fenced = MemoryDocument({}, fence="mig-1")
    refused = again.decide(fenced)
    assert isinstance(refused, Refused)
    assert isinstance(refused.error, docmem.ScopeFenced)
    exhausted = again.decide(MemoryDocument({}, last=MAX_INDEX))
    assert isinstance(exhausted, Refused)
    assert isinstance(exhausted.error, docmem.IndexExhausted)


def test_a_save_over_the_character_limit_is_refused_with_a_hint() -> None:
    save = _save("A note that does not fit.", max_characters=50)
    refused = save.decide(None)
    assert isinstance(refused, Refused)
    assert isinstance(refused.error, docmem.LimitExceeded)
    assert "save a shorter note" in str(refused.error)


def test_a_reused_mutation_id_is_a_conflict_not_a_decision() -> None:
    save = _save("first")
    written = save.decide(None)
    assert isinstance(written, Write)
    with pytest.raises(docmem.MutationConflict):
        Remove(0, "s").decide(written.document)


def test_remove_and_erase_decisions() -> None:
    document = MemoryDocument({0: "a", 2: "b"}, last=2, revision=4)
    assert Remove(1, "r").decide(document) == NoOp(RemoveResult("absent", 1, 4))
    assert Remove(1, "r").decide(None) == NoOp(RemoveResult("absent", 1, 0))
    removed = Remove(2, "r").decide(document)
    assert isinstance(removed, Write)
    assert removed.result == RemoveResult("removed", 2, 5)
    assert dict(removed.document.entries) == {0: "a"}
    assert Remove(2, "r").decide(removed.document) == Done(RemoveResult("removed", 2, 5))
    assert Erase("e").decide(None) == NoOp(EraseResult("absent", 0))
    erased = Erase("e").decide(removed.document)
    assert isinstance(erased, Write)
    assert erased.result == EraseResult("erased", 6)
    assert (dict(erased.document.entries), erased.document.last) == ({}, 2)
    assert Erase("e").decide(erased.document) == Done(EraseResult("erased", 6))


def test_a_shrinking_decision_at_the_cap_drops_old_records_instead_of_refusing() -> None:
    records = tuple(_record(n, rev=n + 1, index=n + 10) for n in range(3))
    decision = Remove(0, "r").decide(_document_at_cap(records, revision=3))
    assert isinstance(decision, Write)
    assert len(decision.data) <= MAX_DOCUMENT_BYTES
    assert decision.document.journal[:-1] == records[1:]


def test_mutations_check_their_arguments_when_made() -> None:
    with pytest.raises(docmem.SecretDetected):
        _save("AKIAIOSFODNN7EXAMPLE")
    with pytest.raises(docmem.ContentRejected):
        _save("   ")
    with pytest.raises(docmem.InvalidArgument, match="index"):
        Remove(-1, "")  # the index is checked first, as before
    with pytest.raises(docmem.InvalidArgument, match="mutation_id"):
        Erase("")


def test_an_unchanged_document_is_parsed_once(
    mem: docmem.BoundMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.save("kept", mutation_id="s0")
    parsed: list[bytes] = []

    def counting_parse(data: bytes) -> MemoryDocument:
        parsed.append(data)
        return parse(data)

    monkeypatch.setattr("docmem.provider.reading.parse", counting_parse)
    for _ in range(3):
        mem.recall()
    assert parsed == []  # the save's own write was remembered
    put_document(mem, MemoryDocument({0: "changed"}, last=0, revision=2))
    mem.recall()
    mem.recall()
    assert len(parsed) == 1


def test_the_parse_cache_is_a_bounded_lru_cache_that_forgets_nothing_corrupt(
    mem: docmem.BoundMemory,
) -> None:
    cache = mem._memory._parsed
    assert isinstance(cache, LruCache)
    io = KeyIO(mem._memory.store, mem.scope.storage_key, cache)
    corrupt = b"not a document\n"
    with pytest.raises(docmem.DocumentCorrupt):
        io.parse(corrupt)
    assert cache.get(corrupt) is None
    for n in range(70):
        io.parse(serialize(MemoryDocument({}, revision=n)))
    assert cache.get(serialize(MemoryDocument({}, revision=0))) is None
    assert cache.get(serialize(MemoryDocument({}, revision=69))) is not None


def test_unqualified_tools_carry_the_bare_names_and_their_own_schemas(
    mem: docmem.BoundMemory,
) -> None:
    tools = mem.unqualified_tools()
    assert sorted(tools) == ["remove_memory", "save_memory"]
    assert tools["save_memory"].name == "save_memory"
    again = mem.unqualified_tools()
    again["save_memory"].parameters["properties"]["text"]["minLength"] = 0
    assert tools["save_memory"].parameters["properties"]["text"]["minLength"] == 1
    assert mem.tools()["user__save_memory"].parameters == tools["save_memory"].parameters
    assert "`user` memory" in tools["remove_memory"].description


def test_the_loop_logs_conflicts_unknown_outcomes_and_exhaustion_without_content(
    scope: docmem.LockedScope, caplog: pytest.LogCaptureFixture
) -> None:
    backend = ScriptedBackend()
    policy = docmem.RetryPolicy(max_attempts=3, base=0.0, cap=0.0)
    mem = docmem.FileMemory(backend, retry=policy).bind(scope, slot="user")
    backend.script = ["conflict", "unsent", "conflict"]
    with caplog.at_level("DEBUG", logger="docmem"), pytest.raises(docmem.StoreBusy):
        mem.save(CANARY, mutation_id="s")
    messages = [record.getMessage() for record in caplog.records]
    key = scope.storage_key
    assert messages == [
        f"docmem: version conflict on {key}, attempt 0",
        f"docmem: write outcome unknown on {key} at rev 1, reconciling",
        f"docmem: version conflict on {key}, attempt 2",
        f"docmem: retry budget exhausted on {key}",
    ]
    assert not any(CANARY in message for message in messages)


def test_no_function_of_the_provider_is_60_lines_or_longer() -> None:
    import ast
    from pathlib import Path

    root = Path(docmem.__file__).parent / "provider"
    for name in ("memory.py", "mutation.py", "retry.py", "journal.py", "document.py"):
        tree = ast.parse((root / name).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length < 60, f"{name}: {node.name} is {length} lines"
