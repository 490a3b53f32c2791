"""Reads and write checks that list only the names after one version, attacked.

A read of a version this process holds, and the check after every create,
list just the names after that version (one short request on S3) instead of
the whole folder. These tests check what that costs (by counting the
dialect's calls) and attack the argument that makes it safe (the commitlog
module docstring): a pause past ``grace`` (the hidden clock, and the store's
clock stepped), a collector or a purge or a delete running between a read
and a create or between two reads, the freshness window running out, and a
lost race. Several show why an existence check of the name right above the
cached version would not do: that name is gone, or was never the one used,
while the cached version is long superseded.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fsspec_stores import STEP, Clock, ClockStep, Raw, pause_before_create

import docmem
from docmem.errors import VersionConflict, WriteOutcomeUnknown
from docmem_fsspec import FsspecBackend
from docmem_fsspec.commitlog import Kind, object_name
from docmem_fsspec.dialects import LocalDialect

Opener = Callable[..., FsspecBackend]
CALLS = ("list_folder", "list_after", "fetch", "create")


class Calls:
    """Counts the calls ``store`` makes to its dialect, by method.

    Only the backend's own calls count: where a dialect cannot list from a
    name (adlfs), its listing from a name lists the folder, and that inner
    call is not counted again.
    """

    def __init__(self, store: FsspecBackend) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self._depth = 0
        dialect = store._dialect
        for name in CALLS:
            setattr(dialect, name, self._counting(name, getattr(dialect, name)))

    def _counting(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any) -> Any:
            if not self._depth:
                self.counts[name] += 1
            self._depth += 1
            try:
                return real(*args)
            finally:
                self._depth -= 1

        return counted

    def taken(self) -> dict[str, int]:
        """The calls since the last :meth:`taken`, only those made."""
        found = {name: count for name, count in self.counts.items() if count}
        self.counts.clear()
        return found


def two(open_fsspec: Opener, **options: Any) -> tuple[FsspecBackend, FsspecBackend]:
    """A store and another client of the same store (its own filesystems and cache)."""
    store = open_fsspec(**options)
    return store, docmem.open_store(store.url, **store.options)  # type: ignore[return-value]


def write_many(store: FsspecBackend, base: str | None, texts: range) -> str:
    version = base
    for n in texts:
        version = store.write("k", f"write {n}".encode(), expected=version)
    assert version is not None
    return version


def stored(n: int) -> docmem.Stored:
    return docmem.Stored(data=f"write {n}".encode(), version=object_name(n))


# -- what a read costs ----------------------------------------------------------------


def test_an_unchanged_read_is_one_short_listing_however_long_ago(open_fsspec: Opener) -> None:
    store = open_fsspec()
    write_many(store, None, range(1, 4))
    calls = Calls(store)
    assert store.read("k") == stored(3)
    assert calls.taken() == {"list_after": 1}
    # No window: a version seen ten grace periods ago is confirmed the same way.
    Clock(store).advance(10 * store.grace)
    assert store.read("k") == stored(3)
    assert calls.taken() == {"list_after": 1}


def test_a_read_after_other_writes_fetches_only_the_newest(open_fsspec: Opener) -> None:
    store, other = two(open_fsspec)
    base = write_many(store, None, range(1, 3))
    write_many(other, base, range(3, 7))
    calls = Calls(store)
    assert store.read("k") == stored(6)
    assert calls.taken() == {"list_after": 1, "fetch": 1}
    assert store.read("k") == stored(6)
    assert calls.taken() == {"list_after": 1}


def test_a_first_read_lists_the_folder(open_fsspec: Opener) -> None:
    store, other = two(open_fsspec)
    write_many(other, None, range(1, 4))
    calls = Calls(store)
    assert store.read("k") == stored(3)
    assert calls.taken() == {"list_folder": 1, "fetch": 1}


# -- reads attacked: what an existence check of the next name would miss ---------------------


def test_a_read_after_a_purge_never_serves_the_purged_version(
    open_fsspec: Opener, kind: str
) -> None:
    reader, other = two(open_fsspec)
    base = write_many(reader, None, range(1, 2))
    assert reader.read("k") == stored(1)
    write_many(other, base, range(2, 4))
    other.purge_history("k")  # frees 1 and 2 now, not after grace
    names = Raw(reader, kind).names("k")
    assert object_name(2) not in names  # the next name is gone: "1 is still newest"?
    assert reader.read("k") == stored(3)
    assert reader.read_version("k", object_name(1)) is None


def test_a_read_after_a_delete_finds_no_key(open_fsspec: Opener, kind: str) -> None:
    reader, operator = two(open_fsspec)
    write_many(reader, None, range(1, 2))
    assert reader.read("k") == stored(1)
    operator.delete("k")
    assert Raw(reader, kind).names("k") == [object_name(2, Kind.TOMBSTONE)]  # no 2.md
    assert reader.read("k") is None
    assert list(reader.keys()) == []


def test_a_read_after_a_delete_and_a_new_life_finds_the_new_version(
    open_fsspec: Opener, kind: str
) -> None:
    reader, other = two(open_fsspec)
    write_many(reader, None, range(1, 2))
    assert reader.read("k") == stored(1)
    other.delete("k")
    assert other.write("k", b"new life", expected=None) == object_name(3)
    assert object_name(2) not in Raw(reader, kind).names("k")
    assert reader.read("k") == docmem.Stored(data=b"new life", version=object_name(3))


def test_a_reader_paused_past_grace_while_names_were_collected(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader, other = two(open_fsspec)  # the defaults: retain 8, grace 600 s
    raw = Raw(reader, kind)
    clock = ClockStep(monkeypatch, reader)
    base = write_many(reader, None, range(1, 2))
    assert reader.read("k") == stored(1)
    version = write_many(other, base, range(2, 11))
    clock.step(other, "k", kind)  # STEP s pass: 1 to 10 are old, and other collects
    Clock.of(reader).advance(STEP)  # the reader slept through it
    write_many(other, version, range(11, 12))
    names = raw.names("k")
    assert object_name(1) not in names
    assert object_name(2) not in names  # the next name is gone: "1 is still newest"?
    calls = Calls(reader)
    assert reader.read("k") == stored(11)
    assert calls.taken() == {"list_after": 1, "fetch": 1}


def test_a_version_put_out_of_band_is_read(open_fsspec: Opener, kind: str) -> None:
    store = open_fsspec()
    write_many(store, None, range(1, 3))
    Raw(store, kind).put("k", b"from outside")
    assert store.read("k") == docmem.Stored(data=b"from outside", version=object_name(3))


# -- writes: the check after the create, and the window before it ---------------------------


def test_a_write_within_max_staleness_sends_one_short_listing_after_its_create(
    open_fsspec: Opener,
) -> None:
    store = open_fsspec()
    version = write_many(store, None, range(1, 2))  # its first write lists in full
    calls = Calls(store)
    assert store.write("k", b"write 2", expected=version) == object_name(2)
    assert calls.taken() == {"create": 1, "list_after": 1}
    assert store.read("k") == stored(2)


def test_past_max_staleness_a_short_listing_refuses_a_stale_write_before_any_create(
    open_fsspec: Opener, kind: str
) -> None:
    store, other = two(open_fsspec)
    first = write_many(store, None, range(1, 2))
    second = write_many(other, first, range(2, 3))
    Clock(store).advance(store.max_staleness)  # the window ran out
    before = Raw(store, kind).names("k")
    calls = Calls(store)
    with pytest.raises(VersionConflict):
        store.write("k", b"stale", expected=first)
    assert calls.taken() == {"list_after": 1}, "no create may be sent on a superseded version"
    assert Raw(store, kind).names("k") == before
    # Still the newest, seen too long ago: confirmed by the same short listing.
    assert store.read("k") == stored(2)
    Clock.of(store).advance(store.max_staleness)
    calls.taken()
    assert store.write("k", b"write 3", expected=second) == object_name(3)
    assert calls.taken() == {"list_after": 2, "create": 1}


def test_a_version_from_another_client_is_fetched_then_confirmed(open_fsspec: Opener) -> None:
    store, other = two(open_fsspec)
    write_many(store, None, range(1, 2))
    version = write_many(other, object_name(1), range(2, 3))
    calls = Calls(store)
    assert store.write("k", b"write 3", expected=version) == object_name(3)
    # The object first, then the names after it: what was fetched is what is confirmed.
    assert calls.taken() == {"fetch": 1, "list_after": 2, "create": 1}
    with pytest.raises(VersionConflict):
        store.write("k", b"never", expected=object_name(7))


def test_a_writer_paused_past_grace_has_its_create_on_a_freed_name_refused(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, other = two(open_fsspec)
    raw = Raw(writer, kind)
    clock = ClockStep(monkeypatch, writer)
    base = write_many(writer, None, range(1, 2))

    def paused_past_grace() -> None:
        version = write_many(other, base, range(2, 10))
        clock.step(other, "k", kind)
        Clock.of(writer).advance(STEP)
        write_many(other, version, range(10, 11))  # collects 1 and 2
        assert object_name(2) not in raw.names("k")

    pause_before_create(writer, paused_past_grace)
    calls = Calls(writer)
    with pytest.raises(VersionConflict):
        writer.write("k", b"mine", expected=base)  # decided on its fresh copy, then paused
    # Back from its pause, the writer's collection is due: the whole folder, and the verdict.
    taken = calls.taken()
    assert (taken.get("list_after"), taken.get("list_folder")) == (None, 1)
    assert writer.read("k") == stored(10)
    assert [entry.revision for entry in writer.history("k")] == list(range(3, 11))


def test_a_purge_between_a_read_and_a_create_leaves_the_outcome_open(
    open_fsspec: Opener, kind: str
) -> None:
    writer, other = two(open_fsspec)
    base = write_many(writer, None, range(1, 2))

    def others_write_and_purge() -> None:
        write_many(other, base, range(2, 4))
        other.purge_history("k")  # frees 1 and 2 at once

    pause_before_create(writer, others_write_and_purge)
    with pytest.raises(WriteOutcomeUnknown):
        writer.write("k", b"mine", expected=base)  # re-creates 2 below 3
    assert object_name(2) in Raw(writer, kind).names("k")  # there, but garbage
    assert writer.read("k") == stored(3)


def test_a_delete_between_a_read_and_a_create_leaves_the_outcome_open(
    open_fsspec: Opener,
) -> None:
    writer, operator = two(open_fsspec)
    base = write_many(writer, None, range(1, 2))
    pause_before_create(writer, lambda: operator.delete("k"))
    with pytest.raises(WriteOutcomeUnknown):
        writer.write("k", b"mine", expected=base)  # 2.md beside the tombstone 2
    assert writer.read("k") is None


def test_a_create_built_on_before_its_check_is_committed(open_fsspec: Opener) -> None:
    writer, other = two(open_fsspec)
    base = write_many(writer, None, range(1, 2))
    dialect = writer._dialect
    real = dialect.create

    def create_then_others_build_on_it(fs: Any, path: str, data: bytes) -> None:
        dialect.create = real  # type: ignore[method-assign]
        real(fs, path, data)
        write_many(other, object_name(2), range(3, 4))  # before the writer's check

    dialect.create = create_then_others_build_on_it  # type: ignore[method-assign]
    assert writer.write("k", b"write 2", expected=base) == object_name(2)
    assert writer.read("k") == stored(3)
    assert [entry.revision for entry in writer.history("k")] == [1, 2, 3]


def test_a_lost_race_lists_the_folder_once_then_short_again(open_fsspec: Opener) -> None:
    store, other = two(open_fsspec)
    base = write_many(store, None, range(1, 2))
    write_many(other, base, range(2, 3))
    calls = Calls(store)
    with pytest.raises(VersionConflict):
        store.write("k", b"lost", expected=base)  # its fresh copy: the create is refused
    assert calls.taken() == {"create": 1}
    assert store.read_recent("k") == stored(2)  # contended: read afresh, the whole folder
    assert calls.taken() == {"list_folder": 1, "fetch": 1}
    assert store.read_recent("k") == stored(2)  # the listing found its copy current again
    assert calls.taken() == {"list_after": 1}


def test_collection_lists_in_full_at_most_once_per_quarter_of_grace(
    open_fsspec: Opener,
) -> None:
    store = open_fsspec()
    version = write_many(store, None, range(1, 2))
    calls = Calls(store)
    for n in range(2, 6):
        version = store.write("k", f"write {n}".encode(), expected=version)
    assert calls.taken() == {"create": 4, "list_after": 4}
    Clock(store).advance(store.grace / 4)
    # Its copy is past max_staleness too: a short listing before the create, the full one after.
    store.write("k", b"write 6", expected=version)
    assert calls.taken() == {"list_after": 1, "create": 1, "list_folder": 1}


# -- the dialects' listings from a name -------------------------------------------------------


def test_the_local_listing_from_a_name_gives_only_later_names(tmp_path: Path) -> None:
    folder = tmp_path / "k"
    folder.mkdir()
    for name in (object_name(1), object_name(2), object_name(2, Kind.PURGE), object_name(3)):
        (folder / name).write_bytes(b"x")
    (folder / f".tmp-{'a' * 32}").write_bytes(b"")
    (folder / "sub").mkdir()
    found = LocalDialect().list_after(None, str(folder), object_name(2))
    assert found is not None
    assert sorted(info["name"].rsplit("/", 1)[-1] for info in found) == [
        object_name(2, Kind.PURGE),
        object_name(3),
        "sub",
    ]
    assert {info["name"].rsplit("/", 1)[-1]: info["type"] for info in found}["sub"] != "file"
    assert LocalDialect().list_after(None, str(tmp_path / "missing"), object_name(1)) is None


def test_an_s3_listing_from_a_name_follows_every_page(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind != "localstack":
        pytest.skip(f"capability: only S3 (LocalStack) pages a listing from a name, not {kind}")
    monkeypatch.setattr("docmem_fsspec.dialects._LIST_PAGE", 2)
    store, other = two(open_fsspec)
    base = write_many(store, None, range(1, 2))
    write_many(other, base, range(2, 8))  # six newer versions: three pages of two
    assert store.read("k") == stored(7)
    found = store._dialect.list_after(store.filesystems()[0], store.folder("k"), object_name(1))
    assert [info["name"].rsplit("/", 1)[-1] for info in found] == [
        object_name(n) for n in range(2, 8)
    ]
