"""Who may use the console: one-time login links, JWT sign-in for operators, and sessions.

On loopback the command prints a login link, as Jupyter does: a random
token that works once, for a few minutes (:class:`LoginLinks`). A shared
deployment (any other address) signs operators in with a JWT instead,
verified by the MCP server's :class:`~docmem.integrations.mcp_auth.JwtVerifier`
(signature, ``exp``, ``iss``, ``aud``, ``sub``) and accepted only when its
operator claim is exactly ``true`` (:class:`OperatorTokens`). Either way the
browser then holds a session (:class:`Sessions`): a random id in an
HttpOnly, SameSite=Strict cookie, with a CSRF token of its own that every
form carries. Nothing here is ever anonymous, and nothing secret is logged.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from docmem.integrations.mcp_auth import JwtVerifier

__all__ = [
    "DEFAULT_OPERATOR_CLAIM",
    "LINK_OPERATOR",
    "LoginLinks",
    "Operator",
    "OperatorTokens",
    "Session",
    "Sessions",
]

#: The claim a JWT must carry, with the value ``true``, to sign an operator in.
DEFAULT_OPERATOR_CLAIM = "docmem:operator"
#: The name a login link's session is recorded under in the action log.
LINK_OPERATOR = "login-link"


def _token() -> str:
    return secrets.token_urlsafe(32)


class LoginLinks:
    """One-time login tokens: each is accepted once, within ``lifetime`` seconds of its issue."""

    def __init__(self, lifetime: float = 600.0, clock: Callable[[], float] = time.monotonic):
        self.lifetime = lifetime
        self._clock = clock
        self._lock = threading.Lock()
        self._open: dict[str, float] = {}

    def issue(self) -> str:
        """A new token (put it in the link the command prints)."""
        token = _token()
        with self._lock:
            self._open[token] = self._clock() + self.lifetime
        return token

    def redeem(self, token: str) -> bool:
        """Whether ``token`` is open and unexpired; it is spent either way."""
        with self._lock:
            deadline = self._open.pop(token, None)
        return deadline is not None and self._clock() < deadline


@dataclass(frozen=True)
class Session:
    """A signed-in browser: who (for the action log), its CSRF token, and when it ends."""

    id: str
    operator: str
    csrf: str
    expires: float

    def csrf_matches(self, given: str | None) -> bool:
        """Whether a form's token is this session's (compared in constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.csrf.encode())


class Sessions:
    """The signed-in browsers of this process, by session id (kept in memory only).

    A restart signs everyone out, which is what an operator tool should do.
    ``lifetime`` caps every session; a JWT's ends at its ``exp`` if sooner.
    """

    def __init__(self, lifetime: float = 8 * 3600.0, clock: Callable[[], float] = time.time):
        self.lifetime = lifetime
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def start(self, operator: str, *, until: float | None = None) -> Session:
        """A new session for ``operator``, ending after ``lifetime`` or at ``until``."""
        expires = self._clock() + self.lifetime
        if until is not None:
            expires = min(expires, until)
        session = Session(_token(), operator, _token(), expires)
        with self._lock:
            self._drop_expired()
            self._sessions[session.id] = session
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of that id, or ``None`` (unknown, or ended)."""
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and session.expires <= self._clock():
                del self._sessions[session_id]
                return None
        return session

    def end(self, session_id: str) -> None:
        """Sign the session out (a later request with its cookie is not signed in)."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def _drop_expired(self) -> None:
        now = self._clock()
        for session_id in [i for i, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[session_id]


@dataclass(frozen=True)
class Operator:
    """An operator a JWT signed in: the ``sub`` (for the action log) and the token's ``exp``."""

    name: str
    expires: float


class OperatorTokens:
    """JWT sign-in: a token the verifier accepts and whose operator claim is ``true``.

    The claim must be the JSON value ``true`` (not ``"true"``, not ``1``), so
    a token the issuer mints for agents or end users, which lacks it, can
    never open the console.
    """

    def __init__(self, verifier: JwtVerifier, claim: str = DEFAULT_OPERATOR_CLAIM) -> None:
        self.verifier = verifier
        self.claim = claim

    async def operator(self, token: str) -> Operator | None:
        """The operator ``token`` signs in, or ``None`` (invalid, expired or not an operator)."""
        if not token or len(token) > 16384:
            return None
        access = await self.verifier.verify_token(token)
        if access is None or access.claims is None:
            return None
        if access.claims.get(self.claim) is not True:
            return None
        subject = access.subject or ""
        expires = float(access.expires_at) if access.expires_at is not None else time.time()
        return Operator(subject, expires)
