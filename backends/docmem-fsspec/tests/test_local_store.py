"""What only the local filesystem needs: the store marker and the temporary files of creates.

A local root's existence is no proof that it is the store (an unmounted
volume leaves an empty mount point), so the root carries ``.docmem-store``;
the tmpfs test mounts a real volume and unmounts it under a running store.
A crash between writing a create's temporary file and linking it leaves the
file behind; garbage collection sweeps old ones, never one a live writer
holds.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fsspec_stores import Clock

import docmem
from docmem.errors import StoreNotConfigured, StoreUnavailable
from docmem.testing.volumes import tmpfs_volume
from docmem_fsspec import FsspecBackend
from docmem_fsspec.commitlog import object_name
from docmem_fsspec.dialects import LocalDialect
from docmem_fsspec.marker import MARKER, MARKER_CONTENT

SCOPE = docmem.lock_scope(namespace="tests:fsspec-local", scope=("user", "u_1"))
NO_MARKER = "marker .docmem-store missing"


def local_store(root: Path, query: str = "", **options: Any) -> FsspecBackend:
    store = docmem.open_store(f"fsspec+file://{root}{query}", **options)
    assert isinstance(store, FsspecBackend)
    return store


# -- the marker --------------------------------------------------------------------


def test_a_folder_without_the_marker_is_no_store(tmp_path: Path) -> None:
    store = local_store(tmp_path)
    for attempt in (
        lambda: store.read("k"),
        lambda: store.write("k", b"x", expected=None),
        lambda: list(store.keys()),
        lambda: store.delete("k"),
        lambda: store.history("k"),
        lambda: store.purge_history("k"),
    ):
        with pytest.raises(StoreUnavailable, match=NO_MARKER) as raised:
            attempt()
        assert "is the volume mounted?" in raised.value.message
    with pytest.raises(StoreUnavailable, match=NO_MARKER):
        docmem.FileMemory(store).bind(SCOPE, slot="user").save("Prefers tea.", mutation_id="m")
    assert os.listdir(tmp_path) == [], "a refused store was written to"


def test_create_marks_a_folder_on_the_first_write(tmp_path: Path) -> None:
    store = local_store(tmp_path, "?create=true")
    assert store.read("k") is None
    assert list(store.keys()) == []
    assert os.listdir(tmp_path) == [], "reading created something"
    version = store.write("k", b"one", expected=None)
    assert (tmp_path / MARKER).read_bytes() == MARKER_CONTENT
    daily = local_store(tmp_path)  # opened without create, as a service opens it
    assert daily.read("k") == docmem.Stored(data=b"one", version=version)
    assert store.options["create"] is True
    assert "create" not in daily.options


def test_create_makes_a_missing_root_and_its_parents(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b"
    store = local_store(root, "?create=true")
    assert store.read("k") is None
    assert list(store.keys()) == []
    assert not root.exists()
    store.write("k", b"one", expected=None)
    assert (root / MARKER).is_file()
    with pytest.raises(StoreUnavailable, match="root does not exist"):
        local_store(tmp_path / "elsewhere").read("k")


def test_a_store_of_the_previous_release_is_read_and_marked_by_its_next_write(
    tmp_path: Path,
) -> None:
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / object_name(1)).write_bytes(b"old one")  # no marker, no envelope
    store = local_store(tmp_path)
    assert store.read("k") == docmem.Stored(data=b"old one", version=object_name(1))
    assert list(store.keys()) == ["k"]
    assert store.read("other") is None
    assert not (tmp_path / MARKER).exists(), "a read wrote"
    store.write("k", b"new two", expected=object_name(1))
    assert (tmp_path / MARKER).read_bytes() == MARKER_CONTENT


@pytest.mark.parametrize(
    "layout",
    [
        {"notes.txt": b"hello"},
        {"k/notes.md": b"hello"},
        {"not a key/0000000000000001.md": b"hello"},
        {".hidden/0000000000000001.md": b"hello"},
    ],
)
def test_foreign_content_does_not_make_a_store(tmp_path: Path, layout: dict[str, bytes]) -> None:
    for name, data in layout.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    with pytest.raises(StoreUnavailable, match=NO_MARKER):
        local_store(tmp_path).read("k")


def test_a_marker_that_is_no_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / MARKER).mkdir()
    with pytest.raises(StoreUnavailable, match="not a regular file"):
        local_store(tmp_path, "?create=true").write("k", b"x", expected=None)


def test_a_store_that_vanishes_stops_a_write_from_a_cached_version(tmp_path: Path) -> None:
    store = local_store(tmp_path, "?create=false")
    (tmp_path / MARKER).write_bytes(MARKER_CONTENT)
    version = store.write("k", b"one", expected=None)
    shutil.rmtree(tmp_path / "k")  # as if another, empty volume were there now
    (tmp_path / MARKER).unlink()
    # The version this process saw is fresh, but the create itself requires the marker.
    with pytest.raises(StoreUnavailable, match=NO_MARKER):
        store.write("k", b"two", expected=version)
    assert os.listdir(tmp_path) == []


def test_create_is_for_the_local_filesystem_only() -> None:
    with pytest.raises(StoreNotConfigured, match="create applies to fsspec\\+file"):
        docmem.open_store("fsspec+s3://bucket/prefix?create=true")
    assert isinstance(docmem.open_store("fsspec+s3://bucket/prefix?create=false"), FsspecBackend)


@pytest.fixture
def mount_point(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs volume (root and ``mount`` needed), unmounted afterwards whatever happens."""
    with tmpfs_volume(tmp_path) as point:
        yield point


