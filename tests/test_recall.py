"""RecallLedger: keyed supersession, batch validation, replay, projection, persistence."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from copies import unmarked

import docmem
import docmem.host.slot
from docmem.host.recall import (
    EARLIER_PARTICIPANT,
    MAX_RAW_BYTES,
    MAX_RAW_RECORDS,
    ProjectedRecall,
    Recalled,
    RecallLedger,
    split_recalls,
)
from docmem.host.slot import SlotLock
from docmem.provider.keys import item_key


def lock(
    slot: str = "user",
    scope: Any = "u1",
    *,
    namespace: str = "tests:recall",
    visibility: docmem.host.slot.Visibility = "scope",
) -> SlotLock:
    return SlotLock(slot, docmem.lock_scope(namespace=namespace, scope=scope), visibility)


def shown(projected: Sequence[Any]) -> list[str]:
    """The projection as text: host messages as they are, records as ``[slot] content``."""
    return [
        f"[{item.slot}] {unmarked(item)}" if isinstance(item, ProjectedRecall) else item
        for item in projected
    ]


def raw_records(ledger: RecallLedger) -> list[Any]:
    """The raw records (superseded versions included) as the serialized form holds them."""
    records: list[Any] = json.loads(ledger.to_bytes())["records"]
    return records


# -- the design's examples ------------------------------------------------------


def test_keyed_a_b_then_b_c_leaves_a_b_c_with_b_once() -> None:
    ledger, user = RecallLedger(), lock()
    a, b, c = Recalled("note A", "a"), Recalled("note B", "b"), Recalled("note C", "c")
    assert ledger.apply("turn-1", 0, [(user, [a, b])]) is True
    assert ledger.apply("turn-2", 2, [(user, [b, c])]) is True

    history = ["q1", "r1"]
    assert shown(ledger.project(history, [user])) == [
        "[user] note A",
        "[user] note B",
        "q1",
        "r1",
        "[user] note C",
    ]
    assert len(ledger) == 3


def test_an_unchanged_document_recalled_every_turn_appears_once() -> None:
    ledger, user = RecallLedger(), lock()
    document = Recalled("# Memory: user\n\n0: Prefers tea.", "document")
    history: list[str] = []
    for turn in range(6):
        assert ledger.apply(f"turn-{turn}", len(history), [(user, [document])]) is True
        history += [f"q{turn}", f"r{turn}"]
        projected = shown(ledger.project(history, [user]))
        assert projected.count("[user] # Memory: user\n\n0: Prefers tea.") == 1
        assert projected[0] == "[user] # Memory: user\n\n0: Prefers tea."  # keeps its place
    assert len(ledger) == 1
    assert len(raw_records(ledger)) == 1  # identical content is a no-op, not a new version


def test_a_changed_document_supersedes_and_moves_to_the_new_position() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("version 1", "document")])])
    ledger.apply("turn-2", 2, [(user, [Recalled("version 2", "document")])])

    projected = shown(ledger.project(["q1", "r1", "q2"], [user]))
    assert projected == ["q1", "r1", "[user] version 2", "q2"]
    assert not any("version 1" in item for item in projected)
    assert len(ledger) == 1


def test_a_document_changed_back_supersedes_again() -> None:
    ledger, user = RecallLedger(), lock()
    for turn, text in enumerate(["v1", "v2", "v1"]):
        ledger.apply(f"turn-{turn}", turn, [(user, [Recalled(text, "document")])])
    assert shown(ledger.project(["m0", "m1", "m2"], [user])) == ["m0", "m1", "[user] v1", "m2"]


def test_unkeyed_messages_append_and_are_never_deduplicated() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("same"), Recalled("same")])])
    ledger.apply("turn-2", 1, [(user, [Recalled("same")])])
    assert shown(ledger.project(["q1"], [user])) == [
        "[user] same",
        "[user] same",
        "q1",
        "[user] same",
    ]
    assert len(ledger) == 3


def test_omission_never_removes() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("A", "a"), Recalled("B", "b"), Recalled("u")])])
    ledger.apply("turn-2", 0, [(user, [])])
    ledger.apply("turn-3", 0, [(user, [Recalled("C", "c")])])
    assert shown(ledger.project([], [user])) == ["[user] A", "[user] B", "[user] u", "[user] C"]


# -- batch validation: all or nothing -------------------------------------------

INVALID_MESSAGES = {
    "empty content": Recalled("", "x"),
    "blank content": Recalled(" \n\t ", "x"),
    "blank unkeyed content": Recalled("   "),
    "content not a string": Recalled(42, "x"),  # type: ignore[arg-type]
    "empty id": Recalled("text", ""),
    "id not a string": Recalled("text", 7),  # type: ignore[arg-type]
    "id over 1024 bytes": Recalled("text", "x" * 1025),
    "id over 1024 bytes in UTF-8": Recalled("text", "é" * 513),
}


@pytest.mark.parametrize("bad", INVALID_MESSAGES.values(), ids=INVALID_MESSAGES.keys())
def test_an_invalid_message_rejects_the_whole_turn_for_every_slot(bad: Recalled) -> None:
    ledger, alpha, beta = RecallLedger(), lock("alpha"), lock("beta")
    ledger.apply("turn-1", 0, [(alpha, [Recalled("old", "k")])])
    before = ledger.to_bytes()

    with pytest.raises(docmem.RecallBatchInvalid) as raised:
        ledger.apply(
            "turn-2",
            3,
            [(alpha, [Recalled("new", "k"), Recalled("extra")]), (beta, [Recalled("ok"), bad])],
        )
    assert raised.value.code == "recall_batch_invalid"
    assert ledger.to_bytes() == before
    assert not ledger.committed("turn-2")
    assert shown(ledger.project([], [alpha, beta])) == ["[alpha] old"]

    # The rejected operation id is not burned: a valid retry applies.
    assert ledger.apply("turn-2", 3, [(alpha, [Recalled("new", "k")])]) is True
    assert shown(ledger.project([], [alpha, beta])) == ["[alpha] new"]


def test_mappings_with_content_and_id_are_recall_items() -> None:
    ledger, user = RecallLedger(), lock()
    items = [{"content": "note A", "id": "a"}, {"content": "unkeyed"}, {"content": "B", "id": None}]
    assert ledger.apply("turn-1", 0, [(user, items)]) is True
    # a mapping and an object with the same fields are the same batch: a replay
    same = [Recalled("note A", "a"), Recalled("unkeyed"), Recalled("B")]
    assert ledger.apply("turn-1", 0, [(user, same)]) is False
    ledger.apply("turn-2", 1, [(user, [{"content": "note A", "id": "a", "extra": 1}])])
    assert shown(ledger.project(["q"], [user])) == [
        "[user] note A",
        "[user] unkeyed",
        "[user] B",
        "q",
    ]


SHAPES = {
    "mapping without content": ({"text": "x", "id": "a"}, "is a dict without content"),
    "object without content": (object(), "is a object without content"),
    "plain string": ("just text", "is a str without content"),
    "mapping with bytes content": ({"content": b"x"}, "has content of type bytes"),
    "mapping with an int id": ({"content": "x", "id": 3}, "has an id of type int"),
}


@pytest.mark.parametrize(("item", "fragment"), SHAPES.values(), ids=SHAPES.keys())
def test_an_item_of_the_wrong_shape_names_the_shape_expected(item: Any, fragment: str) -> None:
    ledger = RecallLedger()
    with pytest.raises(docmem.RecallBatchInvalid) as raised:
        ledger.apply("turn-1", 0, [(lock(), [Recalled("fine"), item])])
    text = str(raised.value)
    assert f"slot 'user', message 1 {fragment}" in text
    assert "an object with a str 'content' and an optional str 'id'" in text
    assert "mapping with those keys" in text
    assert len(ledger) == 0


def test_a_repeated_id_in_one_slot_rejects_the_batch() -> None:
    ledger, alpha, beta = RecallLedger(), lock("alpha"), lock("beta")
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply(
            "turn-1",
            0,
            [(alpha, [Recalled("ok", "a")]), (beta, [Recalled("one", "d"), Recalled("two", "d")])],
        )
    assert len(ledger) == 0
    assert not ledger.committed("turn-1")


def test_the_same_id_in_two_slots_of_one_batch_is_not_a_repeat() -> None:
    ledger, alpha, beta = RecallLedger(), lock("alpha"), lock("beta")
    ledger.apply("turn-1", 0, [(alpha, [Recalled("x", "d")]), (beta, [Recalled("y", "d")])])
    assert shown(ledger.project([], [alpha, beta])) == ["[alpha] x", "[beta] y"]


def test_an_id_of_exactly_1024_bytes_is_accepted() -> None:
    ledger, user = RecallLedger(), lock()
    assert ledger.apply("turn-1", 0, [(user, [Recalled("text", "é" * 512)])]) is True
    assert len(ledger) == 1


@pytest.mark.parametrize(
    "bad",
    [Recalled("text", "id-\ud800"), Recalled("text \udfff")],
    ids=["lone surrogate in id", "lone surrogate in content"],
)
def test_text_that_is_not_utf8_is_an_invalid_batch(bad: Recalled) -> None:
    ledger, alpha, beta = RecallLedger(), lock("alpha"), lock("beta")
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply("turn-1", 0, [(alpha, [Recalled("ok")]), (beta, [bad])])
    assert len(ledger) == 0


@pytest.mark.parametrize(
    ("operation_id", "position"),
    [("", 0), (None, 0), ("op", -1), ("op", True), ("op", 1.0)],
    ids=["empty id", "no id", "negative position", "bool position", "float position"],
)
def test_bad_operation_ids_and_positions_are_rejected(operation_id: Any, position: Any) -> None:
    ledger = RecallLedger()
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply(operation_id, position, [(lock(), [Recalled("x")])])
    assert len(ledger) == 0


def test_a_slot_twice_in_one_batch_is_rejected() -> None:
    ledger = RecallLedger()
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply("op", 0, [(lock(), [Recalled("x")]), (lock(scope="u2"), [Recalled("y")])])
    assert len(ledger) == 0


# -- replay ---------------------------------------------------------------------


def test_replaying_the_same_batch_changes_nothing() -> None:
    ledger, alpha, beta = RecallLedger(), lock("alpha"), lock("beta")
    batch = [(alpha, [Recalled("A", "a"), Recalled("note")]), (beta, [Recalled("B", "b")])]
    assert ledger.apply("turn-1", 0, batch) is True
    before = ledger.to_bytes()
    assert ledger.committed("turn-1")

    assert ledger.apply("turn-1", 0, batch) is False
    assert ledger.apply("turn-1", 0, list(reversed(batch))) is False  # slot order is irrelevant
    assert ledger.to_bytes() == before
    assert len(ledger) == 3  # the unkeyed note was not appended twice


@pytest.mark.parametrize(
    ("position", "messages"),
    [
        (0, [Recalled("A changed", "a")]),
        (0, [Recalled("A", "a"), Recalled("more")]),
        (0, [Recalled("A", "other-id")]),
        (0, []),
        (5, [Recalled("A", "a")]),
    ],
    ids=["content", "extra message", "id", "empty", "position"],
)
def test_the_same_operation_id_with_another_batch_is_an_error(
    position: int, messages: list[Recalled]
) -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("A", "a")])])
    before = ledger.to_bytes()
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply("turn-1", position, [(user, messages)])
    assert ledger.to_bytes() == before
    assert shown(ledger.project([], [user])) == ["[user] A"]


def test_the_same_operation_id_under_another_scope_is_an_error() -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(scope="u1"), [Recalled("A", "a")])])
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply("turn-1", 0, [(lock(scope="u2"), [Recalled("A", "a")])])
    assert len(ledger) == 1


# -- identity: (slot, namespace key, scope key, item key) --------------------------


def test_the_same_id_under_two_slots_namespaces_or_scopes_are_independent_items() -> None:
    ledger = RecallLedger()
    base = lock("user", "u1", namespace="ns-1")
    other_slot = lock("team", "u1", namespace="ns-1")
    other_namespace = lock("user", "u1", namespace="ns-2")
    other_scope = lock("user", "u2", namespace="ns-1")
    ledger.apply("t1", 0, [(base, [Recalled("base", "same")])])
    ledger.apply("t2", 0, [(other_slot, [Recalled("slot", "same")])])
    ledger.apply("t3", 0, [(other_namespace, [Recalled("namespace", "same")])])
    ledger.apply("t4", 0, [(other_scope, [Recalled("scope", "same")])])

    assert len(ledger) == 4  # nothing superseded anything
    assert shown(ledger.project([], [base, other_slot])) == ["[team] slot", "[user] base"]
    assert shown(ledger.project([], [other_namespace])) == ["[user] namespace"]
    assert shown(ledger.project([], [other_scope])) == ["[user] scope"]


# -- projection -------------------------------------------------------------------


def test_records_at_one_position_are_in_slot_name_order_then_acceptance_order() -> None:
    ledger = RecallLedger()
    zeta, alpha, mid = lock("zeta"), lock("alpha"), lock("mid")
    ledger.apply(
        "turn-1",
        1,
        [
            (zeta, [Recalled("z1"), Recalled("z2")]),
            (alpha, [Recalled("a2", "k2"), Recalled("a1", "k1")]),
            (mid, [Recalled("m")]),
        ],
    )
    assert shown(ledger.project(["h0", "h1"], [zeta, mid, alpha])) == [
        "h0",
        "[alpha] a2",
        "[alpha] a1",
        "[mid] m",
        "[zeta] z1",
        "[zeta] z2",
        "h1",
    ]


def test_positions_past_the_end_are_clamped_to_the_end() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 10, [(user, [Recalled("late")])])
    assert shown(ledger.project(["h0", "h1"], [user])) == ["h0", "h1", "[user] late"]
    assert shown(ledger.project([], [user])) == ["[user] late"]


def test_a_slot_without_a_lock_this_turn_shows_nothing() -> None:
    ledger, user, team = RecallLedger(), lock("user"), lock("team")
    ledger.apply("turn-1", 0, [(user, [Recalled("U")]), (team, [Recalled("T")])])
    assert shown(ledger.project(["h"], [team])) == ["[team] T", "h"]
    assert ledger.project(["h"], []) == ["h"]


def test_projected_records_are_user_role_and_marked() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("keyed", "doc"), Recalled("unkeyed")])])
    keyed, unkeyed, host = ledger.project(["h"], [user])
    assert keyed == ProjectedRecall("keyed <!-- docmem:recall user -->", "user", item_key("doc"))
    assert unkeyed == ProjectedRecall("unkeyed <!-- docmem:recall user -->", "user", None)
    assert [docmem.recalled_slot(item.content) for item in (keyed, unkeyed)] == ["user", "user"]
    assert (keyed.role, keyed.docmem_recall) == ("user", True)
    assert (unkeyed.role, unkeyed.docmem_recall) == ("user", True)
    assert host == "h"


def test_split_recalls_separates_the_conversation_from_the_records() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 1, [(user, [Recalled("R1"), Recalled("R2")])])
    projected = ledger.project(["h0", "h1", "h2"], [user])
    conversation, recalls = split_recalls(projected)
    assert conversation == ["h0", "h1", "h2"]
    assert [unmarked(recall) for recall in recalls] == ["R1", "R2"]
    assert all(isinstance(recall, ProjectedRecall) for recall in recalls)
    assert split_recalls([]) == ([], [])


def test_project_does_not_change_the_host_messages() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("R")])])
    history = ["h0", "h1"]
    projected = ledger.project(history, [user])
    assert history == ["h0", "h1"]
    assert projected is not history


# -- visibility -------------------------------------------------------------------


def test_visibility_scope_shows_only_the_active_scope() -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(scope="alice"), [Recalled("Alice's note", "document")])])
    ledger.apply("turn-2", 2, [(lock(scope="bob"), [Recalled("Bob's note", "document")])])
    history = ["q1", "r1", "q2"]
    assert shown(ledger.project(history, [lock(scope="bob")])) == [
        "q1",
        "r1",
        "[user] Bob's note",
        "q2",
    ]
    assert shown(ledger.project(history, [lock(scope="alice")])) == [
        "[user] Alice's note",
        "q1",
        "r1",
        "q2",
    ]


def test_visibility_session_labels_earlier_participants() -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(scope="alice"), [Recalled("Alice's note", "document")])])
    ledger.apply("turn-2", 2, [(lock(scope="bob"), [Recalled("Bob's note", "document")])])
    bob = lock(scope="bob", visibility="session")
    assert shown(ledger.project(["q1", "r1", "q2"], [bob])) == [
        f"[user] {EARLIER_PARTICIPANT}\n\nAlice's note",
        "q1",
        "r1",
        "[user] Bob's note",
        "q2",
    ]
    assert EARLIER_PARTICIPANT == (
        "Earlier participant's memory; its indexes do not work with the current tools."
    )


def test_a_different_namespace_is_never_shown_even_for_the_session() -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(scope="alice", namespace="ns-a"), [Recalled("A")])])
    ledger.apply("turn-2", 0, [(lock(scope="bob", namespace="ns-b"), [Recalled("B")])])
    for scope in ("alice", "bob"):
        session = lock(scope=scope, namespace="ns-b", visibility="session")
        assert "A" not in [
            item.content.rsplit("\n\n", 1)[-1] for item in ledger.project([], [session])
        ]
    assert shown(ledger.project([], [lock(scope="alice", namespace="ns-b")])) == []


# -- compaction and clear ------------------------------------------------------------


def test_compacted_rebases_to_zero_and_keeps_hidden_scopes() -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(scope="alice"), [Recalled("A1", "document")])])
    ledger.apply("turn-2", 2, [(lock(scope="bob"), [Recalled("B", "document")])])
    ledger.apply("turn-3", 4, [(lock(scope="alice"), [Recalled("A2", "document")])])
    ledger.compacted()

    records = raw_records(ledger)
    assert len(records) == 2  # the superseded A1 is gone
    assert shown(ledger.project(["summary"], [lock(scope="bob")])) == ["[user] B", "summary"]
    assert shown(ledger.project(["summary"], [lock(scope="alice")])) == ["[user] A2", "summary"]


def test_clear_forgets_records_and_operations() -> None:
    ledger, user = RecallLedger(), lock()
    ledger.apply("turn-1", 0, [(user, [Recalled("A", "a")])])
    ledger.clear()
    assert len(ledger) == 0
    assert ledger.project(["h"], [user]) == ["h"]
    assert not ledger.committed("turn-1")
    assert ledger.apply("turn-1", 0, [(user, [Recalled("A again", "a")])]) is True
    assert shown(ledger.project([], [user])) == ["[user] A again"]


# -- canonicalization ------------------------------------------------------------------


def _turns(count: int) -> list[tuple[str, int, list[Recalled]]]:
    """A long conversation: the document changes every turn, an unkeyed note every 50."""
    turns = []
    for turn in range(count):
        messages = [Recalled(f"document version {turn}", "document")]
        if turn % 50 == 0:
            messages.append(Recalled(f"note {turn}"))
        turns.append((f"turn-{turn}", turn * 2, messages))
    return turns


def test_canonicalization_past_512_records_keeps_the_projection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert MAX_RAW_RECORDS == 512
    user = lock()
    ledger = RecallLedger()
    for operation, position, messages in _turns(600):
        ledger.apply(operation, position, [(user, messages)])

    uncanonical = RecallLedger()
    monkeypatch.setattr(uncanonical, "_canonicalize", lambda: None)
    for operation, position, messages in _turns(600):
        uncanonical.apply(operation, position, [(user, messages)])
    assert len(raw_records(uncanonical)) == 612  # every version, as a reference

    records = raw_records(ledger)
    assert len(records) <= MAX_RAW_RECORDS
    assert len(records) < 600
    history = [f"h{number}" for number in range(1200)]
    assert ledger.project(history, [user]) == uncanonical.project(history, [user])
    assert len(ledger) == len(uncanonical) == 13

    projected = shown(ledger.project(history, [user]))
    assert projected.count("[user] document version 599") == 1
    assert not any(item.startswith("[user] document version 598") for item in projected)
    assert [item for item in projected if "note" in item] == [
        f"[user] note {turn}" for turn in range(0, 600, 50)
    ]
    # Replay detection survives canonicalization.
    assert ledger.apply("turn-3", 6, [(user, [Recalled("document version 3", "document")])]) is (
        False
    )
    with pytest.raises(docmem.RecallBatchInvalid):
        ledger.apply("turn-3", 6, [(user, [Recalled("something else", "document")])])


def test_canonicalization_past_256_kib() -> None:
    user = lock()
    ledger = RecallLedger()
    big = 100 * 1024
    ledger.apply("t1", 0, [(user, [Recalled("a" * big, "document")])])
    ledger.apply("t2", 1, [(user, [Recalled("b" * big, "document")])])
    assert len(raw_records(ledger)) == 2  # 200 KiB: under the bound
    ledger.apply("t3", 2, [(user, [Recalled("c" * big, "document")])])
    assert 3 * big > MAX_RAW_BYTES
    assert len(raw_records(ledger)) == 1
    assert shown(ledger.project(["h0", "h1", "h2"], [user])) == [
        "h0",
        "h1",
        "[user] " + "c" * big,
        "h2",
    ]


# -- persistence --------------------------------------------------------------------------


def test_serialization_round_trip_keeps_projection_and_replay_detection() -> None:
    ledger = RecallLedger()
    alice, bob = lock(scope="alice"), lock(scope="bob", visibility="session")
    ledger.apply("turn-1", 0, [(alice, [Recalled("A1", "document"), Recalled("extra")])])
    ledger.apply("turn-2", 2, [(alice, [Recalled("A2", "document")])])
    ledger.apply("turn-3", 4, [(bob, [Recalled("B", "document")])])
    history = ["q1", "r1", "q2", "r2", "q3"]

    data = ledger.to_bytes()
    assert isinstance(data, bytes)
    restored = RecallLedger.from_bytes(data)
    assert restored.to_bytes() == data
    assert restored.project(history, [bob]) == ledger.project(history, [bob])
    assert restored.project(history, [alice]) == ledger.project(history, [alice])
    assert len(restored) == len(ledger) == 3

    assert restored.committed("turn-2")
    assert restored.apply("turn-2", 2, [(alice, [Recalled("A2", "document")])]) is False
    with pytest.raises(docmem.RecallBatchInvalid):
        restored.apply("turn-2", 2, [(alice, [Recalled("A3", "document")])])
    assert restored.to_bytes() == data

    # New records continue after the restored ones (ordering within one position).
    restored.apply("turn-4", 4, [(bob, [Recalled("B note")])])
    assert shown(restored.project(history, [bob]))[-3:] == [
        "[user] B",
        "[user] B note",
        "q3",
    ]


def test_serialized_form_carries_a_version_and_no_raw_scope_values() -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(scope="alice@example.com"), [Recalled("A", "doc-id")])])
    data = ledger.to_bytes()
    assert json.loads(data)["version"] == 1
    assert b"alice@example.com" not in data
    assert b"tests:recall" not in data
    assert b"doc-id" not in data  # ids are kept as opaque item keys


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"\xff\xfe",
        b"[]",
        b"{}",
        b'{"version": 1}',
        b'{"version": "1", "next_seq": 0, "records": [], "operations": {}}',
        b'{"version": 1, "next_seq": 0, "records": [[1, 2]], "operations": {}}',
    ],
)
def test_corrupt_ledger_bytes_raise_document_corrupt(data: bytes) -> None:
    with pytest.raises(docmem.DocumentCorrupt) as raised:
        RecallLedger.from_bytes(data)
    assert raised.value.code == "document_corrupt"


def test_corrupt_ledger_bytes_chain_no_decoder_error() -> None:
    # msgspec's error would ride along in __context__ (``from None`` only hides it),
    # and a decoder error may quote what the ledger holds: recalled memory text.
    record = [0, "op", 0, "user", "ns", "sc", None, "recalled text", "not a bool"]
    data = json.dumps({"version": 1, "next_seq": 1, "records": [record], "operations": {}})
    for corrupt in (data.encode(), b"not json"):
        with pytest.raises(docmem.DocumentCorrupt) as raised:
            RecallLedger.from_bytes(corrupt)
        assert raised.value.__context__ is None
        assert raised.value.__cause__ is None


@pytest.mark.parametrize("version", [0, 2, 99])
def test_another_format_version_raises_document_corrupt(version: int) -> None:
    ledger = RecallLedger()
    ledger.apply("turn-1", 0, [(lock(), [Recalled("A")])])
    state = json.loads(ledger.to_bytes())
    state["version"] = version
    with pytest.raises(docmem.DocumentCorrupt, match=str(version)):
        RecallLedger.from_bytes(json.dumps(state).encode())
