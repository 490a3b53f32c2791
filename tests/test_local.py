"""file://-specific behaviour: fan-out layout, the per-key lock, temp files, the store marker."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import docmem
from docmem.localfs import durable as _durable
from docmem.localfs import marker as marker_module
from docmem.localfs.durable import link_new_file, write_new_file
from docmem.localfs.flock import LockTimeout, exclusive
from docmem.localfs.marker import MARKER, MARKER_CONTENT
from docmem.provider.document import parse
from docmem.storage.builtin import local
from docmem.storage.builtin.local import LocalBackend
from docmem.testing.volumes import tmpfs_volume

NO_MARKER = re.escape("marker .docmem-store missing")
SCOPE = docmem.lock_scope(namespace="tests:local", scope="volume-user")


def test_two_level_fan_out(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path / "root", create=True)
    store.write("memkey1_abc", b"x", expected=None)
    path = Path(store.path("memkey1_abc"))
    assert path.read_bytes() == b"x"
    relative = path.relative_to(tmp_path / "root")
    assert len(relative.parts) == 3
    assert all(len(part) == 2 for part in relative.parts[:2])
    assert relative.parts[2] == "memkey1_abc.md"


def test_a_held_lock_times_out_as_store_busy(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, lock_timeout=0.05, create=True)
    store.write("k", b"v1", expected=None)
    stored = store.read("k")
    assert stored is not None
    with exclusive(store.path("k") + ".lock", 1.0), pytest.raises(docmem.StoreBusy):
        store.write("k", b"v2", expected=stored.version)
    assert store.read("k") == stored
    assert store.write("k", b"v2", expected=stored.version)


def test_lock_excludes_threads_of_one_process(tmp_path: Path) -> None:
    path = str(tmp_path / "x.lock")
    inside = 0
    overlaps = 0
    guard = threading.Lock()

    def worker() -> None:
        nonlocal inside, overlaps
        for _ in range(50):
            with exclusive(path, 10.0):
                with guard:
                    inside += 1
                    overlaps += inside > 1
                time.sleep(0.0005)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == 0


def test_lock_timeout_raises(tmp_path: Path) -> None:
    path = str(tmp_path / "y.lock")
    with exclusive(path, 1.0), pytest.raises(LockTimeout), exclusive(path, 0.02):
        pass


def test_failed_write_leaves_no_temp_file_and_the_old_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBackend(tmp_path, create=True)
    version = store.write("k", b"old", expected=None)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(docmem.StoreUnavailable, match="No space left"):
        store.write("k", b"new", expected=version)
    monkeypatch.undo()
    directory = Path(store.path("k")).parent
    assert sorted(p.name for p in directory.iterdir()) == ["k.md", "k.md.lock"]
    assert store.read("k") == docmem.Stored(b"old", version)


def test_leftover_temp_files_are_not_keys(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    store.write("k", b"v", expected=None)
    (Path(store.path("k")).parent / ".tmp-123-0-abcd.md").write_bytes(b"torn")
    assert list(store.keys()) == ["k"]


def test_reads_leave_the_access_time_alone(tmp_path: Path) -> None:
    # An access time changed by a read would add the inode to the next save's journal commit.
    store = LocalBackend(tmp_path, create=True)
    version = store.write("k", b"v0", expected=None)
    path = store.path("k")
    old = os.stat(path).st_mtime_ns - 10**9  # older than the mtime: relatime would update it
    os.utime(path, ns=(old, os.stat(path).st_mtime_ns))
    assert store.read("k") is not None
    store.write("k", b"v1", expected=version)  # the conditional write reads it too
    assert os.stat(store.path("k") + ".~0").st_atime_ns == old


def test_parse_cache_never_hides_a_changed_document(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    mem = docmem.FileMemory(store).bind(docmem.lock_scope(namespace="n", scope="s"), slot="u")
    mem.save("a", mutation_id="1")
    assert mem.recall()[0].content.endswith("0: a")
    path = Path(store.path(mem.scope.storage_key))
    path.write_bytes(path.read_bytes().replace(b"0: a", b"0:  a"))  # out of band
    with pytest.raises(docmem.DocumentCorrupt):
        mem.recall()
    good = path.read_bytes().replace(b"0:  a", b"0: b")
    path.write_bytes(good)
    assert mem.recall()[0].content.endswith("0: b")
    assert parse(good).entries == {0: "b"}


@pytest.mark.process
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_child_forked_while_a_lock_is_held_does_not_keep_it(tmp_path: Path) -> None:
    path = str(tmp_path / "held.lock")
    taken, release = threading.Event(), threading.Event()

    def holder() -> None:
        with exclusive(path, 10.0):
            taken.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    assert taken.wait(10)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child lives on while the parent carries on
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    try:
        release.set()
        thread.join()
        with exclusive(path, 2.0):  # without the at-fork handler the child keeps the lock
            pass
    finally:
        os.close(write_end)
        os.waitpid(pid, 0)


# -- the store marker: an existing directory is not yet a store ----------------------------


def _every_call(store: LocalBackend) -> list[Callable[[], object]]:
    """Each call that could take a missing store for an empty one."""
    return [
        lambda: store.read("k"),
        lambda: list(store.keys()),
        lambda: store.delete("k"),
        lambda: store.write("k", b"x", expected=None),
        lambda: store.write("k", b"x", expected="made-up-version"),
    ]


def test_an_empty_directory_without_the_marker_is_no_store(tmp_path: Path) -> None:
    root = tmp_path / "mount-point"
    root.mkdir()
    store = docmem.open_store(root.as_uri())
    assert isinstance(store, LocalBackend)
    for call in _every_call(store):
        with pytest.raises(docmem.StoreUnavailable) as caught:
            call()
        message = str(caught.value)
        assert "marker .docmem-store missing" in message
        assert "is the volume mounted?" in message
        assert "create=true" in message
        assert str(tmp_path) not in message
    assert os.listdir(root) == []  # nothing written, not even a lock file


def test_a_save_into_an_unmarked_directory_is_not_committed(tmp_path: Path) -> None:
    mem = docmem.FileMemory(docmem.open_store(tmp_path.as_uri())).bind(SCOPE, slot="user")
    with pytest.raises(docmem.StoreUnavailable) as caught:
        mem.save("Prefers tea.", mutation_id="m1")
    assert caught.value.outcome == "not_committed"
    assert os.listdir(tmp_path) == []


def test_create_makes_the_root_with_its_parents_and_the_marker(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "store"
    store = LocalBackend(root, create=True)
    assert store.read("k") is None
    assert list(store.keys()) == []
    assert not (tmp_path / "a").exists()  # reading an absent store creates nothing
    store.write("k", b"x", expected=None)
    marker = root / MARKER
    assert marker.read_bytes() == MARKER_CONTENT == b"docmem store\n"
    assert stat.S_IMODE(marker.stat().st_mode) == 0o600
    assert not [name for name in os.listdir(root) if ".tmp-" in name]
    assert LocalBackend(root).read("k") is not None  # reopened without create: a store


def test_create_initialises_an_existing_empty_directory(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    assert store.read("k") is None
    store.write("k", b"x", expected=None)
    assert (tmp_path / MARKER).is_file()
    assert list(LocalBackend(tmp_path).keys()) == ["k"]


def test_the_marker_is_published_durably_and_never_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    linked: list[tuple[str, str]] = []
    real_fsync, real_link = _durable.fsync_directory, os.link

    def spy_fsync(directory: str) -> None:
        synced.append(directory)
        real_fsync(directory)

    def spy_link(src: Any, dst: Any, **kwargs: Any) -> None:
        linked.append((os.path.basename(src), os.path.basename(dst)))
        real_link(src, dst, **kwargs)

    monkeypatch.setattr(local, "fsync_directory", spy_fsync)
    monkeypatch.setattr(marker_module, "fsync_directory", spy_fsync)
    monkeypatch.setattr(os, "link", spy_link)
    crashed = tmp_path / (MARKER + ".tmp-999-deadbeef")
    crashed.write_bytes(b"docmem")  # a marker write that crashed before its link
    LocalBackend(tmp_path, create=True).write("k", b"x", expected=None)
    [(temp, name)] = linked
    assert temp.startswith(MARKER + ".tmp-")
    assert name == MARKER
    assert str(tmp_path) in synced
    assert not crashed.exists()
    assert sorted(os.listdir(tmp_path))[:2] == [MARKER, MARKER + ".lock"]

    (tmp_path / MARKER).write_bytes(b"an operator's marker\n")
    assert not link_new_file(str(tmp_path / MARKER), MARKER_CONTENT, temp=str(tmp_path / "t"))
    assert (tmp_path / MARKER).read_bytes() == b"an operator's marker\n"
    assert not (tmp_path / "t").exists()


def test_a_store_from_before_markers_is_adopted_on_its_next_write(tmp_path: Path) -> None:
    LocalBackend(tmp_path, create=True).write("k", b"old", expected=None)
    (tmp_path / MARKER).unlink()  # as an older docmem left it
    store = LocalBackend(tmp_path)
    stored = store.read("k")
    assert stored is not None
    assert stored.data == b"old"
    assert store.read("other") is None
    assert list(store.keys()) == ["k"]
    assert not (tmp_path / MARKER).exists()  # reads write nothing
    store.write("k", b"new", expected=stored.version)
    assert (tmp_path / MARKER).read_bytes() == MARKER_CONTENT


def test_a_stray_markdown_file_does_not_make_a_store(tmp_path: Path) -> None:
    (tmp_path / "ab" / "cd").mkdir(parents=True)
    (tmp_path / "ab" / "cd" / "notes.md").write_text("not docmem's")
    with pytest.raises(docmem.StoreUnavailable, match=NO_MARKER):
        LocalBackend(tmp_path).read("k")


def test_a_missing_marker_is_noticed_where_a_document_is_missing(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    store.write("k", b"x", expected=None)
    Path(store.path("k")).unlink()
    for name in os.listdir(tmp_path):  # what an unmounted volume's mount point shows
        if name != MARKER:
            shutil.rmtree(tmp_path / name, ignore_errors=True)
    (tmp_path / MARKER).unlink()
    for call in _every_call(LocalBackend(tmp_path)):
        with pytest.raises(docmem.StoreUnavailable, match=NO_MARKER):
            call()


def test_reading_an_existing_document_does_not_look_for_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBackend(tmp_path, create=True)
    store.write("k", b"x", expected=None)

    def no_look(self: LocalBackend) -> str:
        raise AssertionError("the marker was checked on the hot path")

    monkeypatch.setattr(LocalBackend, "_state", no_look)
    assert store.read("k") is not None


def test_a_marker_that_is_not_a_file_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / MARKER).mkdir()
    with pytest.raises(docmem.StoreUnavailable, match="not a regular file"):
        LocalBackend(tmp_path, create=True).read("k")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs volume mounted for the test, unmounted afterwards whatever happens."""
    with tmpfs_volume(tmp_path) as point:
        yield point


