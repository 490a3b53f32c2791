"""Does this store really honour conditional writes? Checked, never assumed.

Some "S3-compatible" servers ignore ``If-None-Match``/``If-Match`` (and so
would silently lose updates) or refuse them; a proxy or gateway in front of
one may blank its ETags, or make them weak while the server still compares
``If-Match`` strongly (then every update fails). The checks run on a probe
object under the store's prefix: :func:`checks` are the deterministic ones,
which the backend runs before the first write through a store, once per
process and (endpoint, bucket, prefix) (``S3Backend.verify``); :func:`race`
adds a concurrency check, run on demand by :func:`docmem_s3.probe`::

    python -m docmem_s3 probe "s3://bucket/prefix?endpoint_url=http://127.0.0.1:4566"

The checks know only a :class:`Target` (two clients, a bucket and a prefix),
and every answer is classified by :mod:`docmem_s3.errors`, as the backend's
are.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from typing import Any

from docmem.backend import Check, race_creates
from docmem.errors import (
    ConditionsNotHonoured,
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
)

from .errors import UNSUPPORTED, Missing, NotAnError, s3_answers, usable_etag
from .history import Versioning, keeps_versions

__all__ = ["Check", "ConditionsNotHonoured", "ProbeReport", "Target", "checks", "race", "refuse"]


_MADE_UP_ETAG = '"00000000000000000000000000000000"'
_WEAK_NOTE = (
    ' (the store answers with weak ETags, W/"...", yet compares If-Match strongly, '
    "so every update would fail)"
)
_NO_ETAG_NOTE = " (not tried: the store gave no well-formed ETag to send)"


@dataclass(frozen=True)
class ProbeReport:
    """What :func:`docmem_s3.probe` checked: each check's name and whether it held.

    ``versioning`` is what GetBucketVersioning said of the bucket
    (:data:`docmem_s3.history.Versioning`): no check, since a versioned bucket
    is fine, but an erase then has older versions to delete, which needs
    s3:ListBucketVersions and s3:DeleteObjectVersion; "unknown" when the
    question was refused or failed.
    """

    checks: tuple[Check, ...]
    versioning: Versioning = "unknown"

    @property
    def keeps_versions(self) -> bool:
        """Whether the bucket may keep older versions of a document ("unknown" may)."""
        return keeps_versions(self.versioning)

    @property
    def ok(self) -> bool:
        """Whether every check held."""
        return all(passed for _, passed in self.checks)


@dataclass(frozen=True)
class Target:
    """What the checks talk to: a reading and a writing client (retries off), bucket, prefix."""

    reader: Any
    writer: Any
    bucket: str
    prefix: str


def _put(target: Target, key: str, body: bytes, **condition: str) -> str | None:
    """The raw ETag of an accepted PUT ("" if it has none), or None if its condition refused it."""
    answers = s3_answers("update" if "IfMatch" in condition else "create", bucket=target.bucket)
    try:
        with answers:
            response = target.writer.put_object(
                Bucket=target.bucket, Key=key, Body=body, **condition
            )
    except VersionConflict:
        return None  # what a refused condition looks like: some checks want exactly that
    except DocmemError as error:
        raise _failed(error, answers) from None
    return str(response.get("ETag") or "")


def _read_etag(target: Target, key: str) -> str:
    """The raw ETag a GET of the probe object answers with ("" if it has none)."""
    answers = s3_answers("read", bucket=target.bucket)
    try:
        with answers:
            response = target.reader.get_object(Bucket=target.bucket, Key=key)
            response["Body"].read()
    except (DocmemError, NotAnError) as error:
        raise _failed(error, answers) from None
    return str(response.get("ETag") or "")


def _failed(error: Exception, answers: s3_answers) -> DocmemError:
    """What a failed probe request means for the write waiting on it.

    None of the probe's PUTs is the caller's write, so an unknown outcome of
    one is only the probe failing: StoreUnavailable, and nothing of the
    caller's was written.
    """
    if answers.rule in UNSUPPORTED:
        return ConditionsNotHonoured(
            "the s3 store refuses conditional writes (NotImplemented); docmem needs "
            "If-None-Match and If-Match on PutObject"
        )
    if isinstance(error, StoreNotConfigured):
        return error
    if isinstance(error, DocmemError):
        return StoreUnavailable(f"the s3 probe failed: {error.message}")
    state = "vanished" if isinstance(error, Missing) else "was answered as cached"
    return StoreUnavailable(f"the s3 probe failed: its object {state}")


def _update(target: Target, key: str, body: bytes, etag: str | None) -> str | None:
    """An ``If-Match: etag`` PUT's raw ETag; None if refused, or not sent for want of an ETag."""
    if etag is None or not usable_etag(etag):
        return None  # never sent: a blank If-Match is no condition on some servers
    return _put(target, key, body, IfMatch=etag)


