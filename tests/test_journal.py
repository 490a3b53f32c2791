"""The mutation journal (docs/design.md, section 5): ids, digests, lookup, the 32-record bound."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docmem.errors import InvalidArgument
from docmem.provider.journal import (
    MAX_OLDER_IDS,
    MAX_RECORDS,
    OLDER_ID_BYTES,
    OUTCOME_OF,
    JournalRecord,
    append,
    checked_mutation_id,
    find,
    find_older,
    id_digest,
    remember,
    request_digest,
)

VECTORS = json.loads((Path(__file__).parent / "vectors" / "documents.json").read_text("utf-8"))
EXAMPLE = VECTORS["journal_example"]
DIGEST = re.compile(r"[A-Za-z0-9_-]{22}")


# --- an independent reference, written from docs/design.md, section 5 -----------------------


def _s(text: str) -> bytes:
    data = text.encode("utf-8")
    return b"S" + struct.pack(">I", len(data)) + data


def _digest16(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()[:16]).rstrip(b"=").decode()


def ref_id_digest(mutation_id: str) -> str:
    return _digest16(b"docmem.mid.v1\0" + _s(mutation_id))


def ref_request_digest(mutation_id: str, op: str, arg: str) -> str:
    body = b"T" + struct.pack(">I", 3) + _s(mutation_id) + _s(op) + _s(arg)
    return _digest16(b"docmem.req.v1\0" + body)


# --- vectors ---------------------------------------------------------------------------------


HISTORY = [
    pytest.param(step, op, id=f"{step['op']}-{step['mutation_id']}")
    for step, op in zip(EXAMPLE["history"], EXAMPLE["ops"], strict=True)
]


@pytest.mark.parametrize(("step", "op"), HISTORY)
def test_history_digests_match_the_stored_ops(step: dict[str, Any], op: list[Any]) -> None:
    assert id_digest(step["mutation_id"]) == op[0]
    assert request_digest(step["mutation_id"], step["op"], step["arg"]) == op[1]
    assert [op[2], op[3], op[4], op[5]] == [step["rev"], step["op"], step["outcome"], step["index"]]
    assert OUTCOME_OF[step["op"]] == step["outcome"]
    # The same record, built from the history step, encodes exactly as stored.
    record = JournalRecord(
        id_digest(step["mutation_id"]),
        request_digest(step["mutation_id"], step["op"], step["arg"]),
        step["rev"],
        step["op"],
        step["outcome"],
        step["index"],
    )
    assert msgspec.json.encode(record) == msgspec.json.encode(op)


def test_every_history_step_has_a_stored_op() -> None:
    assert len(EXAMPLE["history"]) == len(EXAMPLE["ops"])
    assert {step["op"] for step in EXAMPLE["history"]} == {"save", "remove"}


def test_erase_digests_match_the_stored_record() -> None:
    erase = EXAMPLE["erase"]
    record = erase["record"]
    assert id_digest(erase["mutation_id"]) == record[0]
    assert request_digest(erase["mutation_id"], "erase", "") == record[1]
    assert record[3:] == ["erase", "erased", None]
    encoded = msgspec.json.encode(JournalRecord(*record))
    assert encoded == msgspec.json.encode(record)
    assert encoded.endswith(b',"erase","erased",null]')


def test_reference_agrees_with_the_vectors() -> None:
    """Guards the test's own reference, used by the property tests below."""
    for step, op in zip(EXAMPLE["history"], EXAMPLE["ops"], strict=True):
        assert ref_id_digest(step["mutation_id"]) == op[0]
        assert ref_request_digest(step["mutation_id"], step["op"], step["arg"]) == op[1]
    erase = EXAMPLE["erase"]
    assert ref_request_digest(erase["mutation_id"], "erase", "") == erase["record"][1]


def test_records_decode_from_six_element_arrays() -> None:
    records = msgspec.json.decode(
        msgspec.json.encode(EXAMPLE["ops"]), type=tuple[JournalRecord, ...]
    )
    assert [list(msgspec.structs.astuple(r)) for r in records] == EXAMPLE["ops"]
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(
            msgspec.json.encode([[*EXAMPLE["ops"][0], 1]]), type=tuple[JournalRecord, ...]
        )
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(
            msgspec.json.encode([EXAMPLE["ops"][0][:5]]), type=tuple[JournalRecord, ...]
        )


def test_records_are_frozen() -> None:
    record = JournalRecord(*EXAMPLE["ops"][0])
    with pytest.raises(AttributeError):
        record.rev = 99  # type: ignore[misc]


