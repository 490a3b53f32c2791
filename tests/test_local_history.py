"""file:// history: the last ``history`` versions of a key kept as hard links beside it.

What the conformance suite cannot see from outside: the names on disk, the
bound the option sets (also when a store is reopened with another one), that
a kept version is the replaced file itself and not a copy, that a lone
writer never lists the folder, and that a failed or crashed write leaves no
kept version that is really the current document.
"""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path

import pytest

import docmem
from docmem.backend import Stored
from docmem.errors import HistoryNotKept, StoreNotConfigured
from docmem.storage.builtin import local
from docmem.storage.builtin.local import LocalBackend


def _write_versions(store: LocalBackend, key: str, count: int, start: int = 0) -> list[Stored]:
    """``count`` more versions of ``key`` (``v<n>``), each over the one before; what each stored."""
    current = store.read(key)
    written: list[Stored] = []
    for number in range(start, start + count):
        data = b"v%d" % number
        version = store.write(key, data, expected=None if current is None else current.version)
        current = Stored(data=data, version=version)
        written.append(current)
    return written


def _kept_names(store: LocalBackend, key: str) -> list[str]:
    directory = Path(store.path(key)).parent
    pattern = re.compile(re.escape(key) + r"\.md\.~\d+")
    return sorted((n for n in os.listdir(directory) if pattern.fullmatch(n)), key=_number)


def _number(name: str) -> int:
    return int(name.rsplit("~", 1)[1])


def _versions(store: LocalBackend, key: str) -> list[str]:
    return [kept.version for kept in store.history(key)]


# -- what is kept --------------------------------------------------------------------------


