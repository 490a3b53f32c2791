"""The docmem.testing conformance suite against fake-gcs-server.

Once, on the unversioned test bucket, where a store keeps no history
(HistoryNotKept). A bucket with object versioning is covered by
test_gcs_history.py: this plug-in keeps no history of its own there, and
refuses to leave an erased text behind in silence.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from gcs_servers import GcsRaw, free_port, store_url

import docmem
from docmem.testing import BackendFactory, BackendTests, RawAccess
from docmem_gcs import GcsBackend

pytestmark = pytest.mark.integration


class TestFakeGcsServer(BackendTests):
    keeps_history = False

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        url = store_url()  # skips or fails here without the emulator

        def make() -> docmem.Backend:
            return docmem.open_store(url.replace("/t-", f"/conf-{uuid.uuid4().hex[:8]}-", 1))

        return make

    @pytest.fixture
    def raw(self, backend: docmem.Backend) -> RawAccess:
        assert isinstance(backend, GcsBackend)
        return GcsRaw(backend)

    @pytest.fixture
    def unavailable_backend(self) -> Any:
        # Nothing listens there: every request fails to connect.
        dead = f"http://127.0.0.1:{free_port()}"
        return docmem.open_store(
            f"gs://dead/x?endpoint_url={dead}", connect_timeout=0.5, max_attempts=1
        )
