"""The GCS emulator for the tests: fake-gcs-server, started by `make test`.

`scripts/with-test-servers` (or `scripts/gcs-emulator start`) runs it on
127.0.0.1 and exports ``GCS_EMULATOR_ENDPOINT`` and ``DOCMEM_TEST_BUCKET``.
Run by hand without it, the integration tests are skipped with that reason;
under `make test` (``DOCMEM_REQUIRE_SERVERS=1``) a missing server is a
failure, never a skip. ``STORAGE_EMULATOR_HOST`` is never read: every client
here names its endpoint.

The test modules import these helpers from here, not from ``conftest``: a
module of that name is in every plug-in's tests folder, so which one
``from conftest import`` finds depends on what pytest collected first.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import urllib.request
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from google.api_core.exceptions import NotFound
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[import-untyped]

if TYPE_CHECKING:
    from docmem_gcs import GcsBackend

ENDPOINT_VARIABLE = "GCS_EMULATOR_ENDPOINT"


def endpoint() -> str:
    """The emulator's URL; skips (by hand) or fails (under make test) when it is not running."""
    found = os.environ.get(ENDPOINT_VARIABLE)
    if not found:
        reason = f"{ENDPOINT_VARIABLE} is not set: run the tests through scripts/with-test-servers"
        if os.environ.get("DOCMEM_REQUIRE_SERVERS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found.rstrip("/")


def bucket() -> str:
    return os.environ.get("DOCMEM_TEST_BUCKET", "docmem-test")


def store_url(
    prefix: str | None = None, *, name: str | None = None, through: str | None = None
) -> str:
    """A store under ``prefix`` (a new one by default) in bucket ``name`` (the test bucket).

    ``through``: another endpoint (a proxy in front of the emulator).
    """
    prefix = prefix or f"t-{uuid.uuid4().hex[:12]}"
    return f"gs://{name or bucket()}/{prefix}?endpoint_url={through or endpoint()}"


@functools.cache
def versioned_bucket() -> str:
    """A bucket with object versioning on, made once per test run through the JSON API."""
    name = f"docmem-versioned-{uuid.uuid4().hex[:12]}"
    body = json.dumps({"name": name, "versioning": {"enabled": True}}).encode()
    request = urllib.request.Request(
        f"{endpoint()}/storage/v1/b?project=docmem-test",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert json.load(answer)["versioning"] == {"enabled": True}
    return name


def raw_client() -> Any:
    """A plain google-cloud-storage client on the emulator: the out-of-band view."""
    return storage.Client(
        project="docmem-test",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": endpoint()},
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GcsRaw:
    """Objects read and written with a plain client, around the store under test."""

    def __init__(self, store: GcsBackend) -> None:
        self._store = store
        self._bucket = raw_client().bucket(store.bucket)

    def get(self, key: str) -> bytes | None:
        try:
            return bytes(self._bucket.blob(self._store.object_name(key)).download_as_bytes())
        except NotFound:
            return None

    def put(self, key: str, data: bytes) -> None:
        self._bucket.blob(self._store.object_name(key)).upload_from_string(data)

    def put_name(self, name: str, data: bytes) -> None:
        """An object under the store's prefix by its name there (``<key>/0000000000000001.md``)."""
        self._bucket.blob(f"{self._store.prefix}/{name}").upload_from_string(data)

    def everything(self) -> bytes:
        """Every object under the store's prefix, concatenated."""
        return b"".join(
            blob.download_as_bytes()
            for blob in self._bucket.client.list_blobs(
                self._store.bucket, prefix=self._store.prefix + "/"
            )
        )