def test_sixteen_older_versions_are_kept_by_default(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    written = _write_versions(store, "k", 20)
    assert _versions(store, "k") == [stored.version for stored in written[-17:]]
    assert _kept_names(store, "k") == [f"k.md.~{n}" for n in range(3, 19)]
    for stored in written[-17:]:
        assert store.read_version("k", stored.version) == stored
    for gone in written[:3]:
        assert store.read_version("k", gone.version) is None
    assert list(store.keys()) == ["k"]


def test_history_bounds_the_kept_versions(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True, history=2)
    written = _write_versions(store, "k", 6)
    assert _versions(store, "k") == [stored.version for stored in written[-3:]]
    assert _kept_names(store, "k") == ["k.md.~3", "k.md.~4"]
    listed = store.history("k")
    assert [kept.size for kept in listed] == [2, 2, 2]
    assert all(kept.modified is not None for kept in listed)


def test_a_kept_version_is_the_replaced_file_itself(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    store.write("k", b"first", expected=None)
    document = Path(store.path("k"))
    replaced = document.stat().st_ino
    current = store.read("k")
    assert current is not None
    store.write("k", b"second", expected=current.version)
    kept = document.parent / "k.md.~0"
    assert kept.stat().st_ino == replaced
    assert kept.stat().st_nlink == 1
    assert kept.read_bytes() == b"first"


def test_history_zero_keeps_none_and_says_so_by_the_option(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True, history=0)
    written = _write_versions(store, "k", 3)
    assert _kept_names(store, "k") == []
    with pytest.raises(HistoryNotKept, match=r"^file:// opened with history=0 keeps no older"):
        store.history("k")
    with pytest.raises(HistoryNotKept, match="history=0"):
        store.read_version("k", written[0].version)


def test_a_lone_writer_never_lists_the_folder_after_its_first_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBackend(tmp_path, create=True, history=3)
    _write_versions(store, "k", 2)  # the first write of the key lists it once, to tidy it
    listed: list[object] = []
    real_scandir = os.scandir

    def counting_scandir(path: object) -> object:
        listed.append(path)
        return real_scandir(path)  # type: ignore[call-overload]

    monkeypatch.setattr(os, "scandir", counting_scandir)
    monkeypatch.setattr(os, "listdir", counting_scandir)
    _write_versions(store, "k", 10, start=2)
    monkeypatch.undo()
    assert listed == []
    assert _kept_names(store, "k") == ["k.md.~8", "k.md.~9", "k.md.~10"]


def test_writers_taking_turns_keep_every_version_in_order(tmp_path: Path) -> None:
    stores = [LocalBackend(tmp_path, create=True, history=4) for _ in range(2)]
    current = None
    written = []
    for number in range(11):
        store = stores[number % 2]
        data = b"turn %d" % number
        version = store.write("k", data, expected=None if current is None else current.version)
        current = Stored(data=data, version=version)
        written.append(current)
    for store in stores:
        assert _versions(store, "k") == [stored.version for stored in written[-5:]]
    assert len(_kept_names(stores[0], "k")) == 4


def test_the_same_bytes_written_twice_are_two_kept_versions(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    first = store.write("k", b"same", expected=None)
    again = store.write("k", b"same", expected=first)
    store.write("k", b"other", expected=again)
    assert _versions(store, "k")[:2] == [first, first]
    assert store.read_version("k", first) == Stored(data=b"same", version=first)


# -- reopened with another history ------------------------------------------------------------


def test_a_store_reopened_with_a_shorter_history_drops_the_surplus_on_its_first_write(
    tmp_path: Path,
) -> None:
    written = _write_versions(LocalBackend(tmp_path, create=True, history=8), "k", 9)
    shorter = LocalBackend(tmp_path, history=3)
    assert len(shorter.history("k")) == 9  # listing shows what is there
    written += _write_versions(shorter, "k", 1, start=9)
    assert _versions(shorter, "k") == [stored.version for stored in written[-4:]]
    assert _kept_names(shorter, "k") == ["k.md.~6", "k.md.~7", "k.md.~8"]


def test_a_store_reopened_with_history_zero_drops_every_kept_version(tmp_path: Path) -> None:
    _write_versions(LocalBackend(tmp_path, create=True), "k", 5)
    none = LocalBackend(tmp_path, history=0)
    _write_versions(none, "k", 1, start=5)
    assert _kept_names(none, "k") == []


# -- purge and delete -----------------------------------------------------------------------


def test_purge_history_unlinks_every_kept_version_whatever_the_option(tmp_path: Path) -> None:
    written = _write_versions(LocalBackend(tmp_path, create=True, history=8), "k", 6)
    _write_versions(LocalBackend(tmp_path, create=True), "other", 3)
    for history in (0, 2):
        store = LocalBackend(tmp_path, history=history)
        store.purge_history("k")
        assert _kept_names(store, "k") == []
        assert store.read("k") == written[-1]
        written += _write_versions(LocalBackend(tmp_path, history=8), "k", 2, start=6)
    assert len(_kept_names(LocalBackend(tmp_path), "other")) == 2


def test_purge_history_of_a_key_without_any_creates_nothing(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    store.write("k", b"only", expected=None)
    directory = Path(store.path("k")).parent
    before = sorted(os.listdir(directory))
    store.purge_history("k")
    store.purge_history("never-written")
    assert sorted(os.listdir(directory)) == before
    assert not os.path.exists(store.path("never-written") + ".lock")


def test_the_next_write_after_a_purge_keeps_again(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    written = _write_versions(store, "k", 4)
    store.purge_history("k")
    written += _write_versions(store, "k", 2, start=4)
    assert _versions(store, "k") == [stored.version for stored in written[-3:]]


def test_delete_removes_the_kept_versions_too(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    _write_versions(store, "k", 4)
    store.delete("k")
    assert _kept_names(store, "k") == []
    assert store.history("k") == []


def test_delete_removes_kept_versions_of_a_document_removed_out_of_band(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    _write_versions(store, "k", 3)
    os.unlink(store.path("k"))
    assert store.history("k") == []
    store.delete("k")
    assert _kept_names(store, "k") == []


# -- the version falling out of the history is the next document's file --------------------


def test_the_version_that_falls_out_is_rewritten_as_the_new_document(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True, history=2)
    document = Path(store.path("k"))
    store.write("k", b"a first version, longer than the one that reuses its file", expected=None)
    first = document.stat().st_ino
    current = store.read("k")
    assert current is not None
    written = _write_versions(store, "k", 3)  # v0 keeps ~0 (the first), v1 ~1, v2 drops ~0
    assert document.stat().st_ino == first  # the dropped version's file, rewritten in place
    assert document.read_bytes() == b"v2"  # and cut to the new length
    assert store.read("k") == written[-1]
    assert _kept_names(store, "k") == ["k.md.~1", "k.md.~2"]
    assert _versions(store, "k") == [stored.version for stored in written]
    assert not [name for name in os.listdir(document.parent) if name.startswith(".tmp-")]


def test_a_dropped_name_that_is_a_second_name_of_the_document_is_never_written(
    tmp_path: Path,
) -> None:
    store = LocalBackend(tmp_path, create=True, history=2)
    written = _write_versions(store, "k", 3)  # ~0 = v0, ~1 = v1, the document v2
    document = Path(store.path("k"))
    oldest = document.parent / "k.md.~0"
    oldest.unlink()
    os.link(document, oldest)  # left by a crash between a link and a rename, say
    written += _write_versions(store, "k", 1, start=3)  # drops ~0, keeps v2 as ~2
    assert (document.parent / "k.md.~2").read_bytes() == b"v2"  # not written through
    assert _versions(store, "k") == [stored.version for stored in written[1:]]


def test_a_symlink_under_the_dropped_name_is_neither_followed_nor_written(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path / "store", create=True, history=2)
    _write_versions(store, "k", 3)
    outside = tmp_path / "elsewhere"
    outside.write_bytes(b"not the store's")
    oldest = Path(store.path("k")).parent / "k.md.~0"
    oldest.unlink()
    oldest.symlink_to(outside)
    written = _write_versions(store, "k", 1, start=3)
    assert outside.read_bytes() == b"not the store's"
    assert store.read("k") == written[0]
    assert not Path(store.path("k")).is_symlink()


# -- failures and crashes -------------------------------------------------------------------


def test_a_failed_temp_write_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalBackend(tmp_path, create=True)
    written = _write_versions(store, "k", 2)

    def full_disk(path: str, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(local, "write_new_file", full_disk)
    with pytest.raises(docmem.StoreUnavailable, match="No space left"):
        store.write("k", b"lost", expected=written[-1].version)
    monkeypatch.undo()
    assert _kept_names(store, "k") == ["k.md.~0"]
    assert _versions(store, "k") == [stored.version for stored in written]
    written += _write_versions(store, "k", 1, start=2)
    assert _versions(store, "k") == [stored.version for stored in written]


def test_a_crash_between_the_link_and_the_rename_lists_the_current_version_once(
    tmp_path: Path,
) -> None:
    store = LocalBackend(tmp_path, create=True)
    written = _write_versions(store, "k", 2)
    document = Path(store.path("k"))
    os.link(document, document.parent / "k.md.~1")  # linked, then killed before the rename
    assert _versions(store, "k") == [stored.version for stored in written]
    later = LocalBackend(tmp_path)  # the next process: the folder tells it where to go on
    written += _write_versions(later, "k", 1, start=2)
    assert _versions(later, "k") == [stored.version for stored in written]


def test_a_symlink_under_a_kept_name_is_not_read_through(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path / "store", create=True)
    written = _write_versions(store, "k", 2)
    secret = tmp_path / "elsewhere"
    secret.write_bytes(b"not a version")
    (Path(store.path("k")).parent / "k.md.~7").symlink_to(secret)
    assert _versions(store, "k") == [stored.version for stored in written]


def test_kept_versions_are_neither_keys_nor_swept_as_temps(tmp_path: Path) -> None:
    _write_versions(LocalBackend(tmp_path, create=True), "k", 3)
    store = LocalBackend(tmp_path)  # a new store's first write of the key tidies its folder
    _write_versions(store, "k", 1, start=3)
    assert _kept_names(store, "k") == ["k.md.~0", "k.md.~1", "k.md.~2"]
    assert list(store.keys()) == ["k"]


def test_history_of_a_missing_key_in_an_unmounted_store_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(docmem.StoreUnavailable, match="marker"):
        LocalBackend(tmp_path).history("k")


# -- the option -------------------------------------------------------------------------------


@pytest.mark.parametrize("history", [-1, 1001, "many", True, 2.5, None])
def test_a_bad_history_is_not_configured(tmp_path: Path, history: object) -> None:
    with pytest.raises(StoreNotConfigured, match="history") as caught:
        LocalBackend(tmp_path, history=history)  # type: ignore[arg-type]
    assert "many" not in str(caught.value)
    with pytest.raises(StoreNotConfigured, match="history"):
        docmem.open_store(tmp_path.as_uri(), history=history)


def test_history_arrives_from_the_url_and_round_trips(tmp_path: Path) -> None:
    store = docmem.open_store(tmp_path.as_uri() + "?history=3&create=true")
    assert store.options == {"lock_timeout": 10.0, "create": True, "history": 3}
    copy = pickle.loads(pickle.dumps(store))
    assert copy.options == store.options
    assert docmem.open_store(tmp_path.as_uri()).options == {"lock_timeout": 10.0, "create": False}
    assert LocalBackend(tmp_path, history="0").options["history"] == 0  # type: ignore[arg-type]
