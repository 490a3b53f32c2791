"""The backend conformance suite: :class:`BackendTests`, one pytest class every store must pass.

The process-race workers are module-level functions here so that a child
can find them by name. Children come from a ``forkserver`` that has imported
this module once: each starts without the test process's threads and
clients, as a spawned one would, but without importing docmem again, which
made up about half of a race's time.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import pickle
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, cast

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from ..backend import Backend, Stored
from ..errors import (
    DocmemError,
    HistoryNotKept,
    InvalidArgument,
    RevertRefused,
    StoreUnavailable,
    VersionConflict,
)
from ..provider.document import MAX_DOCUMENT_BYTES
from ..provider.keys import lock_scope
from ..provider.memory import FileMemory
from ..provider.retry import RetryPolicy
from .redaction import CANARY, SCOPE_CANARY, all_text, corrupt_documents
from .state_machine import _MADE_UP_VERSION, BackendFactory, BackendStateMachine

if TYPE_CHECKING:
    from ..storage.encryption import EncryptedStore

__all__ = ["BackendTests", "EncryptedRawAccess", "RawAccess", "increment_counter"]

_T = TypeVar("_T")


class RawAccess(Protocol):
    """Reads and writes one key *around* the store under test (out of band).

    ``put`` stands for another writer the store knows nothing about (an
    operator, another tool): it must give the key a new version as the store
    itself would see it.
    """

    def get(self, key: str) -> bytes | None:
        """The bytes stored under ``key``, or ``None``."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` unconditionally, bypassing the backend."""
        ...


class EncryptedRawAccess:
    """:class:`RawAccess` for an encrypted store (:func:`docmem.encrypted`) around ``inner``.

    ``inner`` reaches the wrapped store; the bytes go in and out sealed with
    the encrypted store's own keyring, so the suite's out-of-band writes are
    documents the store can open.
    """

    def __init__(self, store: EncryptedStore, inner: RawAccess) -> None:
        self._store = store
        self._inner = inner

    def get(self, key: str) -> bytes | None:
        data = self._inner.get(key)
        return None if data is None else self._store.decrypt(key, data)

    def put(self, key: str, data: bytes) -> None:
        self._inner.put(key, self._store.encrypt(key, data))


def increment_counter(
    backend: Backend, key: str, times: int, *, give_up_after: float = 60.0, recent: bool = False
) -> list[int]:
    """Add one, ``times`` times, to the ASCII decimal counter stored at ``key``.

    The optimistic-concurrency loop itself: read, compute, write on the
    condition that the version is still the one read (create-only when the key
    is missing); on :class:`VersionConflict` back off with full jitter and start
    over. Returns the values this caller wrote, so a race can check that every
    value from 1 to the total was written exactly once. With ``recent`` each
    increment starts from :meth:`~docmem.Backend.read_recent` and reads afresh
    after a conflict, as FileMemory does.
    """
    deadline = time.monotonic() + give_up_after
    written: list[int] = []
    for _ in range(times):
        conflicts = 0
        while True:
            stored = backend.read_recent(key) if recent and not conflicts else backend.read(key)
            value = int(stored.data.decode("ascii")) + 1 if stored is not None else 1
            expected = stored.version if stored is not None else None
            try:
                backend.write(key, str(value).encode("ascii"), expected=expected)
            except VersionConflict:
                conflicts += 1
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"increment of {key!r} still losing after {conflicts} conflicts "
                        f"and {give_up_after:g} s"
                    ) from None
                time.sleep(random.uniform(0.0, min(0.05, 0.001 * 2.0 ** min(conflicts, 16))))
                continue
            written.append(value)
            break
    return written


# -- process-race workers (found by name in the forkserver's children) -------


def _reported(
    pickled: bytes, barrier: Barrier, results: Queue[Any], run: Callable[[Backend], Any]
) -> None:
    """In a worker: unpickle the store, wait for the others, put ``run(store)`` or the error."""
    try:
        backend = pickle.loads(pickled)
        try:
            barrier.wait(timeout=120)
            results.put(("ok", run(backend)))
        finally:
            backend.close()
    except BaseException as exc:  # report everything: the parent shows it
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def _increment_worker(
    pickled: bytes, key: str, times: int, barrier: Barrier, results: Queue[Any]
) -> None:
    _reported(pickled, barrier, results, lambda backend: increment_counter(backend, key, times))


def _save_worker(
    pickled: bytes,
    namespace: str,
    scope: tuple[str, ...],
    texts: list[str],
    barrier: Barrier,
    results: Queue[Any],
) -> None:
    def save_all(backend: Backend) -> list[tuple[str, int | None]]:
        bound = FileMemory(backend).bind(lock_scope(namespace=namespace, scope=scope), slot="user")
        saved = [bound.save(text, mutation_id=uuid.uuid4().hex) for text in texts]
        return [(result.status, result.index) for result in saved]

    _reported(pickled, barrier, results, save_all)


#: One answer of a group-commit race: (text, status, index, revision, mutation id).
_Answer = tuple[str, str, int | None, int, str]


