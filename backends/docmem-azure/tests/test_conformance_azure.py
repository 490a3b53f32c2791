"""The docmem.testing conformance suite against Azurite, once.

Azurite keeps no blob versions (its README lists "Blob Versions" among the
features it does not support), so the store keeps no history here
(HistoryNotKept). ``azblob://`` opens the same class with the same options
(test_options.py); a second run of the whole suite for it would add a
minute to make test and test nothing the URL changes.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from azure_servers import AzureRaw, connection_string, dead_store_url, store_url

import docmem
from docmem.testing import BackendFactory, BackendTests, RawAccess
from docmem_azure import AzureBlobBackend

pytestmark = pytest.mark.integration


class TestAzurite(BackendTests):
    keeps_history = False

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        connection_string()

        def make() -> docmem.Backend:
            return docmem.open_store(store_url(f"conf-{uuid.uuid4().hex}"))

        return make

    @pytest.fixture
    def raw(self, backend: docmem.Backend) -> RawAccess:
        assert isinstance(backend, AzureBlobBackend)
        return AzureRaw(backend)

    @pytest.fixture
    def unavailable_backend(self) -> Any:
        url, options = dead_store_url()
        return docmem.open_store(url, **options)
