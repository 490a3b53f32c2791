"""A write counts only on top of the newest version, whatever the store's clock does.

Garbage collection trusts the store's timestamps, so a clock that steps
forward frees version names early, while a writer that saw an older version
within ``max_staleness`` is about to write. These tests step the clock (a
listing wrapper that shows every object from before the step ``STEP``
seconds older: the same as a store whose clock jumped forward, or a writer
paused that long) with the default options, move the collecting store's
hidden clock on as far (so its next write lists the key in full and
collects), and pause that writer between its read and its create. Its create
then lands on a freed name below the newest version: it must never be
reported committed, and nobody may read it. Also here: stores written by the
previous release (no envelope) still read and take new versions.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fsspec_stores import ClockStep, Raw, pause_before_create

import docmem
from docmem.errors import VersionConflict, WriteOutcomeUnknown
from docmem_fsspec import FsspecBackend
from docmem_fsspec.commitlog import digest, object_name, unwrap

Opener = Callable[..., FsspecBackend]
SCOPE = docmem.lock_scope(namespace="tests:fsspec-chain", scope=("user", "u_1"))


def write_on(store: FsspecBackend, base: str, texts: range) -> str:
    version = base
    for n in texts:
        version = store.write("k", f"theirs {n}".encode(), expected=version)
    return version


def test_a_create_on_a_name_freed_by_a_clock_step_is_a_conflict(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = open_fsspec()  # the defaults: retain 8, grace 600 s, max_staleness 60 s
    other = docmem.open_store(writer.url, **writer.options)
    raw = Raw(writer, kind)
    clock = ClockStep(monkeypatch, writer)
    base = writer.write("k", b"mine 1", expected=None)

    def others_write_and_the_clock_steps() -> None:
        version = write_on(other, base, range(2, 10))
        clock.step(other, "k", kind)
        write_on(other, version, range(10, 11))  # collects 1 and 2: their successors look old
        assert object_name(2) not in raw.names("k")
        assert object_name(3) in raw.names("k")

    pause_before_create(writer, others_write_and_the_clock_steps)
    with pytest.raises(VersionConflict):
        writer.write("k", b"mine 2", expected=base)  # re-creates 2 below the newest version
    assert object_name(2) in raw.names("k")  # there, but garbage:
    for reader in (writer, docmem.open_store(writer.url, **writer.options)):
        assert reader.read("k") == docmem.Stored(data=b"theirs 10", version=object_name(10))
        assert [entry.revision for entry in reader.history("k")] == list(range(3, 11))


def test_a_create_whose_successor_was_collected_too_is_unknown(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = open_fsspec()
    other = docmem.open_store(writer.url, **writer.options)
    raw = Raw(writer, kind)
    clock = ClockStep(monkeypatch, writer)
    base = writer.write("k", b"mine 1", expected=None)

    def others_write_and_the_clock_steps() -> None:
        version = write_on(other, base, range(2, 11))
        clock.step(other, "k", kind)
        write_on(other, version, range(11, 12))  # collects 1, 2 and 3
        assert object_name(3) not in raw.names("k")

    pause_before_create(writer, others_write_and_the_clock_steps)
    with pytest.raises(WriteOutcomeUnknown):
        writer.write("k", b"mine 2", expected=base)
    assert writer.read("k") == docmem.Stored(data=b"theirs 11", version=object_name(11))


def test_a_save_paused_past_a_clock_step_is_never_lost(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_fsspec()
    other = docmem.open_store(store.url, **store.options)
    clock = ClockStep(monkeypatch, store)
    mine = docmem.FileMemory(store).bind(SCOPE, slot="user")
    theirs = docmem.FileMemory(other).bind(SCOPE, slot="user")
    mine.save("Prefers tea.", mutation_id="m-1")  # this process now holds revision 1

    def others_save_and_the_clock_steps() -> None:
        for n in range(2, 10):
            theirs.save(f"Fact {n}.", mutation_id=f"t-{n}")
        clock.step(other, SCOPE.storage_key, kind)
        theirs.save("Fact 10.", mutation_id="t-10")  # collects revisions 1 and 2

    pause_before_create(store, others_save_and_the_clock_steps)
    result = mine.save("Speaks Norwegian.", mutation_id="m-2")
    assert result.status == "saved"
    document = theirs.read()
    assert document is not None
    assert "Speaks Norwegian." in document.entries.values(), "a save reported saved was lost"
    assert len(document.entries) == 11
    record = mine.inspect("m-2")
    assert record is not None
    assert record.outcome == "saved"


# -- stores the previous release wrote ---------------------------------------------------


def test_versions_of_the_previous_format_read_and_take_new_versions(
    open_fsspec: Opener, kind: str
) -> None:
    store = open_fsspec()
    raw = Raw(store, kind)
    raw.put("k", b"old one")  # bare objects, as the previous release wrote them
    raw.put("k", b"old two")
    assert store.read("k") == docmem.Stored(data=b"old two", version=object_name(2))
    third = store.write("k", b"new three", expected=object_name(2))
    envelope, data = unwrap(raw.read("k", third))
    assert data == b"new three"
    assert envelope is not None
    assert envelope.parent is not None
    assert (envelope.parent.revision, envelope.parent.digest) == (2, digest(b"old two"))
    assert [entry.revision for entry in store.history("k")] == [1, 2, 3]
    assert store.read_version("k", object_name(1)) == docmem.Stored(b"old one", object_name(1))
    stranger = docmem.open_store(store.url, **store.options)  # has seen nothing
    fourth = stranger.write("k", b"new four", expected=third)
    assert store.read("k") == docmem.Stored(data=b"new four", version=fourth)


def test_a_document_of_the_previous_format_keeps_working(open_fsspec: Opener, kind: str) -> None:
    store = open_fsspec()
    elsewhere = docmem.open_store("memory://")
    docmem.FileMemory(elsewhere).bind(SCOPE, slot="user").save("Prefers tea.", mutation_id="m-1")
    stored = elsewhere.read(SCOPE.storage_key)
    assert stored is not None
    Raw(store, kind).put(SCOPE.storage_key, stored.data)
    mine = docmem.FileMemory(store).bind(SCOPE, slot="user")
    assert mine.save("Prefers tea.", mutation_id="m-1").status == "saved"  # the journal knows it
    assert mine.save("Lives in Oslo.", mutation_id="m-2").status == "saved"
    document = mine.read()
    assert document is not None
    assert list(document.entries.values()) == ["Prefers tea.", "Lives in Oslo."]
