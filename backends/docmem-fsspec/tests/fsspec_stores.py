"""The stores docmem-fsspec is tested on: local disk, s3fs on LocalStack, adlfs on Azurite,
and gcsfs on fake-gcs-server.

`scripts/with-test-servers` starts LocalStack, Azurite and fake-gcs-server on
127.0.0.1 and exports ``LOCALSTACK_ENDPOINT``, ``AZURE_STORAGE_CONNECTION_STRING``
(adlfs reads it), ``GCS_EMULATOR_ENDPOINT`` and the bucket and container
names. Run by hand without them, the server tests are skipped with that
reason; under `make test` (``DOCMEM_REQUIRE_SERVERS=1``) a missing server is a
failure, never a skip. :data:`STORES`, which the ``kind`` fixture runs every
store-generic test on, leaves out GCS: the conformance suite and the GCS tests
cover it, and `make test` has no time for every test on a fourth store.

Each store also has a *raw* client that never goes through fsspec (``os``,
boto3, the Azure SDK, google-cloud-storage): the out-of-band view the tests
check the store against.

The test modules import these helpers from here, not from ``conftest``: a
module of that name is in every plug-in's tests folder, so which one
``from conftest import`` finds depends on what pytest collected first.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
import types
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from docmem_fsspec import FsspecBackend
from docmem_fsspec.commitlog import unwrap
from docmem_fsspec.probe import PROBE_PREFIX

STORES = ("local", "localstack", "azurite")
_LOG_NAME = re.compile(r"[0-9a-f]{16}\.")
_ENVIRONMENT = {
    "localstack": ("LOCALSTACK_ENDPOINT",),
    "azurite": ("AZURE_STORAGE_CONNECTION_STRING",),
    "gcs": ("GCS_EMULATOR_ENDPOINT",),
}
#: gcsfs's ExtendedGcsFileSystem asks the Storage Control API (gRPC) for a bucket's layout
#: before each request until it gets an answer, retrying for 60 s by default; the emulator
#: does not speak it, so the tests let it give up at once (gcsfs then sends the JSON API
#: requests it sends to a standard bucket). A float, so a keyword rather than URL text.
GCS_OPTIONS: dict[str, Any] = {"retry_timeout": 0.01}


def require(store: str) -> None:
    """Skip (by hand) or fail (under make test) when a store's server is not running."""
    missing = [name for name in _ENVIRONMENT.get(store, ()) if not os.environ.get(name)]
    if not missing:
        return
    reason = f"{', '.join(missing)} not set: run the tests through scripts/with-test-servers"
    if os.environ.get("DOCMEM_REQUIRE_SERVERS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def bucket() -> str:
    return os.environ.get("DOCMEM_TEST_BUCKET", "docmem-test")


def container() -> str:
    return os.environ.get("DOCMEM_TEST_CONTAINER", "docmem-test")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_containers_made: set[str] = set()


def ensure_container() -> None:
    """Azurite starts empty: create the test container once per session."""
    if container() in _containers_made:
        return
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import BlobServiceClient

    service = BlobServiceClient.from_connection_string(
        os.environ["AZURE_STORAGE_CONNECTION_STRING"]
    )
    with contextlib.suppress(ResourceExistsError):
        service.create_container(container())
    _containers_made.add(container())


def store_options(store: str) -> dict[str, Any]:
    """The keyword options to open a :func:`store_url` of the given kind with."""
    return dict(GCS_OPTIONS) if store == "gcs" else {}


def gcs_url(endpoint: str, prefix: str) -> str:
    """An ``fsspec+gs://`` URL of the test bucket through ``endpoint`` (the emulator, a proxy)."""
    return f"fsspec+gs://{bucket()}/{prefix}?endpoint_url={endpoint}&token=anon"


def store_url(store: str, root: Path | None = None) -> str:
    """A URL for a fresh, empty store of the given kind (``root``: the local parent folder).

    Open it with :func:`store_options`.
    """
    require(store)
    prefix = f"t-{uuid.uuid4().hex[:12]}"
    if store == "local":
        assert root is not None
        folder = root / prefix
        folder.mkdir()  # an empty folder: the store's first write marks it as a store
        return f"fsspec+file://{folder}?create=true"
    if store == "localstack":
        return f"fsspec+s3://{bucket()}/{prefix}?endpoint_url={os.environ['LOCALSTACK_ENDPOINT']}"
    if store == "gcs":
        return gcs_url(os.environ["GCS_EMULATOR_ENDPOINT"], prefix)
    ensure_container()
    return f"fsspec+az://{container()}/{prefix}"


def unavailable_url(store: str, root: Path) -> tuple[str, dict[str, Any]]:
    """A store of the kind that cannot be reached: a missing folder, or a dead port."""
    if store == "local":
        return f"fsspec+file://{root / 'never-created'}", {}
    dead = f"http://127.0.0.1:{free_port()}"
    if store == "localstack":
        return f"fsspec+s3://{bucket()}/x?endpoint_url={dead}", {
            "config_kwargs": {"retries": {"total_max_attempts": 1}, "connect_timeout": 1}
        }
    if store == "gcs":
        return gcs_url(dead, "x"), store_options("gcs")
    key = (  # Azurite's well-known development key: public, not a secret
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
    )
    return f"fsspec+az://{container()}/x", {
        "connection_string": (
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
            f"AccountKey={key};BlobEndpoint={dead}/devstoreaccount1;"
        ),
    }


class Raw:
    """Lists, reads and writes a store's objects without fsspec (the out-of-band view)."""

    def __init__(self, store: FsspecBackend, kind: str) -> None:
        self.store = store
        self.kind = kind
        if kind == "localstack":
            import boto3

            self._s3 = boto3.client("s3", endpoint_url=os.environ["LOCALSTACK_ENDPOINT"])
        elif kind == "azurite":
            from azure.storage.blob import ContainerClient

            self._container = ContainerClient.from_connection_string(
                os.environ["AZURE_STORAGE_CONNECTION_STRING"], container()
            )
        elif kind == "gcs":
            self._bucket = gcs_bucket()

    def _split(self, path: str) -> str:
        """The object key inside the bucket or container."""
        return path.split("/", 1)[1]

    def names(self, key: str) -> list[str]:
        """The object names in the key's folder, sorted."""
        return self.names_in(self.store.folder(key))

    def probe_names(self) -> list[str]:
        """The probe objects the first-write check left in the store (none, normally)."""
        return [name for name in self.names_in(self.store.root) if name.startswith(PROBE_PREFIX)]

    def names_in(self, folder: str) -> list[str]:
        """The object names in a folder of the store, sorted."""
        if self.kind == "local":
            try:
                return sorted(os.listdir(folder))
            except FileNotFoundError:
                return []
        prefix = self._split(folder) + "/"
        if self.kind == "localstack":
            pages = self._s3.get_paginator("list_objects_v2").paginate(
                Bucket=bucket(), Prefix=prefix
            )
            found = [item["Key"] for page in pages for item in page.get("Contents", ())]
        elif self.kind == "gcs":
            found = [blob.name for blob in self._bucket.list_blobs(prefix=prefix)]
        else:
            found = [blob.name for blob in self._container.list_blobs(name_starts_with=prefix)]
        return sorted(name[len(prefix) :] for name in found)

    def read(self, key: str, name: str) -> bytes:
        path = f"{self.store.folder(key)}/{name}"
        if self.kind == "local":
            return Path(path).read_bytes()
        if self.kind == "localstack":
            answer = self._s3.get_object(Bucket=bucket(), Key=self._split(path))
            return bytes(answer["Body"].read())
        if self.kind == "gcs":
            return bytes(self._bucket.blob(self._split(path)).download_as_bytes())
        return bytes(self._container.download_blob(self._split(path)).readall())

    def write(self, key: str, name: str, data: bytes) -> None:
        path = f"{self.store.folder(key)}/{name}"
        if self.kind == "local":
            Path(path).parent.mkdir(exist_ok=True)
            Path(path).write_bytes(data)
        elif self.kind == "localstack":
            self._s3.put_object(Bucket=bucket(), Key=self._split(path), Body=data)
        elif self.kind == "gcs":
            self._bucket.blob(self._split(path)).upload_from_string(data)
        else:
            self._container.upload_blob(self._split(path), data, overwrite=True)

    # RawAccess, for the conformance suite: the newest version is the document.

    def get(self, key: str) -> bytes | None:
        versions = [name for name in self.names(key) if name.endswith(".md")]
        stones = [name for name in self.names(key) if name.endswith(".tombstone")]
        if not versions or (stones and max(stones)[:16] >= max(versions)[:16]):
            return None
        return unwrap(self.read(key, max(versions)))[1]

    def put(self, key: str, data: bytes) -> None:
        """A new version as the previous release wrote it: bare bytes, no envelope."""
        names = self.names(key)
        top = max((int(name[:16], 16) for name in names if _LOG_NAME.match(name)), default=0)
        self.write(key, f"{top + 1:016x}.md", data)


def skip_gcsfs_retries(store: Any) -> None:
    """Make the store's gcsfs filesystems send each request once.

    gcsfs retries a failed request five times over about half a minute, fixed
    when its class is defined; where nothing listens the answer is the same
    without the waiting.
    """
    for fs in {id(fs): fs for fs in store.filesystems()}.values():
        fs._request = types.MethodType(type(fs)._request.__wrapped__, fs)


def gcs_bucket() -> Any:
    """The emulator's test bucket through google-cloud-storage, anonymously (no fsspec)."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage  # type: ignore[import-untyped]

    client = storage.Client(
        project="docmem-test",
        credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
        client_options={"api_endpoint": os.environ["GCS_EMULATOR_ENDPOINT"]},
    )
    return client.bucket(bucket())


class Clock:
    """A stand-in for the stores' hidden clock (``time.monotonic``) that a test moves on.

    What a test installs it in believes that much more time has passed: a
    pause of the process, with no sleeping. It paces only freshness and garbage
    collection; no outcome of a write may depend on it.
    """

    def __init__(self, *stores: FsspecBackend) -> None:
        self.offset = 0.0
        for store in stores:
            store._clock = self

    @classmethod
    def of(cls, store: FsspecBackend) -> Clock:
        """The clock installed in ``store``, installing one first if it has the real one."""
        found = store._clock
        return found if isinstance(found, Clock) else cls(store)

    def __call__(self) -> float:
        return time.monotonic() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


#: The clock step of the chain tests: more than the default grace of 600 s.
STEP = 700.0
_STAMPS = ("LastModified", "last_modified", "mtime", "updated", "creation_time", "created")


class ClockStep:
    """Makes every listing show the objects that existed at :meth:`step` ``STEP`` s older."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: FsspecBackend) -> None:
        self.before: set[str] = set()
        dialect = type(store._dialect)
        real_folder, real_after = dialect.list_folder, dialect.list_after

        def shifted(self_: Any, fs: Any, folder: str) -> list[dict[str, Any]] | None:
            return self._shift_all(real_folder(self_, fs, folder))

        def shifted_after(self_: Any, fs: Any, folder: str, name: str) -> Any:
            return self._shift_all(real_after(self_, fs, folder, name))

        monkeypatch.setattr(dialect, "list_folder", shifted)
        if "list_after" in vars(dialect):  # else it lists the folder, shifted already
            monkeypatch.setattr(dialect, "list_after", shifted_after)

    def step(self, store: FsspecBackend, key: str, kind: str) -> None:
        """The step: ``store`` (the collector) also lives ``STEP`` s on by its hidden clock."""
        folder = store.folder(key)
        self.before |= {f"{folder}/{name}" for name in Raw(store, kind).names(key)}
        Clock.of(store).advance(STEP)

    def _shift_all(self, infos: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        return None if infos is None else [self._shift(info) for info in infos]

    def _shift(self, info: Mapping[str, Any]) -> dict[str, Any]:
        copy = dict(info)
        if str(copy.get("name", "")).rstrip("/") not in self.before:
            return copy
        for field in _STAMPS:
            value = copy.get(field)
            if isinstance(value, datetime):
                copy[field] = value - timedelta(seconds=STEP)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                copy[field] = value - STEP
        return copy


def pause_before_create(store: FsspecBackend, meanwhile: Callable[[], None]) -> None:
    """Run ``meanwhile`` once, between the store's next read and its create."""
    dialect = store._dialect
    real = dialect.create

    def paused(fs: Any, path: str, data: bytes) -> None:
        dialect.create = real  # type: ignore[method-assign]
        meanwhile()
        real(fs, path, data)

    dialect.create = paused  # type: ignore[method-assign]