# --- digest properties --------------------------------------------------------------------

_ids = st.text(max_size=60)
_ops = st.sampled_from(["save", "remove", "erase"])
_args = st.text(max_size=60)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_ids, _ops, _args)
def test_digests_are_22_base64url_characters(mutation_id: str, op: Any, arg: str) -> None:
    ident = id_digest(mutation_id)
    request = request_digest(mutation_id, op, arg)
    assert DIGEST.fullmatch(ident)
    assert DIGEST.fullmatch(request)
    assert len(base64.urlsafe_b64decode(ident + "==")) == 16
    assert ident == ref_id_digest(mutation_id)
    assert request == ref_request_digest(mutation_id, op, arg)


@pytest.mark.parametrize(
    "mutation_id", ["", "x", "sess-1/call_0", "\u00e9\U0001f44b", "a" * 5000, "\x00"]
)
def test_digest_shape_for_edge_ids(mutation_id: str) -> None:
    assert DIGEST.fullmatch(id_digest(mutation_id))
    assert DIGEST.fullmatch(request_digest(mutation_id, "save", "text"))


def test_request_digest_covers_the_id_op_and_arg() -> None:
    base = request_digest("sess/1", "save", "Likes tea.")
    assert request_digest("sess/2", "save", "Likes tea.") != base  # cannot confirm a guess
    assert request_digest("sess/1", "save", "Likes coffee.") != base
    assert request_digest("sess/1", "remove", "Likes tea.") != base
    assert request_digest("sess/1", "save", "Likes tea.") == base
    assert request_digest("sess/1", "remove", "3") != request_digest("sess/1", "remove", "4")
    assert request_digest("sess/1", "erase", "") != request_digest("sess/2", "erase", "")


def test_request_digest_fields_cannot_shift() -> None:
    assert request_digest("ab", "save", "c") != request_digest("a", "save", "bc")
    assert request_digest("a", "save", "") != request_digest("", "save", "a")
    assert request_digest("id\x00save", "save", "x") != request_digest("id", "save", "\x00savex")


def test_id_and_request_digests_are_domain_separated() -> None:
    assert id_digest("x") != request_digest("x", "save", "")
    assert id_digest("x") != ref_request_digest("x", "erase", "")
    assert id_digest("sess-1/call_0") != id_digest("sess-1/call_1")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_ids, _ops, _args), min_size=2, max_size=8, unique=True),
)
def test_distinct_requests_have_distinct_digests(requests: list[tuple[str, Any, str]]) -> None:
    digests = {request_digest(i, o, a) for i, o, a in requests}
    assert len(digests) == len(requests)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(_ids, min_size=2, max_size=8, unique=True))
def test_distinct_ids_have_distinct_digests(ids: list[str]) -> None:
    assert len({id_digest(i) for i in ids}) == len(ids)


def test_digests_do_not_reveal_the_id() -> None:
    secret = "CANARY-session/call"
    assert "CANARY" not in id_digest(secret)
    assert "CANARY" not in request_digest(secret, "save", "CANARY text")


# --- find ------------------------------------------------------------------------------------


def _record(rev: int, ident: str = "AAAAAAAAAAAAAAAAAAAAAA", index: int = 0) -> JournalRecord:
    return JournalRecord(ident, "BBBBBBBBBBBBBBBBBBBBBw", rev, "save", "saved", index)


def test_find_returns_the_matching_record() -> None:
    records = tuple(JournalRecord(*op) for op in EXAMPLE["ops"])
    for step, record in zip(EXAMPLE["history"], records, strict=True):
        assert find(records, id_digest(step["mutation_id"])) == record
    assert find(records, id_digest("sess-1/never")) is None
    assert find((), id_digest("sess-1/call_0")) is None


def test_find_returns_the_newest_match() -> None:
    ident = id_digest("reused")
    other = id_digest("other")
    records = (
        _record(1, ident, index=0),
        _record(2, other, index=1),
        _record(3, ident, index=2),
        _record(4, other, index=3),
    )
    found = find(records, ident)
    assert found is not None
    assert found.rev == 3
    assert found.index == 2
    found = find(records, other)
    assert found is not None
    assert found.rev == 4


def test_find_compares_the_id_digest_only() -> None:
    record = _record(1, id_digest("x"))
    assert find((record,), record.request_digest) is None


# --- append ----------------------------------------------------------------------------------


