"""Fixtures of docmem-fsspec's tests; the helpers they use are in ``fsspec_stores``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fsspec_stores import STORES, require, store_url

import docmem
from docmem_fsspec import FsspecBackend

# gcsfs's ExtendedGcsFileSystem asks the GCS emulator, which speaks no gRPC, for a bucket's
# layout over gRPC, and gRPC's own log would print every failed handshake to stderr.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


@pytest.fixture(params=STORES)
def kind(request: pytest.FixtureRequest) -> str:
    require(request.param)
    return str(request.param)


@pytest.fixture
def open_fsspec(kind: str, tmp_path: Path) -> Iterator[Callable[..., FsspecBackend]]:
    """Opens fresh stores of the parametrized kind and closes them afterwards."""
    opened: list[FsspecBackend] = []

    def opener(**options: Any) -> FsspecBackend:
        store = docmem.open_store(store_url(kind, tmp_path), **options)
        assert isinstance(store, FsspecBackend)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
