"""The first-write verification: a server that ignores the preconditions is refused.

``GenerationStripper`` (``docmem.testing.rewriting_proxy``) removes
``ifGenerationMatch`` from every request on its way to fake-gcs-server:
what an emulator or gateway that ignores the condition looks like. The
verification runs once per process and store, concurrent first writes wait
for one, and a forked child verifies on its own.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from gcs_servers import endpoint

import docmem
from docmem.testing.rewriting_proxy import GenerationStripper
from docmem_gcs import ConditionsNotHonoured, GcsBackend, probe

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:gcs-verification", scope=("user", "u_1"))


@pytest.fixture
def stripper() -> Iterator[GenerationStripper]:
    with GenerationStripper(endpoint()) as proxy:
        yield proxy


def test_a_server_that_ignores_if_generation_match_is_refused(
    open_gcs: Callable[..., GcsBackend], stripper: GenerationStripper
) -> None:
    store = open_gcs(through=stripper.url)
    memory = docmem.FileMemory(store).bind(SCOPE, slot="user")
    with pytest.raises(ConditionsNotHonoured) as caught:
        memory.save("lost", mutation_id="m")
    assert "a second create of the same object is refused" in str(caught.value)
    assert stripper.stripped > 0  # the proxy was on the path
    assert list(store.keys()) == []
    with pytest.raises(ConditionsNotHonoured):
        probe(store)


def test_an_honest_server_passes_the_probe(open_gcs: Callable[..., GcsBackend]) -> None:
    report = probe(open_gcs(), writers=4)
    assert report.ok
    assert report.checks[-1] == ("4 concurrent creates have exactly one winner", True)


def _count_probe_creates(store: GcsBackend) -> list[str]:
    creates: list[str] = []

    def record(response: Any, *_: Any, **__: Any) -> None:
        url = response.request.url or ""
        if "uploadType=multipart" in url and "ifGenerationMatch=0" in url:
            creates.append(url)

    store.client()._http.hooks["response"].append(record)
    return creates


def test_concurrent_first_writes_verify_a_store_once(open_gcs: Callable[..., GcsBackend]) -> None:
    store = open_gcs()
    store.check_layout()
    creates = _count_probe_creates(store)
    barrier = threading.Barrier(4)

    def first_write() -> None:
        barrier.wait()
        store.verify()

    threads = [threading.Thread(target=first_write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(creates) == 2  # one probe: its create, and the second create it must refuse
    store.verify()
    open_gcs(store.prefix).verify()  # another object of the same store: verified already
    assert len(creates) == 2


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
def test_a_forked_child_uses_its_own_client(open_gcs: Callable[..., GcsBackend]) -> None:
    store = open_gcs()
    version = store.write("k", b"parent", expected=None)
    parent_client = store.client()
    pid = os.fork()
    if pid == 0:  # the child: a new client, the same store
        code = 1
        try:
            if store.client() is not parent_client and store.read("k") is not None:
                store.write("k", b"child", expected=version)
                code = 0
        finally:
            os._exit(code)
    assert _exit_code(pid, timeout=60) == 0
    assert store.read("k") is not None
    assert store.read("k").data == b"child"  # type: ignore[union-attr]
