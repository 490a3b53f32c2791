"""Options are checked at open_store, each refusal naming the option; no server needed."""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest

import docmem
from docmem_s3 import S3Backend

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
