"""file://-specific behaviour: fan-out layout, the per-key lock, temp files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import docmem
from docmem.backends._flock import LockTimeout, exclusive
from docmem.backends.local import LocalBackend
from docmem.document import parse


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
    store = LocalBackend(tmp_path, lock_timeout=0.05)
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
    store = LocalBackend(tmp_path)
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
    store = LocalBackend(tmp_path)
    store.write("k", b"v", expected=None)
    (Path(store.path("k")).parent / ".tmp-123-0-abcd.md").write_bytes(b"torn")
    assert list(store.keys()) == ["k"]


def test_parse_cache_never_hides_a_changed_document(tmp_path: Path) -> None:
    store = LocalBackend(tmp_path)
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
