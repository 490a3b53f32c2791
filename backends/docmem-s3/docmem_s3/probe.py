"""Does this store really honour conditional writes? Checked, never assumed.

Some "S3-compatible" servers ignore ``If-None-Match``/``If-Match`` (and so
would silently lose updates) or refuse them. Before the first write through a
store, once per process and (endpoint, bucket, prefix), :func:`verify_once`
runs the deterministic checks on a probe object under the prefix;
:func:`probe` adds a concurrency check and can be run on demand::

    python -m docmem_s3 probe "s3://bucket/prefix?endpoint_url=http://127.0.0.1:4566"
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from docmem.errors import StoreUnavailable

from .errors import answer

if TYPE_CHECKING:
    from .backend import S3Backend

__all__ = ["ConditionsNotHonoured", "ProbeReport", "probe", "verify_once"]

_verified: set[tuple[str, str, str]] = set()
_verified_lock = threading.Lock()
_MADE_UP_ETAG = '"00000000000000000000000000000000"'


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


def _put(writer: Any, bucket: str, key: str, **condition: str) -> bool:
    """True if the PUT was accepted, False if refused as a precondition failure."""
    try:
        writer.put_object(Bucket=bucket, Key=key, Body=b"docmem probe", **condition)
    except ClientError as exc:
        code, status = answer(exc)
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        if status == 501 or code == "NotImplemented":
            raise ConditionsNotHonoured(
                "the s3 store refuses conditional writes (NotImplemented); docmem needs "
                "If-None-Match and If-Match on PutObject"
            ) from None
        raise StoreUnavailable(f"the s3 probe failed (HTTP {status}, {code})") from None
    except BotoCoreError as exc:
        raise StoreUnavailable(
            f"the s3 probe could not reach the store ({type(exc).__name__})"
        ) from None
    return True


def _probe_key(store: S3Backend) -> str:
    name = f".docmem-probe/{uuid.uuid4().hex}"
    return f"{store.prefix}/{name}" if store.prefix else name


def _cleanup(store: S3Backend, *keys: str) -> None:
    _, writer = store.clients()
    for key in keys:
        # best effort: a leftover probe object is harmless and never listed
        with contextlib.suppress(ClientError, BotoCoreError):
            writer.delete_object(Bucket=store.bucket, Key=key)


def _deterministic(store: S3Backend) -> list[tuple[str, bool]]:
    _, writer = store.clients()
    key = _probe_key(store)
    try:
        created = _put(writer, store.bucket, key, IfNoneMatch="*")
        second = _put(writer, store.bucket, key, IfNoneMatch="*")
        made_up = _put(writer, store.bucket, key, IfMatch=_MADE_UP_ETAG)
    finally:
        _cleanup(store, key)
    return [
        ("create of a new object succeeds", created),
        ("a second create of the same object is refused", not second),
        ("If-Match with a made-up ETag is refused", not made_up),
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
            accepted = _put(writer, store.bucket, key, IfNoneMatch="*")
        except BaseException as exc:  # reported below, after every thread joined
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(accepted)

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
            "the s3 store does not honour conditional writes, so concurrent updates would be "
            f"lost; docmem refuses it. Failed: {'; '.join(failed)}"
        )


def verify_once(store: S3Backend) -> None:
    """Run the deterministic checks before the first write (per process and store identity)."""
    identity = store.identity
    if identity in _verified:
        return
    with _verified_lock:
        if identity in _verified:
            return
        _refuse(_deterministic(store))
        _verified.add(identity)


def probe(store: S3Backend, *, writers: int = 8) -> ProbeReport:
    """All checks, the concurrency race included; raises ConditionsNotHonoured on a failure."""
    checks = _deterministic(store)
    if all(passed for _, passed in checks):
        checks.append(_concurrent_creates(store, writers))
    _refuse(checks)
    with _verified_lock:
        _verified.add(store.identity)
    return ProbeReport(tuple(checks))
