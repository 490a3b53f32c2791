"""Does this store really honour conditional writes? Checked, never assumed.

Some "S3-compatible" servers ignore ``If-None-Match``/``If-Match`` (and so
would silently lose updates) or refuse them; a proxy or gateway in front of
one may blank its ETags, or make them weak while the server still compares
``If-Match`` strongly (then every update fails). Before the first write
through a store, once per process and (endpoint, bucket, prefix),
:func:`verify_once` runs the deterministic checks on a probe object under the
prefix; :func:`probe` adds a concurrency check and can be run on demand::

    python -m docmem_s3 probe "s3://bucket/prefix?endpoint_url=http://127.0.0.1:4566"

Verification holds no process-wide lock while it talks to the store: each
store identity has its own lock (so two stores verify in parallel, and
concurrent first writes to one store probe it once), and a forked child gets
fresh locks, since one held by another parent thread would never be released.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from docmem.errors import StoreUnavailable

from .errors import answer, usable_etag

if TYPE_CHECKING:
    from .backend import S3Backend

__all__ = ["ConditionsNotHonoured", "ProbeReport", "probe", "verify_once"]

Identity = tuple[str, str, str]

_verified: set[Identity] = set()
#: Guards only the two collections here; never held across network I/O.
_registry_lock = threading.Lock()
#: One lock per store identity, held while that store is verified.
_identity_locks: dict[Identity, threading.Lock] = {}
_MADE_UP_ETAG = '"00000000000000000000000000000000"'
_WEAK_NOTE = (
    ' (the store answers with weak ETags, W/"...", yet compares If-Match strongly, '
    "so every update would fail)"
)
_NO_ETAG_NOTE = " (not tried: the store gave no well-formed ETag to send)"


def _reset_after_fork() -> None:
    """In a forked child only the forking thread lives on: a lock another held stays held."""
    global _registry_lock
    _registry_lock = threading.Lock()
    _identity_locks.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


class ConditionsNotHonoured(StoreUnavailable):
    """The store ignores or refuses conditional writes; docmem will not write to it."""

    code = "conditions_not_honoured"


@dataclass(frozen=True)
class ProbeReport:
    """What :func:`probe` checked: each check's name and whether it held."""

    checks: tuple[tuple[str, bool], ...]

    @property
    def ok(self) -> bool:
        """Whether every check held."""
        return all(passed for _, passed in self.checks)


def _put(writer: Any, bucket: str, key: str, body: bytes, **condition: str) -> str | None:
    """The raw ETag of an accepted PUT ("" if it has none), or None if a precondition refused it."""
    try:
        response = writer.put_object(Bucket=bucket, Key=key, Body=body, **condition)
    except ClientError as exc:
        code, status = answer(exc)
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return None
        if status == 501 or code == "NotImplemented":
            raise ConditionsNotHonoured(
                "the s3 store refuses conditional writes (NotImplemented); docmem needs "
                "If-None-Match and If-Match on PutObject"
            ) from None
        raise StoreUnavailable(f"the s3 probe failed (HTTP {status}, {code})") from None
    except Exception as exc:  # any client failure, whatever library raised it
        raise _unreachable(exc) from None
    return str(response.get("ETag") or "")


def _read_etag(reader: Any, bucket: str, key: str) -> str:
    """The raw ETag a GET of the probe object answers with ("" if it has none)."""
    try:
        response = reader.get_object(Bucket=bucket, Key=key)
        response["Body"].read()
    except ClientError as exc:
        code, status = answer(exc)
        raise StoreUnavailable(f"the s3 probe failed (HTTP {status}, {code})") from None
    except Exception as exc:  # any client failure, whatever library raised it
        raise _unreachable(exc) from None
    return str(response.get("ETag") or "")


def _unreachable(exc: Exception) -> StoreUnavailable:
    return StoreUnavailable(f"the s3 probe could not reach the store ({type(exc).__name__})")


def _update(writer: Any, bucket: str, key: str, body: bytes, etag: str | None) -> str | None:
    """An ``If-Match: etag`` PUT's raw ETag; None if refused, or not sent for want of an ETag."""
    if etag is None or not usable_etag(etag):
        return None  # never sent: a blank If-Match is no condition on some servers
    return _put(writer, bucket, key, body, IfMatch=etag)


