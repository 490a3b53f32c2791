"""Credentials never reach a message, a log line or a pickle; a missing one is a clear refusal.

A canary stands in for each kind of secret (a SAS signature, an account key,
a connection string's key) on the paths where a client library would quote
it: Azurite refusing the signature (403), an unreachable endpoint, and a
DefaultAzureCredential chain that finds nothing. Every azure and docmem
logger is captured at DEBUG.
"""

from __future__ import annotations

import base64
import logging
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure_servers import ACCOUNT, connection_string, endpoint, free_port, store_url

import docmem
from docmem.testing.redaction import all_text

pytestmark = pytest.mark.integration

CANARY = "credcanary7f3a9c"
CANARY_KEY = base64.b64encode(CANARY.encode() * 4).decode()  # an account key's shape
CANARY_SAS = f"sv=2025-11-05&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00:00:00Z&sig={CANARY}"


def _secrets() -> tuple[str, ...]:
    return (CANARY, CANARY_KEY)


def _refused(action: Callable[[], Any], kind: type[docmem.DocmemError]) -> docmem.DocmemError:
    with pytest.raises(kind) as caught:
        action()
    text = all_text(caught.value)
    for secret in _secrets():
        assert secret not in text
    return caught.value


def _exercise(store: docmem.Backend, kind: type[docmem.DocmemError]) -> None:
    memory = docmem.FileMemory(store, retry=docmem.RetryPolicy(max_attempts=2, base=0, cap=0))
    bound = memory.bind(docmem.lock_scope(namespace="tests:azure-creds", scope="u"), slot="user")
    _refused(bound.recall, kind)
    _refused(lambda: bound.save("a note", mutation_id="m"), kind)
    _refused(lambda: list(store.keys()), kind)
    for secret in _secrets():
        assert secret not in store.url + repr(store.options)
        assert secret.encode() not in pickle.dumps(store)


def _no_secret_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records, "nothing was logged: the capture is not on the path"
    for record in caplog.records:
        message = record.getMessage()
        for secret in _secrets():
            assert secret not in message, record.name


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def test_a_refused_sas_is_never_quoted(logs: pytest.LogCaptureFixture) -> None:
    connection_string()
    store = docmem.open_store(
        f"{store_url()}?account_url={endpoint()}", credential=AzureSasCredential(CANARY_SAS)
    )
    _exercise(store, docmem.StoreUnavailable)
    _no_secret_logged(logs)
    # urllib3 logs each URL at DEBUG: docmem_azure.redaction rewrote the signature there.
    assert any("sig=REDACTED" in record.getMessage() for record in logs.records)


def test_a_refused_account_key_is_never_quoted(logs: pytest.LogCaptureFixture) -> None:
    connection_string()
    store = docmem.open_store(
        f"{store_url()}?account_url={endpoint()}",
        credential=AzureNamedKeyCredential(ACCOUNT, CANARY_KEY),
    )
    _exercise(store, docmem.StoreUnavailable)
    _no_secret_logged(logs)


@pytest.mark.parametrize("reachable", [True, False], ids=["refused", "unreachable"])
def test_a_connection_string_key_is_never_quoted(
    logs: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, reachable: bool
) -> None:
    blob_endpoint = endpoint() if reachable else f"http://127.0.0.1:{free_port()}/{ACCOUNT}"
    url = f"{store_url()}?connect_timeout=0.5&max_attempts=1"
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={CANARY_KEY};"
        f"BlobEndpoint={blob_endpoint};",
    )
    store = docmem.open_store(url)
    _exercise(store, docmem.StoreUnavailable)
    _no_secret_logged(logs)


def test_a_sas_on_an_unreachable_endpoint_is_never_quoted(logs: pytest.LogCaptureFixture) -> None:
    connection_string()
    store = docmem.open_store(
        f"{store_url()}?account_url=http://127.0.0.1:{free_port()}/{ACCOUNT}"
        "&connect_timeout=0.5&max_attempts=1",
        credential=CANARY_SAS,
    )
    _exercise(store, docmem.StoreUnavailable)
    _no_secret_logged(logs)


def test_no_credential_anywhere_is_store_not_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DefaultAzureCredential's chain finds nothing here: a refusal that says what to set."""
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_CLIENT_ID", "AZURE_TENANT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_CONFIG_DIR", "/nonexistent-docmem-test")
    store = docmem.open_store(
        f"az://docmem-test/x?account_url=https://127.0.0.1:{free_port()}&max_attempts=1"
    )
    error = _refused(lambda: store.read("k"), docmem.StoreNotConfigured)
    assert "AZURE_STORAGE_CONNECTION_STRING" in str(error)
