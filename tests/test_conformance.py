"""The conformance suite (docmem.testing) run on the two built-in stores."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from docmem.backend import Backend, Stored
from docmem.storage.builtin import inmemory as memory_module
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.storage.builtin.local import LocalBackend
from docmem.testing import BackendFactory, BackendTests, RawAccess


class MemoryRaw:
    """Pokes the module-level space of a memory:// store directly."""

    def __init__(self, backend: MemoryBackend) -> None:
        name = backend.url.removeprefix("memory://")
        self._space = memory_module._spaces.get(name) or memory_module._anonymous[name]

    def get(self, key: str) -> bytes | None:
        with self._space.lock:
            stored = self._space.blobs.get(key)
        return None if stored is None else stored.data

    def put(self, key: str, data: bytes) -> None:
        with self._space.lock:
            version = str(next(self._space.versions))
            self._space.blobs[key] = Stored(data=bytes(data), version=version)


class LocalRaw:
    """Reads and writes the document file of a file:// store directly."""

    def __init__(self, backend: LocalBackend) -> None:
        self._backend = backend

    def get(self, key: str) -> bytes | None:
        try:
            return Path(self._backend.path(key)).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, key: str, data: bytes) -> None:
        path = Path(self._backend.path(key))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


class TestMemoryBackend(BackendTests):
    keeps_history: ClassVar[bool | None] = True

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        return MemoryBackend

    @pytest.fixture
    def raw(self, backend: Backend) -> RawAccess:
        assert isinstance(backend, MemoryBackend)
        return MemoryRaw(backend)

    @pytest.fixture
    def unavailable_backend(self) -> Backend:
        store = MemoryBackend()
        store.close()
        return store


class TestLocalBackend(BackendTests):
    keeps_history: ClassVar[bool | None] = True

    @pytest.fixture
    def make_backend(self, tmp_path: Path) -> BackendFactory:
        # The root is not created: a store that was never written to is empty.
        counter = itertools.count()
        return lambda: LocalBackend(tmp_path / f"store-{next(counter)}", create=True)

    @pytest.fixture
    def raw(self, backend: Backend) -> RawAccess:
        assert isinstance(backend, LocalBackend)
        return LocalRaw(backend)

    @pytest.fixture
    def unavailable_backend(self, tmp_path: Path) -> Backend:
        root = tmp_path / "a-regular-file"
        root.write_bytes(b"not a directory")
        return LocalBackend(root)


def test_memory_backend_is_not_shared_between_processes() -> None:
    # The process races of TestMemoryBackend skip because of this flag.
    assert MemoryBackend.shared_between_processes is False
    assert LocalBackend.shared_between_processes is True


@pytest.mark.process
def test_import_docmem_does_not_import_the_test_suite() -> None:
    code = (
        "import sys, docmem\n"
        "loaded = {'docmem.testing', 'pytest', 'hypothesis'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


def test_memory_backend_keeps_the_last_sixteen_older_versions() -> None:
    store = MemoryBackend()
    versions = [store.write("k", b"v0", expected=None)]
    for number in range(1, 20):
        versions.append(store.write("k", b"v%d" % number, expected=versions[-1]))
    assert [kept.version for kept in store.history("k")] == versions[-17:]
    assert store.read_version("k", versions[2]) is None
    assert store.read_version("k", versions[3]) == Stored(data=b"v3", version=versions[3])
    other = MemoryBackend(store.url.removeprefix("memory://"))  # the same space, another handle
    other.purge_history("k")
    assert [kept.version for kept in store.history("k")] == versions[-1:]
