"""Older versions on a versioned bucket: what an operator lists, what an erase must delete.

On a bucket with versioning enabled (or suspended after it was enabled) every
PUT keeps the object it replaced as a noncurrent version, readable by its
version id. An erase rewrites the document header-only; without a purge, the
erased text would stay in the bucket while the erase reported success.
:func:`purge_older_versions` deletes every version of the document's object
but the current one, delete markers included, and raises :class:`HistoryKept`
when it cannot; the provider reports that error with outcome ``committed``:
the erase is stored, the purge is not done (``docmem.provider.memory``). A
delete (an operator's purge of the key) ends the same way, its delete marker
the current version left.

The same versions are a document's history for an operator (``docmem
history``, a revert): :func:`kept_versions` lists them oldest first, the
current one last, each under its ETag, the version token a write returned and
a read reported while it was current; :func:`read_kept` reads one back by the
version id the listing pairs with it.

Permissions: ``s3:GetBucketVersioning`` tells that a bucket never kept
versions, so nothing is listed; ``s3:ListBucketVersions`` and
``s3:DeleteObjectVersion`` purge a versioned one; ``s3:ListBucketVersions``
and ``s3:GetObjectVersion`` list and read its history. Every call runs inside
:class:`docmem_s3.errors.s3_answers`, like the backend's.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator
from typing import Any, Literal

from docmem import errors as docmem_errors
from docmem.backend import KeptVersion
from docmem.errors import DocmemError, StoreUnavailable

from .errors import Missing, NoVersioning, ProtocolViolation, s3_answers, usable_etag

__all__ = [
    "PURGE_PERMISSIONS",
    "HistoryKept",
    "Purge",
    "Versioning",
    "keeps_versions",
    "kept_versions",
    "older_versions",
    "purge_older_versions",
    "read_kept",
    "versioning",
]

#: What GetBucketVersioning says of a bucket; "unknown" when it could not be asked.
Versioning = Literal["enabled", "suspended", "unversioned", "unknown"]

_STATUS: dict[str, Versioning] = {"Enabled": "enabled", "Suspended": "suspended"}

#: What deleting a key's older versions needs, named in every :class:`HistoryKept`.
PURGE_PERMISSIONS = "s3:ListBucketVersions and s3:DeleteObjectVersion"

#: What purged the older versions: an erase (the last step of one) or an operator's delete.
Purge = Literal["erase", "delete"]

#: How a :class:`HistoryKept` message speaks of each: what is done, what is left, what to do.
_WORDS: dict[Purge, tuple[str, str, str]] = {
    "erase": ("the erase is stored", "the erased text", "erase again"),
    "delete": ("the key is deleted", "the deleted document", "delete again"),
}

#: How many version ids a message names; :attr:`HistoryKept.versions` holds them all.
_NAMED = 5


class HistoryKept(docmem_errors.HistoryKept):
    """The bucket may still hold older versions of an erased document: the purge is not done.

    Raised by ``S3Backend.purge_history``, so an erase reports it with outcome
    ``committed``: the header-only document is stored, and older copies of
    the erased text are left. :attr:`versions` names the version ids known to
    be left (empty when they could not be listed), :attr:`object_key` their
    object; neither is memory text. Erasing again retries the purge. Raised
    by ``S3Backend.delete`` too, saying so, when the key is deleted and its
    older versions are not.
    """

    def __init__(
        self,
        message: str,
        *,
        bucket: str = "",
        object_key: str = "",
        versions: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.object_key = object_key
        self.versions = versions

    @classmethod
    def unlisted(
        cls,
        bucket: str,
        object_key: str,
        state: Versioning,
        cause: DocmemError,
        purge: Purge = "erase",
    ) -> HistoryKept:
        """The older versions could not be listed, so none can be named."""
        where = f"s3://{bucket}/{object_key}"
        done, held, again = _WORDS[purge]
        if state == "unknown":
            return cls(
                f"{done}, but docmem cannot tell whether the bucket keeps older "
                f"versions of {where} holding {held}: its versioning could not be "
                f"read and its versions could not be listed ({cause.message}). Grant "
                "s3:GetBucketVersioning (enough for a bucket that never kept versions) or "
                f"{PURGE_PERMISSIONS}, then {again}",
                bucket=bucket,
                object_key=object_key,
            )
        return cls(
            f"{done}, but the bucket keeps older versions (versioning {state}) "
            f"and those of {where}, which may hold {held}, could not be listed "
            f"({cause.message}). Purging them needs {PURGE_PERMISSIONS}: {again} once "
            "granted, or delete them by hand",
            bucket=bucket,
            object_key=object_key,
        )

    @classmethod
    def left(
        cls,
        bucket: str,
        object_key: str,
        versions: tuple[str, ...],
        cause: DocmemError,
        purge: Purge = "erase",
    ) -> HistoryKept:
        """Deleting ``versions`` failed at the first of them: each is still in the bucket."""
        count = len(versions)
        named = ", ".join(versions[:_NAMED])
        if count > _NAMED:
            named += f" and {count - _NAMED} more"
        plural = "" if count == 1 else "s"
        done, held, again = _WORDS[purge]
        return cls(
            f"{done}, but the bucket still holds {count} older version{plural} "
            f"of s3://{bucket}/{object_key} that may hold {held} (version id{plural} "
            f"{named}): deleting them failed ({cause.message}). Purging them needs "
            f"{PURGE_PERMISSIONS}: {again} to retry, or delete them by hand",
            bucket=bucket,
            object_key=object_key,
            versions=versions,
        )


def versioning(client: Any, bucket: str) -> Versioning:
    """What GetBucketVersioning says of ``bucket``; "unknown" if it was refused or failed.

    A bucket whose versioning was never enabled answers without a ``Status``
    and keeps no older versions; a server that does not implement the call
    has none either. A suspended bucket still keeps the versions made while
    versioning was enabled.
    """
    try:
        with s3_answers("get-versioning", bucket=bucket):
            response = client.get_bucket_versioning(Bucket=bucket)
    except NoVersioning:
        return "unversioned"
    except StoreUnavailable:
        return "unknown"
    status = response.get("Status")
    if not status:
        return "unversioned"
    return _STATUS.get(str(status), "unknown")


def keeps_versions(state: Versioning) -> bool:
    """Whether a bucket in ``state`` may hold older versions ("unknown" may: never assumed)."""
    return state != "unversioned"


def purge_older_versions(
    client: Any, bucket: str, object_key: str, state: Versioning, purge: Purge = "erase"
) -> None:
    """Delete every version of ``object_key`` but the current one; HistoryKept if any is left.

    ``state`` is what the bucket's versioning was found to be, and ``purge``
    what asked (an erase, or a delete whose marker is the current version),
    for the message. Only versions the listing calls noncurrent are deleted,
    so the current document is never touched, even when another writer
    replaced it meanwhile.
    """
    try:
        older = older_versions(client, bucket, object_key)
    except DocmemError as error:
        raise HistoryKept.unlisted(bucket, object_key, state, error, purge) from None
    for done, version_id in enumerate(older):
        try:
            _delete_version(client, bucket, object_key, version_id)
        except DocmemError as error:
            raise HistoryKept.left(bucket, object_key, older[done:], error, purge) from None


def _delete_version(client: Any, bucket: str, object_key: str, version_id: str) -> None:
    """DeleteObject of one version; one already gone (another purge) is no error."""
    with contextlib.suppress(Missing), s3_answers("delete-version", bucket=bucket):
        client.delete_object(Bucket=bucket, Key=object_key, VersionId=version_id)


def older_versions(client: Any, bucket: str, object_key: str) -> tuple[str, ...]:
    """The version ids of ``object_key`` other than its current one, delete markers included.

    The listing is asked for the key as prefix and read for that key only.
    An entry without a version id or an ``IsLatest`` flag is refused
    (ProtocolViolation): deleting on a guess could delete the current
    document. So is a key listed without a current entry, which the erase
    just wrote: such a listing is no account of what the bucket holds.
    """
    older: list[str] = []
    current = False
    for entry, _ in _entries(client, bucket, object_key):
        version_id, latest = _version_of(entry)
        if latest:
            current = True
        else:
            older.append(version_id)
    if older and not current:
        raise ProtocolViolation("the s3 version listing shows no current version of the object")
    return tuple(older)


def kept_versions(
    client: Any, bucket: str, object_key: str
) -> tuple[list[KeptVersion], dict[str, str]]:
    """The versions of ``object_key`` the bucket keeps, oldest first, the current one last.

    Each is listed under its ETag: the token the write that made it
    returned, and a read reported while it was current, so one version has
    one name in a journal, a listing and a revert. Beside the list, which
    version id holds each ETag, for :func:`read_kept` (equal ETags name
    equal bytes; the newest id is kept). Delete markers hold no document and
    are left out; a key whose newest entry is one is deleted, and lists
    nothing. Older versions go by their timestamps, equal ones (S3 gives
    seconds) in the order S3 lists them, newest first. A listing that names
    older versions but no current entry is refused, as for a purge.
    """
    current: KeptVersion | None = None
    deleted = False
    older: list[tuple[float, int, KeptVersion]] = []
    ids: dict[str, str] = {}
    for position, (entry, marker) in enumerate(_entries(client, bucket, object_key)):
        version_id, latest = _version_of(entry)
        if marker:
            deleted = deleted or latest
            continue
        kept = _kept(entry)
        ids.setdefault(kept.version, version_id)
        if latest:
            current = kept
        else:
            older.append((kept.modified or 0.0, -position, kept))
    if current is None:
        if older and not deleted:
            raise ProtocolViolation("the s3 version listing shows no current version of the object")
        return [], {}
    return [kept for _, _, kept in sorted(older, key=lambda item: item[:2])] + [current], ids


def read_kept(client: Any, bucket: str, object_key: str, version_id: str) -> bytes | None:
    """The bytes of one version of ``object_key`` by its id; ``None`` if the bucket has no such one.

    An answer that names another version than the one asked for is refused
    (ProtocolViolation): a server that ignores the version id sends the
    current document, and a revert to it would restore the wrong text.
    """
    try:
        with s3_answers("read-version", bucket=bucket):
            response = client.get_object(Bucket=bucket, Key=object_key, VersionId=version_id)
            data = response["Body"].read()
    except Missing:
        return None
    if response.get("VersionId") != version_id:
        raise ProtocolViolation(
            "the s3 read-version answer is not of the version asked for: the store ignores "
            "version ids, so it keeps no history docmem can read"
        )
    return bytes(data)


def _kept(entry: dict[str, Any]) -> KeptVersion:
    """A listed version as :class:`KeptVersion`, under its ETag."""
    etag = entry.get("ETag")
    if not usable_etag(etag):
        raise ProtocolViolation("the s3 version listing names a version without a usable ETag")
    size = entry.get("Size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ProtocolViolation("the s3 version listing names a version without a size")
    stamp = entry.get("LastModified")
    modified = stamp.timestamp() if isinstance(stamp, datetime.datetime) else None
    return KeptVersion(version=str(etag), modified=modified, size=size)


def _entries(client: Any, bucket: str, object_key: str) -> Iterator[tuple[dict[str, Any], bool]]:
    """Every listed version and delete marker of exactly ``object_key``; True for a marker."""
    for page in _version_pages(client, bucket, object_key):
        for kind in ("Versions", "DeleteMarkers"):
            for entry in page.get(kind) or ():
                if not isinstance(entry, dict):
                    raise ProtocolViolation("the s3 version listing holds an entry that is no map")
                if entry.get("Key") == object_key:  # not another key that starts with it
                    yield entry, kind == "DeleteMarkers"


def _version_of(entry: dict[str, Any]) -> tuple[str, bool]:
    version_id = entry.get("VersionId")
    latest = entry.get("IsLatest")
    if not isinstance(version_id, str) or not version_id or not isinstance(latest, bool):
        raise ProtocolViolation(
            "the s3 version listing names a version without an id or a current flag"
        )
    return version_id, latest


def _version_pages(client: Any, bucket: str, object_key: str) -> Iterator[dict[str, Any]]:
    """ListObjectVersions pages, each fetch's failure a docmem error (the consumer's are not)."""
    with s3_answers("list-versions", bucket=bucket):
        paginator = client.get_paginator("list_object_versions")
        pages = iter(paginator.paginate(Bucket=bucket, Prefix=object_key))
    while True:
        with s3_answers("list-versions", bucket=bucket):
            page = next(pages, None)
        if page is None:
            return
        yield page
