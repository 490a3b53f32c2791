"""Client-side encryption over docmem-gcs: ``encrypted+gs://...`` with a local keyring.

A round trip through the URL, the stored object holding no plaintext (the
memory text and the scope value are canaries), and a store opened without
the keyring refused. The full conformance suite runs on the plain store
(test_conformance_gcs.py); the encrypting wrapper's own suite runs in the core.
"""

from __future__ import annotations

import base64
import json
import os
import uuid

import pytest
from gcs_servers import GcsRaw, store_url

import docmem
from docmem.errors import DocmemError
from docmem.storage.encryption import EncryptedStore
from docmem.testing.redaction import CANARY, SCOPE_CANARY
from docmem_gcs import GcsBackend

pytestmark = pytest.mark.integration

VARIABLE = "DOCMEM_GCS_TEST_KEYRING"


@pytest.fixture
def keyring(monkeypatch: pytest.MonkeyPatch) -> str:
    key = base64.b64encode(os.urandom(32)).decode()
    ring = {"format": "docmem-keyring/1", "primary": "k1", "keys": {"k1": key}}
    monkeypatch.setenv(VARIABLE, json.dumps(ring))
    return f"env:{VARIABLE}"


def test_an_encrypted_store_round_trips_and_stores_no_plaintext(keyring: str) -> None:
    url = f"encrypted+{store_url(f'enc-{uuid.uuid4().hex[:12]}')}&keyring={keyring}"
    store = docmem.open_store(url)
    assert isinstance(store, EncryptedStore)
    assert isinstance(store.store, GcsBackend)
    scope = docmem.lock_scope(namespace="tests:gcs-encryption", scope=("user", SCOPE_CANARY))
    memory = docmem.FileMemory(store).bind(scope, slot="user")
    memory.save(f"{CANARY} likes tea", mutation_id="m1")
    assert CANARY in memory.recall()[0].content
    stored = GcsRaw(store.store).everything()
    assert stored
    assert CANARY.encode() not in stored
    assert SCOPE_CANARY.encode() not in stored
    again = docmem.FileMemory(docmem.open_store(url)).bind(scope, slot="user")
    assert CANARY in again.recall()[0].content  # another client, the same keyring
    plain = docmem.FileMemory(docmem.open_store(store_url(store.store.prefix))).bind(
        scope, slot="user"
    )
    with pytest.raises(DocmemError):
        plain.recall()  # sealed bytes are never read as a document
