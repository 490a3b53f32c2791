"""The helpers docmem.backend offers plug-ins: PerProcess and LruCache."""

from __future__ import annotations

import os
import threading

import pytest

from docmem.backend import LruCache, PerProcess


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
