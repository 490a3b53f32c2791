"""Fixtures of docmem-s3's tests; the helpers they use are in ``s3_servers``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from s3_servers import SERVERS, TEST_CREDENTIALS, endpoint_of, store_url

import docmem
from docmem_s3 import S3Backend


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test servers' credentials when none are set (a run by hand, without the servers).

    The tests that need no server (a dead port, bad options) still build boto3
    clients, which need some credentials; they never get the developer's own.
    """
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in TEST_CREDENTIALS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(params=sorted(SERVERS))
def endpoint(request: pytest.FixtureRequest) -> str:
    return endpoint_of(request.param)


@pytest.fixture
def open_s3(endpoint: str) -> Iterator[Callable[..., S3Backend]]:
    """Opens fresh stores (each under its own prefix) and closes them afterwards."""
    opened: list[S3Backend] = []

    def opener(prefix: str | None = None, **options: Any) -> S3Backend:
        store = docmem.open_store(store_url(endpoint, prefix), **options)
        assert isinstance(store, S3Backend)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
