"""The docmem side of the benchmarks: seeded memories, timed saves and recalls."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import docmem
from docmem.provider.document import MemoryDocument, parse, serialize

from .timing import Sample

if TYPE_CHECKING:
    from .s3 import Requests

__all__ = [
    "ENTRIES",
    "SLOT",
    "bind",
    "changes",
    "index_of",
    "recall_after",
    "save_text",
    "scale_keys",
    "seeded",
    "small_document",
    "timed_save",
]

SLOT = "user"
#: Entries in a seeded document.
ENTRIES = 10


def bind(store: docmem.Backend, namespace: str, scope: str) -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace=namespace, scope=scope), slot=SLOT
    )


def seeded(store: docmem.Backend, namespace: str, scope: str) -> docmem.BoundMemory:
    """A bound memory whose document holds :data:`ENTRIES` entries, saved through docmem."""
    memory = bind(store, namespace, scope)
    for index in range(ENTRIES):
        memory.save(
            f"Seed fact {index}: the user prefers metric units and short answers.",
            mutation_id=f"seed-{scope}-{index}",
        )
    return memory


def small_document() -> bytes:
    """The canonical bytes of a small valid document, for populating scale stores out of band."""
    document = MemoryDocument(
        {0: "Prefers metric units.", 1: "Works on the billing team at Acme."},
        last=1,
        revision=2,
    )
    data = serialize(document)
    parse(data)  # fail here, not in the middle of the benchmark, if the format moved on
    return data


def scale_keys(namespace: str, count: int) -> list[str]:
    """The storage keys of the scopes ``user-0`` to ``user-<count - 1>`` of ``namespace``."""
    return [
        docmem.lock_scope(namespace=namespace, scope=f"user-{i}").storage_key for i in range(count)
    ]


def index_of(saved: docmem.SaveResult) -> int:
    """The index a benchmark's save left its text at (its fresh mutation ids never replay)."""
    assert saved.index is not None, "a fresh mutation id was answered as a replay"
    return saved.index


def save_text(count: int) -> str:
    return f"Note {count}: met the user on a Tuesday."


def timed_save(
    memory: docmem.BoundMemory, requests: Requests, count: int
) -> tuple[float, docmem.SaveResult]:
    """Save :func:`save_text` ``(count)``, counting its requests: its seconds and result."""
    with requests.counting():
        start = time.perf_counter_ns()
        result = memory.save(save_text(count), mutation_id=f"save-{count}")
        elapsed = (time.perf_counter_ns() - start) / 1e9
    return elapsed, result


def changes(other: docmem.BoundMemory) -> Callable[[], int]:
    """Each call: ``other`` saves an entry and removes it again (size unchanged); the revision."""
    count = 0

    def change() -> int:
        nonlocal count
        count += 1
        saved = other.save(
            f"Note {count}: the user moved the weekly meeting to Thursday.",
            mutation_id=f"change-save-{count}",
        )
        return other.remove(index_of(saved), mutation_id=f"change-remove-{count}").revision

    return change


def recall_after(
    change: Callable[[], int], memory: docmem.BoundMemory, requests: Requests
) -> Sample:
    """Untimed ``change()``, then a timed, counted ``recall()`` that must return its revision."""

    def run() -> float:
        revision = change()
        with requests.counting():
            start = time.perf_counter_ns()
            messages = memory.recall()
            elapsed = (time.perf_counter_ns() - start) / 1e9
        if not messages or messages[0].revision != revision:
            raise RuntimeError(f"recall() missed the other client's write (revision {revision})")
        return elapsed

    return run
