"""Client-side encryption over docmem-azure: ``encrypted+az://`` with a local keyring on Azurite.

A round trip through the URL, and the stored blob holds neither the note nor
the scope in the clear.
"""

from __future__ import annotations

import base64
import json
import os

import pytest
from azure_servers import AzureRaw, store_url

import docmem
from docmem.storage.encryption import EncryptedStore
from docmem.testing.redaction import CANARY, SCOPE_CANARY
from docmem_azure import AzureBlobBackend

pytestmark = pytest.mark.integration


def test_a_round_trip_through_encrypted_az_leaves_no_plaintext_in_the_blob(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keyring = {
        "format": "docmem-keyring/1",
        "primary": "k1",
        "keys": {"k1": base64.b64encode(os.urandom(32)).decode()},
    }
    monkeypatch.setenv("DOCMEM_TEST_KEYRING", json.dumps(keyring))
    url = f"encrypted+{store_url()}?keyring=env:DOCMEM_TEST_KEYRING"
    store = docmem.open_store(url)
    assert isinstance(store, EncryptedStore)
    inner = store.store
    assert isinstance(inner, AzureBlobBackend)
    scope = docmem.lock_scope(namespace="tests:azure-encryption", scope=("user", SCOPE_CANARY))
    memory = docmem.FileMemory(store).bind(scope, slot="user")
    memory.save(CANARY + " prefers metric units.", mutation_id="m1")
    stored = AzureRaw(inner).everything()
    assert stored
    for secret in (CANARY, SCOPE_CANARY, "metric", "docmem/1"):
        assert secret.encode() not in stored, secret
    reopened = docmem.FileMemory(docmem.open_store(url)).bind(scope, slot="user")
    [message] = reopened.recall()
    assert CANARY + " prefers metric units." in message.content
    plain = docmem.FileMemory(docmem.open_store(store_url(inner.prefix))).bind(scope, slot="user")
    with pytest.raises(docmem.DocumentCorrupt):
        plain.recall()  # sealed bytes are no document without the keyring
