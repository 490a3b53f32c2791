"""The docmem.testing conformance suite against LocalStack and SeaweedFS.

Each server on the unversioned test bucket, where a store keeps no history
(HistoryNotKept), and LocalStack also on a bucket with versioning enabled,
where it lists and reads every version and a delete or a purge removes them.
SeaweedFS's versioned bucket is covered by test_versioned.py, not by a third
run of the whole suite (about two minutes of make test).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from s3_servers import S3Raw, endpoint_of, free_port, store_url, versioned_bucket

import docmem
from docmem.testing import BackendFactory, BackendTests, RawAccess
from docmem_s3 import S3Backend

pytestmark = pytest.mark.integration


class _S3Tests(BackendTests):
    server: str = ""
    #: The test bucket keeps no versions; the versioned classes say True.
    keeps_history = False

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        endpoint = endpoint_of(self.server)
        name = versioned_bucket(endpoint) if self.keeps_history else None

        def make() -> docmem.Backend:
            return docmem.open_store(store_url(endpoint, f"conf-{uuid.uuid4().hex}", name=name))

        return make

    @pytest.fixture
    def raw(self, backend: docmem.Backend) -> RawAccess:
        assert isinstance(backend, S3Backend)
        return S3Raw(backend, endpoint_of(self.server))

    @pytest.fixture
    def unavailable_backend(self) -> Any:
        # Nothing listens there: every request fails to connect.
        dead = f"http://127.0.0.1:{free_port()}"
        return docmem.open_store(store_url(dead), connect_timeout=0.5, max_attempts=1)


class TestLocalStack(_S3Tests):
    server = "localstack"


class TestSeaweedFS(_S3Tests):
    server = "seaweedfs"


class TestLocalStackVersioned(_S3Tests):
    server = "localstack"
    keeps_history = True
