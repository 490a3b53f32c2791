"""The whole conformance suite on the encrypting wrapper, over memory:// and file://.

The wrapper is a store like any other: everything docs/design.md, section 4
promises holds through it. ``raw`` stands for another writer with the same
keyring, around the store under test: it seals with the wrapper and writes
through the wrapped store's own raw access (test_conformance.py), so what it
puts is an envelope, as any docmem writer's would be.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import ClassVar

import pytest
from test_conformance import LocalRaw, MemoryRaw

from docmem.backend import Backend
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.storage.builtin.local import LocalBackend
from docmem.storage.encryption import EncryptedStore, Keyring, LocalKey, encrypted
from docmem.storage.encryption.keyfile import render_keyring
from docmem.storage.registry import open_store
from docmem.testing import BackendFactory, BackendTests, EncryptedRawAccess, RawAccess


class TestEncryptedMemoryBackend(BackendTests):
    """Built in code: ``encrypted(store, Keyring([...]))`` over memory://."""

    keeps_history: ClassVar[bool | None] = True

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        keyring = Keyring([LocalKey.generate("conformance-2"), LocalKey.generate("conformance-1")])
        return lambda: encrypted(MemoryBackend(), keyring)

    @pytest.fixture
    def raw(self, backend: Backend) -> RawAccess:
        assert isinstance(backend, EncryptedStore)
        assert isinstance(backend.store, MemoryBackend)
        return EncryptedRawAccess(backend, MemoryRaw(backend.store))

    @pytest.fixture
    def unavailable_backend(self) -> Backend:
        store = MemoryBackend()
        store.close()
        return encrypted(store, Keyring([LocalKey.generate("k1")]))


class TestEncryptedLocalBackend(BackendTests):
    """Opened from its URL, ``encrypted+file://...?keyring=file:...``, over file://."""

    shared_between_processes: ClassVar[bool | None] = True
    keeps_history: ClassVar[bool | None] = True

    @pytest.fixture
    def keyring_file(self, tmp_path: Path) -> Path:
        path = tmp_path / "keyring.json"
        path.write_text(render_keyring({"file-1": os.urandom(32)}, "file-1"))
        path.chmod(0o600)  # docmem refuses a keyring file others may read
        return path

    @pytest.fixture
    def make_backend(self, tmp_path: Path, keyring_file: Path) -> BackendFactory:
        counter = itertools.count()

        def make() -> Backend:
            root = tmp_path / f"store-{next(counter)}"
            return open_store(f"encrypted+file://{root}?create=true&keyring=file:{keyring_file}")

        return make

    @pytest.fixture
    def raw(self, backend: Backend) -> RawAccess:
        assert isinstance(backend, EncryptedStore)
        assert isinstance(backend.store, LocalBackend)
        return EncryptedRawAccess(backend, LocalRaw(backend.store))

    @pytest.fixture
    def unavailable_backend(self, tmp_path: Path, keyring_file: Path) -> Backend:
        root = tmp_path / "a-regular-file"
        root.write_bytes(b"not a directory")
        return open_store(f"encrypted+file://{root}?keyring=file:{keyring_file}")
