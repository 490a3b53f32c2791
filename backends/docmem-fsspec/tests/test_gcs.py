"""GCS through gcsfs, and the check before a store's first write that its creates are exclusive.

``gs://`` opens with the class gcsfs registers for it (``ExtendedGcsFileSystem``,
a subclass of ``GCSFileSystem``), and the conformance suite runs on it
against fake-gcs-server (``test_conformance_fsspec.TestGcs``). Here: a server
that ignores ``ifGenerationMatch`` (the emulator behind a proxy that strips it)
is refused before anything is written, where it used to acknowledge saves it
lost; the check runs once per store and process, again in a forked child,
and removes its probe object. The check's locking and failures are tested on
the local filesystem, which it checks too.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest
from fsspec_stores import GCS_OPTIONS, Raw, gcs_url, require, store_options, store_url

import docmem
from docmem.errors import StoreNotConfigured, StoreUnavailable, WriteOutcomeUnknown
from docmem.testing.rewriting_proxy import GenerationStripper
from docmem_fsspec import ConditionsNotHonoured, FsspecBackend
from docmem_fsspec.dialects import GcsfsDialect, dialect_for
from docmem_fsspec.probe import PROBE_PREFIX

SCOPE = docmem.lock_scope(namespace="tests:fsspec-gcs", scope=("user", "u_1"))
#: docmem-s3's sentence for a store whose second create of one object succeeds.
REFUSAL = (
    "the fsspec+gs store does not honour conditional writes as docmem needs them, so concurrent "
    "updates would be lost or fail; docmem refuses it. Failed: a second create of the same "
    "object is refused"
)


def probe_creates(store: FsspecBackend) -> list[str]:
    """Record the paths of the store's probe creates from now on (this process only)."""
    dialect = store._dialect
    real = dialect.create
    seen: list[str] = []
    lock = threading.Lock()

    def counted(fs: Any, path: str, data: bytes) -> None:
        if f"/{PROBE_PREFIX}" in path:
            with lock:
                seen.append(path)
        real(fs, path, data)

    dialect.create = counted  # type: ignore[method-assign]
    return seen


# -- gs:// opens with the classes gcsfs registers --------------------------------------


def test_gs_opens_with_the_class_gcsfs_registers_for_it() -> None:
    registered = fsspec.get_filesystem_class("gs")
    assert (registered.__module__, registered.__qualname__) == (
        "gcsfs.extended_gcsfs",
        "ExtendedGcsFileSystem",
    )
    store = docmem.open_store("fsspec+gs://bucket/prefix?token=anon")  # no I/O
    assert isinstance(store, FsspecBackend)
    assert store._fs_class is registered
    assert isinstance(store._dialect, GcsfsDialect)


def test_both_gcsfs_classes_are_accepted_and_no_other_subclass() -> None:
    from gcsfs.core import GCSFileSystem
    from gcsfs.extended_gcsfs import ExtendedGcsFileSystem

    for accepted in (GCSFileSystem, ExtendedGcsFileSystem):
        assert isinstance(dialect_for(accepted, assume_atomic_create=False), GcsfsDialect)

    class Overriding(GCSFileSystem):  # type: ignore[misc]
        """May send its create any way it likes: not accepted on its parent's word."""

    with pytest.raises(StoreNotConfigured, match="not their subclasses") as caught:
        dialect_for(Overriding, assume_atomic_create=False)
    assert "gcsfs.extended_gcsfs.ExtendedGcsFileSystem" in caught.value.message


# -- a server that ignores the precondition ------------------------------------------


@pytest.fixture
def stripping_proxy() -> Iterator[GenerationStripper]:
    require("gcs")
    with GenerationStripper(os.environ["GCS_EMULATOR_ENDPOINT"]) as proxy:
        yield proxy


def open_through(proxy: GenerationStripper, prefix: str) -> FsspecBackend:
    store = docmem.open_store(gcs_url(proxy.url, prefix), **GCS_OPTIONS)
    assert isinstance(store, FsspecBackend)
    return store


@pytest.mark.integration
def test_a_server_ignoring_if_generation_match_is_refused_before_any_write(
    stripping_proxy: GenerationStripper,
) -> None:
    prefix = f"t-{uuid.uuid4().hex[:12]}"
    store = open_through(stripping_proxy, prefix)
    with pytest.raises(ConditionsNotHonoured) as caught:
        store.write("k", b"would be lost", expected=None)
    assert caught.value.message == REFUSAL
    assert caught.value.code == "conditions_not_honoured"
    assert isinstance(caught.value, StoreUnavailable)
    assert isinstance(caught.value, docmem.ConditionsNotHonoured)  # one class for every store
    assert stripping_proxy.stripped == 2  # both probe creates went out without the condition
    # Nothing of the write, and no probe object, is left in the store.
    assert Raw(store, "gcs").names("k") == []
    assert Raw(store, "gcs").probe_names() == []
    # Refused again (checked again) by every later write, and by delete and purge.
    with pytest.raises(ConditionsNotHonoured):
        store.write("k", b"would be lost", expected=None)
    assert stripping_proxy.stripped == 4