def _probe_key(store: S3Backend) -> str:
    name = f".docmem-probe/{uuid.uuid4().hex}"
    return f"{store.prefix}/{name}" if store.prefix else name


def _cleanup(store: S3Backend, *keys: str) -> None:
    _, writer = store.clients()
    for key in keys:
        # best effort: a leftover probe object is harmless and never listed
        with contextlib.suppress(Exception):
            writer.delete_object(Bucket=store.bucket, Key=key)


def _accepted(name: str, sent: str | None, result: str | None) -> tuple[str, bool]:
    """A check that an ``If-Match`` update with ``sent`` is accepted, saying why it was not."""
    if result is not None:
        return (name, True)
    if sent is None or not usable_etag(sent):
        return (name + _NO_ETAG_NOTE, False)
    if sent.startswith("W/"):
        return (name + _WEAK_NOTE, False)
    return (name, False)


def _deterministic(store: S3Backend) -> list[tuple[str, bool]]:
    key = _probe_key(store)
    try:
        return _conditional_checks(store, key)
    finally:
        _cleanup(store, key)


def _conditional_checks(store: S3Backend, key: str) -> list[tuple[str, bool]]:
    """Each write has its own bytes, so a server deriving ETags from content gives new ones."""
    reader, writer = store.clients()
    bucket = store.bucket
    created = _put(writer, bucket, key, b"docmem probe 1", IfNoneMatch="*")
    second = _put(writer, bucket, key, b"docmem probe 2", IfNoneMatch="*")
    made_up = _put(writer, bucket, key, b"docmem probe 3", IfMatch=_MADE_UP_ETAG)
    read = _read_etag(reader, bucket, key) if created is not None else None
    by_read = _update(writer, bucket, key, b"docmem probe 4", read)
    by_write = _update(writer, bucket, key, b"docmem probe 5", by_read)
    # by_read was just replaced by by_write: a condition naming it must fail now.
    replaced = usable_etag(by_write)
    stale = _update(writer, bucket, key, b"docmem probe 6", by_read) if replaced else None
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


def _concurrent_creates(store: S3Backend, writers: int) -> tuple[str, bool]:
    _, writer = store.clients()
    key = _probe_key(store)
    barrier = threading.Barrier(writers)
    results: list[bool] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def create() -> None:
        barrier.wait()
        try:
            accepted = _put(writer, store.bucket, key, b"docmem probe", IfNoneMatch="*")
        except BaseException as exc:  # reported below, after every thread joined
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(accepted is not None)

    threads = [threading.Thread(target=create) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    _cleanup(store, key)
    if errors:
        raise errors[0]
    return (f"{writers} concurrent creates have exactly one winner", results.count(True) == 1)


def _refuse(checks: list[tuple[str, bool]]) -> None:
    failed = [name for name, passed in checks if not passed]
    if failed:
        raise ConditionsNotHonoured(
            "the s3 store does not honour conditional writes as docmem needs them, so "
            f"concurrent updates would be lost or fail; docmem refuses it. Failed: "
            f"{'; '.join(failed)}"
        )


def _identity_lock(identity: Identity) -> threading.Lock:
    with _registry_lock:
        return _identity_locks.setdefault(identity, threading.Lock())


def _mark_verified(identity: Identity) -> None:
    with _registry_lock:
        _verified.add(identity)
        _identity_locks.pop(identity, None)  # no longer needed: the fast path answers


def verify_once(store: S3Backend) -> None:
    """Run the deterministic checks before the first write (per process and store identity).

    Concurrent first writes to one store wait for a single verification; other
    stores are not held up, and no process-wide lock is held during the I/O.
    """
    identity = store.identity
    if identity in _verified:
        return
    with _identity_lock(identity):
        if identity in _verified:
            return
        _refuse(_deterministic(store))
        _mark_verified(identity)


def probe(store: S3Backend, *, writers: int = 8) -> ProbeReport:
    """All checks, the concurrency race included; raises ConditionsNotHonoured on a failure."""
    checks = _deterministic(store)
    if all(passed for _, passed in checks):
        checks.append(_concurrent_creates(store, writers))
    _refuse(checks)
    _mark_verified(store.identity)
    return ProbeReport(tuple(checks))
