"""Does this store really honour conditional writes? Checked, never assumed.

An emulator or a gateway may ignore ``If-None-Match: *`` / ``If-Match`` on
Put Blob (and so silently lose updates), or blank or rewrite ETags. The
checks run on a probe blob under the store's prefix: :func:`checks` are the
deterministic ones, which the backend runs before the first write through a
store, once per process and (account, container, prefix)
(``AzureBlobBackend.verify``); :func:`race` adds a concurrency check, run on
demand by :func:`docmem_azure.probe`::

    python -m docmem_azure probe "az://container/prefix?account_url=http://127.0.0.1:10000/devstoreaccount1"

The checks know only a :class:`Target` (two container clients, the container's
name and a prefix), and every answer is classified by :mod:`docmem_azure.errors`,
as the backend's are.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass
from typing import Any

from azure.core import MatchConditions
from azure.storage.blob import BlobType

from docmem.backend import Check, race_creates
from docmem.errors import (
    ConditionsNotHonoured,
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
)

from .errors import UNSUPPORTED, azure_answers, usable_etag

__all__ = ["ConditionsNotHonoured", "ProbeReport", "Target", "checks", "race", "refuse"]

_MADE_UP_ETAG = '"0x8DD000000000000"'
_NO_ETAG_NOTE = " (not tried: the store gave no well-formed ETag to send)"


@dataclass(frozen=True)
class ProbeReport:
    """What :func:`docmem_azure.probe` checked: each check's name and whether it held."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """Whether every check held."""
        return all(passed for _, passed in self.checks)


@dataclass(frozen=True)
class Target:
    """What the checks talk to: a reading and a writing container client, its name, a prefix."""

    reader: Any
    writer: Any
    container: str
    prefix: str


def _put(target: Target, name: str, body: bytes, etag: str | None = None) -> str | None:
    """The raw ETag of an accepted Put Blob ("" if none); None if its condition refused it.

    ``etag=None`` is a create (``If-None-Match: *``), else an ``If-Match: etag`` update.
    """
    condition: dict[str, Any] = (
        {"match_condition": MatchConditions.IfMissing}
        if etag is None
        else {"overwrite": True, "etag": etag, "match_condition": MatchConditions.IfNotModified}
    )
    answers = azure_answers("create" if etag is None else "update", container=target.container)
    try:
        with answers:
            response = target.writer.get_blob_client(name).upload_blob(
                body, blob_type=BlobType.BLOCKBLOB, length=len(body), **condition
            )
    except VersionConflict:
        return None  # what a refused condition looks like: some checks want exactly that
    except DocmemError as error:
        raise _failed(error, answers) from None
    return str(response.get("etag") or "")


def _read_etag(target: Target, name: str) -> str:
    """The raw ETag a GET of the probe blob answers with ("" if it has none)."""
    answers = azure_answers("read", container=target.container)
    try:
        with answers:
            downloader = target.reader.get_blob_client(name).download_blob(max_concurrency=1)
            downloader.readall()
    except Exception as error:
        raise _failed(error, answers) from None
    return str(downloader.properties.etag or "")


def _failed(error: Exception, answers: azure_answers) -> DocmemError:
    """What a failed probe request means for the write waiting on it.

    None of the probe's writes is the caller's write, so an unknown outcome of
    one is only the probe failing: StoreUnavailable, and nothing of the
    caller's was written.
    """
    if answers.rule in UNSUPPORTED:
        return ConditionsNotHonoured(
            "the azure store refuses conditional writes (HTTP 501); docmem needs "
            "If-None-Match and If-Match on Put Blob"
        )
    if isinstance(error, StoreNotConfigured):
        return error
    if isinstance(error, DocmemError):
        return StoreUnavailable(f"the azure probe failed: {error.message}")
    return StoreUnavailable("the azure probe failed: its blob vanished or was answered as cached")


def _update(target: Target, name: str, body: bytes, etag: str | None) -> str | None:
    """An ``If-Match: etag`` Put Blob's raw ETag; None if refused, or not sent for want of one."""
    if etag is None or not usable_etag(etag):
        return None  # never sent: a blank If-Match is no condition a server can be trusted with
    return _put(target, name, body, etag)


def _probe_name(target: Target) -> str:
    name = f".docmem-probe/{uuid.uuid4().hex}"
    return f"{target.prefix}/{name}" if target.prefix else name


def _cleanup(target: Target, *names: str) -> None:
    for name in names:
        # best effort: a leftover probe blob is harmless and never listed as a document
        with contextlib.suppress(Exception):
            target.writer.get_blob_client(name).delete_blob()


def _accepted(name: str, sent: str | None, result: str | None) -> Check:
    """A check that an ``If-Match`` update with ``sent`` is accepted, saying why it was not."""
    if result is not None:
        return (name, True)
    if sent is None or not usable_etag(sent):
        return (name + _NO_ETAG_NOTE, False)
    return (name, False)


def checks(target: Target) -> list[Check]:
    """The deterministic checks, on a probe blob that is removed afterwards."""
    name = _probe_name(target)
    try:
        return _conditional_checks(target, name)
    finally:
        _cleanup(target, name)


def _conditional_checks(target: Target, name: str) -> list[Check]:
    """Each write has its own bytes, so a server deriving ETags from content gives new ones."""
    created = _put(target, name, b"docmem probe 1")
    second = _put(target, name, b"docmem probe 2")
    made_up = _put(target, name, b"docmem probe 3", _MADE_UP_ETAG)
    read = _read_etag(target, name) if created is not None else None
    by_read = _update(target, name, b"docmem probe 4", read)
    by_write = _update(target, name, b"docmem probe 5", by_read)
    # by_read was just replaced by by_write: a condition naming it must fail now.
    replaced = usable_etag(by_write)
    stale = _update(target, name, b"docmem probe 6", by_read) if replaced else None
    answered = (created, second, made_up, read, by_read, by_write, stale)
    return [
        ("create of a new blob succeeds", created is not None),
        ("a second create of the same blob is refused", second is None),
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
    """``writers`` threads create one probe blob at once: exactly one may win."""
    name = _probe_name(target)
    try:
        winners = race_creates(lambda: _put(target, name, b"docmem probe"), writers)
    finally:
        _cleanup(target, name)
    return (f"{writers} concurrent creates have exactly one winner", winners == 1)


def refuse(found: list[Check]) -> None:
    """Raise ConditionsNotHonoured naming every check that failed, if any did."""
    failed = [name for name, passed in found if not passed]
    if failed:
        raise ConditionsNotHonoured.failed("azure", failed)
