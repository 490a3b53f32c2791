"""Real S3 servers for the tests: LocalStack and SeaweedFS, started by `make test`.

`scripts/with-test-servers` starts both on 127.0.0.1 and exports
``LOCALSTACK_ENDPOINT``, ``SEAWEEDFS_ENDPOINT`` and ``DOCMEM_TEST_BUCKET``
(plus test credentials). Run by hand without them, the integration tests are
skipped with that reason; under `make test` (``DOCMEM_REQUIRE_SERVERS=1``) a
missing server is a failure, never a skip.

The test modules import these helpers from here, not from ``conftest``: a
module of that name is in every plug-in's tests folder, so which one
``from conftest import`` finds depends on what pytest collected first.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from typing import TYPE_CHECKING, Any

import boto3
import pytest

if TYPE_CHECKING:
    from docmem_s3 import S3Backend

SERVERS = {"localstack": "LOCALSTACK_ENDPOINT", "seaweedfs": "SEAWEEDFS_ENDPOINT"}
REGION = "us-east-1"
#: What scripts/with-test-servers exports; LocalStack and SeaweedFS take any credentials.
TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}


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


def store_url(endpoint: str, prefix: str | None = None, *, name: str | None = None) -> str:
    """A store under ``prefix`` (a new one by default) in bucket ``name`` (the test bucket)."""
    prefix = prefix or f"t-{uuid.uuid4().hex[:12]}"
    return f"s3://{name or bucket()}/{prefix}?endpoint_url={endpoint}&region={REGION}"


@functools.cache
def versioned_bucket(endpoint: str) -> str:
    """A bucket with versioning enabled on ``endpoint``, made once per test run.

    The test bucket the scripts make is unversioned; stores that keep a
    history (``S3Backend.history``) live here. The servers are thrown away
    after the run, and the bucket with them.
    """
    name = f"docmem-versioned-{uuid.uuid4().hex[:12]}"
    client = raw_client(endpoint)
    client.create_bucket(Bucket=name)
    client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def raw_client(endpoint: str) -> Any:
    """A plain boto3 client: the out-of-band view of the server."""
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class S3Raw:
    """Objects read and written with a plain boto3 client, around the store under test."""

    def __init__(self, store: S3Backend, endpoint: str) -> None:
        self._store = store
        self._client = raw_client(endpoint)

    def get(self, key: str) -> bytes | None:
        try:
            response = self._client.get_object(
                Bucket=self._store.bucket, Key=self._store.object_key(key)
            )
        except self._client.exceptions.NoSuchKey:
            return None
        return bytes(response["Body"].read())

    def put(self, key: str, data: bytes) -> None:
        self._client.put_object(
            Bucket=self._store.bucket, Key=self._store.object_key(key), Body=data
        )

    def everything(self) -> bytes:
        """Every object under the store's prefix, concatenated."""
        listed = self._client.list_objects_v2(Bucket=self._store.bucket, Prefix=self._store.prefix)
        return b"".join(
            self._client.get_object(Bucket=self._store.bucket, Key=item["Key"])["Body"].read()
            for item in listed.get("Contents", ())
        )