@pytest.mark.process
def test_an_unmounted_volume_is_unavailable_not_an_empty_memory(tmpfs: Path) -> None:
    creator = docmem.open_store(tmpfs.as_uri() + "?create=true")
    docmem.FileMemory(creator).bind(SCOPE, slot="user").save("Prefers tea.", mutation_id="m1")
    store = docmem.open_store(tmpfs.as_uri())  # how a deployment opens it: without create
    mem = docmem.FileMemory(store).bind(SCOPE, slot="user")
    assert mem.save("Likes jazz.", mutation_id="m2").status == "saved"
    assert mem.recall()[0].content.endswith("0: Prefers tea.\n1: Likes jazz.")

    subprocess.run(["umount", str(tmpfs)], check=True, timeout=30)
    assert not os.path.ismount(tmpfs)
    assert os.listdir(tmpfs) == []  # the bare mount point on the disk underneath
    with pytest.raises(docmem.StoreUnavailable, match="is the volume mounted"):
        mem.recall()
    with pytest.raises(docmem.StoreUnavailable):
        store.read(SCOPE.storage_key)
    with pytest.raises(docmem.StoreUnavailable) as caught:
        mem.save("Lives in Berlin.", mutation_id="m3")
    assert caught.value.outcome == "not_committed"
    with pytest.raises(docmem.StoreUnavailable):
        list(store.keys())
    with pytest.raises(docmem.StoreUnavailable):
        store.delete(SCOPE.storage_key)
    assert os.listdir(tmpfs) == []  # nothing was written to the disk underneath


