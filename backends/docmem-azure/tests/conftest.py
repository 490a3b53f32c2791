"""Fixtures of docmem-azure's tests; the helpers they use are in ``azure_servers``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from azure_servers import connection_string, store_url

import docmem
from docmem_azure import AzureBlobBackend


@pytest.fixture
def open_azure() -> Iterator[Callable[..., AzureBlobBackend]]:
    """Opens fresh stores on Azurite (each under its own prefix) and closes them afterwards."""
    connection_string()
    opened: list[AzureBlobBackend] = []

    def opener(prefix: str | None = None, **options: Any) -> AzureBlobBackend:
        store = docmem.open_store(store_url(prefix), **options)
        assert isinstance(store, AzureBlobBackend)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
