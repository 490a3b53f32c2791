"""``az://container/prefix``: docmem documents as Azure block blobs, changed by conditional puts.

Create is Put Blob with ``If-None-Match: *``, update is Put Blob with
``If-Match: <etag>``; the version token is the ETag exactly as the service
sent it. A document always goes as one Put Blob: the SDK would split a blob
above its ``max_single_put_size`` into Put Block calls and a Put Block List,
so a larger one is refused before anything is sent. Writes run with the
SDK's retries off (a resent put may already have landed) and short
timeouts, inside docmem's own bounded loop; a timeout or a connection lost
after the request went out is ``WriteOutcomeUnknown``, which
:class:`docmem.FileMemory` settles through the document's journal. Every
client call runs inside :class:`docmem_azure.errors.azure_answers`, so every
answer and every failure is classified by one table; an answer without a
well-formed ETag is refused, never used as a version.

Reads of a key seen before send ``If-None-Match: <etag>``: an unchanged
document costs a 304 with no body, served from a small per-process cache.
Before the first read or write through a store, once per process and
(account, container, prefix), one listing makes sure the prefix holds no
docmem-fsspec store (:mod:`docmem_azure.layout`); before the first write,
the store must show that it honours the conditions
(:meth:`AzureBlobBackend.verify`, the checks in :mod:`docmem_azure.probe`).

History: docmem-azure reads no blob versions (Azurite, the emulator it is
tested on, has none), so :meth:`AzureBlobBackend.history` raises
HistoryNotKept. On an account with blob versioning on, every put keeps the
blob it replaced, which docmem-azure cannot purge: seen in an answer's
``x-ms-version-id``, an erase or a delete then raises :class:`HistoryKept`
rather than claim the old text is gone.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlsplit

import msgspec
from azure.core import MatchConditions
from azure.storage.blob import BlobType, ContentSettings, LinearRetry

from docmem import errors as docmem_errors
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
    LimitExceeded,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem.options import check_options, parse_options

from . import redaction
from .account import Account, refuse_secrets, resolve_account
from .errors import (
    Missing,
    NotModified,
    Operation,
    ProtocolViolation,
    azure_answers,
    etag_of,
    usable_etag,
)
from .layout import check_layout
from .probe import ProbeReport, Target, checks, race, refuse

__all__ = [
    "SCHEMES",
    "SINGLE_PUT_LIMIT",
    "AzureBlobBackend",
    "AzureOptions",
    "HistoryKept",
    "probe",
]

#: The URL schemes this plug-in serves (``abfs://``, ``abfss://`` stay docmem-fsspec's).
SCHEMES = ("az", "azblob")
CONTENT_TYPE = "text/markdown; charset=utf-8"
#: The largest document sent as one Put Blob (the SDK's default ``max_single_put_size``);
#: far above docmem's own document limit. Anything larger is refused, never chunked.
SINGLE_PUT_LIMIT = 64 * 1024 * 1024
_SUFFIX = ".md"
#: A per-request hour is plenty (far above it, a socket timeout overflows time_t).
_MAX_SECONDS = 3600.0
_MAX_ATTEMPTS = 100
#: The pause between read retries: the SDK's default waits 15 s and more.
_READ_BACKOFF = 0.2
_CONTAINER = re.compile(r"\$root|[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}")

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


class AzureOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The ``az://`` options, from the URL query or keywords (see :mod:`docmem.options`).

    Blank text (``account_name=``) is not given; :class:`AzureBlobBackend`
    documents each option. None of them is a credential.
    """

    account_url: _Text = None
    account_name: _Text = None
    connect_timeout: _RequestSeconds = 2.0
    read_timeout: _RequestSeconds = 5.0
    max_attempts: _Attempts = 3
    cache_size: _CacheSize = 1024


class HistoryKept(docmem_errors.HistoryKept):
    """The account keeps blob versions, so older copies of an erased document may remain.

    Raised by ``AzureBlobBackend.purge_history`` (an erase then reports outcome
    ``committed``: the header-only document is stored, older versions of the
    erased text are not deleted) and by ``AzureBlobBackend.delete``, once an
    answer showed a version id: docmem-azure does not delete blob versions.
    Turn versioning off for the account, or delete the versions with the
    account's lifecycle management.
    """

    erase_again_purges = False  # docmem-azure deletes no blob version, however often asked