# -- temp files: named for their key, collected under its lock ------------------------------


def test_a_temp_file_names_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = LocalBackend(tmp_path, create=True)
    renamed: list[str] = []
    real_replace = os.replace

    def spy(src: Any, dst: Any) -> None:
        renamed.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    store.write("memkey1_a-b", b"x", expected=None)
    [temp] = renamed
    assert temp.startswith(".tmp-memkey1_a-b.")


def test_every_write_replaces_a_crashed_writers_temp_of_its_key_only(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path, create=True)
    version = store.write("k", b"v1", expected=None)
    directory = Path(store.path("k")).parent
    others = [".tmp-k2.new", ".tmp-other.new"]  # other keys' temps, same folder
    for number in range(3):
        for name in [".tmp-k.new", *others]:
            (directory / name).write_bytes(b"torn")  # a writer killed before its rename
        version = store.write("k", b"v%d" % number, expected=version)
        left = sorted(name for name in os.listdir(directory) if name.startswith(".tmp-"))
        assert left == sorted(others)
        assert Path(store.path("k")).read_bytes() == b"v%d" % number


def test_a_crashed_temp_that_is_a_symlink_is_removed_not_written_through(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path / "store", create=True)
    version = store.write("k", b"v1", expected=None)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"untouched")
    temp = Path(store.path("k")).parent / ".tmp-k.new"
    temp.symlink_to(target)
    store.write("k", b"v2", expected=version)
    assert target.read_bytes() == b"untouched"
    assert not os.path.lexists(temp)
    assert Path(store.path("k")).read_bytes() == b"v2"