def test_an_unmounted_volume_is_an_error_not_an_empty_memory(mount_point: Path) -> None:
    url = f"fsspec+file://{mount_point}"
    creator = docmem.FileMemory(docmem.open_store(f"{url}?create=true")).bind(SCOPE, slot="user")
    creator.save("Prefers tea.", mutation_id="m-1")  # creating the store marks the volume
    service = docmem.open_store(url)  # the service opens it without create, every day
    mine = docmem.FileMemory(service).bind(SCOPE, slot="user")
    document = mine.read()
    assert document is not None
    assert list(document.entries.values()) == ["Prefers tea."]
    subprocess.run(["umount", str(mount_point)], check=True, capture_output=True, timeout=30)
    assert os.listdir(mount_point) == []  # the empty folder underneath
    with pytest.raises(StoreUnavailable, match=NO_MARKER):
        mine.recall()
    with pytest.raises(StoreUnavailable, match=NO_MARKER) as raised:
        mine.save("Lives in Oslo.", mutation_id="m-2")  # from this process's cached copy
    assert raised.value.outcome == "not_committed"
    with pytest.raises(StoreUnavailable, match=NO_MARKER):
        list(service.keys())
    fresh = docmem.FileMemory(docmem.open_store(url)).bind(SCOPE, slot="user")
    with pytest.raises(StoreUnavailable, match=NO_MARKER):
        fresh.read()
    assert os.listdir(mount_point) == [], "a save went to the disk underneath"


# -- temporary files of crashed creates -----------------------------------------------


def leftover(folder: Path, age: float) -> Path:
    """A temporary file as a create killed before its link leaves it, ``age`` seconds old."""
    path = folder / f".tmp-{uuid.uuid4().hex}"
    path.write_bytes(b"half a version")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_old_temporary_files_go_with_the_next_write(tmp_path: Path) -> None:
    store = local_store(tmp_path, "?create=true")  # the default grace: 600 s
    version = store.write("k", b"one", expected=None)
    # The next write that collects: this process last listed the key in full a grace ago.
    Clock(store).advance(store.grace)
    folder = tmp_path / "k"
    old, young = leftover(folder, 3600.0), leftover(folder, 60.0)
    held = leftover(folder, 3600.0)
    with open(held, "rb") as live:  # a descriptor to lock, as a live writer holds one
        fcntl.flock(live, fcntl.LOCK_EX)
        store.write("k", b"two", expected=version)
    assert not old.exists(), "a crashed create's temporary file outlived the grace period"
    assert young.exists(), "a temporary file younger than grace was swept"
    assert held.exists(), "a live writer's temporary file was swept"
    assert store.read("k") == docmem.Stored(data=b"two", version=object_name(2))


def test_a_live_create_holds_its_temporary_file_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_store(tmp_path, "?create=true")
    (tmp_path / MARKER).write_bytes(MARKER_CONTENT)  # the marker links too: not under test here
    real_link = os.link
    swept: list[int] = []

    def sweep_then_link(source: Any, target: Any) -> None:
        swept.append(LocalDialect().sweep(None, [str(source)]))
        assert Path(source).exists()
        real_link(source, target)

    store.verify()  # the first-write check links too: not under test here
    monkeypatch.setattr("docmem_fsspec.dialects.os.link", sweep_then_link)
    store.write("k", b"one", expected=None)
    assert swept == [0]
    assert [name for name in os.listdir(tmp_path / "k") if name.startswith(".tmp-")] == []


def test_versions_are_private_to_the_store_owner(tmp_path: Path) -> None:
    """Written like every durable local file: mode 0o600, whatever the umask allows."""
    store = local_store(tmp_path, "?create=true")
    version = store.write("k", b"one", expected=None)
    assert (tmp_path / "k" / version).stat().st_mode & 0o777 == 0o600


def test_a_create_whose_temporary_file_was_swept_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_store(tmp_path, "?create=true")
    version = store.write("k", b"one", expected=None)
    real_link = os.link

    def swept_before_link(source: Any, target: Any) -> None:
        os.unlink(source)  # a sweep that misjudged the file's age got to it first
        real_link(source, target)

    monkeypatch.setattr("docmem_fsspec.dialects.os.link", swept_before_link)
    with pytest.raises(StoreUnavailable):
        store.write("k", b"two", expected=version)
    assert sorted(os.listdir(tmp_path / "k")) == [object_name(1)]
