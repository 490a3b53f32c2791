"""``s3://bucket/prefix``: docmem documents as S3 objects, changed only by conditional PUTs.

Create is ``PutObject`` with ``If-None-Match: *``, update is ``PutObject`` with
``If-Match: <etag>``; the version token is the ETag exactly as the server sent
it. Conditional PUTs run with botocore's retries off (a resent PUT may already
have landed) and short timeouts, inside docmem's own bounded loop; a timeout
or a connection lost after the request went out is ``WriteOutcomeUnknown``,
which :class:`docmem.FileMemory` settles through the document's journal.
Every client call runs inside :class:`docmem_s3.errors.s3_answers`, so every
answer and every failure, whatever library raised it, is classified by one
table; an answer without a well-formed ETag is refused, never used as a
version (:func:`docmem_s3.errors.etag_of`).

On a versioned bucket every PUT keeps the object it replaced, so
:meth:`S3Backend.purge_history`, an erase's last step, deletes the document's
older versions, :meth:`S3Backend.delete` all of them, and
:meth:`S3Backend.history` lists them for an operator, each by its ETag
(:mod:`docmem_s3.history`); a bucket that never kept versions has no history.

Reads of a key seen before send ``If-None-Match: <etag>``: an unchanged
document costs a 304 with no body, served from a small per-process cache.
Before the first write through a store, once per process and (endpoint,
bucket, prefix), the store must show that it honours the conditions
(:meth:`S3Backend.verify`, the checks in :mod:`docmem_s3.probe`); some
"S3-compatible" servers ignore them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import boto3
import msgspec
from botocore.config import Config
from botocore.exceptions import NoRegionError

from docmem import telemetry
from docmem.backend import (
    Backend,
    ContendedKeys,
    KeptVersion,
    LruCache,
    OncePerIdentity,
    PerProcess,
    ServerChecks,
    Stored,
    check_key,
)
from docmem.errors import (
    DocmemError,
    HistoryNotKept,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem.options import check_options, parse_options

from .errors import (
    Missing,
    NotModified,
    Operation,
    ProtocolViolation,
    etag_of,
    s3_answers,
    usable_etag,
)
from .history import (
    Versioning,
    keeps_versions,
    kept_versions,
    purge_older_versions,
    read_kept,
    versioning,
)
from .probe import ProbeReport, Target, checks, race, refuse

__all__ = ["S3Backend", "S3Options", "normalize_etag", "probe"]

CONTENT_TYPE = "text/markdown; charset=utf-8"
_SUFFIX = ".md"
#: A per-request hour is plenty (far above it, a socket timeout overflows time_t).
_MAX_SECONDS = 3600.0
#: botocore would keep retrying a dead store for hours with an unbounded count.
_MAX_ATTEMPTS = 100
#: Keys whose last version listing a store keeps, for reading the versions it listed.
_LISTINGS_KEPT = 16

_Text = Annotated[str | None, msgspec.Meta(description="text")]
_RequestSeconds = Annotated[
    float,
    msgspec.Meta(
        gt=0,
        le=_MAX_SECONDS,
        description=f"a number of seconds above 0 and at most {_MAX_SECONDS:g}",
    ),
]
_Attempts = Annotated[
    int,
    msgspec.Meta(ge=1, le=_MAX_ATTEMPTS, description=f"a whole number from 1 to {_MAX_ATTEMPTS}"),
]
_CacheSize = Annotated[int, msgspec.Meta(ge=0, description="a whole number of at least 0")]


class S3Options(msgspec.Struct, frozen=True, kw_only=True):
    """The ``s3://`` options, from the URL query or keywords (see :mod:`docmem.options`).

    Blank text (``region=``) is not given; :class:`S3Backend` documents each option.
    """

    endpoint_url: _Text = None
    region: _Text = None
    sse: Annotated[
        Literal["AES256", "aws:kms", "aws:kms:dsse"] | None,
        msgspec.Meta(description="AES256, aws:kms or aws:kms:dsse"),
    ] = None
    sse_kms_key_id: _Text = None
    connect_timeout: _RequestSeconds = 2.0
    read_timeout: _RequestSeconds = 5.0
    max_attempts: _Attempts = 3
    cache_size: _CacheSize = 1024


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
        given = {
            "endpoint_url": endpoint_url,
            "region": region,
            "sse": sse,
            "sse_kms_key_id": sse_kms_key_id,
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            "max_attempts": max_attempts,
            "cache_size": cache_size,
        }
        checked = check_options(S3Options, given, scheme="s3")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = checked.endpoint_url
        self.region = checked.region
        # A KMS key without a mode asks for SSE-KMS.
        self.sse = checked.sse or ("aws:kms" if checked.sse_kms_key_id else None)
        self.sse_kms_key_id = checked.sse_kms_key_id
        self.connect_timeout = checked.connect_timeout
        self.read_timeout = checked.read_timeout
        self.max_attempts = checked.max_attempts
        self.cache_size = checked.cache_size
        self._session = session
        self._given_client = client
        self._cache: LruCache[Stored] = LruCache(self.cache_size)
        # Keys whose last conditional PUT lost a race: another client writes them, so
        # read_recent asks the server (a 304 when nothing changed) until one GET is a 304.
        self._contended = ContendedKeys(self.cache_size)
        self._clients: PerProcess[tuple[Any, Any]] = PerProcess(self._build_clients)
        # The bucket's versioning once seen enabled or suspended: it never becomes
        # unversioned again, so later erases need not ask.
        self._versioned: Versioning | None = None
        # Per key, which version id holds each ETag, from its last version listing.
        self._kept_ids: LruCache[dict[str, str]] = LruCache(_LISTINGS_KEPT)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> S3Backend:
        parts = urlsplit(url)
        given = dict(options)
        # Objects passed in code, never options of the URL.
        session = given.pop("session", None)
        client = given.pop("client", None)
        checked = parse_options(S3Options, url, given, scheme="s3")
        return cls(
            parts.netloc,
            parts.path,
            **msgspec.structs.asdict(checked),
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
            with s3_answers("read", bucket=self.bucket):
                response = reader.get_object(**request)
                data = response["Body"].read()
        except NotModified:
            if cached is None:
                raise StoreUnavailable("the s3 read was answered 304 without a condition") from None
            self._contended.discard(key)
            telemetry.note_cache(True, "s3")
            return cached
        except Missing:
            self._cache.drop(key)
            return None
        try:
            version = etag_of(response, "read")
        except ProtocolViolation:
            self._cache.drop(key)
            raise
        stored = Stored(data=bytes(data), version=version)
        if cached is not None:
            telemetry.note_cache(False, "s3")  # asked with a condition, sent a new body
        self._cache.put(key, stored)
        return stored

    def read_recent(self, key: str) -> Stored | None:
        """The cached version when this process has one (no round trip), else :meth:`read`.

        A key another client has been writing is read from the server instead
        (a 304 when unchanged), so a save does not send a PUT doomed to a 412.
        """
        return self._contended.read_recent(key, cached=self._cache.get, read=self.read)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        object_key = self.object_key(key)
        self.verify()  # first: an unreachable store is unavailable, never a conflict
        if expected is not None and not usable_etag(expected):
            # Never sent: an empty If-Match is no condition on some servers, and a token
            # that is no ETag cannot be the version of anything this store holds.
            raise VersionConflict("the s3 update names a version that is not an ETag")
        _, writer = self.clients()
        operation: Operation = "create" if expected is None else "update"
        try:
            with s3_answers(operation, bucket=self.bucket):
                response = writer.put_object(**self._put_request(object_key, data, expected))
        except VersionConflict:
            self._cache.drop(key)
            self._contended.add(key)  # another client writes it: read_recent asks the server
            raise
        except DocmemError:
            self._cache.drop(key)
            raise
        return self._written(key, data, response, operation)

    def _put_request(self, object_key: str, data: bytes, expected: str | None) -> dict[str, Any]:
        """The PutObject parameters: the condition, and server-side encryption if asked for."""
        request: dict[str, Any] = {
            "Bucket": self.bucket,
            "Key": object_key,
            "Body": data,
            "ContentType": CONTENT_TYPE,
        }
        if expected is None:
            request["IfNoneMatch"] = "*"
        else:
            request["IfMatch"] = expected
        if self.sse is not None:
            request["ServerSideEncryption"] = self.sse
        if self.sse_kms_key_id:
            request["SSEKMSKeyId"] = self.sse_kms_key_id
        return request

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
        """Remove ``key``, and on a versioned bucket every older version of it.

        Why: a delete is an operator's purge of the key and its history
        (docs/design.md, section 4), while DeleteObject on a versioned bucket
        only puts a delete marker above versions that stay readable. The
        marker goes first, so a purge that stops halfway never brings an
        older version back as the current one; it raises HistoryKept then.
        An unversioned bucket costs one GetBucketVersioning more.
        """
        object_key = self.object_key(key)
        reader, _ = self.clients()
        self._cache.drop(key)
        self._kept_ids.drop(key)
        with contextlib.suppress(Missing), s3_answers("delete", bucket=self.bucket):
            reader.delete_object(Bucket=self.bucket, Key=object_key)
        state = self._versioning(reader)
        if keeps_versions(state):
            purge_older_versions(reader, self.bucket, object_key, state, "delete")

    def purge_history(self, key: str) -> None:
        """Delete every version of ``key`` but the current one, when the bucket keeps versions.

        Why: on a versioned bucket each PUT keeps the object it replaced, so
        the text an erase removed would stay readable by version id. A
        bucket that never kept versions costs one GetBucketVersioning and
        nothing more. HistoryKept (a StoreUnavailable; the erase reports it
        with outcome ``committed``) when older versions may be left.
        """
        object_key = self.object_key(key)
        reader, _ = self.clients()
        state = self._versioning(reader)
        if keeps_versions(state):
            purge_older_versions(reader, self.bucket, object_key, state)

    def history(self, key: str) -> list[KeptVersion]:
        """The versions of ``key`` the bucket keeps, oldest first, the current one last.

        Why it needs a versioned bucket: only then does S3 keep what a PUT
        replaced (HistoryNotKept otherwise, after one GetBucketVersioning).
        Each version is named by its ETag, the token its write returned, so
        the last is the version :meth:`read` reports and a revert writes
        over. Empty when the key is missing or deleted. Needs
        ``s3:ListBucketVersions``.
        """
        object_key = self.object_key(key)
        reader, _ = self.clients()
        self._require_history(reader)
        kept, ids = kept_versions(reader, self.bucket, object_key)
        self._kept_ids.put(key, ids)
        return kept

    def read_version(self, key: str, version: str) -> Stored | None:
        """One version :meth:`history` listed, by its ETag; ``None`` once it is gone.

        The current one is a read (a 304 when cached). An older one is read by
        the version id the last listing paired with its ETag, with
        ``s3:GetObjectVersion``. HistoryNotKept on a bucket that never kept
        versions: some servers (SeaweedFS) ignore a version id there and
        answer with the current document.
        """
        object_key = self.object_key(key)
        reader, _ = self.clients()
        self._require_history(reader)
        if not usable_etag(version):
            return None  # not a version token of this store: those are ETags
        stored = self.read(key)
        if stored is not None and stored.version == version:
            return stored
        return self._read_older(key, object_key, version)

    def _read_older(self, key: str, object_key: str, etag: str) -> Stored | None:
        """A version no longer current, through the version id a listing pairs with ``etag``.

        Why the last listing first: ``docmem history`` and a revert read the
        versions :meth:`history` just listed, one GET each. A version it does
        not know, or one gone since, is looked up in a listing anew.
        """
        reader, _ = self.clients()
        listed = self._kept_ids.get(key)
        if listed is not None and etag in listed:
            data = read_kept(reader, self.bucket, object_key, listed[etag])
            if data is not None:
                return Stored(data=data, version=etag)
        _, ids = kept_versions(reader, self.bucket, object_key)
        self._kept_ids.put(key, ids)
        if etag not in ids:
            return None
        data = read_kept(reader, self.bucket, object_key, ids[etag])
        return None if data is None else Stored(data=data, version=etag)

    def _versioning(self, reader: Any) -> Versioning:
        """The bucket's versioning; once seen enabled or suspended, never asked again."""
        state = self._versioned or versioning(reader, self.bucket)
        if state in ("enabled", "suspended"):
            self._versioned = state
        return state

    def _require_history(self, reader: Any) -> None:
        """HistoryNotKept unless the bucket may keep versions ("unknown" may: the listing tells)."""
        if not keeps_versions(self._versioning(reader)):
            raise HistoryNotKept(
                f"s3://{self.bucket} keeps no older versions: the bucket's versioning is off "
                "(or the server has none); enable it to keep a history of each document"
            )

    def keys(self) -> Iterator[str]:
        for key, _ in self._listed():
            yield key

    def listed_versions(self) -> Iterator[tuple[str, str]]:
        """Every key with its ETag from the listing (1,000 per request), as a read answers it."""
        for key, item in self._listed():
            etag = item.get("ETag")
            if not usable_etag(etag):
                raise ProtocolViolation("the s3 list answer names an object without a usable ETag")
            yield key, str(etag)

    def _listed(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each document's key with its listing entry."""
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
                    yield name[: -len(_SUFFIX)], item

    def _pages(self, prefix: str) -> Iterator[dict[str, Any]]:
        """The listing's pages, each fetch's failure a docmem error (the consumer's are not)."""
        reader, _ = self.clients()
        with s3_answers("list", bucket=self.bucket):
            paginator = reader.get_paginator("list_objects_v2")
            pages = iter(paginator.paginate(Bucket=self.bucket, Prefix=prefix))
        while True:
            with s3_answers("list", bucket=self.bucket):
                page = next(pages, None)
            if page is None:
                return
            yield page

    def close(self) -> None:
        clients = self._clients.reset()
        if clients is not None:
            for client in clients:
                if client is not self._given_client:
                    client.close()

    def check_server(self, *, writers: int = 8) -> ServerChecks:
        """docmem-s3's probe (:func:`probe`), and the bucket's versioning beside it."""
        found = probe(self, writers=writers)
        return ServerChecks("docmem-s3", found.checks, {"versioning": found.versioning})

    # -- first-write verification ----------------------------------------------

    def verify(self) -> None:
        """Check the store honours the conditions, once per process and :attr:`identity`.

        Concurrent first writes to one store wait for a single verification;
        other stores are not held up. ConditionsNotHonoured if it fails.
        """
        _verified.once(self.identity, lambda: refuse(checks(self._target())))

    def _target(self) -> Target:
        reader, writer = self.clients()
        return Target(reader=reader, writer=writer, bucket=self.bucket, prefix=self.prefix)


def probe(store: S3Backend, *, writers: int = 8) -> ProbeReport:
    """Every check on ``store``, a race of ``writers`` concurrent creates included.

    What ``python -m docmem_s3 probe URL`` runs; raises ConditionsNotHonoured
    if a check fails. A store that passes counts as verified in this process.
    """
    target = store._target()
    found = checks(target)
    if all(passed for _, passed in found):
        found.append(race(target, writers))
    refuse(found)
    _verified.mark(store.identity)
    return ProbeReport(tuple(found), versioning=versioning(target.reader, target.bucket))


_verified = OncePerIdentity()
