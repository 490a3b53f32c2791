"""Azurite for the tests: started by `make test`, or by hand with ``scripts/azurite start``.

`scripts/with-test-servers` (or ``eval "$(scripts/azurite start)"``) exports
``AZURE_STORAGE_CONNECTION_STRING`` for Azurite's well-known development
account on 127.0.0.1; ``DOCMEM_TEST_CONTAINER`` names the container (default
``docmem-test``), which the tests create. Run by hand without it, the
integration tests are skipped with that reason; under `make test`
(``DOCMEM_REQUIRE_SERVERS=1``) a missing server is a failure, never a skip.

The test modules import these helpers from here, not from ``conftest``: a
module of that name is in every plug-in's tests folder, so which one
``from conftest import`` finds depends on what pytest collected first.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.storage.blob import BlobServiceClient, ContainerClient

if TYPE_CHECKING:
    from docmem_azure import AzureBlobBackend

SERVER = "AZURE_STORAGE_CONNECTION_STRING"
#: Azurite's documented development account (the same in every Azurite and in the Azure
#: SDKs' docs): no secret.
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def connection_string() -> str:
    """Azurite's connection string; skips (by hand) or fails (under make test) without it."""
    value = os.environ.get(SERVER)
    if not value:
        reason = f"{SERVER} is not set: run the tests through scripts/with-test-servers"
        if os.environ.get("DOCMEM_REQUIRE_SERVERS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return value


def service() -> BlobServiceClient:
    """A plain client of Azurite: the out-of-band view of the server."""
    return BlobServiceClient.from_connection_string(connection_string())


def endpoint() -> str:
    """Azurite's blob endpoint, with the account path (``http://127.0.0.1:N/devstoreaccount1``)."""
    return str(service().url).rstrip("/")


def container() -> str:
    name = os.environ.get("DOCMEM_TEST_CONTAINER", "docmem-test")
    _ensure(name, connection_string())
    return name


@functools.cache
def _ensure(name: str, _for: str) -> None:
    """Azurite starts empty: each container once per run (per server)."""
    with contextlib.suppress(ResourceExistsError):
        service().create_container(name)


def raw_container(name: str | None = None) -> ContainerClient:
    return service().get_container_client(name or container())


def store_url(prefix: str | None = None, *, scheme: str = "az", name: str | None = None) -> str:
    """A store under ``prefix`` (a new one by default) in container ``name`` (the test one)."""
    prefix = prefix or f"t-{uuid.uuid4().hex[:12]}"
    return f"{scheme}://{name or container()}/{prefix}"


def key_credential() -> AzureNamedKeyCredential:
    """Azurite's account key as a credential object, for stores opened on another endpoint."""
    return AzureNamedKeyCredential(ACCOUNT, ACCOUNT_KEY)


def via(upstream_url: str, prefix: str | None = None, **options: Any) -> tuple[str, dict[str, Any]]:
    """A URL and options for a store reaching Azurite through ``upstream_url`` (a proxy).

    The account key goes in code as a credential; the connection string names
    Azurite itself, so it would be refused as another account.
    """
    url = f"{store_url(prefix)}?account_url={upstream_url}/{ACCOUNT}"
    return url, {"credential": key_credential(), **options}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dead_store_url(prefix: str = "x") -> tuple[str, dict[str, Any]]:
    """A store on a port nothing listens on: every request fails to connect."""
    dead = f"http://127.0.0.1:{free_port()}"
    url, options = via(dead, prefix)
    return f"{url}&connect_timeout=0.5&max_attempts=1", options


class AzureRaw:
    """Blobs read and written with a plain client, around the store under test."""

    def __init__(self, store: AzureBlobBackend) -> None:
        self._store = store
        self._container = raw_container(store.container)

    def get(self, key: str) -> bytes | None:
        try:
            return bytes(self._container.download_blob(self._store.blob_name(key)).readall())
        except ResourceNotFoundError:
            return None

    def put(self, key: str, data: bytes) -> None:
        self._container.upload_blob(self._store.blob_name(key), data, overwrite=True)

    def everything(self) -> bytes:
        """Every blob under the store's prefix, concatenated."""
        return b"".join(
            bytes(self._container.download_blob(blob.name).readall())
            for blob in self._container.list_blobs(name_starts_with=f"{self._store.prefix}/")
        )


def container_sas(name: str | None = None) -> str:
    """A SAS for the test container (read, write, delete, list): signs no request header."""
    from datetime import datetime, timedelta, timezone

    from azure.storage.blob import ContainerSasPermissions, generate_container_sas

    return generate_container_sas(
        ACCOUNT,
        name or container(),
        account_key=ACCOUNT_KEY,
        permission=ContainerSasPermissions(
            read=True, add=True, create=True, write=True, delete=True, list=True
        ),
        expiry=datetime.now(timezone.utc) + timedelta(hours=2),
    )


def upstream() -> str:
    """Azurite's ``http://127.0.0.1:port``, for a proxy to forward to."""
    parts = endpoint().split("/")
    return "/".join(parts[:3])
