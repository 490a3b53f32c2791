"""The first-write verification and what the writes send: pinned against Azurite through proxies.

A server that ignores ``If-Match``/``If-None-Match`` (Azurite behind a proxy
that strips them) is refused before anything is written; so is one whose
ETags are blank. A document always goes as one Put Blob (never Put Block and
Put Block List), sent exactly once (the SDK's retries are off for writes),
while reads retry. Verification runs once per process and store, concurrent
first writes wait for one, and a child forked meanwhile verifies on its own.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from azure.core.credentials import AzureSasCredential
from azure_proxy import HeaderProxy
from azure_servers import (
    ACCOUNT,
    container,
    container_sas,
    raw_container,
    store_url,
    upstream,
    via,
)

import docmem
import docmem_azure.backend
from docmem.errors import LimitExceeded, WriteOutcomeUnknown
from docmem.provider.document import MAX_DOCUMENT_BYTES
from docmem.testing.faultproxy import FaultPlan, FaultProxy
from docmem_azure import AzureBlobBackend, ConditionsNotHonoured, HistoryKept, probe
from docmem_azure.backend import SINGLE_PUT_LIMIT
from docmem_azure.probe import checks as real_checks

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:azure-verification", scope=("user", "u_1"))


def sas_store(url: str, prefix: str | None = None) -> AzureBlobBackend:
    """A store reaching Azurite at ``url`` with a container SAS (no header is signed)."""
    store = docmem.open_store(
        f"{store_url(prefix)}?account_url={url}/{ACCOUNT}",
        credential=AzureSasCredential(container_sas()),
    )
    assert isinstance(store, AzureBlobBackend)
    return store


def test_a_server_ignoring_the_conditions_is_refused_before_anything_is_written() -> None:
    with HeaderProxy(upstream(), strip=("If-Match", "If-None-Match")) as proxy:
        store = sas_store(proxy.url)
        memory = docmem.FileMemory(store).bind(SCOPE, slot="user")
        with pytest.raises(ConditionsNotHonoured, match="second create of the same blob") as caught:
            memory.save("lost", mutation_id="m")
        assert "If-Match with a replaced ETag is refused" in str(caught.value)
        assert proxy.stripped() > 0  # the proxy was on the path and took the conditions
        assert list(store.keys()) == []
        store.close()


def test_the_same_sas_store_without_the_proxy_is_accepted() -> None:
    """The control: the refusal above is the stripped headers, not the SAS."""
    store = sas_store(upstream())
    memory = docmem.FileMemory(store).bind(SCOPE, slot="user")
    assert memory.save("kept", mutation_id="m").status == "saved"
    assert probe(store).ok
    store.close()


def test_sharedkey_signs_the_conditions_so_stripping_them_is_refused_by_the_server() -> None:
    """Why the tests above use a SAS: with the account key, a stripped request fails auth."""
    with HeaderProxy(upstream(), strip=("If-None-Match",)) as proxy:
        url, options = via(proxy.url)
        store = docmem.open_store(url, **options)
        assert isinstance(store, AzureBlobBackend)
        with pytest.raises(docmem.StoreUnavailable, match="403"):
            store.verify()
        store.close()


@pytest.mark.parametrize("fault", ["blank-etag", "no-etag"])
def test_blank_etags_are_refused_and_never_sent(fault: str) -> None:
    plan = FaultPlan(1, {fault: 1}, methods=frozenset({"GET", "PUT"}))
    with FaultProxy(upstream(), plan, lambda method, path: "campaign") as proxy:
        url, options = via(proxy.url)
        store = docmem.open_store(url, **options)
        with pytest.raises(ConditionsNotHonoured, match="well-formed ETag") as caught:
            docmem.FileMemory(store).bind(SCOPE, slot="user").save("lost", mutation_id="m")
        assert "not tried" in str(caught.value)
        store.close()


def test_a_document_is_one_put_blob_and_a_larger_one_is_refused_unsent(
    open_azure: Callable[..., AzureBlobBackend],
) -> None:
    store = open_azure()
    _, writer = store.clients()
    assert writer._config.max_single_put_size == SINGLE_PUT_LIMIT >= MAX_DOCUMENT_BYTES
    with HeaderProxy(upstream()) as proxy:
        url, options = via(proxy.url, store.prefix)
        through = docmem.open_store(url, **options)
        assert isinstance(through, AzureBlobBackend)
        through.verify()
        before = len(proxy.seen)
        big = os.urandom(4 * 1024 * 1024)  # far above a document, still one Put Blob
        version = through.write("big", big, expected=None)
        sent = proxy.seen[before:]
        assert [(method, "comp=block" in query) for method, query, _ in sent] == [("PUT", False)]
        assert through.read("big") == docmem.Stored(big, version)
        _, small_writer = through.clients()
        small_writer._config.max_single_put_size = 1024
        before = len(proxy.seen)
        with pytest.raises(LimitExceeded, match="one conditional Put Blob"):
            through.write("bigger", b"x" * 2048, expected=None)
        assert proxy.seen[before:] == []
        through.close()


def test_a_write_is_sent_once_and_a_read_retries(
    open_azure: Callable[..., AzureBlobBackend],
) -> None:
    prefix = open_azure().prefix
    plan = FaultPlan(1, {"503": 1}, methods=frozenset({"GET", "PUT"}))
    faultable = FaultProxy.for_prefix(f"{ACCOUNT}/{container()}", prefix)
    with FaultProxy(upstream(), plan, faultable) as proxy:
        url, options = via(proxy.url, prefix, max_attempts=3)
        store = docmem.open_store(url, **options)
        assert isinstance(store, AzureBlobBackend)
        store.verify()  # the probe's blobs pass: only the campaign's get faults
        with pytest.raises(WriteOutcomeUnknown):
            store.write("k", b"data", expected=None)
        with pytest.raises(docmem.StoreUnavailable):
            store.read("k")
        store.close()
    methods = [entry.method for entry in proxy.log if entry.target == "campaign"]
    assert methods == ["PUT", "GET", "GET", "GET"]


def test_an_account_keeping_versions_makes_erase_and_delete_say_so() -> None:
    """Azurite keeps no versions; a proxy adds the header a versioned account answers with."""
    with HeaderProxy(upstream(), add={"x-ms-version-id": "2026-01-01T00:00:00.0000000Z"}) as proxy:
        url, options = via(proxy.url)
        store = docmem.open_store(url, **options)
        memory = docmem.FileMemory(store).bind(SCOPE, slot="user")
        memory.save("remembered", mutation_id="m1")
        with pytest.raises(HistoryKept, match="keeps blob versions") as caught:
            memory.erase()
        assert caught.value.outcome == "committed"
        key = next(iter(store.keys()))
        fresh = docmem.open_store(url, **options)  # no answer seen yet: the delete asks
        with pytest.raises(HistoryKept, match="is deleted"):
            fresh.delete(key)
        assert list(fresh.keys()) == []
        store.close()
        fresh.close()


# -- once per process and store ----------------------------------------------------


def test_concurrent_first_writes_verify_a_store_once(
    open_azure: Callable[..., AzureBlobBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_azure()
    calls: list[int] = []
    real = real_checks

    def counted(target: Any) -> Any:
        calls.append(1)
        return real(target)

    monkeypatch.setattr(docmem_azure.backend, "checks", counted)
    barrier = threading.Barrier(4)

    def first_write() -> None:
        barrier.wait()
        store.verify()

    threads = [threading.Thread(target=first_write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(calls) == 1
    store.verify()
    assert len(calls) == 1


class _HeldVerification:
    """A thread inside store.verify(), stopped in its checks until released (this process only)."""

    def __init__(self, store: AzureBlobBackend, monkeypatch: pytest.MonkeyPatch) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        real = real_checks

        def held(target: Any) -> Any:
            if target.prefix == store.prefix and os.getpid() == parent:
                self.inside.set()
                self.release.wait(60)
            return real(target)

        parent = os.getpid()
        monkeypatch.setattr(docmem_azure.backend, "checks", held)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(store,), daemon=True)
        self.thread.start()
        assert self.inside.wait(30), "verification never reached its checks"

    def _run(self, store: AzureBlobBackend) -> None:
        try:
            store.verify()
        except BaseException as exc:
            self.errors.append(exc)

    def finish(self) -> None:
        self.release.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        assert self.errors == []


def _exit_code(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_verification_verifies_on_its_own(
    open_azure: Callable[..., AzureBlobBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_azure()
    store.check_layout()
    held = _HeldVerification(store, monkeypatch)
    try:
        pid = os.fork()
        if pid == 0:  # the child: only this thread exists here
            status = 1
            try:
                store.verify()  # the same store: its own clients, its own lock
                stored = store.write("forked", b"child", expected=None)
                status = 0 if store.read("forked") == docmem.Stored(b"child", stored) else 3
            finally:
                os._exit(status)
        code: int | None = _exit_code(pid, timeout=30)
    finally:
        held.finish()
    assert code is not None, "the forked child deadlocked on a lock held by a parent thread"
    assert code == 0
    assert raw_container().get_blob_client(store.blob_name("forked")).exists()


def test_one_store_verifying_does_not_hold_up_another(
    open_azure: Callable[..., AzureBlobBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    slow, other = open_azure(), open_azure()
    slow.check_layout()
    held = _HeldVerification(slow, monkeypatch)
    try:
        done = threading.Thread(target=other.verify, daemon=True)
        done.start()
        done.join(30)
        assert not done.is_alive(), "verifying one store waited for another's verification"
    finally:
        held.finish()


def test_azurite_keeps_no_blob_versions(open_azure: Callable[..., AzureBlobBackend]) -> None:
    """Why history is HistoryNotKept here: Azurite answers no version id, lists no versions."""
    store = open_azure()
    first = store.write("k", b"1", expected=None)
    store.write("k", b"2", expected=first)
    response = (
        raw_container().get_blob_client(store.blob_name("k")).upload_blob(b"3", overwrite=True)
    )
    assert response.get("version_id") is None
    listed = list(
        raw_container().list_blobs(name_starts_with=f"{store.prefix}/", include=["versions"])
    )
    assert [(blob.name, blob.version_id) for blob in listed] == [(store.blob_name("k"), None)]
    assert not store._versions_seen
    store.purge_history("k")  # nothing kept, nothing to purge: no error
    with pytest.raises(docmem.HistoryNotKept, match="Azurite"):
        store.history("k")
