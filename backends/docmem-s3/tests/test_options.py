"""Options are checked at open_store, each refusal naming the option; no server needed."""

from __future__ import annotations

import math
import pickle
from typing import Any

import msgspec
import pytest

import docmem
from docmem_s3 import S3Backend
from docmem_s3.backend import S3Options

URL = "s3://bucket/prefix?region=us-east-1"

REFUSED_KEYWORDS = [
    ("connect_timeout", None),
    ("connect_timeout", math.nan),
    ("connect_timeout", math.inf),
    ("connect_timeout", -math.inf),
    ("connect_timeout", 0),
    ("connect_timeout", -1.0),
    ("connect_timeout", True),
    ("connect_timeout", 1e10),  # overflows the platform's time_t in socket.settimeout
    ("connect_timeout", "soon"),
    ("connect_timeout", [2]),
    ("read_timeout", None),
    ("read_timeout", math.nan),
    ("read_timeout", math.inf),
    ("read_timeout", False),
    ("max_attempts", None),
    ("max_attempts", math.inf),
    ("max_attempts", math.nan),
    ("max_attempts", 2.5),
    ("max_attempts", 0),
    ("max_attempts", True),
    ("max_attempts", 10**6),
    ("max_attempts", "3.0"),
    ("cache_size", None),
    ("cache_size", -1),
    ("cache_size", 1.5),
    ("cache_size", math.inf),
    ("cache_size", True),
    ("region", 5),
    ("endpoint_url", b"http://127.0.0.1:4566"),
    ("sse_kms_key_id", 1),
]


@pytest.mark.parametrize(("option", "value"), REFUSED_KEYWORDS, ids=repr)
def test_a_bad_keyword_option_is_refused_naming_it(option: str, value: Any) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=option):
        docmem.open_store(URL, **{option: value})


REFUSED_QUERIES = [
    ("connect_timeout", "nan"),
    ("connect_timeout", "inf"),
    ("connect_timeout", ""),
    ("connect_timeout", "-1"),
    ("read_timeout", "infinity"),
    ("read_timeout", "NaN"),
    ("max_attempts", "inf"),
    ("max_attempts", ""),
    ("max_attempts", "1.5"),
    ("cache_size", ""),
    ("cache_size", "-5"),
]


@pytest.mark.parametrize(("option", "value"), REFUSED_QUERIES, ids=repr)
def test_a_bad_url_option_is_refused_naming_it(option: str, value: str) -> None:
    with pytest.raises(docmem.StoreNotConfigured, match=option):
        docmem.open_store(f"{URL}&{option}={value}")


def test_good_values_from_a_url_or_keywords() -> None:
    store = docmem.open_store(
        f"{URL}&connect_timeout=0.5&read_timeout=3&max_attempts=5&cache_size=0"
    )
    assert isinstance(store, S3Backend)
    assert (store.connect_timeout, store.read_timeout) == (0.5, 3.0)
    assert (store.max_attempts, store.cache_size) == (5, 0)
    store = docmem.open_store(URL, connect_timeout=1, read_timeout=2.5, max_attempts=100)
    assert isinstance(store, S3Backend)
    assert (store.connect_timeout, store.read_timeout, store.max_attempts) == (1.0, 2.5, 100)
    copy = pickle.loads(pickle.dumps(store))
    assert copy.options == store.options


def test_blank_text_options_are_not_given() -> None:
    store = docmem.open_store("s3://bucket/prefix?region=&endpoint_url=&sse=")
    assert isinstance(store, S3Backend)
    assert (store.region, store.endpoint_url, store.sse) == (None, None, None)


def test_url_text_reads_as_python_reads_numbers() -> None:
    store = docmem.open_store(f"{URL}&connect_timeout=.5&read_timeout= 4 &max_attempts=+2")
    assert isinstance(store, S3Backend)
    assert (store.connect_timeout, store.read_timeout, store.max_attempts) == (0.5, 4.0, 2)
    store = docmem.open_store(URL, connect_timeout="1.5", max_attempts=2.0)
    assert isinstance(store, S3Backend)
    assert (store.connect_timeout, store.max_attempts) == (1.5, 2)


def test_sse_is_one_of_the_modes_and_a_kms_key_alone_means_kms() -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="sse must be AES256") as caught:
        docmem.open_store(f"{URL}&sse=rot13-secret")
    assert "rot13-secret" not in str(caught.value)
    store = docmem.open_store(f"{URL}&sse_kms_key_id=alias/docmem")
    assert isinstance(store, S3Backend)
    assert (store.sse, store.sse_kms_key_id) == ("aws:kms", "alias/docmem")


def test_unknown_options_are_refused_naming_the_known_ones() -> None:
    with pytest.raises(
        docmem.StoreNotConfigured, match=r"unknown s3:// options: session"
    ) as caught:
        docmem.open_store(f"{URL}&session=x")
    assert "(known: endpoint_url, region, sse" in str(caught.value)


def test_a_bad_value_never_appears_in_the_error() -> None:
    with pytest.raises(docmem.StoreNotConfigured, match="read_timeout") as caught:
        docmem.open_store(f"{URL}&read_timeout=hunter2")
    assert "hunter2" not in str(caught.value)
    assert caught.value.__context__ is None


def test_the_defaults_are_the_options_structs() -> None:
    store = S3Backend("bucket", region="us-east-1")
    defaults = {k: v for k, v in msgspec.structs.asdict(S3Options()).items() if v is not None}
    assert store.options == {**defaults, "region": "us-east-1"}
