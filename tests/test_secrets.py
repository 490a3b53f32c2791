"""The credential filter: secrets rejected, ordinary notes kept, the filter replaceable."""

from __future__ import annotations

import pytest

import docmem
from docmem.provider.secrets import default_secret_filter

SECRETS = {
    "aws_access_key": "my key is AKIAIOSFODNN7EXAMPLE ok",
    "aws_secret_key": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "private_key": "-----BEGIN RSA PRIVATE KEY----- MIIEow",
    "github_token": "token ghp_" + "a1B2c3D4e5" * 4,
    "gitlab_token": "glpat-" + "x" * 20,
    "slack_token": "xoxb-1234567890-abcdefghij",
    "api_key": "use sk-proj-" + "Ab3" * 10,
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google_api_key": "AIza" + "S" * 35,
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
    "bearer_token": "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
    "password_assignment": "password: hunter2hunter2",
}

BENIGN = [
    "Prefers metric units.",
    "Works at Acme on the billing team.",
    "Asked about the password reset flow last week.",
    "Skiing in the Alps every February; prefers sk-ish slopes.",
    "Their API key rotation policy is 90 days.",
    "Likes the bear in the Bearer comic.",
]


@pytest.mark.parametrize(("kind", "text"), sorted(SECRETS.items()))
def test_credentials_are_detected(kind: str, text: str) -> None:
    assert default_secret_filter(text) == kind


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_notes_pass(text: str) -> None:
    assert default_secret_filter(text) is None


def test_save_rejects_secrets_with_code_and_without_content(mem: docmem.BoundMemory) -> None:
    with pytest.raises(docmem.SecretDetected) as caught:
        mem.save(SECRETS["aws_access_key"], mutation_id="s")
    error = caught.value
    assert isinstance(error, docmem.ContentRejected)
    assert error.code == "secret_detected"
    assert error.outcome == "not_committed"
    assert "AKIA" not in str(error)
    assert mem.read() is None


def test_filter_is_replaceable(store: docmem.Backend, scope: docmem.LockedScope) -> None:
    permissive = docmem.FileMemory(store, secret_filter=lambda text: None).bind(scope, slot="u")
    assert permissive.save(SECRETS["jwt"], mutation_id="s").status == "saved"
    strict = docmem.FileMemory(
        store, secret_filter=lambda text: "internal_id" if "ACME-" in text else None
    ).bind(scope, slot="u")
    with pytest.raises(docmem.SecretDetected) as caught:
        strict.save("ticket ACME-42", mutation_id="s2")
    assert "internal_id" in str(caught.value)