def _save_in_threads(
    memories: Sequence[FileMemory], scope: tuple[str, ...], texts: list[list[str]], timeout: float
) -> list[_Answer]:
    """Each list of ``texts`` saved by its own thread, thread ``i`` through ``memories[i % n]``."""
    locked = lock_scope(namespace="docmem-conformance", scope=scope)
    bound = [memory.bind(locked, slot="user") for memory in memories]

    def save_all(worker: int) -> list[_Answer]:
        mem = bound[worker % len(bound)]
        answers: list[_Answer] = []
        for text in texts[worker]:
            mutation_id = uuid.uuid4().hex
            result = mem.save(text, mutation_id=mutation_id)
            answers.append((text, result.status, result.index, result.revision, mutation_id))
        return answers

    per_thread = _run_in_threads(save_all, len(texts), timeout)
    return [answer for answers in per_thread for answer in answers]


def _group_save_worker(
    pickled: bytes,
    scope: tuple[str, ...],
    texts: list[list[str]],
    barrier: Barrier,
    results: Queue[Any],
) -> None:
    def save_all(backend: Backend) -> list[_Answer]:
        return _save_in_threads([_roomy_memory(backend)], scope, texts, 120)

    _reported(pickled, barrier, results, save_all)


def _run_in_processes(
    target: Callable[..., None], per_process: Sequence[tuple[Any, ...]], timeout: float
) -> list[Any]:
    """Run ``target(*args, barrier, results)`` in one process per ``args``."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])  # read when the forkserver first starts
    barrier = context.Barrier(len(per_process))
    results: Queue[Any] = context.Queue()
    processes = [
        context.Process(target=target, args=(*args, barrier, results), daemon=True)
        for args in per_process
    ]
    for process in processes:
        process.start()
    collected: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(collected) < len(processes) and time.monotonic() < deadline:
            try:
                collected.append(results.get(timeout=0.5))
            except queue.Empty:
                if not any(process.is_alive() for process in processes) and results.empty():
                    break
        for process in processes:
            process.join(timeout=max(0.0, deadline - time.monotonic()) + 5)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join(5)
    errors = [detail for status, detail in collected if status == "error"]
    if errors:
        pytest.fail(f"{len(errors)} worker process(es) failed: {'; '.join(errors)}")
    if len(collected) < len(processes):
        codes = [process.exitcode for process in processes]
        pytest.fail(
            f"only {len(collected)} of {len(processes)} worker processes reported "
            f"within {timeout:g} s (exit codes {codes})"
        )
    return [detail for _, detail in collected]


def _run_in_threads(function: Callable[[int], _T], count: int, timeout: float) -> list[_T]:
    """Run ``function(i)`` for ``i`` in ``range(count)`` in as many threads, started together."""
    barrier = threading.Barrier(count)

    def start(worker: int) -> _T:
        barrier.wait(timeout=timeout)
        return function(worker)

    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(start, worker) for worker in range(count)]
        return [future.result(timeout=timeout) for future in futures]


_PAYLOADS = {
    "empty": b"",
    "all-byte-values": bytes(range(256)),
    "line-endings-and-nul": b"a\r\nb\rc\n\x00\xff\n",
    "utf8-text": "Prefers metric units. \u00e9\u4e2d\U0001f600\n".encode(),
    "64-KiB-random": random.Random(20240617).randbytes(64 * 1024),
}

_INVALID_KEYS: dict[str, object] = {
    "empty": "",
    "slash": "a/b",
    "dot-dot": "../escape",
    "dot": "a.b",
    "space": "has space",
    "newline": "new\nline",
    "non-ascii": "caf\u00e9",
    "201-chars": "k" * 201,
    "none": None,
    "bytes": b"bytes",
}


class BackendTests:
    """The conformance suite; subclass it (with a ``Test`` prefix) once per backend.

    Required fixtures: ``make_backend`` (a :data:`BackendFactory`), ``raw``
    (a :class:`RawAccess` for the ``backend`` fixture's store) and
    ``unavailable_backend`` (a store that cannot be reached). Optional
    capabilities and sizes are the class attributes below.
    """

    #: Several processes may share the store; ``None`` takes the backend class's flag.
    shared_between_processes: ClassVar[bool | None] = None
    #: The store keeps older versions: ``True`` fails a HistoryNotKept, ``False`` skips the
    #: history tests, ``None`` asks the store (its HistoryNotKept skips them).
    keeps_history: ClassVar[bool | None] = None
    #: Threads and increments per thread of the thread race (final value: their product).
    race_threads: ClassVar[int] = 8
    race_increments: ClassVar[int] = 25
    #: Processes and increments per process of the process race.
    race_processes: ClassVar[int] = 4
    race_process_increments: ClassVar[int] = 25
    #: Workers and saves per worker of the FileMemory races.
    memory_race_workers: ClassVar[int] = 4
    memory_race_saves: ClassVar[int] = 10
    #: Seconds a race may take before it counts as hung.
    race_timeout: ClassVar[float] = 120.0
    #: Hypothesis settings of the model-based test.
    state_machine_settings: ClassVar[settings] = settings(
        max_examples=30,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )

    # -- fixtures a subclass provides ------------------------------------------

    @pytest.fixture
    def make_backend(self) -> BackendFactory:
        """A factory returning a fresh, empty store on every call."""
        raise NotImplementedError(f"{type(self).__name__} must define the make_backend fixture")

    @pytest.fixture
    def raw(self, backend: Backend) -> RawAccess:
        """Get/put on the ``backend`` fixture's store, bypassing the backend."""
        raise NotImplementedError(f"{type(self).__name__} must define the raw fixture")

    @pytest.fixture
    def unavailable_backend(self) -> Backend:
        """A store that cannot be reached (closed, wrong root, no such bucket)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define the unavailable_backend fixture"
        )

    @pytest.fixture
    def backend(self, make_backend: BackendFactory) -> Iterator[Backend]:
        """A fresh, empty store for one test, closed afterwards."""
        store = make_backend()
        yield store
        store.close()

    def _shared(self, backend: Backend) -> bool:
        if self.shared_between_processes is not None:
            return self.shared_between_processes
        return bool(type(backend).shared_between_processes)

    def _require_shared(self, backend: Backend) -> None:
        if not self._shared(backend):
            pytest.skip(
                f"capability: {type(backend).__name__} is not shared between processes "
                "(shared_between_processes=False), so there is no process race to run"
            )

    # -- reads and round trips ---------------------------------------------------

    def test_missing_key_reads_none(self, backend: Backend) -> None:
        assert backend.read("never-written") is None

    def test_fresh_store_has_no_keys(self, backend: Backend) -> None:
        assert list(backend.keys()) == []

    @pytest.mark.parametrize("name", sorted(_PAYLOADS))
    def test_bytes_round_trip_exactly(self, backend: Backend, name: str) -> None:
        payload = _PAYLOADS[name]
        version = backend.write("payload", payload, expected=None)
        stored = backend.read("payload")
        assert isinstance(stored, Stored)
        assert type(stored.data) is bytes
        assert stored.data == payload
        assert stored.version == version

    def test_write_returns_the_version_read_reports(self, backend: Backend) -> None:
        version = backend.write("k", b"one", expected=None)
        assert isinstance(version, str)
        assert version
        first, second = backend.read("k"), backend.read("k")
        assert first is not None
        assert second is not None
        assert first.version == second.version == version

    def test_longest_key_is_accepted(self, backend: Backend) -> None:
        key = "K" * 200
        version = backend.write(key, b"x", expected=None)
        assert backend.read(key) == Stored(data=b"x", version=version)
        assert key in set(backend.keys())

    # -- conditional writes --------------------------------------------------------

    def test_create_only_is_exclusive(self, backend: Backend) -> None:
        version = backend.write("k", b"first", expected=None)
        with pytest.raises(VersionConflict):
            backend.write("k", b"second", expected=None)
        assert backend.read("k") == Stored(data=b"first", version=version)

    def test_update_with_current_version(self, backend: Backend) -> None:
        first = backend.write("k", b"one", expected=None)
        second = backend.write("k", b"two", expected=first)
        assert backend.read("k") == Stored(data=b"two", version=second)

    def test_update_with_stale_version_conflicts(self, backend: Backend) -> None:
        first = backend.write("k", b"one", expected=None)
        second = backend.write("k", b"two", expected=first)
        with pytest.raises(VersionConflict):
            backend.write("k", b"three", expected=first)
        assert backend.read("k") == Stored(data=b"two", version=second)

    def test_update_of_missing_key_conflicts(self, backend: Backend) -> None:
        real = backend.write("other", b"data", expected=None)
        for expected in (real, _MADE_UP_VERSION, "0", "1"):
            with pytest.raises(VersionConflict):
                backend.write("missing", b"data", expected=expected)
        assert backend.read("missing") is None

    def test_version_changes_whenever_bytes_change(self, backend: Backend) -> None:
        contents = [b"", b"a", b"b", b"ab", b"a" * 1000, b"\x00", b"\x00\x00", b"end"]
        version = backend.write("k", contents[0], expected=None)
        versions = [version]
        for data in contents[1:]:
            version = backend.write("k", data, expected=version)
            versions.append(version)
        assert len(set(versions)) == len(versions), "distinct bytes shared a version"

    def test_rewriting_same_bytes_keeps_working(self, backend: Backend) -> None:
        version = backend.write("k", b"same", expected=None)
        again = backend.write("k", b"same", expected=version)
        assert backend.read("k") == Stored(data=b"same", version=again)
        backend.write("k", b"changed", expected=again)

    def test_racing_creates_have_one_winner(self, backend: Backend) -> None:
        def create(worker: int) -> bool:
            try:
                backend.write("contested", f"worker {worker}".encode(), expected=None)
            except VersionConflict:
                return False
            return True

        won = _run_in_threads(create, self.race_threads, self.race_timeout)
        assert won.count(True) == 1, f"{won.count(True)} creates of one key succeeded"
        stored = backend.read("contested")
        assert stored is not None
        assert stored.data == f"worker {won.index(True)}".encode()

    # -- delete, keys, purge_history ---------------------------------------------------

    def test_delete_removes_and_recreate_works(self, backend: Backend) -> None:
        old = backend.write("k", b"old", expected=None)
        backend.delete("k")
        assert backend.read("k") is None
        assert "k" not in set(backend.keys())
        with pytest.raises(VersionConflict):
            backend.write("k", b"stale writer", expected=old)
        version = backend.write("k", b"new", expected=None)
        assert backend.read("k") == Stored(data=b"new", version=version)

    def test_delete_of_missing_key_is_fine(self, backend: Backend) -> None:
        backend.delete("never-written")
        backend.write("k", b"x", expected=None)
        backend.delete("k")
        backend.delete("k")
        assert backend.read("k") is None

    def test_keys_lists_written_keys(self, backend: Backend) -> None:
        written = {f"key-{n}" for n in range(12)} | {"a", "Z_9-", "memkey1_abc"}
        for key in written:
            backend.write(key, key.encode(), expected=None)
        assert sorted(backend.keys()) == sorted(written)
        backend.delete("a")
        assert sorted(backend.keys()) == sorted(written - {"a"})

    def test_listed_versions_are_the_versions_reads_return(self, backend: Backend) -> None:
        listing = backend.listed_versions()
        if listing is None:
            pytest.skip(f"capability: {type(backend).__name__} lists no versions")
        assert list(listing) == []
        written = {key: backend.write(key, key.encode(), expected=None) for key in ("a", "b-1")}
        written["a"] = backend.write("a", b"changed", expected=written["a"])
        listed = backend.listed_versions()
        assert listed is not None
        assert dict(listed) == written
        for key, version in written.items():
            assert backend.read(key) == Stored(
                data=b"changed" if key == "a" else b"b-1", version=version
            )

    def test_purge_history_is_harmless(self, backend: Backend) -> None:
        first = backend.write("k", b"one", expected=None)
        second = backend.write("k", b"two", expected=first)
        backend.purge_history("k")
        assert backend.read("k") == Stored(data=b"two", version=second)
        third = backend.write("k", b"three", expected=second)
        assert backend.read("k") == Stored(data=b"three", version=third)
        backend.purge_history("never-written")
        assert backend.read("never-written") is None

    # -- history: the versions a store keeps ------------------------------------------

    def _require_history(self, backend: Backend) -> None:
        """Skip unless the store keeps history; see :attr:`keeps_history`."""
        if self.keeps_history is False:
            pytest.skip(f"capability: {type(self).__name__} sets keeps_history=False")
        try:
            backend.history("never-written")
        except HistoryNotKept:
            if self.keeps_history:
                raise
            pytest.skip(f"capability: {type(backend).__name__} keeps no history (HistoryNotKept)")

    def _three_versions(self, backend: Backend, key: str) -> list[Stored]:
        """``key`` written three times, each a different length: what each write stored."""
        written: list[Stored] = []
        for data in (b"v1", b"version 2", b"the third version"):
            expected = written[-1].version if written else None
            written.append(Stored(data=data, version=backend.write(key, data, expected=expected)))
        return written

    def test_history_is_kept_or_refused_alike(self, backend: Backend) -> None:
        """A store keeps history for both calls or refuses both; a missing key has none."""
        try:
            listed = backend.history("never-written")
        except HistoryNotKept:
            assert not self.keeps_history, "keeps_history=True, but the store keeps none"
            with pytest.raises(HistoryNotKept):
                backend.read_version("never-written", _MADE_UP_VERSION)
            return
        assert self.keeps_history is not False, "keeps_history=False, but the store keeps some"
        assert list(listed) == []
        assert backend.read_version("never-written", _MADE_UP_VERSION) is None
        backend.write("other", b"x", expected=None)
        assert list(backend.history("never-written")) == []

    def test_history_lists_versions_oldest_first_and_reads_each(self, backend: Backend) -> None:
        self._require_history(backend)
        written = self._three_versions(backend, "k")
        listed = backend.history("k")
        assert [kept.version for kept in listed] == [stored.version for stored in written]
        for kept in listed:
            assert isinstance(kept.size, int)
            assert kept.size >= 0
            assert kept.modified is None or isinstance(kept.modified, float)
        for stored in written:
            assert backend.read_version("k", stored.version) == stored
        assert backend.read_version("k", _MADE_UP_VERSION) is None
        assert sorted(backend.keys()) == ["k"], "a kept version was listed as a key"

    def test_history_ends_with_the_version_read_reports(self, backend: Backend) -> None:
        self._require_history(backend)
        written = self._three_versions(backend, "k")
        current = backend.read("k")
        assert current is not None
        assert current == written[-1]
        assert backend.history("k")[-1].version == current.version
        newer = backend.write("k", b"one more", expected=current.version)
        listed = backend.history("k")
        assert listed[-1].version == newer
        assert [kept.version for kept in listed[-2:]] == [current.version, newer]

    def test_purge_history_leaves_only_the_current_version(self, backend: Backend) -> None:
        self._require_history(backend)
        written = self._three_versions(backend, "k")
        backend.write("other", b"untouched", expected=None)
        backend.purge_history("k")
        assert [kept.version for kept in backend.history("k")] == [written[-1].version]
        for older in written[:-1]:
            assert backend.read_version("k", older.version) is None
        assert backend.read_version("k", written[-1].version) == written[-1]
        assert backend.read("k") == written[-1]
        newer = backend.write("k", b"after the purge", expected=written[-1].version)
        assert [kept.version for kept in backend.history("k")] == [written[-1].version, newer]
        assert len(backend.history("other")) == 1

    def test_delete_leaves_no_history(self, backend: Backend) -> None:
        self._require_history(backend)
        written = self._three_versions(backend, "k")
        backend.delete("k")
        assert list(backend.history("k")) == []
        for stored in written:
            assert backend.read_version("k", stored.version) is None
        again = backend.write("k", b"created again", expected=None)
        assert [kept.version for kept in backend.history("k")] == [again]

    def test_a_revert_and_a_racing_save_are_arbitrated_by_compare_and_swap(
        self, make_backend: BackendFactory
    ) -> None:
        """Two clients, one reverting and one saving at once: both land, one after the other.

        Each client its own store and its own ``FileMemory`` without group
        commit, as two processes would be: the loser of a race reads again
        and decides again, so the final document is one of the two orders
        and both journal records are in it (docs/design.md, section 3.1).
        """
        first = make_backend()
        self._require_history(first)
        second = pickle.loads(pickle.dumps(first))  # the same store, another client
        scope = lock_scope(namespace="docmem-conformance", scope="revert-race")
        saver = FileMemory(first, group_commit=False).bind(scope, slot="user")
        reverter = FileMemory(second, group_commit=False).bind(scope, slot="user")
        saver.save("Kept.", mutation_id="kept")
        good = saver.save("Also kept.", mutation_id="also-kept").revision
        saver.save("Poison.", mutation_id="poison")
        barrier = threading.Barrier(2)
        results: dict[str, Any] = {}

        def run(name: str, mutate: Callable[[], object]) -> None:
            barrier.wait()
            try:
                results[name] = mutate()
            except Exception as error:  # reported below, in the test's thread
                results[name] = error

        def save() -> None:
            run("save", lambda: saver.save("Racing.", mutation_id="racing"))

        def revert() -> None:
            run("revert", lambda: reverter.revert(good, mutation_id="undo"))

        threads = [threading.Thread(target=save), threading.Thread(target=revert)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert set(results) == {"save", "revert"}, "a racing mutation did not finish"
        for outcome in results.values():
            if isinstance(outcome, Exception):
                raise outcome
        document = saver.read()
        assert document is not None
        assert document.revision == good + 3
        assert saver.inspect("racing") is not None
        assert saver.inspect("undo") is not None
        texts = set(document.entries.values())
        assert texts in ({"Kept.", "Also kept.", "Racing."}, {"Kept.", "Also kept."})
        assert "Poison." not in texts
        saved_last = results["save"].revision > results["revert"].revision
        assert ("Racing." in texts) == saved_last

    def test_an_erase_leaves_nothing_a_revert_could_restore(
        self, make_backend: BackendFactory
    ) -> None:
        """Right to be forgotten: after an erase no kept version holds an erased entry."""
        store = make_backend()
        self._require_history(store)
        scope = lock_scope(namespace="docmem-conformance", scope="erase-history")
        memory = FileMemory(store).bind(scope, slot="user")
        memory.save(CANARY, mutation_id="canary")
        good = memory.save("Second note.", mutation_id="second").revision
        memory.erase(mutation_id="erase")
        for kept in store.history(scope.storage_key):
            stored = store.read_version(scope.storage_key, kept.version)
            assert stored is None or CANARY.encode() not in stored.data
        with pytest.raises(RevertRefused):
            memory.revert(good)

    def test_history_refuses_invalid_keys(self, backend: Backend) -> None:
        self._require_history(backend)
        for bad in _INVALID_KEYS.values():
            with pytest.raises(InvalidArgument):
                backend.history(cast(str, bad))
            with pytest.raises(InvalidArgument):
                backend.read_version(cast(str, bad), _MADE_UP_VERSION)

    def test_close_is_idempotent(self, make_backend: BackendFactory) -> None:
        store = make_backend()
        with store as entered:
            assert entered is store
        store.close()

    # -- refusals -----------------------------------------------------------------------

    @pytest.mark.parametrize("name", sorted(_INVALID_KEYS))
    def test_invalid_keys_are_refused(self, backend: Backend, name: str) -> None:
        bad = cast(str, _INVALID_KEYS[name])
        with pytest.raises(InvalidArgument):
            backend.read(bad)
        with pytest.raises(InvalidArgument):
            backend.write(bad, b"x", expected=None)
        with pytest.raises(InvalidArgument):
            backend.delete(bad)
        assert list(backend.keys()) == []

    def test_unavailable_store_read_raises(self, unavailable_backend: Backend) -> None:
        with pytest.raises(StoreUnavailable):
            unavailable_backend.read("k")

    def test_unavailable_store_write_raises(self, unavailable_backend: Backend) -> None:
        with pytest.raises(StoreUnavailable):
            unavailable_backend.write("k", b"x", expected=None)
        with pytest.raises(StoreUnavailable):
            unavailable_backend.write("k", b"x", expected=_MADE_UP_VERSION)

    def test_unavailable_store_keys_and_delete_raise(self, unavailable_backend: Backend) -> None:
        with pytest.raises(StoreUnavailable):
            list(unavailable_backend.keys())
        with pytest.raises(StoreUnavailable):
            unavailable_backend.delete("k")

    # -- out of band ----------------------------------------------------------------------

    def test_raw_put_is_read(self, backend: Backend, raw: RawAccess) -> None:
        raw.put("k", b"from outside")
        stored = backend.read("k")
        assert stored is not None
        assert stored.data == b"from outside"
        with pytest.raises(VersionConflict):
            backend.write("k", b"create", expected=None)
        assert "k" in set(backend.keys())

    def test_raw_put_makes_old_version_stale(self, backend: Backend, raw: RawAccess) -> None:
        old = backend.write("k", b"ours", expected=None)
        raw.put("k", b"theirs")
        stored = backend.read("k")
        assert stored is not None
        assert stored.data == b"theirs"
        assert stored.version != old
        with pytest.raises(VersionConflict):
            backend.write("k", b"lost update", expected=old)
        assert raw.get("k") == b"theirs"
        backend.write("k", b"merged", expected=stored.version)
        assert raw.get("k") == b"merged"

    def test_write_is_visible_raw(self, backend: Backend, raw: RawAccess) -> None:
        assert raw.get("k") is None
        payload = _PAYLOADS["all-byte-values"]
        backend.write("k", payload, expected=None)
        assert raw.get("k") == payload
        backend.delete("k")
        assert raw.get("k") is None

    # -- read_recent -------------------------------------------------------------------------
    # A save starts from read_recent; a cached answer may be old only where the backend
    # says so, and a write based on an old one must conflict (docs/design.md, section 4).

    def test_read_recent_answers_what_this_store_wrote(self, backend: Backend) -> None:
        had: list[Stored | None] = [None]
        self._check_recent(backend, "k", had)
        first = backend.write("k", b"one", expected=None)
        had.append(Stored(data=b"one", version=first))
        self._check_recent(backend, "k", had)
        second = backend.write("k", b"two", expected=first)
        had.append(Stored(data=b"two", version=second))
        self._check_recent(backend, "k", had)
        backend.delete("k")
        had.append(None)
        self._check_recent(backend, "k", had)
        for bad in _INVALID_KEYS.values():
            with pytest.raises(InvalidArgument):
                backend.read_recent(cast(str, bad))

    def _check_recent(self, backend: Backend, key: str, had: list[Stored | None]) -> None:
        """``read_recent`` is what ``read`` is, or (if it may be stale) what the key once was."""
        recent = backend.read_recent(key)
        if backend.recent_reads_may_be_stale:
            assert recent in had, f"read_recent answered {recent!r}, which {key!r} never held"
        else:
            assert recent == backend.read(key) == had[-1], "read_recent must answer what read does"

    def test_read_recent_after_a_raw_put_is_stale_only_if_allowed(
        self, backend: Backend, raw: RawAccess
    ) -> None:
        ours = Stored(data=b"ours", version=backend.write("k", b"ours", expected=None))
        assert backend.read("k") == ours
        raw.put("k", b"theirs")
        self._check_recent_after_another_writer(backend, "k", ours, b"theirs", raw.get)

    def test_read_recent_after_another_client_wrote(self, backend: Backend) -> None:
        other = pickle.loads(pickle.dumps(backend))
        try:
            ours = Stored(data=b"ours", version=backend.write("k", b"ours", expected=None))
            assert other.read("k") == ours
            other.write("k", b"theirs", expected=ours.version)

            def current(key: str) -> bytes | None:
                stored = other.read(key)
                return None if stored is None else stored.data

            self._check_recent_after_another_writer(backend, "k", ours, b"theirs", current)
        finally:
            other.close()

    def _check_recent_after_another_writer(
        self,
        backend: Backend,
        key: str,
        ours: Stored,
        theirs: bytes,
        current: Callable[[str], bytes | None],
    ) -> None:
        """``read_recent`` once another writer replaced ``ours``, the version this store wrote."""
        recent = backend.read_recent(key)
        assert recent is not None
        stale = recent.version == ours.version
        if stale:
            assert recent == ours
            assert backend.recent_reads_may_be_stale, (
                f"{type(backend).__name__}.read_recent answered a replaced version, "
                "but recent_reads_may_be_stale is False"
            )
        else:
            assert recent.data == theirs
        if not backend.recent_reads_may_be_stale:
            assert recent == backend.read(key), "read_recent must answer what read does"
        # A write based on it succeeds or conflicts; it never replaces their version.
        try:
            backend.write(key, b"based on recent", expected=recent.version)
        except VersionConflict:
            assert stale, "a write based on the current version conflicted"
            assert current(key) == theirs, "a conflicting write changed the stored bytes"
            fresh = backend.read(key)
            assert fresh is not None
            assert fresh.data == theirs
            assert fresh.version != ours.version
            backend.write(key, b"merged", expected=fresh.version)
            assert current(key) == b"merged"
        else:
            assert not stale, "a write based on a replaced version succeeded: an update was lost"
            assert current(key) == b"based on recent"

    def test_thread_race_from_recent_reads_loses_no_update(self, backend: Backend) -> None:
        threads, times = self.race_threads, self.race_increments
        written = _run_in_threads(
            lambda _: increment_counter(backend, "counter", times, recent=True),
            threads,
            self.race_timeout,
        )
        total = threads * times
        _assert_counted_once(backend, written, total)

    # -- redaction ------------------------------------------------------------------

    def test_canary_never_in_errors_or_logs(
        self,
        backend: Backend,
        raw: RawAccess,
        unavailable_backend: Backend,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Memory text and raw scope values stay out of every error chain and log line.

        Through this store: refusals, a reused mutation id, documents corrupted
        around the canary by another writer, and an unreachable store.
        """
        caplog.set_level(logging.DEBUG)
        scope = lock_scope(namespace="docmem.testing:redaction", scope=("user", SCOPE_CANARY))
        policy = RetryPolicy(max_attempts=3, base=0, cap=0)
        memory = FileMemory(backend, max_characters=300, retry=policy).bind(scope, slot="user")
        memory.save(CANARY + " kept", mutation_id="kept")
        for refused in (
            lambda: memory.save(CANARY + " AKIAIOSFODNN7EXAMPLE", mutation_id="secret"),
            lambda: memory.save(CANARY + "\u0007", mutation_id="control"),
            lambda: memory.save(CANARY + "\ud800", mutation_id="surrogate"),
            lambda: memory.save(CANARY * 200, mutation_id="long"),
            lambda: memory.save(" ".join([CANARY] * 12), mutation_id="full"),
            lambda: memory.save(CANARY + " again", mutation_id="kept"),
        ):
            _refused_without_canary(refused)
        for name, data in corrupt_documents().items():
            raw.put(scope.storage_key, data)
            _refused_without_canary(memory.recall)
            _refused_without_canary(functools.partial(memory.save, CANARY, mutation_id=name))
            assert raw.get(scope.storage_key) == data  # a refused document is left as it was
        lost = FileMemory(unavailable_backend, retry=policy).bind(scope, slot="user")
        _refused_without_canary(lost.recall)
        _refused_without_canary(functools.partial(lost.save, CANARY, mutation_id="lost"))
        for record in caplog.records:
            message = record.getMessage()
            assert CANARY not in message, record.name
            assert SCOPE_CANARY not in message, record.name

    # -- pickling -----------------------------------------------------------------------------

    def test_pickled_copy_sees_the_same_data(self, backend: Backend) -> None:
        copy = pickle.loads(pickle.dumps(backend))
        try:
            assert type(copy) is type(backend)
            assert copy.url == backend.url
            assert copy.options == backend.options
            version = backend.write("k", b"from the original", expected=None)
            assert copy.read("k") == Stored(data=b"from the original", version=version)
            newer = copy.write("k", b"from the copy", expected=version)
            assert backend.read("k") == Stored(data=b"from the copy", version=newer)
        finally:
            copy.close()

    # -- races ------------------------------------------------------------------------------------

    def test_thread_race_loses_no_update(self, backend: Backend) -> None:
        threads, times = self.race_threads, self.race_increments
        written = _run_in_threads(
            lambda _: increment_counter(backend, "counter", times), threads, self.race_timeout
        )
        total = threads * times
        _assert_counted_once(backend, written, total)

    def test_process_race_loses_no_update(self, backend: Backend) -> None:
        self._require_shared(backend)
        processes, times = self.race_processes, self.race_process_increments
        pickled = pickle.dumps(backend)
        written = _run_in_processes(
            _increment_worker, [(pickled, "counter", times)] * processes, self.race_timeout
        )
        total = processes * times
        _assert_counted_once(backend, written, total)

    def _check_saves(
        self,
        backend: Backend,
        scope: tuple[str, ...],
        results: list[list[tuple[str, int | None]]],
    ) -> None:
        workers, saves = self.memory_race_workers, self.memory_race_saves
        total = workers * saves
        flat = [result for per_worker in results for result in per_worker]
        assert [status for status, _ in flat] == ["saved"] * total
        indexes = [index for _, index in flat if index is not None]
        assert sorted(indexes) == list(range(total)), "indexes were reused or skipped"
        bound = FileMemory(backend).bind(
            lock_scope(namespace="docmem-conformance", scope=scope), slot="user"
        )
        document = bound.read()
        assert document is not None
        assert sorted(document.entries.values()) == sorted(_race_texts(workers, saves))
        assert sorted(document.entries) == list(range(total))
        assert document.revision == total

    def test_file_memory_thread_race(self, backend: Backend) -> None:
        scope = ("user", "thread-race")
        bound = FileMemory(backend).bind(
            lock_scope(namespace="docmem-conformance", scope=scope), slot="user"
        )
        texts = _race_texts(self.memory_race_workers, self.memory_race_saves)
        per_worker = self.memory_race_saves

        def save_all(worker: int) -> list[tuple[str, int | None]]:
            mine = texts[worker * per_worker : (worker + 1) * per_worker]
            saved = [bound.save(text, mutation_id=uuid.uuid4().hex) for text in mine]
            return [(result.status, result.index) for result in saved]

        results = _run_in_threads(save_all, self.memory_race_workers, self.race_timeout)
        self._check_saves(backend, scope, results)

    def test_file_memory_process_race(self, backend: Backend) -> None:
        self._require_shared(backend)
        scope = ("user", "process-race")
        texts = _race_texts(self.memory_race_workers, self.memory_race_saves)
        per_worker = self.memory_race_saves
        pickled = pickle.dumps(backend)
        results = _run_in_processes(
            _save_worker,
            [
                (
                    pickled,
                    "docmem-conformance",
                    scope,
                    texts[worker * per_worker : (worker + 1) * per_worker],
                )
                for worker in range(self.memory_race_workers)
            ],
            self.race_timeout,
        )
        self._check_saves(backend, scope, results)

    def _group_texts(self, workers: int) -> list[list[str]]:
        """Each worker's own notes, then three every worker saves (duplicates across batches)."""
        saves = self.memory_race_saves
        own = _race_texts(workers, saves)
        shared = [f"Shared race note {n}." for n in range(3)]
        return [own[worker * saves : (worker + 1) * saves] + shared for worker in range(workers)]

    def _check_answers(
        self, backend: Backend, scope: tuple[str, ...], answers: list[_Answer]
    ) -> None:
        """Every member's answer is what the stored document and its journal say."""
        memory = _roomy_memory(backend)
        bound = memory.bind(lock_scope(namespace="docmem-conformance", scope=scope), slot="user")
        document = bound.read()
        assert document is not None
        saved = [answer for answer in answers if answer[1] == "saved"]
        assert all(answer[1] in ("saved", "duplicate") for answer in answers)
        assert sorted(text for text, *_ in saved) == sorted(set(document.entries.values())), (
            "each text saved exactly once"
        )
        assert sorted(document.entries.values()) == sorted({text for text, *_ in answers})
        for text, status, index, _, _ in answers:
            assert index is not None, f"a {status} answer names no entry"
            assert document.entries[index] == text, f"a {status} answer names another entry"
        revisions = sorted(revision for *_, revision, _ in saved)
        assert revisions == list(range(1, len(saved) + 1)), "one revision per committed save"
        assert document.revision == len(saved)
        for _, _, index, revision, mutation_id in saved:
            if revision > document.revision - len(document.journal):
                record = bound.inspect(mutation_id)
                assert record is not None, "a recent committed save is missing from the journal"
                assert (record.index, record.revision) == (index, revision)

    def test_group_commit_thread_race_answers_every_member_truthfully(
        self, backend: Backend
    ) -> None:
        """Threads of two providers (two lines, racing each other by compare-and-swap)."""
        scope = ("user", "group-commit-race")
        memories = [_roomy_memory(backend), _roomy_memory(backend)]
        texts = self._group_texts(self.race_threads)
        answers = _save_in_threads(memories, scope, texts, self.race_timeout)
        self._check_answers(backend, scope, answers)

    def test_group_commit_process_race_answers_every_member_truthfully(
        self, backend: Backend
    ) -> None:
        """Two threads in each of several processes: batches within, compare-and-swap across."""
        self._require_shared(backend)
        scope = ("user", "group-commit-process-race")
        texts = self._group_texts(self.race_processes * 2)
        pickled = pickle.dumps(backend)
        per_process = [
            (pickled, scope, texts[2 * process : 2 * process + 2])
            for process in range(self.race_processes)
        ]
        results = _run_in_processes(_group_save_worker, per_process, self.race_timeout)
        self._check_answers(backend, scope, [answer for answers in results for answer in answers])

    # -- model-based ------------------------------------------------------------------------------

    def test_state_machine_matches_dict_model(self, make_backend: BackendFactory) -> None:
        run_state_machine_as_test(
            BackendStateMachine.bound_to(make_backend), settings=self.state_machine_settings
        )


def _roomy_memory(backend: Backend) -> FileMemory:
    """A provider whose recall has room for every note of a race (the byte cap still holds)."""
    return FileMemory(backend, max_characters=MAX_DOCUMENT_BYTES)


def _race_texts(workers: int, saves: int) -> list[str]:
    return [
        f"Race note {saves * worker + n} from worker {worker}."
        for worker in range(workers)
        for n in range(saves)
    ]


def _refused_without_canary(call: Callable[[], object]) -> None:
    """``call`` raises a docmem error whose whole chain holds neither canary."""
    with pytest.raises(DocmemError) as caught:
        call()
    leaked = all_text(caught.value)
    assert CANARY not in leaked, caught.value.code
    assert SCOPE_CANARY not in leaked, caught.value.code


def _assert_counted_once(backend: Backend, written: list[list[int]], total: int) -> None:
    """The race's counter reached ``total``, and each value was written exactly once."""
    stored = backend.read("counter")
    assert stored is not None
    assert stored.data == str(total).encode()
    assert sorted(value for values in written for value in values) == list(range(1, total + 1)), (
        "some counter value was written twice or never"
    )
