"""Bearer tokens for the docmem MCP server over HTTP: JWTs verified with PyJWT.

:class:`JwtVerifier` is an MCP SDK ``TokenVerifier``: the SDK's bearer
middleware calls it for every HTTP request and answers 401 before any
handler runs (so before any store access) when it returns ``None``. A token
is accepted only with a valid signature from the configured key (a PEM file,
or the issuer's JWKS), an ``exp`` in the future, the configured ``iss`` and
``aud``, and a non-blank ``sub``. Only asymmetric algorithms are accepted,
and only those of the key's type, so neither ``alg: none`` nor an HMAC
signed with the public key can pass. Nothing of a token is ever logged.

Anyone who can reach the port can send tokens, so refusals are logged at
INFO (a failure on the server's side, such as a JWKS out of reach, at
WARNING), each kind at once the first time and then at most once a minute
with a count (:class:`_RefusalLog`): a flood of bad tokens costs a line a
minute, not a line a request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union
from urllib.parse import urlsplit

try:
    import anyio.to_thread
    import jwt
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "docmem.integrations.mcp needs the MCP Python SDK and PyJWT: "
        'pip install "agent-docmem[mcp]"'
    ) from error

from docmem.errors import InvalidArgument

__all__ = ["JwtVerifier", "PublicKey", "check_jwks_url", "load_public_key"]

logger = logging.getLogger("docmem")

#: A public key a JWT can be verified with.
PublicKey = Union[  # noqa: UP007
    rsa.RSAPublicKey, ec.EllipticCurvePublicKey, ed25519.Ed25519PublicKey, ed448.Ed448PublicKey
]

_RSA = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
_EC = ("ES256", "ES384", "ES512")
_EDDSA = ("EdDSA",)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: What the log says of a refused token (the client's doing), and of one not verified (ours).
_REFUSED = "bearer token refused"
_UNVERIFIED = "bearer token not verified"
#: How many accepted tokens are remembered, and for how many seconds at most.
_REMEMBERED_TOKENS = 4096
_REMEMBERED_SECONDS = 60.0
#: The wall clock the remembered tokens' ``exp`` is checked against (a test sets its own).
_now = time.time


def load_public_key(path: str | Path) -> PublicKey:
    """The public key in a PEM file: a public key block or an X.509 certificate.

    Raises :class:`docmem.InvalidArgument` when the file cannot be read or
    holds no such key (a private key is refused: the server needs none).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        problem = f"the key file cannot be read ({type(error).__name__})"
    else:
        key = _public_key(data)
        if key is not None:
            return key
        problem = "the key file holds no PEM public key or certificate (RSA, EC or Ed25519/Ed448)"
    raise InvalidArgument(problem)