@pytest.mark.integration
def test_four_writers_ten_saves_on_an_ignoring_server_are_refused_not_lost(
    stripping_proxy: GenerationStripper,
) -> None:
    """The issue's run: 4 writers x 10 saves all said saved, and 21 were in the document."""
    prefix = f"t-{uuid.uuid4().hex[:12]}"
    outcomes: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def writer(number: int) -> None:
        memory = docmem.FileMemory(open_through(stripping_proxy, prefix)).bind(SCOPE, slot="user")
        barrier.wait()
        for save in range(10):
            try:
                memory.save(f"fact {number}-{save}", mutation_id=f"m-{number}-{save}")
                outcome = "saved"
            except docmem.DocmemError as error:
                outcome = error.code
            with lock:
                outcomes.append(outcome)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert outcomes == ["conditions_not_honoured"] * 40
    honest = docmem.open_store(gcs_url(os.environ["GCS_EMULATOR_ENDPOINT"], prefix), **GCS_OPTIONS)
    assert list(honest.keys()) == []


# -- once per store and process --------------------------------------------------------


@pytest.mark.integration
def test_concurrent_first_writes_check_a_store_once() -> None:
    require("gcs")
    store = docmem.open_store(store_url("gcs"), **store_options("gcs"))
    assert isinstance(store, FsspecBackend)
    creates = probe_creates(store)
    barrier = threading.Barrier(4)

    def first_write(number: int) -> None:
        barrier.wait()
        store.write(f"k{number}", b"x", expected=None)

    threads = [threading.Thread(target=first_write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(creates) == 2  # one object, created twice
    assert len(set(creates)) == 1
    store.write("k0", b"y", expected=store.read("k0").version)  # type: ignore[union-attr]
    store.delete("k1")
    assert len(creates) == 2  # checked: no more probing in this process
    assert Raw(store, "gcs").probe_names() == []  # and the probe object is gone
    # Another store object (the same URL) checks for itself.
    other = docmem.open_store(store.url, **store.options)
    assert isinstance(other, FsspecBackend)
    other_creates = probe_creates(other)
    other.write("k9", b"x", expected=None)
    assert len(other_creates) == 2


def local_store(tmp_path: Path) -> FsspecBackend:
    store = docmem.open_store(store_url("local", tmp_path))
    assert isinstance(store, FsspecBackend)
    return store


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_checks_again(tmp_path: Path) -> None:
    store = local_store(tmp_path)
    store.write("k", b"parent", expected=None)
    creates = probe_creates(store)
    pid = os.fork()
    if pid == 0:  # the child: exits 0 only if its first write checked the store anew
        code = 1
        try:
            store.write("k", b"child", expected=store.read("k").version)  # type: ignore[union-attr]
            code = 0 if len(creates) == 2 else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.write("k", b"parent again", expected=store.read("k").version)  # type: ignore[union-attr]
    assert creates == []  # the parent checked before the fork, and does not again


def test_a_check_that_cannot_finish_is_unavailable_and_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_store(tmp_path)
    dialect = store._dialect
    real = dialect.create
    failures = [WriteOutcomeUnknown("the local create may or may not have landed (OSError)")]

    def flaky(fs: Any, path: str, data: bytes) -> None:
        if f"/{PROBE_PREFIX}" in path and failures:
            raise failures.pop()
        real(fs, path, data)

    monkeypatch.setattr(dialect, "create", flaky)
    with pytest.raises(StoreUnavailable, match="probe failed") as caught:
        store.write("k", b"x", expected=None)
    assert not isinstance(caught.value, ConditionsNotHonoured)
    assert store.read("k") is None  # the write itself was never sent
    creates = probe_creates(store)
    store.write("k", b"x", expected=None)  # checked again, and passes
    assert len(creates) == 2
    assert Raw(store, "local").probe_names() == []


def test_a_store_that_lets_a_second_create_through_is_refused_locally(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal does not depend on the implementation: any dialect's creates are checked."""
    store = local_store(tmp_path)
    dialect = store._dialect
    real = dialect.create

    def overwriting(fs: Any, path: str, data: bytes) -> None:
        if os.path.exists(path):
            os.unlink(path)  # what an implementation without an exclusive create does
        real(fs, path, data)

    monkeypatch.setattr(dialect, "create", overwriting)
    with pytest.raises(ConditionsNotHonoured, match=r"^the fsspec\+file store does not honour"):
        store.write("k", b"x", expected=None)
    assert store.read("k") is None