def _probe_key(target: Target) -> str:
    name = f".docmem-probe/{uuid.uuid4().hex}"
    return f"{target.prefix}/{name}" if target.prefix else name


def _cleanup(target: Target, *keys: str) -> None:
    for key in keys:
        # best effort: a leftover probe object is harmless and never listed
        with contextlib.suppress(Exception):
            target.writer.delete_object(Bucket=target.bucket, Key=key)


def _accepted(name: str, sent: str | None, result: str | None) -> Check:
    """A check that an ``If-Match`` update with ``sent`` is accepted, saying why it was not."""
    if result is not None:
        return (name, True)
    if sent is None or not usable_etag(sent):
        return (name + _NO_ETAG_NOTE, False)
    if sent.startswith("W/"):
        return (name + _WEAK_NOTE, False)
    return (name, False)


def checks(target: Target) -> list[Check]:
    """The deterministic checks, on a probe object that is removed afterwards."""
    key = _probe_key(target)
    try:
        return _conditional_checks(target, key)
    finally:
        _cleanup(target, key)


def _conditional_checks(target: Target, key: str) -> list[Check]:
    """Each write has its own bytes, so a server deriving ETags from content gives new ones."""
    created = _put(target, key, b"docmem probe 1", IfNoneMatch="*")
    second = _put(target, key, b"docmem probe 2", IfNoneMatch="*")
    made_up = _put(target, key, b"docmem probe 3", IfMatch=_MADE_UP_ETAG)
    read = _read_etag(target, key) if created is not None else None
    by_read = _update(target, key, b"docmem probe 4", read)
    by_write = _update(target, key, b"docmem probe 5", by_read)
    # by_read was just replaced by by_write: a condition naming it must fail now.
    replaced = usable_etag(by_write)
    stale = _update(target, key, b"docmem probe 6", by_read) if replaced else None
    answered = (created, second, made_up, read, by_read, by_write, stale)
    return [
        ("create of a new object succeeds", created is not None),
        ("a second create of the same object is refused", second is None),
        ("If-Match with a made-up ETag is refused", made_up is None),
        (
            "every answer carries a well-formed ETag (a quoted, non-empty string)",
            all(usable_etag(etag) for etag in answered if etag is not None),
        ),
        _accepted("If-Match with the ETag a read returned is accepted", read, by_read),
        _accepted("If-Match with the ETag a write returned is accepted", by_read, by_write),
        ("If-Match with a replaced ETag is refused", replaced and stale is None),
    ]


def race(target: Target, writers: int) -> Check:
    """``writers`` threads create one probe object at once: exactly one may win."""
    key = _probe_key(target)
    try:
        winners = race_creates(lambda: _put(target, key, b"docmem probe", IfNoneMatch="*"), writers)
    finally:
        _cleanup(target, key)
    return (f"{writers} concurrent creates have exactly one winner", winners == 1)


def refuse(found: list[Check]) -> None:
    """Raise ConditionsNotHonoured naming every check that failed, if any did."""
    failed = [name for name, passed in found if not passed]
    if failed:
        raise ConditionsNotHonoured.failed("s3", failed)
