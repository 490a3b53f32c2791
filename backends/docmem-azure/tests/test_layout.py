"""The foreign layout guard: a prefix holding a docmem-fsspec store is refused, never read as empty.

The docmem-fsspec store is made with the raw SDK client, one commit-log object
``<prefix>/<key>/<16 hex>.md``, as docmem_fsspec.folders names them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from azure_servers import connection_string, raw_container, store_url

import docmem
from docmem_azure import AzureBlobBackend
from docmem_azure.layout import PAGE, fsspec_folder

pytestmark = pytest.mark.integration

MEMORY_KEY = "memkey1_" + "A" * 43


def _fsspec_shaped(prefix: str, key: str) -> None:
    raw_container().upload_blob(f"{prefix}/{key}/{1:016x}.md", b"docmem-fsspec version 1")


@pytest.mark.parametrize("key", [MEMORY_KEY, "k"])
def test_a_docmem_fsspec_store_is_refused_before_a_read_or_a_write(
    open_azure: Callable[..., AzureBlobBackend], key: str
) -> None:
    prefix = f"fs-{uuid.uuid4().hex[:12]}"
    _fsspec_shaped(prefix, key)
    for action in (
        lambda store: store.read(key),
        lambda store: store.write("other", b"x", expected=None),
        lambda store: list(store.keys()),
    ):
        store = open_azure(prefix)
        with pytest.raises(
            docmem.StoreNotConfigured, match="holds a docmem-fsspec store"
        ) as caught:
            action(store)
        message = str(caught.value)
        assert f"fsspec+az://docmem-test/{prefix}" in message
        assert "docmem migrate" in message
    assert not raw_container().get_blob_client(f"{prefix}/other.md").exists()


def test_the_check_is_one_request_per_process_and_store(
    open_azure: Callable[..., AzureBlobBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    import docmem_azure.backend
    import docmem_azure.layout

    calls: list[str] = []
    real = docmem_azure.layout.check_layout

    def counted(*args: object, **kwargs: object) -> None:
        calls.append("layout")
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(docmem_azure.backend, "check_layout", counted)
    store = open_azure()
    store.read("a")
    store.write("a", b"1", expected=None)
    again = open_azure(store.prefix)  # another store object, the same store
    again.read("a")
    assert calls == ["layout"]


def test_our_own_store_and_its_probe_objects_pass(
    open_azure: Callable[..., AzureBlobBackend],
) -> None:
    store = open_azure()
    store.write("k", b"1", expected=None)
    raw_container().upload_blob(f"{store.prefix}/.docmem-probe/leftover", b"probe")
    reopened = open_azure(store.prefix)
    assert list(reopened.keys()) == ["k"]


def test_a_missing_container_is_an_error_never_an_empty_store() -> None:
    connection_string()
    name = f"missing-{uuid.uuid4().hex[:12]}"
    store = docmem.open_store(store_url(name=name))
    with pytest.raises(docmem.StoreUnavailable, match="does not exist"):
        store.read("k")
    with pytest.raises(docmem.StoreUnavailable, match="does not exist"):
        list(store.keys())


def test_at_the_container_root_only_memory_keys_count() -> None:
    """Other stores' prefixes live side by side at the root; FileMemory's keys are unmistakable."""
    assert fsspec_folder(MEMORY_KEY, at_root=True)
    assert not fsspec_folder("t-0123abcd", at_root=True)
    assert fsspec_folder("t-0123abcd", at_root=False)
    assert not fsspec_folder(".docmem-probe", at_root=False)
    assert PAGE <= 100  # one small page
