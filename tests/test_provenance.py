"""Each entry's provenance (docs/design.md, section 3.1): stored, strict, never recalled."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import docmem
from docmem.errors import DocumentCorrupt, InvalidArgument, LimitExceeded
from docmem.provider.document import (
    MAX_DOCUMENT_BYTES,
    MemoryDocument,
    new_document,
    parse,
    render_recall,
    serialize,
    skim,
)
from docmem.provider.journal import JournalRecord
from docmem.provider.provenance import Provenance, Restored
from docmem.provider.tools import mutation_id_for, session_of

VECTORS = json.loads((Path(__file__).parent / "vectors" / "documents.json").read_text("utf-8"))


def test_the_v2_good_vector_is_the_journal_example_saved_by_a_model() -> None:
    """The journal example, each save with its provenance: the docmem/2 vector, byte for byte."""
    example, v2 = VECTORS["journal_example"], VECTORS["v2"]
    saves = iter(v2["provenance"])
    document = new_document()
    for step, op in zip(example["history"], example["ops"], strict=True):
        record = JournalRecord(*op)
        if step["op"] == "save":
            made = next(saves)
            provenance = Provenance(
                step["index"], made["at"], made["by"], step["mutation_id"], made["session"]
            )
            document = document.with_entry(step["arg"], record, provenance)
        else:
            document = document.without_entry(int(step["arg"]), record)
    assert serialize(document) == v2["good"]["text"].encode("utf-8")
    assert render_recall(document, "user") == VECTORS["good"]["render_slot_user"]
    erased = document.erased(JournalRecord(*example["erase"]["record"]))
    assert serialize(erased) == v2["erased"]["text"].encode("utf-8")
    assert erased.erase_revision == erased.revision == 7
    assert not erased.provenance


def test_a_document_without_what_v1_cannot_say_is_written_as_v1() -> None:
    """Fence, unfence and export of an old store keep its bytes: no upgrade without a reason."""
    for vector in VECTORS["valid"]:
        data = vector["text"].encode("utf-8")
        document = parse(data)
        expected = b"<!-- docmem/2 " if _needs_v2(document) else b"<!-- docmem/1 "
        assert serialize(document).startswith(expected), vector["why"]


def _needs_v2(document: MemoryDocument) -> bool:
    reverted = any(record.op == "revert" for record in document.journal)
    return bool(document.provenance) or document.erase_revision is not None or reverted


def test_a_v1_document_knows_its_erase_from_the_journal_only() -> None:
    v1_erased = parse(VECTORS["empty"]["text"].encode("utf-8"))
    assert v1_erased.erase_revision is None
    assert v1_erased.last_erase() == 7
    assert parse(VECTORS["good"]["text"].encode("utf-8")).last_erase() is None


def test_an_older_release_refuses_docmem_2_as_corrupt() -> None:
    """What an older release's parser checks first: the header must start ``<!-- docmem/1 ``.

    Its parse fails closed on any other first line, and a save never
    overwrites a document it cannot parse (docs/design.md, section 3).
    """
    data = VECTORS["v2"]["good"]["text"].encode("utf-8")
    assert not data.startswith(b"<!-- docmem/1 ")
    with pytest.raises(DocumentCorrupt):
        parse(data.replace(b"<!-- docmem/2 ", b"<!-- docmem/1 ", 1))


# -- through the memory ----------------------------------------------------------------


def test_an_api_save_records_when_who_and_which_mutation(mem: docmem.BoundMemory) -> None:
    before = time.time_ns() // 1_000_000
    mem.save("Prefers metric units.", mutation_id="job-7", session_id="batch-1")
    after = time.time_ns() // 1_000_000
    document = mem.read()
    assert document is not None
    made = document.provenance[0]
    assert (made.index, made.by, made.mutation, made.session) == (0, "api", "job-7", "batch-1")
    assert before <= made.at <= after
    assert made.restored is None
    assert made.saved_at.tzinfo is not None


def test_a_tool_call_records_the_model_its_session_and_call(mem: docmem.BoundMemory) -> None:
    tool = mem.tools()["user__save_memory"]
    assert not tool({"text": "Likes tea."}, call_id="call/7", session_id="run%1/a").is_error
    document = mem.read()
    assert document is not None
    made = document.provenance[0]
    assert made.by == "model"
    assert made.session == "run%1/a"
    assert made.mutation == mutation_id_for("call/7", "run%1/a")


def test_a_tool_call_without_a_session_records_none(mem: docmem.BoundMemory) -> None:
    mem.tools()["user__save_memory"]({"text": "Likes tea."}, call_id="call_1")
    document = mem.read()
    assert document is not None
    assert document.provenance[0].session is None
    assert document.provenance[0].mutation.startswith("docmem-")


@given(st.text(min_size=1), st.text(min_size=1))
def test_session_of_inverts_mutation_id_for(session: str, call: str) -> None:
    assert session_of(mutation_id_for(call, session)) == session


def test_session_of_a_fresh_id_is_none() -> None:
    assert session_of(mutation_id_for(None, None)) is None


def test_inspect_shows_the_saved_entry_s_provenance(mem: docmem.BoundMemory) -> None:
    mem.save("Likes tea.", mutation_id="m1")
    record = mem.inspect("m1")
    assert record is not None
    assert record.provenance is not None
    assert (record.provenance.index, record.provenance.mutation) == (0, "m1")
    mem.remove(0, mutation_id="m2")
    removed = mem.inspect("m1")
    assert removed is not None
    assert removed.provenance is None


def test_remove_drops_the_record_and_erase_drops_them_all(mem: docmem.BoundMemory) -> None:
    for n in range(3):
        mem.save(f"Note {n}.")
    mem.remove(1)
    document = mem.read()
    assert document is not None
    assert sorted(document.provenance) == [0, 2]
    mem.erase()
    erased = mem.read()
    assert erased is not None
    assert not erased.provenance
    assert erased.erase_revision == erased.revision


def test_the_recall_never_shows_provenance(mem: docmem.BoundMemory) -> None:
    mem.save("Likes tea.", mutation_id="CANARY-MUTATION", session_id="CANARY-SESSION")
    (message,) = mem.recall()
    assert "CANARY" not in message.content
    assert message.content == render_recall(MemoryDocument({0: "Likes tea."}), "user")


def test_max_characters_counts_the_recall_not_the_provenance(
    store: docmem.Backend, scope: docmem.LockedScope
) -> None:
    """A save that exactly fills the recall succeeds whatever its ids weigh."""
    empty = len(render_recall(MemoryDocument({0: "x"}), "user"))
    mem = docmem.FileMemory(store, max_characters=empty).bind(scope, slot="user")
    long_id = "m" * 1024
    assert mem.save("x", mutation_id=long_id, session_id="s" * 1024).status == "saved"


def test_the_byte_cap_counts_the_provenance(
    store: docmem.Backend, scope: docmem.LockedScope
) -> None:
    """Near the cap, a save that would fit without its provenance is refused."""
    mem = docmem.FileMemory(store, max_characters=10**6).bind(scope, slot="user")
    note = "n" * 2000
    refused = _fill_until_refused(mem, note)
    assert "stored document" in str(refused)
    document = mem.read()
    assert document is not None
    data = serialize(document)
    assert len(data) <= MAX_DOCUMENT_BYTES
    assert len(data) - _provenance_bytes(document) + 2100 < MAX_DOCUMENT_BYTES


def _fill_until_refused(mem: docmem.BoundMemory, note: str) -> LimitExceeded:
    for n in range(100):
        try:
            mem.save(f"{n} {note}", mutation_id=f"m{n}" + "i" * 1000, session_id="s" * 1000)
        except LimitExceeded as refused:
            return refused
    raise AssertionError("the cap never refused a save")


def _provenance_bytes(document: MemoryDocument) -> int:
    import msgspec

    return len(msgspec.json.encode(tuple(document.provenance.values())))


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"made_by": "model-ish"}, "made_by"),
        ({"made_by": "revert"}, "made_by"),
        ({"session_id": ""}, "session_id"),
        ({"session_id": "s" * 1025}, "session_id"),
        ({"session_id": "\ud800"}, "session_id"),
    ],
)
def test_a_bad_made_by_or_session_is_refused_before_any_write(
    mem: docmem.BoundMemory, arguments: dict[str, Any], problem: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        mem.save("Likes tea.", **arguments)
    assert problem in str(refused.value)
    assert refused.value.outcome == "not_committed"
    assert mem.read() is None


def test_to_dict_gives_iso_times_and_the_restoring_revert() -> None:
    record = Provenance(3, 1764633600123, "cli", "m", None, Restored(1764633700000, "undo"))
    assert record.to_dict() == {
        "index": 3,
        "saved_at": "2025-12-02T00:00:00.123Z",
        "by": "cli",
        "mutation_id": "m",
        "session_id": None,
        "restored_at": "2025-12-02T00:01:40.000Z",
        "restored_by": "undo",
    }


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda vector: str(vector["why"]))
def test_skim_reads_what_parse_reads_from_the_header(vector: dict[str, Any]) -> None:
    data = vector["text"].encode("utf-8")
    document = parse(data)
    skimmed = skim(data)
    assert skimmed.revision == document.revision
    assert skimmed.provenance == document.provenance
    assert skimmed.entries == len(document.entries)


@pytest.mark.parametrize(
    "vector",
    # Not "provenance for a missing entry": only the entry lines tell, and skim reads none.
    [
        v
        for v in VECTORS["corrupt"]
        if v["why"].startswith("docmem/2") and "missing entry" not in v["why"]
    ],
    ids=lambda vector: str(vector["why"]),
)
def test_skim_refuses_a_corrupt_header(vector: dict[str, Any]) -> None:
    with pytest.raises(DocumentCorrupt):
        skim(vector["text"].encode("utf-8"))
