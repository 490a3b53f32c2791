"""Fixtures of docmem-gcs's tests; the helpers they use are in ``gcs_servers``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from gcs_servers import store_url

import docmem
from docmem_gcs import GcsBackend


@pytest.fixture(autouse=True)
def _no_implicit_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a server its URL does not name (the SDK reads these two)."""
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.delenv("API_ENDPOINT_OVERRIDE", raising=False)


@pytest.fixture
def open_gcs() -> Iterator[Callable[..., GcsBackend]]:
    """Opens fresh stores on the emulator (each under its own prefix), closed afterwards."""
    opened: list[GcsBackend] = []

    def opener(
        prefix: str | None = None, *, through: str | None = None, **options: Any
    ) -> GcsBackend:
        store = docmem.open_store(store_url(prefix, through=through), **options)
        assert isinstance(store, GcsBackend)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
