"""Older versions on a versioned bucket: what an erase must delete, and what it says if it can't.

On a bucket with versioning enabled (or suspended after it was enabled) every
PUT keeps the object it replaced as a noncurrent version, readable by its
version id. An erase rewrites the document header-only; without a purge, the
erased text would stay in the bucket while the erase reported success.
:func:`purge_older_versions` deletes every version of the document's object
but the current one, delete markers included, and raises :class:`HistoryKept`
when it cannot; the provider reports that error with outcome ``committed``:
the erase is stored, the purge is not done (``docmem.provider.memory``).

Permissions: ``s3:GetBucketVersioning`` tells that a bucket never kept
versions, so nothing is listed; ``s3:ListBucketVersions`` and
``s3:DeleteObjectVersion`` purge a versioned one. Every call runs inside
:class:`docmem_s3.errors.s3_answers`, like the backend's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Literal

from docmem.errors import DocmemError, StoreUnavailable

from .errors import Missing, NoVersioning, ProtocolViolation, s3_answers

__all__ = [
    "PURGE_PERMISSIONS",
    "HistoryKept",
    "Versioning",
    "keeps_versions",
    "older_versions",
    "purge_older_versions",
    "versioning",
]

#: What GetBucketVersioning says of a bucket; "unknown" when it could not be asked.
Versioning = Literal["enabled", "suspended", "unversioned", "unknown"]

_STATUS: dict[str, Versioning] = {"Enabled": "enabled", "Suspended": "suspended"}

#: What deleting a key's older versions needs, named in every :class:`HistoryKept`.
PURGE_PERMISSIONS = "s3:ListBucketVersions and s3:DeleteObjectVersion"

#: How many version ids a message names; :attr:`HistoryKept.versions` holds them all.
_NAMED = 5


class HistoryKept(StoreUnavailable):
    """The bucket may still hold older versions of an erased document: the purge is not done.

    Raised by ``S3Backend.purge_history``, so an erase reports it with outcome
    ``committed``: the header-only document is stored, and older copies of
    the erased text are left. :attr:`versions` names the version ids known to
    be left (empty when they could not be listed), :attr:`object_key` their
    object; neither is memory text. Erasing again retries the purge.
    """

    code = "history_kept"

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
        cls, bucket: str, object_key: str, state: Versioning, cause: DocmemError
    ) -> HistoryKept:
        """The older versions could not be listed, so none can be named."""
        where = f"s3://{bucket}/{object_key}"
        if state == "unknown":
            return cls(
                "the erase is stored, but docmem cannot tell whether the bucket keeps older "
                f"versions of {where} holding the erased text: its versioning could not be "
                f"read and its versions could not be listed ({cause.message}). Grant "
                "s3:GetBucketVersioning (enough for a bucket that never kept versions) or "
                f"{PURGE_PERMISSIONS}, then erase again",
                bucket=bucket,
                object_key=object_key,
            )
        return cls(
            f"the erase is stored, but the bucket keeps older versions (versioning {state}) "
            f"and those of {where}, which may hold the erased text, could not be listed "
            f"({cause.message}). Purging them needs {PURGE_PERMISSIONS}: erase again once "
            "granted, or delete them by hand",
            bucket=bucket,
            object_key=object_key,
        )

    @classmethod
    def left(
        cls, bucket: str, object_key: str, versions: tuple[str, ...], cause: DocmemError
    ) -> HistoryKept:
        """Deleting ``versions`` failed at the first of them: each is still in the bucket."""
        count = len(versions)
        named = ", ".join(versions[:_NAMED])
        if count > _NAMED:
            named += f" and {count - _NAMED} more"
        plural = "" if count == 1 else "s"
        return cls(
            f"the erase is stored, but the bucket still holds {count} older version{plural} "
            f"of s3://{bucket}/{object_key} that may hold the erased text (version id{plural} "
            f"{named}): deleting them failed ({cause.message}). Purging them needs "
            f"{PURGE_PERMISSIONS}: erase again to retry, or delete them by hand",
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


def purge_older_versions(client: Any, bucket: str, object_key: str, state: Versioning) -> None:
    """Delete every version of ``object_key`` but the current one; HistoryKept if any is left.

    ``state`` is what the bucket's versioning was found to be, for the message.
    Only versions the listing calls noncurrent are deleted, so the current
    document is never touched, even when another writer replaced it meanwhile.
    """
    try:
        older = older_versions(client, bucket, object_key)
    except DocmemError as error:
        raise HistoryKept.unlisted(bucket, object_key, state, error) from None
    for done, version_id in enumerate(older):
        try:
            _delete_version(client, bucket, object_key, version_id)
        except DocmemError as error:
            raise HistoryKept.left(bucket, object_key, older[done:], error) from None


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
    for entry in _entries(client, bucket, object_key):
        version_id, latest = _version_of(entry)
        if latest:
            current = True
        else:
            older.append(version_id)
    if older and not current:
        raise ProtocolViolation("the s3 version listing shows no current version of the object")
    return tuple(older)


def _entries(client: Any, bucket: str, object_key: str) -> Iterator[dict[str, Any]]:
    """Every listed version and delete marker of exactly ``object_key``."""
    for page in _version_pages(client, bucket, object_key):
        for kind in ("Versions", "DeleteMarkers"):
            for entry in page.get(kind) or ():
                if not isinstance(entry, dict):
                    raise ProtocolViolation("the s3 version listing holds an entry that is no map")
                if entry.get("Key") == object_key:  # not another key that starts with it
                    yield entry


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
