"""``s3://bucket/prefix``: docmem documents as S3 objects, changed only by conditional PUTs.

Create is ``PutObject`` with ``If-None-Match: *``, update is ``PutObject`` with
``If-Match: <etag>``; the version token is the ETag exactly as the server sent
it. Conditional PUTs run with botocore's retries off (a resent PUT may already
have landed) and short timeouts, inside docmem's own bounded loop; a timeout
or a connection lost after the request went out is ``WriteOutcomeUnknown``,
which :class:`docmem.FileMemory` settles through the document's journal.
Every failure of a client call, whatever library raised it, becomes a docmem
error (:func:`docmem_s3.errors.transport_failure`), and an answer without a
well-formed ETag is refused, never used as a version
(:func:`docmem_s3.errors.etag_of`).

Reads of a key seen before send ``If-None-Match: <etag>``: an unchanged
document costs a 304 with no body, served from a small per-process cache.
Before the first write through a store, once per process and (endpoint,
bucket, prefix), the store must show that it honours the conditions
(:func:`docmem_s3.probe.verify`); some "S3-compatible" servers ignore them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, NoRegionError

from docmem.backend import Backend, LruCache, PerProcess, Stored, check_key, url_options
from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

from .errors import (
    MISSING,
    NOT_MODIFIED,
    Operation,
    ProtocolViolation,
    answer,
    classify,
    etag_of,
    transport_failure,
    usable_etag,
)
from .probe import verify_once

__all__ = ["S3Backend", "normalize_etag"]

CONTENT_TYPE = "text/markdown; charset=utf-8"
_SUFFIX = ".md"
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
#: A per-request hour is plenty (far above it, a socket timeout overflows time_t).
_MAX_SECONDS = 3600.0
#: botocore would keep retrying a dead store for hours with an unbounded count.
_MAX_ATTEMPTS = 100


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
        sse = _text(sse, "sse")
        sse_kms_key_id = _text(sse_kms_key_id, "sse_kms_key_id")
        if sse is not None and sse not in _SSE_MODES:
            raise StoreNotConfigured("sse must be AES256, aws:kms or aws:kms:dsse")
        if sse_kms_key_id and sse is None:
            sse = "aws:kms"
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = _text(endpoint_url, "endpoint_url")
        self.region = _text(region, "region")
        self.sse = sse
        self.sse_kms_key_id = sse_kms_key_id
        self.connect_timeout = _seconds(connect_timeout, "connect_timeout")
        self.read_timeout = _seconds(read_timeout, "read_timeout")
        self.max_attempts = _whole(max_attempts, "max_attempts", least=1, most=_MAX_ATTEMPTS)
        self.cache_size = _whole(cache_size, "cache_size", least=0)
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
        # Each option is checked (and a URL's text converted) by __init__, named in its error.
        return cls(
            parts.netloc,
            parts.path,
            endpoint_url=merged.get("endpoint_url"),
            region=merged.get("region"),
            sse=merged.get("sse"),
            sse_kms_key_id=merged.get("sse_kms_key_id"),
            connect_timeout=merged.get("connect_timeout", 2.0),
            read_timeout=merged.get("read_timeout", 5.0),
            max_attempts=merged.get("max_attempts", 3),
            cache_size=merged.get("cache_size", 1024),
            session=session,
            client=client,
        )

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
        except Exception as exc:  # the client call is the boundary: see transport_failure
            raise transport_failure("read", exc) from None
        try:
            version = etag_of(response, "read")
        except ProtocolViolation:
            self._cache.drop(key)
            raise
        stored = Stored(data=bytes(data), version=version)
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
        verify_once(self)  # first: an unreachable store is unavailable, never a conflict
        if expected is not None and not usable_etag(expected):
            # Never sent: an empty If-Match is no condition on some servers, and a token
            # that is no ETag cannot be the version of anything this store holds.
            raise VersionConflict("the s3 update names a version that is not an ETag")
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
        except Exception as exc:  # the client call is the boundary: see transport_failure
            self._cache.drop(key)
            raise transport_failure(operation, exc) from None
        return self._written(key, data, response, operation)

    def _written(self, key: str, data: bytes, response: Any, operation: Operation) -> str:
        """The version a write's 200 answer names; without a usable one the outcome is unknown.

        The server says it stored the bytes but gives no version to condition the
        next write on: the provider settles the write through the journal, like
        a lost answer, and reads the version afresh.
        """
        etag = response.get("ETag")
        if not usable_etag(etag):
            self._cache.drop(key)
            raise WriteOutcomeUnknown(
                f"the s3 {operation} was answered without a well-formed ETag (the store "
                "breaks the S3 protocol): it may have landed, and its version is unknown"
            )
        version = str(etag)
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
        except Exception as exc:  # the client call is the boundary: see transport_failure
            raise transport_failure("delete", exc) from None

    def keys(self) -> Iterator[str]:
        prefix = f"{self.prefix}/" if self.prefix else ""
        for page in self._pages(prefix):
            for item in page.get("Contents", ()):
                name = item.get("Key") if isinstance(item, dict) else None
                if not isinstance(name, str):
                    raise ProtocolViolation("the s3 list answer names an object without a key")
                if not name.startswith(prefix):
                    continue  # not asked for: never taken for a document of this store
                name = name[len(prefix) :]
                if "/" not in name and name.endswith(_SUFFIX):
                    yield name[: -len(_SUFFIX)]

    def _pages(self, prefix: str) -> Iterator[dict[str, Any]]:
        """The listing's pages, each fetch's failure a docmem error (the consumer's are not)."""
        reader, _ = self.clients()
        try:
            pages = iter(
                reader.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
            )
        except Exception as exc:  # the client call is the boundary: see transport_failure
            raise transport_failure("list", exc) from None
        while True:
            try:
                page = next(pages)
            except StopIteration:
                return
            except ClientError as exc:
                raise self._error(self._classify("list", exc), "list", exc) from None
            except Exception as exc:  # the client call is the boundary: see transport_failure
                raise transport_failure("list", exc) from None
            yield page

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


def _text(value: object, option: str) -> str | None:
    """A text option: ``None`` (or blank, as a URL spells "not given") or a string."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise StoreNotConfigured(f"the s3 option {option} must be text")
    return value


def _seconds(value: object, option: str) -> float:
    """A timeout: a finite number of seconds above 0 (a URL gives it as text).

    ``None``, NaN or infinity would fail every request (or overflow the socket)
    later, far from the mistake; a bool is a typo for a number.
    """
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= _MAX_SECONDS
    ):
        raise StoreNotConfigured(
            f"the s3 option {option} must be a number of seconds above 0 and at most "
            f"{_MAX_SECONDS:g}"
        )
    return float(value)


def _whole(value: object, option: str, *, least: int, most: int | None = None) -> int:
    """A count: a whole number in ``[least, most]`` (a URL gives it as text; never a bool)."""
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            value = None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < least
        or (most is not None and value > most)
    ):
        bound = f"from {least} to {most}" if most is not None else f"of at least {least}"
        raise StoreNotConfigured(f"the s3 option {option} must be a whole number {bound}")
    return value