def test_a_stores_first_write_of_a_key_collects_temps_of_earlier_versions(tmp_path: Path) -> None:
    version = LocalBackend(tmp_path, create=True).write("k", b"v1", expected=None)
    store = LocalBackend(tmp_path)  # a process started after older versions crashed here
    directory = Path(store.path("k")).parent
    ours = [".tmp-k.4242-0-0badf00d", ".tmp-k.7-12-aaaaaaaa", ".tmp-k.new"]
    others = [".tmp-k2.4242-1-0badf00d", ".tmp-other.1-1-bbbbbbbb"]  # other keys, same folder
    old_style, young_old_style = ".tmp-123-0-abcdef01.md", ".tmp-124-0-abcdef02.md"
    for name in [*ours, *others, old_style, young_old_style]:
        (directory / name).write_bytes(b"torn")
    two_hours_ago = time.time() - 7200
    os.utime(directory / old_style, (two_hours_ago, two_hours_ago))
    store.write("k", b"v2", expected=version)
    left = sorted(name for name in os.listdir(directory) if name.startswith(".tmp-"))
    assert left == sorted([*others, young_old_style])
    assert Path(store.path("k")).read_bytes() == b"v2"


def test_collecting_temps_never_races_a_live_writer(tmp_path: Path) -> None:
    # Writers of one key share its lock, so a collector never sees a live temp of it.
    store = LocalBackend(tmp_path, create=True)
    store.write("k", b"0", expected=None)
    errors: list[BaseException] = []

    def writer() -> None:
        for _ in range(40):
            while True:
                stored = store.read("k")
                assert stored is not None
                try:
                    store.write("k", str(int(stored.data) + 1).encode(), expected=stored.version)
                    break
                except docmem.VersionConflict:
                    continue
                except BaseException as exc:  # pragma: no cover - the failure being tested
                    errors.append(exc)
                    return

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = store.read("k")
    assert stored is not None
    assert stored.data == b"160"


# -- configuration: StoreNotConfigured naming the option, never a raw value ----------------


@pytest.mark.parametrize(
    "timeout",
    [None, "nan", float("nan"), float("inf"), "-inf", 0, True, 10**400],
    ids=["None", "nan-text", "nan", "inf", "-inf-text", "zero", "True", "huge-int"],
)
def test_a_bad_lock_timeout_is_not_configured(tmp_path: Path, timeout: object) -> None:
    openers: list[Callable[[], object]] = [
        lambda: docmem.open_store(tmp_path.as_uri(), lock_timeout=timeout),
        lambda: LocalBackend(tmp_path, lock_timeout=timeout),  # type: ignore[arg-type]
    ]
    for open_it in openers:
        with pytest.raises(docmem.StoreNotConfigured, match="lock_timeout") as caught:
            open_it()
        assert caught.value.__context__ is None
        assert caught.value.__cause__ is None


@pytest.mark.parametrize("create", [None, "maybe", 1])
def test_a_bad_create_flag_is_not_configured(tmp_path: Path, create: object) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="create"):
        LocalBackend(tmp_path, create=create)  # type: ignore[arg-type]
    if create is None:
        with pytest.raises(docmem.StoreNotConfigured, match="create must be true or false"):
            docmem.open_store(tmp_path.as_uri(), create=None)


