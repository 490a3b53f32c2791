"""``gs://bucket/prefix``: docmem documents as GCS objects, changed only by conditional uploads.

Create is an upload with ``ifGenerationMatch=0``, update one with
``ifGenerationMatch=<generation>``; the version token is the object's
generation as a decimal string. Every upload is one multipart upload (the
SDK's kind for up to 8 MiB: a larger write is refused, never sent as a
resumable upload, whose precondition fake-gcs-server ignores), sent with the
SDK's retries off (``retry=None``: its default retries a conditional upload;
a resent one may already have landed) and short timeouts, inside docmem's own
bounded loop; a timeout or a connection lost after the request went out is
``WriteOutcomeUnknown``, which :class:`docmem.FileMemory` settles through the
document's journal. Every client call runs inside
:class:`docmem_gcs.errors.gcs_answers`, so every answer and every failure is
classified by one table; an answer without a well-formed generation is
refused, never used as a version.

Reads of a key seen before send ``ifGenerationNotMatch=<generation>``: GCS
answers an unchanged document with a 304 and no body, served from a small
per-process cache. (fake-gcs-server ignores the condition and sends the body;
the version is then still the ``x-goog-generation`` of those very bytes.)
Before the first request through a store, once per process and (endpoint,
bucket, prefix), one listing checks that the prefix is not a docmem-fsspec
store (:mod:`docmem_gcs.layout`); before the first write, the store must show
that it honours the preconditions (:meth:`GcsBackend.verify`, the checks in
:mod:`docmem_gcs.probe`).

A bucket with object versioning keeps what each upload replaced; this
plug-in keeps no history of its own and refuses to leave an erased text in
silence (:mod:`docmem_gcs.history`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any
from urllib.parse import urlsplit

import msgspec
import requests.exceptions
from google.api_core.exceptions import GoogleAPICallError
from google.api_core.retry import Retry

from docmem import telemetry
from docmem.backend import (
    Backend,
    ContendedKeys,
    LruCache,
    OncePerIdentity,
    PerProcess,
    ServerChecks,
    Stored,
    check_key,
)
from docmem.errors import (
    DocmemError,
    LimitExceeded,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem.options import check_options, parse_options

from .clients import DEFAULT_ENDPOINT, build_client
from .errors import (
    Missing,
    NotModified,
    Operation,
    ProtocolViolation,
    gcs_answers,
    generation_of,
    generation_text,
    usable_generation,
)
from .history import require_no_older_generations
from .layout import check_layout
from .probe import ProbeReport, Target, checks, race, refuse

__all__ = ["MAX_UPLOAD_BYTES", "GcsBackend", "GcsOptions", "probe"]

CONTENT_TYPE = "text/markdown; charset=utf-8"
_SUFFIX = ".md"
#: The SDK sends up to this many bytes as one multipart upload (google.cloud.storage.blob.
#: _MAX_MULTIPART_SIZE), larger ones as resumable uploads: a test pins the two together.
MAX_UPLOAD_BYTES = 8 * 1024 * 1024
_MAX_SECONDS = 3600.0
_MAX_ATTEMPTS = 100
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})

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


class GcsOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The ``gs://`` options, from the URL query or keywords (see :mod:`docmem.options`).

    Blank text (``endpoint_url=``) is not given; :class:`GcsBackend` documents each option.
    """

    endpoint_url: _Text = None
    credentials_file: _Text = None
    connect_timeout: _RequestSeconds = 2.0
    read_timeout: _RequestSeconds = 5.0
    max_attempts: _Attempts = 3
    cache_size: _CacheSize = 1024


