"""Credentials never leak: a canary key, file and token stay out of errors, logs and pickles.

A service-account file whose private key is a canary (unreadable, then a
real RSA key whose token endpoint is dead), and an access token passed in
code: every error the store raises (its whole chain, ``all_text``) and every
log line at DEBUG leave them out; the pickled store carries the file's path,
never its content, and no credentials object at all.
"""

from __future__ import annotations

import json
import logging
import pickle
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gcs_servers import free_port
from google.oauth2.credentials import Credentials

import docmem
from docmem.errors import DocmemError, StoreNotConfigured
from docmem.testing.redaction import all_text
from docmem_gcs import GcsBackend

TOKEN_CANARY = "ya29.CANARY-token-3b1f0c9e"
KEY_CANARY = "CANARY-private-key-9d2e"


def _key_file(tmp_path: Path, private_key: str, token_uri: str) -> Path:
    path = tmp_path / "service-account.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "docmem-test",
                "private_key_id": "0123456789abcdef",
                "private_key": private_key,
                "client_email": "docmem@docmem-test.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": token_uri,
            }
        )
    )
    return path


def _real_key() -> tuple[str, str]:
    """A fresh RSA key in PEM, and one line of its base64 body as the canary."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return pem, pem.splitlines()[5]


def _refused(store: docmem.Backend, *secrets: str) -> list[DocmemError]:
    errors: list[DocmemError] = []
    for call in (
        lambda: store.read("k"),
        lambda: store.write("k", b"x", expected=None),
        lambda: list(store.keys()),
    ):
        with pytest.raises(DocmemError) as caught:
            call()
        text = all_text(caught.value)
        for secret in secrets:
            assert secret not in text
        errors.append(caught.value)
    return errors


def _no_secret_logged(caplog: pytest.LogCaptureFixture, *secrets: str) -> None:
    for record in caplog.records:
        message = record.getMessage()
        for secret in secrets:
            assert secret not in message, record.name


def test_an_unreadable_key_file_is_not_configured_and_never_quoted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = _key_file(tmp_path, f"-----BEGIN PRIVATE KEY-----\n{KEY_CANARY}\n", "http://127.0.0.1:1")
    store = docmem.open_store(f"gs://b/p?credentials_file={path}")
    errors = _refused(store, KEY_CANARY)
    assert all(isinstance(error, StoreNotConfigured) for error in errors)
    assert str(path) in errors[0].message  # the path may be named: it is no secret
    assert KEY_CANARY not in pickle.dumps(store).decode("latin-1")
    _no_secret_logged(caplog, KEY_CANARY)


def test_a_key_whose_token_endpoint_is_dead_leaks_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    pem, canary = _real_key()
    path = _key_file(tmp_path, pem, f"http://127.0.0.1:{free_port()}/token")
    store = docmem.open_store(f"gs://b/p?credentials_file={path}", max_attempts=1)
    _refused(store, canary)
    dumped = pickle.dumps(store).decode("latin-1")
    assert canary not in dumped
    assert str(path) in dumped  # a pickled copy reads the file afresh
    _no_secret_logged(caplog, canary)


def test_a_token_passed_in_code_is_never_pickled_or_quoted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    dead = f"http://127.0.0.1:{free_port()}"
    store = docmem.open_store(
        f"gs://b/p?endpoint_url={dead}",
        credentials=Credentials(token=TOKEN_CANARY),  # type: ignore[no-untyped-call]
        connect_timeout=0.5,
        max_attempts=1,
    )
    assert isinstance(store, GcsBackend)
    _refused(store, TOKEN_CANARY)
    assert TOKEN_CANARY not in pickle.dumps(store).decode("latin-1")
    assert TOKEN_CANARY not in repr(store.options)
    _no_secret_logged(caplog, TOKEN_CANARY)


def test_no_credentials_at_all_is_not_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Application-default credentials that cannot be found: StoreNotConfigured, never empty."""
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    store = docmem.open_store("gs://b/p")
    with pytest.raises(StoreNotConfigured, match="application-default"):
        store.read("k")
