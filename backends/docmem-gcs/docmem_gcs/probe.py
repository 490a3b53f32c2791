"""Does this store really honour generation preconditions? Checked, never assumed.

An emulator, a proxy or a gateway may drop ``ifGenerationMatch`` (and so
silently lose updates), and fake-gcs-server itself ignores it on media and
resumable uploads (it honours it on the multipart uploads the SDK sends for
up to 8 MiB, the kind every write of this plug-in is). The checks run on a
probe object under the store's prefix: :func:`checks` are the deterministic
ones, which the backend runs before the first write through a store, once per
process and (endpoint, bucket, prefix) (``GcsBackend.verify``); :func:`race`
adds a concurrency check, run on demand by :func:`docmem_gcs.probe`::

    python -m docmem_gcs probe "gs://bucket/prefix?endpoint_url=http://127.0.0.1:4443"

The checks know only a :class:`Target` (a client, a bucket, a prefix and the
request timeout), and every answer is classified by :mod:`docmem_gcs.errors`,
as the backend's are.
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

from .errors import (
    UNSUPPORTED,
    Missing,
    NotAnError,
    Operation,
    gcs_answers,
    generation_text,
    usable_generation,
)

__all__ = ["Check", "ConditionsNotHonoured", "ProbeReport", "Target", "checks", "race", "refuse"]

#: A generation no object has: GCS's are microsecond timestamps.
_MADE_UP_GENERATION = 1
_NO_GENERATION_NOTE = " (not tried: the store gave no well-formed generation to send)"


@dataclass(frozen=True)
class ProbeReport:
    """What :func:`docmem_gcs.probe` checked: each check's name and whether it held."""

    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """Whether every check held."""
        return all(passed for _, passed in self.checks)


@dataclass(frozen=True)
class Target:
    """What the checks talk to: a client, a bucket, a prefix, and the request timeout."""

    client: Any
    bucket: str
    prefix: str
    timeout: Any


def _upload(target: Target, name: str, body: bytes, generation: int) -> str | None:
    """An accepted upload's raw generation ("" if none); None if its condition refused it."""
    operation: Operation = "create" if generation == 0 else "update"
    answers = gcs_answers(operation, bucket=target.bucket)
    blob = target.client.bucket(target.bucket).blob(name)
    try:
        with answers:
            blob.upload_from_string(
                body, if_generation_match=generation, retry=None, timeout=target.timeout
            )
    except VersionConflict:
        return None  # what a refused condition looks like: some checks want exactly that
    except DocmemError as error:
        raise _failed(error, answers) from None
    return generation_text(blob)


def _read_generation(target: Target, name: str) -> str:
    """The raw generation a download of the probe object answers with ("" if it has none)."""
    answers = gcs_answers("read", bucket=target.bucket)
    blob = target.client.bucket(target.bucket).blob(name)
    try:
        with answers:
            blob.download_as_bytes(retry=None, timeout=target.timeout)
    except (DocmemError, NotAnError) as error:
        raise _failed(error, answers) from None
    return generation_text(blob)


def _failed(error: Exception, answers: gcs_answers) -> DocmemError:
    """What a failed probe request means for the write waiting on it.

    None of the probe's uploads is the caller's write, so an unknown outcome
    of one is only the probe failing: StoreUnavailable, and nothing of the
    caller's was written.
    """
    if answers.rule in UNSUPPORTED:
        return ConditionsNotHonoured(
            "the gs store refuses conditional uploads (HTTP 501); docmem needs "
            "ifGenerationMatch on uploads"
        )
    if isinstance(error, StoreNotConfigured):
        return error
    if isinstance(error, DocmemError):
        return StoreUnavailable(f"the gs probe failed: {error.message}")
    state = "vanished" if isinstance(error, Missing) else "was answered as cached"
    return StoreUnavailable(f"the gs probe failed: its object {state}")


def _update(target: Target, name: str, body: bytes, generation: str | None) -> str | None:
    """An ``ifGenerationMatch`` upload's raw generation; None if refused (or never sent)."""
    if generation is None or not usable_generation(generation):
        return None  # never sent: no generation is no condition docmem can trust
    return _upload(target, name, body, int(generation))


def _probe_name(target: Target) -> str:
    name = f".docmem-probe/{uuid.uuid4().hex}"
    return f"{target.prefix}/{name}" if target.prefix else name


def _cleanup(target: Target, *names: str) -> None:
    for name in names:
        # best effort: a leftover probe object is harmless and never listed as a key
        with contextlib.suppress(Exception):
            target.client.bucket(target.bucket).delete_blob(
                name, retry=None, timeout=target.timeout
            )


def _accepted(name: str, sent: str | None, result: str | None) -> Check:
    """A check that an update conditioned on ``sent`` is accepted, saying why it was not."""
    if result is not None:
        return (name, True)
    if sent is None or not usable_generation(sent):
        return (name + _NO_GENERATION_NOTE, False)
    return (name, False)


def checks(target: Target) -> list[Check]:
    """The deterministic checks, on a probe object that is removed afterwards."""
    name = _probe_name(target)
    try:
        return _conditional_checks(target, name)
    finally:
        _cleanup(target, name)


def _conditional_checks(target: Target, name: str) -> list[Check]:
    created = _upload(target, name, b"docmem probe 1", 0)
    second = _upload(target, name, b"docmem probe 2", 0)
    made_up = _upload(target, name, b"docmem probe 3", _MADE_UP_GENERATION)
    read = _read_generation(target, name) if created is not None else None
    by_read = _update(target, name, b"docmem probe 4", read)
    by_write = _update(target, name, b"docmem probe 5", by_read)
    # by_read was just replaced by by_write: a condition naming it must fail now.
    replaced = usable_generation(by_write)
    stale = _update(target, name, b"docmem probe 6", by_read) if replaced else None
    answered = (created, second, made_up, read, by_read, by_write, stale)
    return [
        ("create (ifGenerationMatch=0) of a new object succeeds", created is not None),
        ("a second create of the same object is refused", second is None),
        ("ifGenerationMatch with a made-up generation is refused", made_up is None),
        (
            "every answer carries a well-formed generation (a positive decimal)",
            all(usable_generation(generation) for generation in answered if generation is not None),
        ),
        _accepted(
            "ifGenerationMatch with the generation a read returned is accepted", read, by_read
        ),
        _accepted(
            "ifGenerationMatch with the generation a write returned is accepted", by_read, by_write
        ),
        ("ifGenerationMatch with a replaced generation is refused", replaced and stale is None),
    ]


def race(target: Target, writers: int) -> Check:
    """``writers`` threads create one probe object at once: exactly one may win."""
    name = _probe_name(target)
    try:
        winners = race_creates(lambda: _upload(target, name, b"docmem probe", 0), writers)
    finally:
        _cleanup(target, name)
    return (f"{writers} concurrent creates have exactly one winner", winners == 1)


def refuse(found: list[Check]) -> None:
    """Raise ConditionsNotHonoured naming every check that failed, if any did."""
    failed = [name for name, passed in found if not passed]
    if failed:
        raise ConditionsNotHonoured.failed("gs", failed)