def _public_key(data: bytes) -> PublicKey | None:
    loaded: object
    try:
        loaded = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            loaded = x509.load_pem_x509_certificate(data).public_key()
        except ValueError:
            return None
    if isinstance(loaded, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
        return loaded
    if isinstance(loaded, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return loaded
    return None


def _algorithms(key: object) -> tuple[str, ...]:
    """The JWS algorithms a key of this type can verify: never HMAC, never ``none``."""
    if isinstance(key, rsa.RSAPublicKey):
        return _RSA
    if isinstance(key, ec.EllipticCurvePublicKey):
        return _EC
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return _EDDSA
    return ()


@dataclass
class _Tally:
    """One kind of refusal: when its last line was logged, and how many came since."""

    logged_at: float
    since: int = 0


class _RefusalLog:
    """Logs refused requests without letting a client flood the log.

    The first refusal of each kind (its level, what happened and why, e.g.
    an exception's type) is logged at once; repeats are counted, and the next one at least
    ``interval`` seconds after the last line logs one line with the count.
    So every kind is seen, and a flood costs a line per kind per interval.
    A burst's count shows with the first repeat after the interval; one
    that never comes leaves the last count unlogged (there is no timer).
    ``clock`` is :func:`time.monotonic` unless a test steps its own.
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._guard = threading.Lock()  # verifications run in worker threads too
        self._tallies: dict[tuple[int, str, str], _Tally] = {}

    def refused(self, level: int, what: str, reason: str) -> None:
        """Note one refusal: ``what`` happened, for ``reason`` (content-free: a type or a cause)."""
        due = self._due((level, what, reason))
        if due is None:
            return
        repeats, seconds = due
        if not repeats:
            self._logger.log(level, "docmem mcp: %s (%s)", what, reason)
            return
        self._logger.log(
            level, "docmem mcp: %s (%s) %d more times in %.0f s", what, reason, repeats, seconds
        )

    def _due(self, kind: tuple[int, str, str]) -> tuple[int, float] | None:
        """The repeats to log now and the seconds they span (0 for a new kind), or ``None``."""
        now = self._clock()
        with self._guard:
            tally = self._tallies.get(kind)
            if tally is None:
                self._tallies[kind] = _Tally(now)
                return 0, 0.0
            tally.since += 1
            seconds = now - tally.logged_at
            if seconds < self._interval:
                return None
            repeats = tally.since
            tally.logged_at, tally.since = now, 0
            return repeats, seconds


class _Accepted:
    """Tokens accepted lately: a client's next request skips PyJWT (about 0.5 ms a token).

    A token is remembered by its exact text, whose signature and claims were
    verified, and accepted again only before its ``exp`` (with the leeway),
    within ``seconds`` of its verification (so a key dropped from a JWKS
    stops working soon, as the JWKS cache lets it), and while it is among
    the ``size`` used last. Refused tokens are never remembered: a flood of
    bad tokens costs a verification each and cannot fill the memory.
    """

    def __init__(self, size: int, seconds: float) -> None:
        self._size = size
        self._seconds = seconds
        self._guard = threading.Lock()  # verifications run in worker threads too
        self._tokens: OrderedDict[str, tuple[float, AccessToken]] = OrderedDict()

    def get(self, token: str) -> AccessToken | None:
        """The token's ``AccessToken`` if it was accepted and may still be; else ``None``."""
        now = _now()
        with self._guard:
            found = self._tokens.get(token)
            if found is None:
                return None
            if now >= found[0]:
                del self._tokens[token]
                return None
            self._tokens.move_to_end(token)
            return found[1]

    def add(self, access: AccessToken, valid_until: float) -> None:
        """Remember an accepted token until ``valid_until`` at most (its ``exp`` and leeway)."""
        until = min(valid_until, _now() + self._seconds)
        with self._guard:
            self._tokens[access.token] = (until, access)
            self._tokens.move_to_end(access.token)
            while len(self._tokens) > self._size:
                self._tokens.popitem(last=False)


class JwtVerifier:
    """Verifies bearer JWTs for an MCP server (the SDK's ``TokenVerifier`` protocol).

    Give exactly one of ``key`` (a public key, e.g. from
    :func:`load_public_key`) and ``jwks_url`` (the issuer's JWKS, https, or
    http on a loopback address; fetched in a worker thread, cached for
    ``jwks_cache_seconds`` and refetched once for an unknown ``kid``).
    ``issuer`` and ``audience`` must match the token's ``iss`` and ``aud``
    exactly. The accepted token becomes the request's ``AccessToken``:
    ``subject`` is ``sub``, ``claims`` all the token's claims. A client sends
    its token with every request, so an accepted one is remembered for up to
    a minute (:class:`_Accepted`), never past its ``exp``.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        key: PublicKey | None = None,
        jwks_url: str | None = None,
        leeway: float = 0,
        jwks_cache_seconds: float = 300,
    ) -> None:
        if not isinstance(issuer, str) or not issuer.strip():
            raise InvalidArgument("the token issuer must be a non-blank string")
        if not isinstance(audience, str) or not audience.strip():
            raise InvalidArgument("the token audience must be a non-blank string")
        if (key is None) == (jwks_url is None):
            raise InvalidArgument("give exactly one of key and jwks_url")
        if key is not None and not _algorithms(key):
            raise InvalidArgument("the key must be an RSA, EC or Ed25519/Ed448 public key")
        self.issuer = issuer
        self.audience = audience
        self.leeway = leeway
        self._key = key
        self._refusals = _RefusalLog(logger)
        self._accepted = _Accepted(_REMEMBERED_TOKENS, _REMEMBERED_SECONDS)
        self._jwks: jwt.PyJWKClient | None = None
        if jwks_url is not None:
            check_jwks_url(jwks_url)
            self._jwks = jwt.PyJWKClient(
                jwks_url, cache_jwk_set=True, lifespan=jwks_cache_seconds, timeout=10
            )

    def __repr__(self) -> str:
        source = "jwks" if self._jwks is not None else "key"
        return f"JwtVerifier(source={source!r})"

    def auth_settings(self, *, resource_url: str | None = None) -> AuthSettings:
        """The SDK's ``AuthSettings`` for this issuer; ``resource_url`` adds RFC 9728 metadata.

        With ``resource_url`` the server publishes its protected-resource
        metadata (naming the issuer as the authorization server) and a 401
        points to it, so an MCP host can discover where to get a token. The
        audience is checked here, so the SDK's own resource check stays off.
        """
        # mcp 2.3 checks the resource itself unless told not to (``validate_token_resource``);
        # 2.1, which strands-agents needs, has no such check and no such field.
        own_check: dict[str, Any] = {}
        if resource_url is not None and "validate_token_resource" in AuthSettings.model_fields:
            own_check["validate_token_resource"] = False
        try:
            return AuthSettings(
                issuer_url=self.issuer,  # type: ignore[arg-type]
                resource_server_url=resource_url,  # type: ignore[arg-type]
                **own_check,
            )
        except ValueError:
            problem = "the issuer and the resource URL must be http(s) URLs"
        raise InvalidArgument(problem)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's ``AccessToken`` when it is valid, else ``None`` (the SDK answers 401)."""
        accepted = self._accepted.get(token)
        if accepted is not None:
            return accepted
        if self._jwks is not None:  # the JWKS fetch blocks: keep it off the event loop
            return await anyio.to_thread.run_sync(self._verify, token)
        return self._verify(token)

    def _signing_key(self, token: str) -> PublicKey:
        """The configured key, or the JWKS key the token's ``kid`` names (fetched if need be)."""
        if self._jwks is None:
            assert self._key is not None
            return self._key
        key: PublicKey = self._jwks.get_signing_key_from_jwt(token).key
        return key

    def _verify(self, token: str) -> AccessToken | None:
        try:
            key = self._signing_key(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(_algorithms(key)),
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWKClientConnectionError as error:  # ours to fix, not the client's
            self._refusals.refused(logging.WARNING, _UNVERIFIED, type(error).__name__)
            return None
        except jwt.PyJWTError as error:  # an unknown kid included: anyone can send one
            self._refusals.refused(logging.INFO, _REFUSED, type(error).__name__)
            return None
        except Exception as error:  # fail closed on anything unforeseen
            self._refusals.refused(logging.WARNING, _UNVERIFIED, type(error).__name__)
            return None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            self._refusals.refused(logging.INFO, _REFUSED, "blank subject")
            return None
        access = AccessToken(
            token=token,
            client_id=_client_id(claims),
            scopes=_scopes(claims),
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=subject,
            claims=claims,
        )
        self._accepted.add(access, float(claims["exp"]) + self.leeway)
        return access


def check_jwks_url(url: str) -> str:
    """``url`` if a JWKS may be fetched from it: https, or plain http on a loopback address."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in _LOOPBACK:
        return url
    raise InvalidArgument("the JWKS URL must be https (plain http only on a loopback address)")


def _client_id(claims: Mapping[str, Any]) -> str:
    """The OAuth client the token was issued to (``client_id``, else ``azp``), or ``""``."""
    for name in ("client_id", "azp"):
        value = claims.get(name)
        if isinstance(value, str):
            return value
    return ""


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    """OAuth scopes from ``scope`` (space-separated) or ``scp`` (a list or a string)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return value.split()
    if isinstance(value, Sequence):
        return [item for item in value if isinstance(item, str)]
    return []
