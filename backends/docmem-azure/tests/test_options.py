"""URLs, options and credentials are checked at open_store, each refusal naming what, never a value.

No server needed: opening a store does no I/O. The connection string in the
environment is replaced by the test's own for each test.
"""

from __future__ import annotations

import math
import pickle
from typing import Any

import msgspec
import pytest
from azure.core.credentials import AzureSasCredential

import docmem
from docmem_azure import AzureBlobBackend, AzureOptions

SECRET = "c2VjcmV0LWNhbmFyeS1rZXktZG8tbm90LWxlYWs="  # a canary: must never be echoed
CONNECTION = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    f"AccountKey={SECRET};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
)
URL = "az://container/prefix"


@pytest.fixture(autouse=True)
def _connection_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", CONNECTION)


def opened(url: str = URL, **options: Any) -> AzureBlobBackend:
    store = docmem.open_store(url, **options)
    assert isinstance(store, AzureBlobBackend)
    return store


@pytest.mark.parametrize("scheme", ["az", "azblob"])
def test_both_schemes_open_the_native_store(scheme: str) -> None:
    store = opened(f"{scheme}://container/a/b/")
    assert (store.container, store.prefix, store.url) == (
        "container",
        "a/b",
        f"{scheme}://container/a/b",
    )
    assert store.account.url == "http://127.0.0.1:10000/devstoreaccount1"
    assert store.account.source == "connection string"


REFUSED_KEYWORDS = [
    ("connect_timeout", None),
    ("connect_timeout", math.nan),
    ("connect_timeout", math.inf),
    ("connect_timeout", 0),
    ("connect_timeout", True),
    ("connect_timeout", 1e10),
    ("read_timeout", -1.0),
    ("max_attempts", 0),
    ("max_attempts", 2.5),
    ("max_attempts", 10**6),
    ("cache_size", -1),
    ("cache_size", True),
    ("account_url", 5),
    ("account_name", b"acct"),
]


@pytest.mark.parametrize(("option", "value"), REFUSED_KEYWORDS, ids=repr)
def test_a_bad_keyword_option_is_refused_naming_it(option: str, value: Any) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=option):
        docmem.open_store(URL, **{option: value})


@pytest.mark.parametrize(("option", "value"), [("read_timeout", "nan"), ("cache_size", "-5")])
def test_a_bad_url_option_is_refused_naming_it(option: str, value: str) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=option):
        docmem.open_store(f"{URL}?{option}={value}")


def test_good_values_and_pickling_keep_the_options() -> None:
    store = opened(f"{URL}?connect_timeout=0.5&read_timeout=3&max_attempts=5&cache_size=0")
    assert (store.connect_timeout, store.read_timeout, store.max_attempts, store.cache_size) == (
        0.5,
        3.0,
        5,
        0,
    )
    copy = pickle.loads(pickle.dumps(store))
    assert (copy.url, copy.options) == (store.url, store.options)
    defaults = {k: v for k, v in msgspec.structs.asdict(AzureOptions()).items() if v is not None}
    assert opened().options == defaults


@pytest.mark.parametrize(
    "query",
    [
        f"sv=2024-01-01&sig={SECRET}",
        f"sig={SECRET}",
        f"account_key={SECRET}",
        f"credential={SECRET}",
        f"sas_token={SECRET}",
        f"connection_string={SECRET}",
    ],
)
def test_a_credential_in_the_url_is_refused_without_echoing_it(query: str) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="carries a credential") as caught:
        docmem.open_store(f"{URL}?{query}")
    assert SECRET not in str(caught.value)
    assert caught.value.__context__ is None or SECRET not in str(caught.value.__context__)


def test_a_sas_inside_account_url_or_user_info_is_refused_without_echoing_it() -> None:
    for url in (
        f"{URL}?account_url=https://acct.blob.core.windows.net/%3Fsv%3D1%26sig%3D{SECRET}",
        f"az://user:{SECRET}@container/prefix",
    ):
        with pytest.raises(docmem.StoreNotConfigured) as caught:
            docmem.open_store(url)
        assert SECRET not in str(caught.value)
    with pytest.raises(docmem.StoreNotConfigured, match="carries a credential") as caught:
        docmem.open_store(URL, account_url=f"https://acct.blob.core.windows.net?sig={SECRET}")
    assert SECRET not in str(caught.value)


def test_a_credential_passed_in_code_is_never_an_option_nor_pickled() -> None:
    credential = AzureSasCredential(f"sv=2024-01-01&sig={SECRET}")
    store = opened(URL, account_url="https://acct.blob.core.windows.net", credential=credential)
    assert store.account.source == "credential"
    assert SECRET not in repr(store.options) + store.url + repr(store.account)
    assert SECRET.encode() not in pickle.dumps(store)


def test_the_connection_string_is_never_pickled_and_a_copy_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = opened()
    data = pickle.dumps(store)
    assert SECRET.encode() not in data
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        CONNECTION.replace("127.0.0.1:10000", "127.0.0.1:10001"),
    )
    copy = pickle.loads(data)
    assert copy.account.url == "http://127.0.0.1:10001/devstoreaccount1"


def test_account_name_builds_the_standard_endpoint_and_needs_no_connection_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    store = opened(f"{URL}?account_name=mystorage")
    assert store.account.url == "https://mystorage.blob.core.windows.net"
    assert store.account.source == "DefaultAzureCredential"
    with pytest.raises(docmem.StoreNotConfigured, match="account_name must be"):
        docmem.open_store(f"{URL}?account_name=No_Such")


def test_no_account_anywhere_is_refused_never_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    with pytest.raises(docmem.StoreNotConfigured, match="names no account"):
        docmem.open_store(URL)
    with pytest.raises(docmem.StoreNotConfigured, match="no account"):
        docmem.open_store(URL, credential=AzureSasCredential("sv=1&sig=x"))


def test_another_account_than_the_connection_string_is_refused() -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="another account"):
        docmem.open_store(f"{URL}?account_name=otheraccount")
    same = opened(f"{URL}?account_url=http://127.0.0.1:10000/devstoreaccount1/")
    assert same.account.source == "connection string"


def test_a_malformed_connection_string_is_refused_without_quoting_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", f"garbage{SECRET}")
    with pytest.raises(docmem.StoreNotConfigured, match="malformed") as caught:
        docmem.open_store(URL)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("url", ["az://", "az:///prefix", "az://Bad_Name/p", "az://ab/p"])
def test_a_missing_or_invalid_container_is_refused(url: str) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="container"):
        docmem.open_store(url)


def test_account_url_must_be_an_endpoint() -> None:
    for bad in ("ftp://acct", "not a url", "https://acct.blob.core.windows.net#frag"):
        with pytest.raises(docmem.StoreNotConfigured, match="account_url"):
            docmem.open_store(URL, account_url=bad, credential=AzureSasCredential("sv=1&sig=x"))
    with pytest.raises(docmem.StoreNotConfigured, match="not both"):
        docmem.open_store(URL, account_url="https://a.blob.core.windows.net", account_name="abc")


def test_erasing_again_never_purges_azure_blob_versions() -> None:
    from docmem.cli.advice import advice
    from docmem_azure import HistoryKept

    assert HistoryKept.erase_again_purges is False
    assert "erase again" not in (advice(HistoryKept("left"), {"mutation_id": "m-1"}) or "")
