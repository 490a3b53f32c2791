"""Real S3 servers for the tests: LocalStack and SeaweedFS, started by `make test`.

`scripts/with-test-servers` starts both on 127.0.0.1 and exports
``LOCALSTACK_ENDPOINT``, ``SEAWEEDFS_ENDPOINT`` and ``DOCMEM_TEST_BUCKET``
(plus test credentials). Run by hand without them, the integration tests are
skipped with that reason; under `make test` (``DOCMEM_REQUIRE_SERVERS=1``) a
missing server is a failure, never a skip.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

import docmem
from docmem_s3 import S3Backend

SERVERS = {"localstack": "LOCALSTACK_ENDPOINT", "seaweedfs": "SEAWEEDFS_ENDPOINT"}
REGION = "us-east-1"


def endpoint_of(server: str) -> str:
    endpoint = os.environ.get(SERVERS[server])
    if not endpoint:
        reason = f"{SERVERS[server]} is not set: run the tests through scripts/with-test-servers"
        if os.environ.get("DOCMEM_REQUIRE_SERVERS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return endpoint


def bucket() -> str:
    return os.environ.get("DOCMEM_TEST_BUCKET", "docmem-test")


def store_url(endpoint: str, prefix: str | None = None) -> str:
    prefix = prefix or f"t-{uuid.uuid4().hex[:12]}"
    return f"s3://{bucket()}/{prefix}?endpoint_url={endpoint}&region={REGION}"


def raw_client(endpoint: str) -> Any:
    """A plain boto3 client: the out-of-band view of the server."""
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=sorted(SERVERS))
def endpoint(request: pytest.FixtureRequest) -> str:
    return endpoint_of(request.param)


@pytest.fixture
def open_s3(endpoint: str) -> Iterator[Callable[..., S3Backend]]:
    """Opens fresh stores (each under its own prefix) and closes them afterwards."""
    opened: list[S3Backend] = []

    def opener(prefix: str | None = None, **options: Any) -> S3Backend:
        store = docmem.open_store(store_url(endpoint, prefix), **options)
        assert isinstance(store, S3Backend)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
