"""``docmem probe``: does the store really honour conditional writes? Checked, never assumed.

A store with checks of its own runs them (:meth:`docmem.Backend.check_server`:
on ``s3://``, also under ``encrypted+``, docmem-s3's probe, with ETag checks,
a race of concurrent creates and whether the bucket keeps older versions).
Every other store runs the backend contract's checks here, through the :class:`docmem.Backend` API
alone, on a probe key of its own that is deleted afterwards: a create, a
second create refused, a write naming a made-up, a read's, a write's and a
replaced version, concurrent writers of which exactly one wins, and a delete.
The probe writes valid empty documents, so a key a crash left behind is
harmless (``docmem stats`` counts it as an empty document).
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

from docmem.backend import Backend, Check
from docmem.errors import DocmemError, StoreUnavailable, VersionConflict, WriteOutcomeUnknown
from docmem.provider.document import MemoryDocument, serialize

from .report import Reporter
from .store import open_from

__all__ = ["Check", "contract_checks", "run"]


def run(arguments: argparse.Namespace, report: Reporter) -> int:
    """Run the store's probe and print each check; exit 1 if any failed."""
    writers: int = arguments.writers
    with open_from(arguments) as store:
        scheme = urlsplit(store.url).scheme
        own = store.check_server(writers=writers)  # ConditionsNotHonoured names a miss
        if own is not None:
            report.note(probe=own.by)
            report.say(f"probe: {own.by}'s conditional-write checks on {scheme}://")
            for name, value in own.facts.items():
                report.note(**{name: value})
                report.say(f"{name}: {value}")
            checks = list(own.checks)
        else:
            report.note(probe="contract")
            report.say(f"probe: the backend contract's checks on {scheme}:// (on a key of its own)")
            checks = contract_checks(store, writers)
    rows = [{"name": name, "passed": passed} for name, passed in checks]
    report.note(checks=rows)
    for name, passed in checks:
        report.say(f"{'ok' if passed else 'FAILED':<6}  {name}")
    failed = [name for name, passed in checks if not passed]
    if failed:
        report.advise("docmem must not share this store between writers: use one that passes")
        raise StoreUnavailable(
            "the store does not honour conditional writes as docmem needs them, so concurrent "
            f"updates would be lost or fail; failed: {'; '.join(failed)}"
        )
    return report.done(
        f"all {len(checks)} checks passed: docmem can share this store between writers",
        passed=True,
    )


def _probe_document(revision: int) -> bytes:
    """A valid empty document, distinct per ``revision`` (a version may be its bytes' digest)."""
    return serialize(MemoryDocument({}, revision=revision))


def contract_checks(store: Backend, writers: int) -> list[Check]:
    """The backend contract's conditional-write checks on a fresh probe key, deleted afterwards."""
    key = f"docmem-probe-{uuid.uuid4().hex}"
    try:
        return _checks(store, key, writers)
    finally:
        with contextlib.suppress(DocmemError):
            store.delete(key)


def _attempt(store: Backend, key: str, revision: int, expected: str | None) -> str | None:
    """The new version of an accepted write, or ``None`` if its condition refused it."""
    try:
        return store.write(key, _probe_document(revision), expected=expected)
    except VersionConflict:
        return None
    except WriteOutcomeUnknown:
        pass
    raise StoreUnavailable(
        "the probe could not tell whether one of its writes landed; run it again"
    )


def _checks(store: Backend, key: str, writers: int) -> list[Check]:
    created = _attempt(store, key, 1, None)
    second = _attempt(store, key, 2, None)
    made_up = _attempt(store, key, 3, "docmem-probe-made-up-version")
    read = store.read(key)
    faithful = read is not None and read.data == _probe_document(1) and read.version == created
    by_read = _attempt(store, key, 4, read.version) if read is not None else None
    by_write = _attempt(store, key, 5, by_read) if by_read is not None else None
    stale = _attempt(store, key, 6, by_read) if by_write is not None else None
    winners = _race(store, key, by_write, writers) if by_write is not None else None
    store.delete(key)
    return [
        ("a create of a new key succeeds", created is not None),
        ("a second create of the same key is refused", second is None),
        ("a write naming a made-up version is refused", made_up is None),
        ("a read returns the bytes and the version the create returned", faithful),
        ("a write naming the version a read returned is accepted", by_read is not None),
        ("a write naming the version a write returned is accepted", by_write is not None),
        ("a write naming a replaced version is refused", by_write is not None and stale is None),
        (f"{writers} concurrent writes naming one version have exactly one winner", winners == 1),
        ("a deleted key reads as absent", store.read(key) is None),
    ]


def _race(store: Backend, key: str, version: str, writers: int) -> int:
    """How many of ``writers`` threads, started together, each writing over ``version``, win."""
    barrier = threading.Barrier(writers)
    won: list[bool] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(number: int) -> Callable[[], None]:
        def write() -> None:
            barrier.wait()
            try:
                accepted = _attempt(store, key, 10 + number, version) is not None
            except BaseException as error:  # raised below, once every thread has joined
                with lock:
                    errors.append(error)
                return
            with lock:
                won.append(accepted)

        return write

    threads = [threading.Thread(target=writer(number)) for number in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return won.count(True)
