"""Which account a store talks to and with which credential, the way Azure SDK users expect.

In order: a ``credential`` passed in code (an account key, a SAS, a
``TokenCredential``, an ``AzureNamedKeyCredential``: anything
``BlobServiceClient`` takes); else ``AZURE_STORAGE_CONNECTION_STRING`` from
the environment, which names the account and its endpoint too; else
``DefaultAzureCredential`` (environment, workload or managed identity, the
Azure CLI...). The account is the ``account_url`` option, or the standard
endpoint of ``account_name``, or the connection string's.

Why credentials never travel in the URL or the options: a store's URL and
options are logged, printed and pickled for other processes. A URL or
``account_url`` carrying a SAS or a key is refused with a message that names
the parameter and never its value; a pickled copy resolves its credential
afresh from the environment.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from azure.storage.blob import BlobServiceClient

from docmem.errors import StoreNotConfigured

__all__ = [
    "CONNECTION_STRING",
    "SECRET_PARAMETERS",
    "Account",
    "refuse_secrets",
    "resolve_account",
]

#: The environment variable the Azure SDKs and CLI read a connection string from.
CONNECTION_STRING = "AZURE_STORAGE_CONNECTION_STRING"

#: Query names that carry a credential: a SAS's signature and its fields, keys, strings.
SECRET_PARAMETERS = frozenset(
    {
        "sig",
        "sv",
        "ss",
        "srt",
        "sp",
        "se",
        "st",
        "spr",
        "skoid",
        "sktid",
        "credential",
        "account_key",
        "accountkey",
        "sas_token",
        "sas",
        "connection_string",
        "token",
    }
)
_ACCOUNT_NAME = re.compile(r"[a-z0-9]{3,24}")


def refuse_secrets(names: list[str], *, where: str) -> None:
    """StoreNotConfigured when ``names`` (query parameter names) include a credential's.

    Only the names are looked at and named: the values are the secrets.
    """
    found = sorted({name for name in names if name.lower() in SECRET_PARAMETERS})
    if found:
        raise StoreNotConfigured(
            f"the {where} carries a credential ({', '.join(found)}): docmem never takes one "
            "from a URL, which is logged and pickled; pass credential=... in code or set "
            f"{CONNECTION_STRING}"
        )


@dataclass(frozen=True)
class Account:
    """The account's blob endpoint and how to build a client for it (the secret part stays here).

    ``url`` is secret-free (``https://<account>.blob.core.windows.net``, or an
    emulator's endpoint with its account path). ``repr`` shows no credential.
    """

    url: str
    source: str  # "credential", "connection string" or "DefaultAzureCredential"
    _credential: Any = None
    _connection_string: str | None = None

    def __repr__(self) -> str:
        return f"Account(url={self.url!r}, source={self.source!r})"

    def service(self, credential: Any = None, **settings: Any) -> BlobServiceClient:
        """A client of the account with ``settings`` (timeouts, retries, sizes). No I/O.

        ``credential`` is what this process resolved for DefaultAzureCredential
        (built once per process by the caller, shared by its clients).
        """
        try:
            if self._connection_string is not None:
                return BlobServiceClient.from_connection_string(self._connection_string, **settings)
            return BlobServiceClient(
                self.url, credential=self._credential or credential, **settings
            )
        except (ValueError, TypeError) as exc:
            raise StoreNotConfigured(
                f"the az:// store's account or credential is unusable ({type(exc).__name__})"
            ) from None


def resolve_account(
    *, account_url: str | None, account_name: str | None, credential: Any
) -> Account:
    """The account and credential source for the options; StoreNotConfigured if there is none."""
    given = _given_url(account_url, account_name)
    if credential is not None:
        url = given or _connection_string_url()
        if url is None:
            raise StoreNotConfigured(
                "the az:// store has a credential but no account: give account_url or "
                f"account_name (or set {CONNECTION_STRING})"
            )
        return Account(url, "credential", _credential=credential)
    connection_string = os.environ.get(CONNECTION_STRING) or None
    if connection_string is not None:
        url = _url_of(connection_string)
        if given is not None and given != url:
            raise StoreNotConfigured(
                f"the az:// store's account_url or account_name names another account than "
                f"{CONNECTION_STRING}: pass the credential for it in code, or unset one of them"
            )
        return Account(url, "connection string", _connection_string=connection_string)
    if given is None:
        raise StoreNotConfigured(
            "the az:// store names no account: give account_url or account_name (with "
            f"DefaultAzureCredential's chain configured), or set {CONNECTION_STRING}"
        )
    return Account(given, "DefaultAzureCredential")


def _given_url(account_url: str | None, account_name: str | None) -> str | None:
    if account_url is not None and account_name is not None:
        raise StoreNotConfigured("give the az:// store account_url or account_name, not both")
    if account_name is not None:
        if not _ACCOUNT_NAME.fullmatch(account_name):
            raise StoreNotConfigured(
                "account_name must be 3 to 24 lower-case letters and digits (an Azure "
                "storage account's name)"
            )
        return f"https://{account_name}.blob.core.windows.net"
    if account_url is None:
        return None
    parts = urlsplit(account_url)
    refuse_secrets([name for name, _ in parse_qsl(parts.query)], where="account_url")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise StoreNotConfigured(
            "account_url must be the account's blob endpoint, "
            "https://<account>.blob.core.windows.net (or an emulator's http:// endpoint)"
        )
    if parts.query or parts.fragment or parts.username or parts.password:
        raise StoreNotConfigured(
            "account_url must be the account's blob endpoint alone: no query, fragment or "
            "user info (a credential goes in code or the environment)"
        )
    return account_url.rstrip("/")


def _connection_string_url() -> str | None:
    connection_string = os.environ.get(CONNECTION_STRING) or None
    return None if connection_string is None else _url_of(connection_string)


def _url_of(connection_string: str) -> str:
    """The blob endpoint a connection string names (no I/O; never quoted in a message)."""
    try:
        service = BlobServiceClient.from_connection_string(connection_string)
    except (ValueError, TypeError, KeyError):
        raise StoreNotConfigured(
            f"{CONNECTION_STRING} is malformed: it must hold AccountName and AccountKey or "
            "a SharedAccessSignature, and optionally BlobEndpoint"
        ) from None
    return str(service.url).split("?", 1)[0].rstrip("/")
