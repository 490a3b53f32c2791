"""A bucket with object versioning: no history of the plug-in's own, no erased text left unsaid.

fake-gcs-server keeps and lists noncurrent generations but cannot delete one
(test_gcs_protocol.py), so this plug-in deletes none: an erase or a delete
that leaves some raises HistoryKept (an erase with outcome ``committed``),
naming how many; on an unversioned bucket both are quiet.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gcs_servers import store_url, versioned_bucket

import docmem
from docmem.errors import HistoryNotKept
from docmem.testing.redaction import CANARY
from docmem_gcs import GcsBackend, HistoryKept

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:gcs-history", scope=("user", "u_1"))


def _versioned() -> GcsBackend:
    store = docmem.open_store(store_url(name=versioned_bucket()))
    assert isinstance(store, GcsBackend)
    return store


def test_an_erase_on_a_versioned_bucket_reports_the_generations_left() -> None:
    store = _versioned()
    memory = docmem.FileMemory(store).bind(SCOPE, slot="user")
    memory.save(CANARY, mutation_id="canary")
    memory.save("Second note.", mutation_id="second")
    with pytest.raises(HistoryKept) as caught:
        memory.erase(mutation_id="erase")
    assert caught.value.outcome == "committed"
    assert len(caught.value.generations) >= 2
    assert "noncurrent generation" in caught.value.message
    assert CANARY not in caught.value.message
    document = memory.read()
    assert document is not None
    assert CANARY not in document.entries.values()  # the erase itself is stored


def test_a_delete_on_a_versioned_bucket_says_older_generations_are_left() -> None:
    store = _versioned()
    version = store.write("k", b"one", expected=None)
    store.write("k", b"two", expected=version)
    with pytest.raises(HistoryKept, match="the key is deleted"):
        store.delete("k")
    assert store.read("k") is None


def test_history_is_not_kept_by_this_plug_in() -> None:
    store = _versioned()
    with pytest.raises(HistoryNotKept):
        store.history("k")


def test_an_unversioned_bucket_erases_and_deletes_quietly(
    open_gcs: Callable[..., GcsBackend],
) -> None:
    store = open_gcs()
    memory = docmem.FileMemory(store).bind(SCOPE, slot="user")
    memory.save(CANARY, mutation_id="canary")
    memory.erase(mutation_id="erase")
    store.delete(SCOPE.storage_key)
    assert store.read(SCOPE.storage_key) is None
