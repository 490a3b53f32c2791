"""The google-cloud-storage client a store talks through, and the credentials it signs with.

Credentials as google-cloud-storage users expect, first found wins: a
``client`` or ``credentials`` object passed in code; ``credentials_file`` (a
service-account key file, named by its path: the path may be in options, its
content never is; other kinds of credentials files, such as workload identity
federation, go through ``GOOGLE_APPLICATION_CREDENTIALS``); anonymous ones for an
``endpoint_url`` (an emulator), as the SDK does for ``STORAGE_EMULATOR_HOST``;
else application-default credentials (``google.auth.default()``). No project is
needed: object calls name the bucket.

The endpoint is always explicit (``https://storage.googleapis.com`` unless
``endpoint_url`` says otherwise), so neither ``STORAGE_EMULATOR_HOST`` nor
``API_ENDPOINT_OVERRIDE`` can redirect a store behind its URL's back: a
store's URL and options name the server it writes to, in this process and
in a pickled copy alike.
"""

from __future__ import annotations

from typing import Any

import google.auth
import google.auth.exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage  # type: ignore[import-untyped]
from google.oauth2 import service_account

from docmem.errors import StoreNotConfigured

__all__ = ["DEFAULT_ENDPOINT", "SCOPES", "build_client", "read_environment_once"]

DEFAULT_ENDPOINT = "https://storage.googleapis.com"
#: Read and write objects: all a store does.
SCOPES = ("https://www.googleapis.com/auth/devstorage.read_write",)


def build_client(
    *,
    endpoint_url: str | None,
    credentials_file: str | None,
    credentials: Any = None,
) -> Any:
    """A ``storage.Client`` for the store's endpoint, signing with the credentials above.

    StoreNotConfigured, naming what to fix, when no credentials can be found
    or the file cannot be read; never the file's content or the library's text.
    """
    if credentials is None and credentials_file is not None:
        credentials = _from_file(credentials_file)
    if credentials is None and endpoint_url is not None:
        credentials = AnonymousCredentials()  # type: ignore[no-untyped-call]
    if credentials is None:
        credentials = _application_default()
    endpoint = endpoint_url or DEFAULT_ENDPOINT
    try:
        client = storage.Client(
            project=None, credentials=credentials, client_options={"api_endpoint": endpoint}
        )
    except ValueError as exc:  # a credentials universe that is not the endpoint's
        raise StoreNotConfigured(
            f"the gs:// store is misconfigured ({type(exc).__name__}): check endpoint_url and "
            "the credentials"
        ) from None
    read_environment_once(client._http, endpoint)
    return client


def read_environment_once(session: Any, endpoint: str) -> None:
    """Take the proxy and CA settings from the environment now, not before every request.

    requests looks them up for each request of a session that trusts the
    environment (``merge_environment_settings``: every ``*_proxy`` variable,
    ``NO_PROXY``, ``REQUESTS_CA_BUNDLE``), some 0.4 ms of a 5 ms request to a
    local server. A store's session talks to one endpoint, so the answer is
    the same every time: it is asked once, for that endpoint, when the
    client is built (a forked child builds its own), and the session keeps
    it. The token refresh of google-auth uses a session of its own,
    untouched.
    """
    found = session.merge_environment_settings(endpoint, {}, None, None, None)
    session.proxies = found["proxies"]
    session.verify = found["verify"]
    session.cert = found["cert"]
    session.trust_env = False


def _from_file(path: str) -> Any:
    try:
        return service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
            path, scopes=list(SCOPES)
        )
    except (google.auth.exceptions.GoogleAuthError, OSError, ValueError) as exc:
        raise StoreNotConfigured(
            f"the gs:// credentials_file {path!r} is not a usable service-account key file "
            f"({type(exc).__name__})"
        ) from None


def _application_default() -> Any:
    try:
        credentials, _ = google.auth.default(scopes=list(SCOPES))
    except google.auth.exceptions.GoogleAuthError as exc:
        raise StoreNotConfigured(
            f"no usable Google credentials for the gs:// store ({type(exc).__name__}): set up "
            "application-default credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth "
            "application-default login, a metadata server), or give credentials_file, or pass "
            "credentials in code"
        ) from None
    return credentials