def test_append_adds_newest_last() -> None:
    records: tuple[JournalRecord, ...] = ()
    for rev in range(1, 6):
        records, older = append(records, b"", _record(rev))
        assert len(records) == rev
        assert records[-1].rev == rev
        assert older == b""
    assert [r.rev for r in records] == [1, 2, 3, 4, 5]


def test_append_keeps_the_newest_32() -> None:
    full = tuple(_record(rev) for rev in range(1, MAX_RECORDS + 1))
    assert MAX_RECORDS == 32
    assert len(append(full[:-1], b"", full[-1])[0]) == 32
    records, older = append(full, b"", _record(33))
    assert len(records) == 32
    assert [r.rev for r in records] == list(range(2, 34))
    assert older == remember(b"", full[:1])
    for rev in range(34, 134):
        records, older = append(records, older, _record(rev))
        assert len(records) == 32
    assert [r.rev for r in records] == list(range(102, 134))


def test_append_does_not_modify_its_input() -> None:
    full = tuple(_record(rev) for rev in range(1, MAX_RECORDS + 1))
    before = list(full)
    append(full, b"", _record(99))
    assert list(full) == before


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 100), st.integers(1, 100))
def test_append_property(start: int, extra: int) -> None:
    records = tuple(_record(rev) for rev in range(1, start + 1))
    older = b""
    for rev in range(start + 1, start + extra + 1):
        records, older = append(records, older, _record(rev))
    total = start + extra
    expected = list(range(max(1, total - MAX_RECORDS + 1), total + 1))
    assert [r.rev for r in records] == expected


# --- older ids -------------------------------------------------------------------------------


def _ided(rev: int) -> JournalRecord:
    return _record(rev, id_digest(f"m{rev}"))


def test_a_record_pushed_out_leaves_its_id_among_the_older_ids() -> None:
    records: tuple[JournalRecord, ...] = ()
    older = b""
    for rev in range(1, MAX_RECORDS + 11):
        records, older = append(records, older, _ided(rev))
    assert len(older) == 10 * OLDER_ID_BYTES
    for rev in range(1, 11):
        assert find(records, id_digest(f"m{rev}")) is None
        assert find_older(older, id_digest(f"m{rev}"))
    assert not find_older(older, id_digest(f"m{MAX_RECORDS + 10}"))  # still a whole record
    assert not find_older(older, id_digest("never"))


def test_the_older_ids_keep_the_newest_320() -> None:
    assert MAX_OLDER_IDS == 320  # with the 32 records: a window of 352 writing mutations
    older = remember(b"", [_ided(rev) for rev in range(1, 401)])
    assert len(older) == MAX_OLDER_IDS * OLDER_ID_BYTES
    assert not find_older(older, id_digest("m80"))
    assert all(find_older(older, id_digest(f"m{rev}")) for rev in range(81, 401))


def test_an_older_id_is_the_head_of_the_id_digest() -> None:
    digest = id_digest("sess-1/call_abc")
    older = remember(b"", [_record(1, digest)])
    assert older == base64.urlsafe_b64decode(digest + "==")[:OLDER_ID_BYTES]


def test_find_older_matches_only_whole_aligned_ids() -> None:
    wanted = remember(b"", [_record(1, id_digest("x"))])
    # The same eight bytes straddling two stored ids are not a match.
    straddling = b"\0" * 4 + wanted + b"\0" * 4
    assert not find_older(straddling, id_digest("x"))
    assert find_older(b"\0" * OLDER_ID_BYTES + wanted, id_digest("x"))


# --- mutation ids ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mutation_id", ["a", "sess-1/call_abc", "x" * 1024, "é" * 512, "\U0001f600"]
)
def test_checked_mutation_id_accepts_up_to_1024_utf8_bytes(mutation_id: str) -> None:
    assert checked_mutation_id(mutation_id) is mutation_id


@pytest.mark.parametrize(
    ("mutation_id", "fragment"),
    [
        ("", "non-empty string"),
        (None, "non-empty string"),
        (7, "non-empty string"),
        (b"bytes", "non-empty string"),
        ("x" * 1025, "longer than 1,024 bytes"),
        ("é" * 513, "longer than 1,024 bytes"),
        ("secret-\ud800", "not valid UTF-8"),
    ],
)
def test_checked_mutation_id_refuses_without_echoing_the_id(
    mutation_id: Any, fragment: str
) -> None:
    with pytest.raises(InvalidArgument, match=fragment) as caught:
        checked_mutation_id(mutation_id)
    assert "secret" not in str(caught.value)
    assert caught.value.__context__ is None