class _Attempted:
    """A retry predicate for reads, deletes and listings: transient failures, ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        self._left = limit

    def __call__(self, exc: Exception) -> bool:
        if self._left <= 0 or not _transient(exc):
            return False
        self._left -= 1
        return True


def _transient(exc: Exception) -> bool:
    if isinstance(exc, GoogleAPICallError):
        return exc.code in _RETRYABLE_STATUS
    return isinstance(
        exc,
        (
            requests.exceptions.ConnectionError,
            requests.exceptions.Timeout,
            requests.exceptions.ChunkedEncodingError,
        ),
    )


class GcsBackend(Backend):
    """Documents in one bucket under an optional prefix; see the module docstring.

    Options (URL query or keywords): ``endpoint_url`` (an emulator; anonymous
    credentials unless others are given), ``credentials_file`` (a Google
    credentials JSON file, by path), ``connect_timeout`` and ``read_timeout``
    in seconds (default 2 and 5), ``max_attempts`` for reads, deletes and
    listings (default 3; conditional uploads always make exactly one),
    ``cache_size`` (documents kept for 304 reads, default 1,024). Credentials
    otherwise come from application-default credentials, or ``credentials``
    passed in code; a ``client`` (a ``google.cloud.storage.Client``) passed in
    code is used as it is. Objects passed in code are never pickled: a pickled
    copy finds its credentials afresh (:mod:`docmem_gcs.clients`).
    """

    shared_between_processes = True
    recent_reads_may_be_stale = True

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        credentials_file: str | None = None,
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        max_attempts: int = 3,
        cache_size: int = 1024,
        credentials: Any = None,
        client: Any = None,
    ) -> None:
        if not bucket:
            raise StoreNotConfigured("the gs:// URL names no bucket: use gs://bucket/prefix")
        given = {
            "endpoint_url": endpoint_url,
            "credentials_file": credentials_file,
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            "max_attempts": max_attempts,
            "cache_size": cache_size,
        }
        checked = check_options(GcsOptions, given, scheme="gs")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.endpoint_url = checked.endpoint_url.rstrip("/") if checked.endpoint_url else None
        self.credentials_file = checked.credentials_file
        self.connect_timeout = checked.connect_timeout
        self.read_timeout = checked.read_timeout
        self.max_attempts = checked.max_attempts
        self.cache_size = checked.cache_size
        self._credentials = credentials
        self._given_client = client
        self._cache: LruCache[Stored] = LruCache(self.cache_size)
        # Keys whose last conditional upload lost a race: another client writes them, so
        # read_recent asks the server (a 304 when nothing changed) until one read is a 304.
        self._contended = ContendedKeys(self.cache_size)
        self._clients: PerProcess[Any] = PerProcess(self._build_client)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> GcsBackend:
        parts = urlsplit(url)
        given = dict(options)
        # Objects passed in code, never options of the URL.
        credentials = given.pop("credentials", None)
        client = given.pop("client", None)
        checked = parse_options(GcsOptions, url, given, scheme="gs")
        return cls(
            parts.netloc,
            parts.path,
            **msgspec.structs.asdict(checked),
            credentials=credentials,
            client=client,
        )

    # -- identity --------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}" if self.prefix else f"gs://{self.bucket}"

    @property
    def options(self) -> dict[str, Any]:
        values = {
            "endpoint_url": self.endpoint_url,
            "credentials_file": self.credentials_file,
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_attempts": self.max_attempts,
            "cache_size": self.cache_size,
        }
        return {name: value for name, value in values.items() if value is not None}

    @property
    def identity(self) -> tuple[str, str, str]:
        """(endpoint, bucket, prefix): what the layout check and verification run once for."""
        return (self.endpoint_url or DEFAULT_ENDPOINT, self.bucket, self.prefix)

    def object_name(self, key: str) -> str:
        """The GCS object name of a docmem key: ``<prefix>/<key>.md`` (opaque digests only)."""
        name = check_key(key) + _SUFFIX
        return f"{self.prefix}/{name}" if self.prefix else name

    # -- clients ---------------------------------------------------------------

    def client(self) -> Any:
        """The ``storage.Client``: built on first use and again in a forked child."""
        return self._clients.get()

    def _build_client(self) -> Any:
        if self._given_client is not None:
            return self._given_client
        return build_client(
            endpoint_url=self.endpoint_url,
            credentials_file=self.credentials_file,
            credentials=self._credentials,
        )

    @property
    def timeout(self) -> tuple[float, float]:
        """(connect, read) seconds, as requests takes them, for every call."""
        return (self.connect_timeout, self.read_timeout)

    def _retry(self) -> Retry | None:
        """Bounded retries of transient failures: for reads, deletes, listings; never a write."""
        if self.max_attempts <= 1:
            return None
        return Retry(
            predicate=_Attempted(self.max_attempts - 1),
            initial=0.05,
            maximum=1.0,
            multiplier=2.0,
            timeout=None,
        )

    def _blob(self, name: str) -> Any:
        return self.client().bucket(self.bucket).blob(name)

    # -- the Backend contract --------------------------------------------------

    def read(self, key: str) -> Stored | None:
        name = self.object_name(key)
        self.check_layout()
        cached = self._cache.get(key)
        blob = self._blob(name)
        condition = int(cached.version) if cached is not None else None
        try:
            with gcs_answers("read", bucket=self.bucket):
                data = blob.download_as_bytes(
                    if_generation_not_match=condition, retry=self._retry(), timeout=self.timeout
                )
        except NotModified:
            if cached is None:
                raise StoreUnavailable("the gs read was answered 304 without a condition") from None
            self._contended.discard(key)
            telemetry.note_cache(True, "gs")
            return cached
        except Missing:
            self._cache.drop(key)
            return None
        try:
            version = generation_of(generation_text(blob), "read")
        except ProtocolViolation:
            self._cache.drop(key)
            raise
        stored = Stored(data=bytes(data), version=version)
        if cached is not None:
            telemetry.note_cache(False, "gs")  # asked with a condition, sent a body
            if version == cached.version:
                self._contended.discard(key)  # unchanged: a server that ignores the condition
        self._cache.put(key, stored)
        return stored

    def read_recent(self, key: str) -> Stored | None:
        """The cached version when this process has one (no round trip), else :meth:`read`.

        A key another client has been writing is read from the server instead
        (a 304 when unchanged), so a save does not send an upload doomed to a 412.
        """
        return self._contended.read_recent(key, cached=self._cache.get, read=self.read)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        name = self.object_name(key)
        if len(data) > MAX_UPLOAD_BYTES:
            raise LimitExceeded(
                f"a gs write is at most {MAX_UPLOAD_BYTES:,} bytes (one multipart upload, whose "
                "precondition every server honours); this one is larger"
            )
        self.verify()  # first: an unreachable store is unavailable, never a conflict
        if expected is not None and not usable_generation(expected):
            # Never sent: a token that is no generation is the version of nothing stored here.
            raise VersionConflict("the gs update names a version that is not a generation")
        operation: Operation = "create" if expected is None else "update"
        blob = self._blob(name)
        try:
            with gcs_answers(operation, bucket=self.bucket):
                blob.upload_from_string(
                    data,
                    content_type=CONTENT_TYPE,
                    if_generation_match=0 if expected is None else int(expected),
                    retry=None,
                    timeout=self.timeout,
                )
        except VersionConflict:
            self._cache.drop(key)
            self._contended.add(key)  # another client writes it: read_recent asks the server
            raise
        except DocmemError:
            self._cache.drop(key)
            raise
        return self._written(key, data, generation_text(blob), operation)

    def _written(self, key: str, data: bytes, generation: str, operation: Operation) -> str:
        """The version a write's 200 answer names; without a usable one the outcome is unknown.

        The server says it stored the bytes but gives no version to condition
        the next write on: the provider settles the write through the journal,
        like a lost answer, and reads the version afresh.
        """
        if not usable_generation(generation):
            self._cache.drop(key)
            raise WriteOutcomeUnknown(
                f"the gs {operation} was answered without a well-formed generation (the store "
                "breaks the GCS protocol): it may have landed, and its version is unknown"
            )
        self._cache.put(key, Stored(data=bytes(data), version=generation))
        return generation

    def delete(self, key: str) -> None:
        """Remove ``key``; HistoryKept if a versioned bucket still holds older generations of it.

        Why the check: a delete is an operator's purge of the key and its
        history (docs/design.md, section 4), and on a bucket with object
        versioning the deleted object and every older one stay readable by
        generation. One listing more than the delete.
        """
        name = self.object_name(key)
        self.check_layout()
        self._cache.drop(key)
        with contextlib.suppress(Missing), gcs_answers("delete", bucket=self.bucket):
            self.client().bucket(self.bucket).delete_blob(
                name, retry=self._retry(), timeout=self.timeout
            )
        require_no_older_generations(
            self.client(), self.bucket, name, "delete", timeout=self.timeout
        )

    def purge_history(self, key: str) -> None:
        """An erase's last step: HistoryKept if older generations of ``key`` hold the erased text.

        Why: on a bucket with object versioning each upload keeps the object it
        replaced. This plug-in does not delete them (:mod:`docmem_gcs.history`
        says why), so the erase reports them, outcome ``committed``. A bucket
        without versioning costs one listing and nothing more.
        """
        name = self.object_name(key)
        self.check_layout()
        require_no_older_generations(
            self.client(), self.bucket, name, "erase", timeout=self.timeout
        )

    def keys(self) -> Iterator[str]:
        for key, _ in self._listed():
            yield key

    def listed_versions(self) -> Iterator[tuple[str, str]]:
        """Every key with its generation from the listing (1,000 per request), as reads answer."""
        for key, blob in self._listed():
            yield key, generation_of(generation_text(blob), "list")

    def _listed(self) -> Iterator[tuple[str, Any]]:
        """Each document's key with its listed object: the prefix's own objects, no deeper."""
        self.check_layout()
        prefix = f"{self.prefix}/" if self.prefix else ""
        with gcs_answers("list", bucket=self.bucket):
            blobs = iter(
                self.client().list_blobs(
                    self.bucket,
                    prefix=prefix,
                    delimiter="/",
                    retry=self._retry(),
                    timeout=self.timeout,
                )
            )
        while True:
            with gcs_answers("list", bucket=self.bucket):
                blob = next(blobs, None)
            if blob is None:
                return
            name = blob.name if isinstance(blob.name, str) else ""
            if not name.startswith(prefix):
                continue  # not asked for: never taken for a document of this store
            name = name[len(prefix) :]
            if "/" not in name and name.endswith(_SUFFIX):
                yield name[: -len(_SUFFIX)], blob

    def close(self) -> None:
        client = self._clients.reset()
        if client is not None and client is not self._given_client:
            with contextlib.suppress(Exception):
                client.close()
            with contextlib.suppress(Exception):
                client._http.close()

    def check_server(self, *, writers: int = 8) -> ServerChecks:
        """docmem-gcs's probe (:func:`probe`)."""
        found = probe(self, writers=writers)
        return ServerChecks("docmem-gcs", found.checks)

    # -- checks done once per process and store ----------------------------------

    def check_layout(self) -> None:
        """Refuse a docmem-fsspec store under this prefix, once per process and :attr:`identity`.

        Also where a missing bucket or unusable credentials first show
        (StoreNotConfigured). Concurrent first requests wait for one listing.
        """
        _layout_checked.once(
            self.identity,
            lambda: check_layout(
                self.client(), self.bucket, self.prefix, timeout=self.timeout, url=self.url
            ),
        )

    def verify(self) -> None:
        """Check the store honours the preconditions, once per process and :attr:`identity`.

        Concurrent first writes to one store wait for a single verification;
        other stores are not held up. ConditionsNotHonoured if it fails.
        """
        self.check_layout()
        _verified.once(self.identity, lambda: refuse(checks(self._target())))

    def _target(self) -> Target:
        return Target(
            client=self.client(), bucket=self.bucket, prefix=self.prefix, timeout=self.timeout
        )


def probe(store: GcsBackend, *, writers: int = 8) -> ProbeReport:
    """Every check on ``store``, a race of ``writers`` concurrent creates included.

    What ``python -m docmem_gcs probe URL`` runs; raises ConditionsNotHonoured
    if a check fails. A store that passes counts as verified in this process.
    """
    store.check_layout()
    target = store._target()
    found = checks(target)
    if all(passed for _, passed in found):
        found.append(race(target, writers))
    refuse(found)
    _verified.mark(store.identity)
    return ProbeReport(tuple(found))


_layout_checked = OncePerIdentity()
_verified = OncePerIdentity()