class AzureBlobBackend(Backend):
    """Documents in one container under an optional prefix; see the module docstring.

    Options (URL query or keywords): ``account_url`` (the blob endpoint,
    ``https://<account>.blob.core.windows.net`` or an emulator's) or
    ``account_name``; ``connect_timeout`` and ``read_timeout`` in seconds
    (default 2 and 5), ``max_attempts`` for reads, deletes and listings
    (default 3; a put always makes exactly one), ``cache_size`` (documents
    kept for 304 reads, default 1,024). The credential is ``credential``
    passed in code, else ``AZURE_STORAGE_CONNECTION_STRING``, else
    ``DefaultAzureCredential`` (:mod:`docmem_azure.account`); it is never an
    option and never pickled.
    """

    shared_between_processes = True
    recent_reads_may_be_stale = True

    def __init__(
        self,
        container: str,
        prefix: str = "",
        *,
        scheme: str = "az",
        account_url: str | None = None,
        account_name: str | None = None,
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        max_attempts: int = 3,
        cache_size: int = 1024,
        credential: Any = None,
    ) -> None:
        if scheme not in SCHEMES:
            raise StoreNotConfigured(f"docmem-azure serves {', '.join(SCHEMES)}:// URLs")
        if not container:
            raise StoreNotConfigured(
                f"the {scheme}:// URL names no container: use {scheme}://container/prefix"
            )
        if not _CONTAINER.fullmatch(container):
            raise StoreNotConfigured(
                f"the {scheme}:// container name must be 3 to 63 lower-case letters, digits "
                "and single hyphens"
            )
        given = {
            "account_url": account_url,
            "account_name": account_name,
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            "max_attempts": max_attempts,
            "cache_size": cache_size,
        }
        checked = check_options(AzureOptions, given, scheme=scheme)
        self.scheme = scheme
        self.container = container
        self.prefix = prefix.strip("/")
        self.account_url = checked.account_url
        self.account_name = checked.account_name
        self.connect_timeout = checked.connect_timeout
        self.read_timeout = checked.read_timeout
        self.max_attempts = checked.max_attempts
        self.cache_size = checked.cache_size
        self._account: Account = resolve_account(
            account_url=self.account_url, account_name=self.account_name, credential=credential
        )
        self._cache: LruCache[Stored] = LruCache(self.cache_size)
        # Keys whose last conditional put lost a race: another client writes them, so
        # read_recent asks the service (a 304 when nothing changed) until one GET is a 304.
        self._contended = ContendedKeys(self.cache_size)
        self._clients: PerProcess[tuple[Any, Any, Any]] = PerProcess(self._build_clients)
        # Set once an answer carries x-ms-version-id: the account keeps blob versions.
        self._versions_seen = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AzureBlobBackend:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        refuse_secrets([name for name, _ in parse_qsl(parts.query)], where=f"{scheme}:// URL")
        if parts.username or parts.password:
            raise StoreNotConfigured(
                f"the {scheme}:// URL carries user info: a credential goes in code or the "
                "environment"
            )
        given = dict(options)
        credential = given.pop("credential", None)  # an object passed in code, never URL text
        checked = parse_options(AzureOptions, url, given, scheme=scheme)
        return cls(
            parts.netloc,
            parts.path,
            scheme=scheme,
            **msgspec.structs.asdict(checked),
            credential=credential,
        )

    # -- identity --------------------------------------------------------------

    @property
    def url(self) -> str:
        base = f"{self.scheme}://{self.container}"
        return f"{base}/{self.prefix}" if self.prefix else base

    @property
    def options(self) -> dict[str, Any]:
        values = {
            "account_url": self.account_url,
            "account_name": self.account_name,
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_attempts": self.max_attempts,
            "cache_size": self.cache_size,
        }
        return {name: value for name, value in values.items() if value is not None}

    @property
    def identity(self) -> tuple[str, str, str]:
        """(account URL, container, prefix): what the first-use checks are done once for."""
        return (self._account.url, self.container, self.prefix)

    @property
    def account(self) -> Account:
        """The account's endpoint and where its credential comes from (no secret shown)."""
        return self._account

    def blob_name(self, key: str) -> str:
        """The blob name of a docmem key: ``<prefix>/<key>.md`` (opaque digests only)."""
        name = check_key(key) + _SUFFIX
        return f"{self.prefix}/{name}" if self.prefix else name

    # -- clients ---------------------------------------------------------------

    def clients(self) -> tuple[Any, Any]:
        """(reader, writer) ``ContainerClient``s: built on first use and again in a forked child."""
        reader, writer, _ = self._clients.get()
        return reader, writer

    def _build_clients(self) -> tuple[Any, Any, Any]:
        redaction.install()  # a SAS would otherwise reach urllib3's DEBUG log of each URL
        credential = None
        if self._account.source == "DefaultAzureCredential":
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        common = {
            "connection_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_single_put_size": SINGLE_PUT_LIMIT,
        }
        reads = LinearRetry(
            backoff=_READ_BACKOFF,  # type: ignore[arg-type]  # a float works; typed int
            random_jitter_range=_READ_BACKOFF / 2,  # type: ignore[arg-type]
            retry_total=self.max_attempts - 1,
        )
        # A resent put may already have landed: docmem's loop decides, never the SDK.
        writes = LinearRetry(backoff=0, random_jitter_range=0, retry_total=0)
        reader = self._account.service(credential, retry_policy=reads, **common)
        writer = self._account.service(credential, retry_policy=writes, **common)
        return (
            reader.get_container_client(self.container),
            writer.get_container_client(self.container),
            (reader, writer, credential),
        )

    # -- the Backend contract --------------------------------------------------

    def read(self, key: str) -> Stored | None:
        name = self.blob_name(key)
        self.check_layout()
        reader, _ = self.clients()
        cached = self._cache.get(key)
        condition: dict[str, Any] = {}
        if cached is not None:
            condition = {"etag": cached.version, "match_condition": MatchConditions.IfModified}
        try:
            with azure_answers("read", container=self.container):
                downloader = reader.get_blob_client(name).download_blob(
                    max_concurrency=1, **condition
                )
                data = downloader.readall()
        except NotModified:
            if cached is None:
                raise StoreUnavailable(
                    "the azure read was answered 304 without a condition"
                ) from None
            self._contended.discard(key)
            telemetry.note_cache(True, "az")
            return cached
        except Missing:
            self._cache.drop(key)
            return None
        self._note_version_id(getattr(downloader.properties, "version_id", None))
        try:
            version = etag_of(downloader.properties, "read")
        except ProtocolViolation:
            self._cache.drop(key)
            raise
        stored = Stored(data=bytes(data), version=version)
        if cached is not None:
            telemetry.note_cache(False, "az")  # asked with a condition, sent a new body
        self._cache.put(key, stored)
        return stored

    def read_recent(self, key: str) -> Stored | None:
        """The cached version when this process has one (no round trip), else :meth:`read`.

        A key another client has been writing is read from the service instead
        (a 304 when unchanged), so a save does not send a put doomed to a 412.
        """
        return self._contended.read_recent(key, cached=self._cache.get, read=self.read)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        name = self.blob_name(key)
        self.verify()  # first: an unreachable store is unavailable, never a conflict
        if expected is not None and not usable_etag(expected):
            # Never sent: a token that is no ETag cannot be the version of anything here.
            raise VersionConflict("the azure update names a version that is not an ETag")
        _, writer = self.clients()
        limit = int(writer._config.max_single_put_size)
        if len(data) > limit:
            raise LimitExceeded(
                f"the document is {len(data):,} bytes; docmem-azure sends at most {limit:,} "
                "as one conditional Put Blob"
            )
        operation: Operation = "create" if expected is None else "update"
        condition: dict[str, Any] = (
            {"match_condition": MatchConditions.IfMissing}
            if expected is None
            else {
                "overwrite": True,
                "etag": expected,
                "match_condition": MatchConditions.IfNotModified,
            }
        )
        try:
            with azure_answers(operation, container=self.container):
                response = writer.get_blob_client(name).upload_blob(
                    data,
                    blob_type=BlobType.BLOCKBLOB,
                    length=len(data),
                    content_settings=ContentSettings(content_type=CONTENT_TYPE),
                    **condition,
                )
        except VersionConflict:
            self._cache.drop(key)
            self._contended.add(key)  # another client writes it: read_recent asks the service
            raise
        except DocmemError:
            self._cache.drop(key)
            raise
        return self._written(key, data, response, operation)

    def _written(self, key: str, data: bytes, response: Any, operation: Operation) -> str:
        """The version a write's 201 answer names; without a usable one the outcome is unknown.

        The service says it stored the bytes but gives no version to condition
        the next write on: the provider settles the write through the journal,
        like a lost answer, and reads the version afresh.
        """
        self._note_version_id(response.get("version_id"))
        etag = response.get("etag")
        if not usable_etag(etag):
            self._cache.drop(key)
            raise WriteOutcomeUnknown(
                f"the azure {operation} was answered without a well-formed ETag (the store "
                "breaks the blob protocol): it may have landed, and its version is unknown"
            )
        version = str(etag)
        self._cache.put(key, Stored(data=bytes(data), version=version))
        return version

    def _note_version_id(self, version_id: object) -> None:
        if version_id:
            self._versions_seen = True

    def delete(self, key: str) -> None:
        """Remove ``key``; HistoryKept afterwards if the account keeps blob versions.

        Why a HEAD first (unless an answer already showed versions): Delete Blob
        on a versioned account keeps the deleted blob as a readable version,
        and only the blob's properties say so (``x-ms-version-id``). An
        operator's purge must not claim a history is gone that is not.
        """
        name = self.blob_name(key)
        self.check_layout()
        reader, _ = self.clients()
        self._cache.drop(key)
        blob = reader.get_blob_client(name)
        if not self._versions_seen:
            with contextlib.suppress(Missing), azure_answers("delete", container=self.container):
                self._note_version_id(blob.get_blob_properties().version_id)
        with contextlib.suppress(Missing), azure_answers("delete", container=self.container):
            blob.delete_blob(delete_snapshots="include")
        if self._versions_seen:
            raise HistoryKept(
                f"the blob is deleted, but the {self.scheme}:// account keeps blob versions and "
                "docmem-azure does not delete them: older versions of the document remain"
            )

    def purge_history(self, key: str) -> None:
        """Nothing to purge unless the account keeps blob versions: then HistoryKept.

        Why it cannot just pass: an erase ends here, and on a versioned account
        the text it removed stays readable by version id. The erase's own put
        shows whether versions are kept (``x-ms-version-id``), so this costs no
        request.
        """
        check_key(key)
        if self._versions_seen:
            raise HistoryKept(
                f"the {self.scheme}:// account keeps blob versions and docmem-azure does not "
                "delete them: older versions of the erased document remain readable by "
                "version id"
            )

    def history(self, key: str) -> list[KeptVersion]:
        check_key(key)
        raise HistoryNotKept(
            f"{self.scheme}:// keeps no history docmem can read: docmem-azure does not list "
            "blob versions (the emulator it is tested on, Azurite, has none)"
        )

    def read_version(self, key: str, version: str) -> Stored | None:
        check_key(key)
        raise HistoryNotKept(
            f"{self.scheme}:// keeps no history docmem can read: docmem-azure does not read "
            "blob versions (the emulator it is tested on, Azurite, has none)"
        )

    def keys(self) -> Iterator[str]:
        for key, _ in self._listed():
            yield key

    def listed_versions(self) -> Iterator[tuple[str, str]]:
        """Every key with its ETag from the listing (5,000 per request), as a read answers it.

        A listing's ``<Etag>`` is the bare value; the ``ETag`` header a read
        or write answers with quotes it, so the listed one is quoted to match.
        """
        for key, item in self._listed():
            etag = item.etag
            if isinstance(etag, str) and etag and not etag.startswith(('"', "W/")):
                etag = f'"{etag}"'
            if not usable_etag(etag):
                raise ProtocolViolation("the azure list answer names a blob without a usable ETag")
            yield key, str(etag)

    def _listed(self) -> Iterator[tuple[str, Any]]:
        """Each document's key with its listing entry."""
        self.check_layout()
        prefix = f"{self.prefix}/" if self.prefix else ""
        reader, _ = self.clients()
        with azure_answers("list", container=self.container):
            pages = reader.list_blobs(name_starts_with=prefix or None).by_page()
        while True:
            with azure_answers("list", container=self.container):
                page = next(pages, None)
                items = None if page is None else list(page)
            if items is None:
                return
            for item in items:
                name = getattr(item, "name", None)
                if not isinstance(name, str):
                    raise ProtocolViolation("the azure list answer names a blob without a name")
                if not name.startswith(prefix):
                    continue  # not asked for: never taken for a document of this store
                name = name[len(prefix) :]
                if "/" not in name and name.endswith(_SUFFIX):
                    yield name[: -len(_SUFFIX)], item

    def close(self) -> None:
        built = self._clients.reset()
        if built is not None:
            for client in built[2]:
                if client is not None:
                    with contextlib.suppress(Exception):
                        client.close()

    def check_server(self, *, writers: int = 8) -> ServerChecks:
        """docmem-azure's probe (:func:`probe`)."""
        found = probe(self, writers=writers)
        return ServerChecks("docmem-azure", found.checks, {"account": self._account.source})

    # -- first-use checks ------------------------------------------------------

    def check_layout(self) -> None:
        """Refuse a prefix holding a docmem-fsspec store, once per process and :attr:`identity`.

        One listing (:mod:`docmem_azure.layout`); it also finds a missing
        container before anything is read as missing.
        """
        reader, _ = self.clients()
        _layout_checked.once(
            self.identity,
            lambda: check_layout(reader, self.container, self.prefix, scheme=self.scheme),
        )

    def verify(self) -> None:
        """Check the store honours the conditions, once per process and :attr:`identity`.

        Concurrent first writes to one store wait for a single verification;
        other stores are not held up. ConditionsNotHonoured if it fails.
        """
        self.check_layout()
        _verified.once(self.identity, lambda: refuse(checks(self._target())))

    def _target(self) -> Target:
        reader, writer = self.clients()
        return Target(reader=reader, writer=writer, container=self.container, prefix=self.prefix)


def probe(store: AzureBlobBackend, *, writers: int = 8) -> ProbeReport:
    """Every check on ``store``, a race of ``writers`` concurrent creates included.

    What ``python -m docmem_azure probe URL`` runs; raises ConditionsNotHonoured
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


_verified = OncePerIdentity()
_layout_checked = OncePerIdentity()
