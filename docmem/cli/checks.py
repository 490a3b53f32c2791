"""The backend contract's conditional-write checks: ``docmem probe``'s, and ``migrate``'s preflight.

A store without checks of its own (:meth:`docmem.Backend.check_server`) runs
these, through the :class:`docmem.Backend` API alone, on a probe key of its
own that is deleted afterwards: a create, a second create refused, a write
naming a made-up, a read's, a write's and a replaced version, concurrent
writers of which exactly one wins, and a delete. The probe writes valid empty
documents, so a key a crash left behind is harmless (``docmem stats`` counts
it as an empty document).
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable

from docmem.backend import Backend, Check
from docmem.errors import DocmemError, StoreUnavailable, VersionConflict, WriteOutcomeUnknown
from docmem.provider.document import MemoryDocument, serialize

__all__ = ["contract_checks", "probe_destination"]

#: Concurrent writers in the preflight probe's race.
_PROBE_WRITERS = 4


def probe_destination(store: Backend) -> None:
    """Raise unless ``store`` passes its probe (``docmem probe``'s checks)."""
    if store.check_server(writers=_PROBE_WRITERS) is not None:
        return  # its own checks passed (ConditionsNotHonoured names each that failed)
    failed = [name for name, passed in contract_checks(store, _PROBE_WRITERS) if not passed]
    if failed:
        raise StoreUnavailable(
            "the destination does not honour conditional writes as docmem needs them; "
            f"failed: {'; '.join(failed)}"
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
