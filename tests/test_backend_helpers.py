"""The helpers docmem.backend offers plug-ins: PerProcess, LruCache and OncePerIdentity."""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import docmem
from docmem.backend import (
    Backend,
    DelegatingBackend,
    LruCache,
    OncePerIdentity,
    PerProcess,
    ServerChecks,
    Stored,
    fsspec_key_folder,
    race_creates,
    refuse_fsspec_layout,
)
from docmem.errors import StoreNotConfigured
from docmem.storage.builtin.inmemory import MemoryBackend


def test_the_value_is_built_once_and_shared_by_threads() -> None:
    built: list[object] = []

    def build() -> object:
        built.append(object())
        return built[-1]

    holder = PerProcess(build)
    barrier = threading.Barrier(8)
    seen: list[object] = []

    def get() -> None:
        barrier.wait()
        seen.append(holder.get())

    threads = [threading.Thread(target=get) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1
    assert seen == built * 8


def test_reset_returns_the_value_and_the_next_get_builds_anew() -> None:
    counter = iter(range(10))
    holder = PerProcess(lambda: next(counter))
    assert holder.reset() is None
    assert holder.get() == 0
    assert holder.get() == 0
    assert holder.reset() == 0
    assert holder.get() == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_builds_its_own_value() -> None:
    holder = PerProcess(lambda: os.getpid())
    assert holder.get() == os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it got and what reset returns, then leave
        os.close(read_end)
        inherited = holder.reset()  # built by the parent: not the child's to close
        os.write(write_end, f"{holder.get()} {inherited}".encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        child_value, inherited = answer.read().split()
    os.waitpid(pid, 0)
    assert int(child_value) == pid
    assert inherited == "None"
    assert holder.get() == os.getpid()


# -- LruCache ---------------------------------------------------------------------------


def test_the_least_recently_used_key_goes_first() -> None:
    cache: LruCache[int] = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now "b" is the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    cache.put("a", 10)
    assert cache.get("a") == 10
    cache.drop("a")
    cache.drop("never-there")
    assert cache.get("a") is None


def test_keep_refuses_a_replacement() -> None:
    cache: LruCache[tuple[str, float]] = LruCache(4, keep=lambda old, new: old[1] > new[1])
    cache.put("k", ("newer", 2.0))
    cache.put("k", ("older", 1.0))
    assert cache.get("k") == ("newer", 2.0)
    cache.put("k", ("newest", 3.0))
    assert cache.get("k") == ("newest", 3.0)


@pytest.mark.parametrize("size", [0, -1])
def test_a_cache_of_size_zero_remembers_nothing(size: int) -> None:
    cache: LruCache[int] = LruCache(size)
    cache.put("k", 1)
    assert cache.get("k") is None


# -- fork while another thread holds the lock -------------------------------------------


def fork_and_wait(child: Callable[[], bool], *, timeout: float = 10.0) -> int:
    """Fork, run ``child`` in the child (exit 0 if it returns True), return its exit code.

    The parent polls with a deadline and kills a child still running then, so
    a deadlocked child fails the test instead of hanging the suite.
    """
    with warnings.catch_warnings():  # Python 3.12+ warns about fork with threads: that is the test
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if child() else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child deadlocked on a lock held by another thread at fork")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_the_first_build_builds_its_own_value() -> None:
    parent = os.getpid()
    inside, release = threading.Event(), threading.Event()

    def build() -> int:
        if os.getpid() == parent:  # the parent's build stalls, holding the lock
            inside.set()
            release.wait(10)
        return os.getpid()

    holder = PerProcess(build)
    thread = threading.Thread(target=holder.get, daemon=True)
    thread.start()
    assert inside.wait(10)
    try:
        assert fork_and_wait(lambda: holder.get() == os.getpid()) == 0
    finally:
        release.set()
        thread.join(10)
    assert holder.get() == parent


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_the_cache_is_locked_can_use_it() -> None:
    parent = os.getpid()
    inside, release = threading.Event(), threading.Event()

    def keep(old: int, new: int) -> bool:  # runs under the cache's lock
        if os.getpid() == parent:
            inside.set()
            release.wait(10)
        return False

    cache: LruCache[int] = LruCache(4, keep=keep)
    cache.put("k", 1)
    thread = threading.Thread(target=cache.put, args=("k", 2), daemon=True)
    thread.start()
    assert inside.wait(10)

    def child() -> bool:
        cache.put("other", 3)
        return cache.get("other") == 3 and cache.get("k") in (1, 2)

    try:
        assert fork_and_wait(child) == 0
    finally:
        release.set()
        thread.join(10)
    assert cache.get("k") == 2


def test_concurrent_first_writes_to_one_store_are_verified_once() -> None:
    verified = OncePerIdentity()
    ran: list[int] = []
    barrier = threading.Barrier(8)

    def check() -> None:
        ran.append(1)
        time.sleep(0.05)  # long enough for every other caller to be waiting on it

    def first_write() -> None:
        barrier.wait()
        verified.once(("endpoint", "bucket", "prefix"), check)

    threads = [threading.Thread(target=first_write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ran == [1]
    verified.once(("endpoint", "bucket", "other"), check)
    assert ran == [1, 1]


def test_a_failed_verification_is_tried_again_and_mark_skips_it() -> None:
    verified = OncePerIdentity()
    outcomes = iter([RuntimeError("refused"), None])

    def check() -> None:
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome

    with pytest.raises(RuntimeError):
        verified.once("store", check)
    verified.once("store", check)  # tried again: this time it passes
    verified.once("store", lambda: pytest.fail("verified twice"))
    verified.mark("probed")
    verified.once("probed", lambda: pytest.fail("a probed store was verified again"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_during_a_verification_verifies_on_its_own() -> None:
    parent = os.getpid()
    verified = OncePerIdentity()
    inside, release = threading.Event(), threading.Event()

    def check() -> None:
        if os.getpid() == parent:  # the parent's check stalls, holding the store's lock
            inside.set()
            release.wait(10)

    verified.mark("done")
    thread = threading.Thread(target=verified.once, args=("store", check), daemon=True)
    thread.start()
    assert inside.wait(10)

    def child() -> bool:
        verified.once("store", check)
        verified.once("done", lambda: os._exit(3))  # verified before the fork: kept
        return True

    try:
        assert fork_and_wait(child) == 0
    finally:
        release.set()
        thread.join(10)


# -- a store around a store (DelegatingBackend) and a store's own checks ----------------


class _Recording(MemoryBackend):
    """A memory store that notes every contract call it gets and has checks of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def check_server(self, *, writers: int = 8) -> ServerChecks:
        self.calls.append(f"check_server({writers})")
        return ServerChecks("recording", (("a check", True),), {"fact": "yes"})

    def listed_versions(self) -> Iterator[tuple[str, str]] | None:
        self.calls.append("listed_versions")
        return iter(())

    def purge_history(self, key: str) -> None:
        self.calls.append("purge_history")


class _Around(DelegatingBackend):
    @classmethod
    def from_url(cls, url: str, **options: Any) -> _Around:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return "around+" + self.store.url


def test_a_delegating_store_forwards_every_method_of_the_contract() -> None:
    overridable = {
        name
        for name, member in vars(Backend).items()
        if callable(member) and not name.startswith("_") and name != "from_url"
    }
    assert overridable <= set(vars(DelegatingBackend)), "a Backend method is not forwarded"
    inner = _Recording()
    around = _Around(inner)
    version = around.write("k", b"one", expected=None)
    assert around.read("k") == around.read_recent("k") == Stored(b"one", version)
    assert list(around.keys()) == ["k"]
    around.purge_history("k")
    assert list(around.listed_versions() or ()) == []
    assert around.check_server(writers=3) == ServerChecks(
        "recording", (("a check", True),), {"fact": "yes"}
    )
    around.delete("k")
    assert inner.read("k") is None
    assert inner.calls == ["purge_history", "listed_versions", "check_server(3)"]


def test_a_store_has_no_checks_of_its_own_by_default() -> None:
    assert MemoryBackend().check_server() is None


def test_an_encrypted_store_answers_for_its_server_through_the_store_it_wraps() -> None:
    keyring = docmem.Keyring.local({"k1": bytes(32)}, primary="k1")
    inner = _Recording()
    encrypted = docmem.encrypted(inner, keyring)
    assert encrypted.check_server(writers=2) == inner.check_server(writers=2)
    assert encrypted.listed_versions() is None  # a migration reads its copies back, decrypting


def test_a_docmem_fsspec_key_folder_is_refused_and_only_memory_keys_count_at_a_root() -> None:
    memory_key = "memkey1_" + "A" * 43
    assert fsspec_key_folder(memory_key, at_root=True)
    assert not fsspec_key_folder("t-0123abcd", at_root=True)  # a neighbour's prefix
    assert fsspec_key_folder("t-0123abcd", at_root=False)
    assert not fsspec_key_folder(".docmem-probe", at_root=False)
    assert not fsspec_key_folder("", at_root=False)
    refuse_fsspec_layout(["t-0123abcd", "other"], at_root=True, url="x://b", plugin="p")
    refuse_fsspec_layout([], at_root=False, url="x://b/p", plugin="p")
    with pytest.raises(StoreNotConfigured, match="holds a docmem-fsspec store") as caught:
        refuse_fsspec_layout([".docmem-probe", "k"], at_root=False, url="x://b/p", plugin="p")
    message = str(caught.value)
    assert "open it as fsspec+x://b/p" in message
    assert "`docmem migrate fsspec+x://b/p x://b/p`" in message
    assert "which p cannot read" in message


def test_race_creates_counts_the_winners_and_raises_after_every_thread_joined() -> None:
    lock = threading.Lock()
    taken: list[int] = []

    def create_once() -> object:
        with lock:
            taken.append(1)
            return "won" if len(taken) == 1 else None

    assert race_creates(create_once, 6) == 1
    assert len(taken) == 6
    assert race_creates(lambda: "won", 3) == 3
    calls: list[int] = []

    def failing() -> object:
        with lock:
            calls.append(1)
        raise OSError("refused")

    with pytest.raises(OSError, match="refused"):
        race_creates(failing, 4)
    assert len(calls) == 4
