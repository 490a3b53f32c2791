"""``s3://bucket/prefix``: docmem documents as S3 objects, changed only by conditional PUTs.

Create is ``PutObject`` with ``If-None-Match: *``, update is ``PutObject`` with
``If-Match: <etag>``; the version token is the ETag exactly as the server sent
it. Conditional PUTs run with botocore's retries off (a resent PUT may already
have landed) and short timeouts, inside docmem's own bounded loop; a timeout
or a connection lost after the request went out is ``WriteOutcomeUnknown``,
which :class:`docmem.FileMemory` settles through the document's journal.

Reads of a key seen before send ``If-None-Match: <etag>``: an unchanged
document costs a 304 with no body, served from a small per-process cache.
Before the first write through a store, once per process and (endpoint,
bucket, prefix), the store must show that it honours the conditions
(:func:`docmem_s3.probe.verify`); some "S3-compatible" servers ignore them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ProxyConnectionError,
)

from docmem.backend import Backend, LruCache, PerProcess, Stored, check_key, url_options
from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

from .errors import MISSING, NOT_MODIFIED, Operation, answer, classify
from .probe import verify_once

__all__ = ["S3Backend", "normalize_etag"]

CONTENT_TYPE = "text/markdown; charset=utf-8"
_SUFFIX = ".md"
_NOT_SENT = (EndpointConnectionError, ConnectTimeoutError, ProxyConnectionError)
_SSE_MODES = {"AES256", "aws:kms", "aws:kms:dsse"}
_OPTION_NAMES = (
    "endpoint_url",
    "region",
    "sse",
    "sse_kms_key_id",
    "connect_timeout",
    "read_timeout",
    "max_attempts",
    "cache_size",
)


def normalize_etag(etag: str) -> str:
    """An ETag for comparison: weak marker and quotes removed."""
    value = etag.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"')


class S3Backend(Backend):
    """Documents in one bucket under an optional prefix; see the module docstring.

    Options (URL query or keywords): ``endpoint_url``, ``region``, ``sse``
    (``AES256`` or ``aws:kms``), ``sse_kms_key_id``, ``connect_timeout`` and
    ``read_timeout`` in seconds (default 2 and 5), ``max_attempts`` for reads,
    deletes and listings (default 3; conditional PUTs always make exactly one),
    ``cache_size`` (documents kept for 304 reads, default 1,024). Credentials
    come from the standard AWS chain, or a ``session`` passed in code; a
    ``client`` passed in code serves reads, while PUTs use a client made with
    the same endpoint and credentials but without retries.
    """

    shared_between_processes = True
    recent_reads_may_be_stale = True

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        sse: str | None = None,
        sse_kms_key_id: str | None = None,
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        max_attempts: int = 3,
        cache_size: int = 1024,
        session: Any = None,
        client: Any = None,
    ) -> None:
        if not bucket:
            raise StoreNotConfigured("the s3:// URL names no bucket: use s3://bucket/prefix")
        if sse is not None and sse not in _SSE_MODES:
            raise StoreNotConfigured("sse must be AES256, aws:kms or aws:kms:dsse")
        if sse_kms_key_id and sse is None:
            sse = "aws:kms"
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = endpoint_url
        self.region = region
        self.sse = sse
        self.sse_kms_key_id = sse_kms_key_id
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.max_attempts = int(max_attempts)
        self.cache_size = int(cache_size)
        if self.connect_timeout <= 0 or self.read_timeout <= 0 or self.max_attempts < 1:
            raise StoreNotConfigured("s3 timeouts must be positive and max_attempts at least 1")
        self._session = session
        self._given_client = client
        self._cache: LruCache[Stored] = LruCache(self.cache_size)
        # Keys whose last conditional PUT lost a race: another client writes them, so
        # read_recent asks the server (a 304 when nothing changed) until one GET is a 304.
        self._contended: set[str] = set()
        self._clients: PerProcess[tuple[Any, Any]] = PerProcess(self._build_clients)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> S3Backend:
        parts = urlsplit(url)
        merged = url_options(url, options)
        session = merged.pop("session", None)
        client = merged.pop("client", None)
        unknown = sorted(set(merged) - set(_OPTION_NAMES))
        if unknown:
            raise StoreNotConfigured(
                f"unknown s3:// options: {', '.join(unknown)} (known: {', '.join(_OPTION_NAMES)})"
            )
        try:
            return cls(
                parts.netloc,
                parts.path,
                endpoint_url=merged.get("endpoint_url") or None,
                region=merged.get("region") or None,
                sse=merged.get("sse") or None,
                sse_kms_key_id=merged.get("sse_kms_key_id") or None,
                connect_timeout=float(merged.get("connect_timeout", 2.0)),
                read_timeout=float(merged.get("read_timeout", 5.0)),
                max_attempts=int(merged.get("max_attempts", 3)),
                cache_size=int(merged.get("cache_size", 1024)),
                session=session,
                client=client,
            )
        except ValueError:
            raise StoreNotConfigured("s3:// timeouts and counts must be numbers") from None

    # -- identity --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    @property
    def options(self) -> dict[str, Any]:
        values = {
            "endpoint_url": self.endpoint_url,
            "region": self.region,
            "sse": self.sse,
            "sse_kms_key_id": self.sse_kms_key_id,
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_attempts": self.max_attempts,
            "cache_size": self.cache_size,
        }
        return {name: value for name, value in values.items() if value is not None}

    @property
    def identity(self) -> tuple[str, str, str]:
        """(endpoint, bucket, prefix): what the first-write verification is done once for."""
        return (self.endpoint_url or "aws", self.bucket, self.prefix)

    def object_key(self, key: str) -> str:
        """The S3 key of a docmem key: ``<prefix>/<key>.md`` (opaque digests only)."""
        name = check_key(key) + _SUFFIX
        return f"{self.prefix}/{name}" if self.prefix else name

    # -- clients ---------------------------------------------------------------

    def clients(self) -> tuple[Any, Any]:
        """(reader, writer): built on first use and again in a forked child."""
        return self._clients.get()

    def _build_clients(self) -> tuple[Any, Any]:
        timeouts = {"connect_timeout": self.connect_timeout, "read_timeout": self.read_timeout}
        read_config = Config(
            retries={"mode": "standard", "total_max_attempts": self.max_attempts}, **timeouts
        )
        # A resent PUT may already have landed: docmem's loop decides, never botocore.
        write_config = Config(retries={"mode": "standard", "total_max_attempts": 1}, **timeouts)
        try:
            if self._given_client is not None:
                meta = self._given_client.meta
                session = self._session or boto3.session.Session()
                writer = session.client(
                    "s3",
                    endpoint_url=meta.endpoint_url,
                    region_name=meta.region_name,
                    config=write_config,
                )
                return self._given_client, writer
            session = self._session or boto3.session.Session()
            common = {"endpoint_url": self.endpoint_url, "region_name": self.region}
            return (
                session.client("s3", config=read_config, **common),
                session.client("s3", config=write_config, **common),
            )
        except (NoRegionError, ValueError) as exc:
            raise StoreNotConfigured(
                f"the s3:// store is misconfigured ({type(exc).__name__}): check region and "
                "endpoint_url"
            ) from None

    # -- the Backend contract --------------------------------------------------

    def read(self, key: str) -> Stored | None:
        object_key = self.object_key(key)
        reader, _ = self.clients()
        cached = self._cache.get(key)
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": object_key}
        if cached is not None:
            request["IfNoneMatch"] = cached.version
        try:
            response = reader.get_object(**request)
            data = response["Body"].read()
        except ClientError as exc:
            result = self._classify("read", exc)
            if result == NOT_MODIFIED and cached is not None:
                self._contended.discard(key)
                return cached
            if result == MISSING:
                self._cache.drop(key)
                return None
            raise self._error(result, "read", exc) from None
        except BotoCoreError as exc:
            raise _unavailable("read", exc) from None
        stored = Stored(data=data, version=str(response["ETag"]))
        self._cache.put(key, stored)
        return stored

    def read_recent(self, key: str) -> Stored | None:
        """The cached version when this process has one (no round trip), else :meth:`read`.

        A key another client has been writing is read from the server instead
        (a 304 when unchanged), so a save does not send a PUT doomed to a 412.
        """
        self.object_key(key)
        cached = self._cache.get(key) if key not in self._contended else None
        return cached if cached is not None else self.read(key)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        object_key = self.object_key(key)
        verify_once(self)
        _, writer = self.clients()
        request: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": object_key,
            "Body": data,
            "ContentType": CONTENT_TYPE,
        }
        if expected is None:
            request["IfNoneMatch"] = "*"
            operation: Operation = "create"
        else:
            request["IfMatch"] = expected
            operation = "update"
        if self.sse is not None:
            request["ServerSideEncryption"] = self.sse
        if self.sse_kms_key_id:
            request["SSEKMSKeyId"] = self.sse_kms_key_id
        try:
            response = writer.put_object(**request)
        except ClientError as exc:
            self._cache.drop(key)
            result = self._classify(operation, exc)
            if result is VersionConflict:
                if len(self._contended) >= max(self.cache_size, 1):
                    self._contended.clear()  # bounded; forgetting only costs one 412 later
                self._contended.add(key)
            raise self._error(result, operation, exc) from None
        except _NOT_SENT as exc:
            raise _unavailable(operation, exc) from None
        except (NoCredentialsError, PartialCredentialsError) as exc:
            raise _unavailable(operation, exc) from None
        except BotoCoreError as exc:
            self._cache.drop(key)
            raise WriteOutcomeUnknown(
                f"the s3 {operation} may or may not have landed ({type(exc).__name__})"
            ) from None
        version = str(response["ETag"])
        self._cache.put(key, Stored(data=bytes(data), version=version))
        return version

    def delete(self, key: str) -> None:
        object_key = self.object_key(key)
        reader, _ = self.clients()
        self._cache.drop(key)
        try:
            reader.delete_object(Bucket=self.bucket, Key=object_key)
        except ClientError as exc:
            result = self._classify("delete", exc)
            if result != MISSING:
                raise self._error(result, "delete", exc) from None
        except BotoCoreError as exc:
            raise _unavailable("delete", exc) from None

    def keys(self) -> Iterator[str]:
        reader, _ = self.clients()
        prefix = f"{self.prefix}/" if self.prefix else ""
        try:
            for page in reader.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix
            ):
                for item in page.get("Contents", ()):
                    name = str(item["Key"])[len(prefix) :]
                    if "/" not in name and name.endswith(_SUFFIX):
                        yield name[: -len(_SUFFIX)]
        except ClientError as exc:
            raise self._error(self._classify("list", exc), "list", exc) from None
        except BotoCoreError as exc:
            raise _unavailable("list", exc) from None

    def close(self) -> None:
        clients = self._clients.reset()
        if clients is not None:
            for client in clients:
                if client is not self._given_client:
                    client.close()

    # -- errors ----------------------------------------------------------------

    @staticmethod
    def _classify(operation: Operation, exc: ClientError) -> object:
        return classify(operation, *answer(exc))

    def _error(self, result: object, operation: Operation, exc: ClientError) -> DocmemError:
        code, status = answer(exc)
        code = code or "unknown"
        if result is VersionConflict:
            return VersionConflict(f"the s3 {operation} condition did not hold ({code})")
        if result is WriteOutcomeUnknown:
            return WriteOutcomeUnknown(
                f"the s3 {operation} may or may not have landed (HTTP {status}, {code})"
            )
        if code == "NoSuchBucket":
            return StoreUnavailable(f"the s3 bucket {self.bucket!r} does not exist")
        return StoreUnavailable(f"the s3 {operation} failed (HTTP {status}, {code})")


def _unavailable(operation: str, exc: BotoCoreError) -> DocmemError:
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return StoreNotConfigured(
            "no usable AWS credentials: configure the standard AWS chain "
            "(environment, shared config, instance role) or pass a boto3 session"
        )
    return StoreUnavailable(f"the s3 {operation} could not reach the store ({type(exc).__name__})")
