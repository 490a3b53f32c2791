"""The first-write verification: what the probe checks about ETags, and its locking.

A store whose ETags cannot serve as conditions (blank ones, or weak ones a
strongly-comparing server never matches) is refused before anything is
written. Verification holds no process-wide lock during its I/O, and a child
forked while another thread verifies does not inherit that thread's lock.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import docmem
from docmem_s3 import ConditionsNotHonoured, S3Backend, probe
from docmem_s3.errors import usable_etag

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:s3-verification", scope=("user", "u_1"))


def falsify_etags(store: S3Backend, change: Callable[[str], str | None]) -> None:
    """Pass every successful GET and PUT answer's ETag through ``change`` (None: drop it)."""
    reader, writer = store.clients()

    def rewrite(response_dict: dict[str, Any], **_: Any) -> None:
        headers = response_dict["headers"]
        if response_dict["status_code"] < 300 and "ETag" in headers:
            changed = change(headers.pop("ETag"))
            if changed is not None:
                headers["ETag"] = changed

    for client in {id(reader): reader, id(writer): writer}.values():
        client.meta.events.register("before-parse.s3.GetObject", rewrite)
        client.meta.events.register("before-parse.s3.PutObject", rewrite)


def sent_if_match(store: S3Backend) -> list[str]:
    _, writer = store.clients()
    sent: list[str] = []

    def record(request: Any, **_: Any) -> None:
        value = request.headers.get("If-Match")
        if value is not None:
            sent.append(value.decode() if isinstance(value, bytes) else value)

    writer.meta.events.register("before-send.s3.PutObject", record)
    return sent


@pytest.mark.parametrize("blank", ['""', "", None], ids=repr)
def test_the_probe_refuses_blank_etags_and_never_sends_one(
    open_s3: Callable[..., S3Backend], blank: str | None
) -> None:
    store = open_s3()
    falsify_etags(store, lambda etag: blank)
    sent = sent_if_match(store)
    with pytest.raises(ConditionsNotHonoured, match="well-formed ETag") as caught:
        probe(store)
    assert "not tried" in str(caught.value)
    assert all(usable_etag(value) for value in sent)
    # The first write is refused the same way, before anything is written.
    with pytest.raises(ConditionsNotHonoured):
        docmem.FileMemory(store).bind(SCOPE, slot="user").save("lost", mutation_id="m")
    assert list(store.keys()) == []


def test_the_probe_says_up_front_that_weak_etags_fail_every_update(
    open_s3: Callable[..., S3Backend],
) -> None:
    """Both servers compare If-Match strongly, as RFC 9110 says: W/"x" never matches."""
    store = open_s3()
    falsify_etags(store, lambda etag: "W/" + etag)
    with pytest.raises(ConditionsNotHonoured, match="weak ETags") as caught:
        probe(store)
    assert "every update would fail" in str(caught.value)
    with pytest.raises(ConditionsNotHonoured, match="weak ETags"):
        store.verify()


def test_the_probe_refuses_etags_the_server_does_not_match(
    open_s3: Callable[..., S3Backend],
) -> None:
    """A gateway answering one fixed ETag for every version: no update could ever land."""
    store = open_s3()
    falsify_etags(store, lambda etag: '"fixed"')
    with pytest.raises(ConditionsNotHonoured, match="ETag a read returned is accepted"):
        probe(store)


# -- locking -----------------------------------------------------------------------


class _HeldVerification:
    """A thread inside store.verify(), stopped in its first PUT until released."""

    def __init__(self, store: S3Backend) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        _, writer = store.clients()
        writer.meta.events.register("before-send.s3.PutObject", self._hold)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(store,), daemon=True)
        self.thread.start()
        assert self.inside.wait(30), "verification never reached its first PUT"

    def _hold(self, **_: Any) -> None:
        self.inside.set()
        self.release.wait(60)

    def _run(self, store: S3Backend) -> None:
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
    """The child's exit code, or None (after killing it) if it did not end in time."""
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
    open_s3: Callable[..., S3Backend],
) -> None:
    store = open_s3()
    held = _HeldVerification(store)
    try:
        pid = os.fork()
        if pid == 0:  # the child: only this thread exists here
            code = 1
            try:
                store.verify()  # the same store: its own clients, its own lock
                code = 0
            finally:
                os._exit(code)
        code = _exit_code(pid, timeout=30)
    finally:
        held.finish()
    assert code is not None, "the forked child deadlocked on a lock held by a parent thread"
    assert code == 0


def test_one_store_verifying_does_not_hold_up_another(
    open_s3: Callable[..., S3Backend],
) -> None:
    slow, other = open_s3(), open_s3()
    held = _HeldVerification(slow)
    try:
        done = threading.Thread(target=other.verify, daemon=True)
        done.start()
        done.join(30)
        assert not done.is_alive(), "verifying one store waited for another's verification"
    finally:
        held.finish()


def test_concurrent_first_writes_verify_a_store_once(open_s3: Callable[..., S3Backend]) -> None:
    store = open_s3()
    _, writer = store.clients()
    creates: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        if params.get("IfNoneMatch") == "*" and ".docmem-probe/" in params["Key"]:
            creates.append(params["Key"])

    writer.meta.events.register("provide-client-params.s3.PutObject", count)
    barrier = threading.Barrier(4)

    def first_write() -> None:
        barrier.wait()
        store.verify()

    threads = [threading.Thread(target=first_write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(set(creates)) == 1  # one probe object: the other three waited for it
