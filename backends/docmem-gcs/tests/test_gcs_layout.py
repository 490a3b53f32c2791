"""The foreign layout guard: a docmem-fsspec store under the prefix is refused, never read empty.

docmem-fsspec keeps a key as a folder of commit-log objects,
``<prefix>/<key>/<16 hex>.md``; one such object, written with the raw SDK,
makes every request of a store on that prefix StoreNotConfigured. The check
costs one listing per process and store.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from gcs_servers import GcsRaw, bucket, endpoint

import docmem
from docmem.errors import StoreNotConfigured
from docmem_gcs import GcsBackend

pytestmark = pytest.mark.integration


def _listings(store: GcsBackend) -> list[str]:
    listed: list[str] = []

    def record(response: Any, *_: Any, **__: Any) -> None:
        url = response.request.url or ""
        if response.request.method == "GET" and "delimiter=" in url:
            listed.append(url)

    store.client()._http.hooks["response"].append(record)
    return listed


def test_a_docmem_fsspec_store_is_refused_with_what_to_do(
    open_gcs: Callable[..., GcsBackend],
) -> None:
    store = open_gcs()
    GcsRaw(store).put_name("memdoc1_abcdef/0000000000000001.md", b"an fsspec commit")
    for call in (
        lambda: store.read("k"),
        lambda: store.write("k", b"x", expected=None),
        lambda: list(store.keys()),
        lambda: store.delete("k"),
    ):
        with pytest.raises(StoreNotConfigured) as caught:
            call()
        message = str(caught.value)
        assert "docmem-fsspec store" in message
        assert f"fsspec+gs://{bucket()}/{store.prefix}" in message
        assert "docmem migrate" in message
    assert GcsRaw(store).get("k") is None  # nothing was written


def test_the_check_is_one_listing_per_process_and_store(
    open_gcs: Callable[..., GcsBackend],
) -> None:
    store = open_gcs()
    listed = _listings(store)
    store.read("a")
    store.read("b")
    store.write("c", b"x", expected=None)
    assert len(listed) == 1
    again = open_gcs(store.prefix)  # another object of the same store
    listed_again = _listings(again)
    again.read("a")
    assert listed_again == []


def test_own_documents_probe_leftovers_and_deeper_objects_pass(
    open_gcs: Callable[..., GcsBackend],
) -> None:
    store = open_gcs()
    raw = GcsRaw(store)
    raw.put_name("k.md", b"a document of this plug-in")
    raw.put_name(".docmem-probe/left", b"a probe object left behind")
    raw.put_name("not a key!/x", b"a folder no docmem key is named like")
    assert store.read("k") is not None


def test_a_missing_bucket_is_not_configured_never_empty() -> None:
    store = docmem.open_store(
        f"gs://no-such-bucket-{uuid.uuid4().hex[:8]}/p?endpoint_url={endpoint()}"
    )
    for call in (lambda: store.read("k"), lambda: list(store.keys())):
        with pytest.raises(StoreNotConfigured, match="does not exist"):
            call()