def test_options_arrive_as_url_text_or_typed_keywords(tmp_path: Path) -> None:
    store = docmem.open_store(tmp_path.as_uri() + "?lock_timeout=.5&create=yes")
    assert store.options == {"lock_timeout": 0.5, "create": True}
    store = docmem.open_store(tmp_path.as_uri() + "?create=off", lock_timeout=3)
    assert store.options == {"lock_timeout": 3.0, "create": False}
    assert isinstance(store.options["lock_timeout"], float)
    assert LocalBackend(tmp_path, lock_timeout="2", create="true").options == {
        "lock_timeout": 2.0,
        "create": True,
    }


def test_unknown_file_options_are_refused_naming_them(tmp_path: Path) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=r"unknown file:// options: a, b \(known"):
        docmem.open_store(tmp_path.as_uri() + "?b=1", a=2)


def test_a_bad_option_in_the_url_never_shows_its_value(tmp_path: Path) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="lock_timeout") as caught:
        docmem.open_store(tmp_path.as_uri() + "?lock_timeout=hunter2")
    assert "hunter2" not in str(caught.value)
    assert caught.value.__context__ is None


def test_a_nul_in_the_path_is_not_configured(tmp_path: Path) -> None:
    openers: list[Callable[[], object]] = [
        lambda: docmem.open_store(tmp_path.as_uri() + "/secret-name%00x"),
        lambda: LocalBackend(str(tmp_path) + "/secret-name\x00x"),
    ]
    for open_it in openers:
        with pytest.raises(docmem.StoreNotConfigured, match="NUL") as caught:
            open_it()
        assert "secret-name" not in str(caught.value)


def test_a_root_whose_name_is_not_utf8_is_a_store_byte_for_byte(tmp_path: Path) -> None:
    """A folder whose name is no UTF-8 works: Python names it with surrogateescape.

    Its URL spells the name's bytes (``%E9``, ``%FF``), so a copy opened from it
    (a pickle, a worker process) uses the same folder, never one named U+FFFD.
    """
    raw = os.fsencode(tmp_path) + b"/caf\xe9-\xff"
    os.mkdir(raw)
    root = os.fsdecode(raw)  # "...caf\udce9-\udcff", as os.listdir and argv give it
    store = LocalBackend(root, create=True)
    assert store.url == "file://" + os.fsencode(tmp_path).decode() + "/caf%E9-%FF"
    memory = docmem.FileMemory(store).bind(SCOPE, slot="user")  # raised UnicodeEncodeError
    assert memory.save("Prefers tea.", mutation_id="m1").status == "saved"
    by_url = docmem.open_store(store.url)
    by_name = docmem.open_store(f"file://{root}")  # the URL as a shell hands it over
    copy = pickle.loads(pickle.dumps(store))
    for other in (by_url, by_name, copy):
        assert isinstance(other, LocalBackend)
        assert (other.root, other.url) == (root, store.url)
        assert list(other.keys()) == [SCOPE.storage_key]
    assert "0: Prefers tea." in docmem.FileMemory(copy).bind(SCOPE, slot="user").recall()[0].content
    assert os.listdir(os.fsencode(tmp_path)) == [b"caf\xe9-\xff"]  # no U+FFFD twin made


def test_a_root_holding_a_lone_surrogate_is_not_configured(tmp_path: Path) -> None:
    """A name no file system can hold is refused as a docmem error, naming no path."""
    with pytest.raises(docmem.StoreNotConfigured, match="lone surrogate") as caught:
        LocalBackend(str(tmp_path) + "/secret-name\ud800")
    assert "secret-name" not in str(caught.value)
    assert caught.value.__context__ is None


@pytest.mark.parametrize("root", [None, 42, b"/tmp/bytes"])
def test_a_root_that_is_no_text_path_is_not_configured(root: object) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="root"):
        LocalBackend(root)  # type: ignore[arg-type]


# -- the durable-write helpers --------------------------------------------------------------


def test_write_new_file_is_private_exclusive_and_refuses_symlinks(tmp_path: Path) -> None:
    path = tmp_path / "new"
    write_new_file(str(path), b"data")
    assert path.read_bytes() == b"data"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        write_new_file(str(path), b"other")
    assert path.read_bytes() == b"data"
    target = tmp_path / "target"
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(FileExistsError):  # O_EXCL: a planted symlink is never followed
        write_new_file(str(tmp_path / "link"), b"through the link")
    assert not target.exists()


def test_a_failed_new_file_write_removes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_new_file(str(tmp_path / "new"), b"data")
    assert os.listdir(tmp_path) == []
