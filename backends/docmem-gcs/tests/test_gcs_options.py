"""Options and URLs are checked at open_store, each refusal naming the option; no server needed."""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest

import docmem
from docmem_gcs import GcsBackend

URL = "gs://bucket/prefix"

REFUSED_KEYWORDS = [
    ("connect_timeout", None),
    ("connect_timeout", math.nan),
    ("connect_timeout", math.inf),
    ("connect_timeout", 0),
    ("connect_timeout", -1.0),
    ("connect_timeout", True),
    ("connect_timeout", 1e10),
    ("connect_timeout", "soon"),
    ("read_timeout", None),
    ("read_timeout", math.nan),
    ("read_timeout", False),
    ("max_attempts", None),
    ("max_attempts", 2.5),
    ("max_attempts", 0),
    ("max_attempts", True),
    ("max_attempts", 10**6),
    ("cache_size", -1),
    ("cache_size", 1.5),
    ("cache_size", True),
    ("endpoint_url", b"http://127.0.0.1:4443"),
    ("credentials_file", 1),
]


@pytest.mark.parametrize(("option", "value"), REFUSED_KEYWORDS, ids=repr)
def test_a_bad_keyword_option_is_refused_naming_it(option: str, value: Any) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=option):
        docmem.open_store(URL, **{option: value})


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("connect_timeout", "nan"),
        ("connect_timeout", "-1"),
        ("read_timeout", "infinity"),
        ("max_attempts", "1.5"),
        ("max_attempts", ""),
        ("cache_size", "-5"),
    ],
    ids=repr,
)
def test_a_bad_url_option_is_refused_naming_it(option: str, value: str) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=option):
        docmem.open_store(f"{URL}?{option}={value}")


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="project"):
        docmem.open_store(f"{URL}?project=mine")


def test_a_url_without_a_bucket_is_refused() -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="names no bucket"):
        docmem.open_store("gs:///prefix")


@pytest.mark.parametrize("scheme", ["gs", "gcs"])
def test_both_schemes_open_this_plug_in(scheme: str) -> None:
    store = docmem.open_store(f"{scheme}://bucket/a/b/?endpoint_url=http://127.0.0.1:4443/")
    assert isinstance(store, GcsBackend)
    assert (store.bucket, store.prefix, store.url) == ("bucket", "a/b", "gs://bucket/a/b")
    assert store.endpoint_url == "http://127.0.0.1:4443"
    assert store.object_name("k") == "a/b/k.md"
    assert docmem.open_store(f"{scheme}://bucket").url == "gs://bucket"


def test_good_values_from_a_url_or_keywords_and_keywords_win() -> None:
    store = docmem.open_store(
        f"{URL}?connect_timeout=0.5&read_timeout=7&max_attempts=1&cache_size=0",
        read_timeout=9.0,
        credentials_file="/etc/docmem/sa.json",
    )
    assert isinstance(store, GcsBackend)
    assert store.options == {
        "credentials_file": "/etc/docmem/sa.json",
        "connect_timeout": 0.5,
        "read_timeout": 9.0,
        "max_attempts": 1,
        "cache_size": 0,
    }
    assert store.timeout == (0.5, 9.0)


def test_a_store_pickles_as_url_and_options_without_objects_passed_in_code() -> None:
    marker = object()
    store = docmem.open_store(
        f"{URL}?endpoint_url=http://127.0.0.1:4443", credentials=marker, client=marker
    )
    copy = pickle.loads(pickle.dumps(store))
    assert isinstance(copy, GcsBackend)
    assert (copy.url, copy.options) == (store.url, store.options)
    assert copy._credentials is None
    assert copy._given_client is None


def test_opening_does_no_io() -> None:
    """No credentials are looked for and no client is built until the first request."""
    store = docmem.open_store("gs://bucket/p")
    assert isinstance(store, GcsBackend)
    assert store._clients.reset() is None


def test_proxy_settings_come_from_the_environment_once_when_the_client_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """requests would read them before every request; the store's session keeps its answer."""
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    store = docmem.open_store("gs://b/p?endpoint_url=http://storage.example:4443")
    assert isinstance(store, GcsBackend)
    session = store.client()._http
    assert session.trust_env is False
    assert session.proxies.get("http") == "http://proxy.example:3128"
    monkeypatch.setenv("NO_PROXY", "storage.example")
    bypassed = docmem.open_store("gs://b/p?endpoint_url=http://storage.example:4443")
    assert isinstance(bypassed, GcsBackend)
    assert "http" not in bypassed.client()._http.proxies


def test_reads_retry_only_transient_failures_and_only_so_often() -> None:
    from google.api_core import exceptions as api

    from docmem_gcs.backend import _Attempted

    attempts = _Attempted(2)
    assert not attempts(api.PreconditionFailed("no"))
    assert not attempts(api.NotFound("no"))
    assert attempts(api.ServiceUnavailable("again"))
    assert attempts(api.TooManyRequests("again"))
    assert not attempts(api.ServiceUnavailable("enough"))


def test_the_sdk_environment_never_redirects_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """STORAGE_EMULATOR_HOST and API_ENDPOINT_OVERRIDE: the store talks where its URL says."""
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("API_ENDPOINT_OVERRIDE", "http://127.0.0.1:9")
    anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]
    store = docmem.open_store("gs://b/p", credentials=anonymous)
    assert isinstance(store, GcsBackend)
    assert store.client()._connection.API_BASE_URL == "https://storage.googleapis.com"
    local = docmem.open_store("gs://b/p?endpoint_url=http://127.0.0.1:4443")
    assert isinstance(local, GcsBackend)
    assert local.client()._connection.API_BASE_URL == "http://127.0.0.1:4443"


def test_erasing_again_never_purges_older_generations() -> None:
    from docmem.cli.advice import advice
    from docmem_gcs import HistoryKept

    assert HistoryKept.erase_again_purges is False
    assert "erase again" not in (advice(HistoryKept("left"), {"mutation_id": "m-1"}) or "")
