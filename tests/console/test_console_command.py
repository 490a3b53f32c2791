"""``docmem console``'s flags: never anonymous, never on a shared address without JWT sign-in."""

from __future__ import annotations

import pytest

from docmem.cli.driver import run


@pytest.mark.parametrize(
    "flags",
    [
        ["--bind", "0.0.0.0"],
        ["--bind", "console.example.com"],
        ["--bind", "0.0.0.0", "--issuer", "https://issuer.example", "--audience", "a"],
        ["--issuer", "https://issuer.example", "--jwks-url", "https://issuer.example/jwks"],
        ["--audience", "a", "--jwt-key-file", "/nonexistent.pem"],
    ],
)
def test_a_shared_address_or_half_a_jwt_configuration_is_a_usage_error(
    flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["console", "--store", "memory://", *flags]) == 2
    assert "JWT sign-in" in capsys.readouterr().err


def test_a_wildcard_address_needs_the_public_url(capsys: pytest.CaptureFixture[str]) -> None:
    jwt = ["--issuer", "https://issuer.example", "--audience", "a", "--jwks-url",
           "https://issuer.example/jwks"]  # fmt: skip
    assert run(["console", "--store", "memory://", "--bind", "0.0.0.0", *jwt]) == 2
    assert "--public-url" in capsys.readouterr().err


def test_the_console_is_listed_and_documented(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["console", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--operator-claim" in out
    assert "--bind" in out
    assert "--port" in out
