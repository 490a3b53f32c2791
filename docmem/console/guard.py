"""What every answer carries and every request must pass before a page runs.

:class:`Guard` is one ASGI middleware, outermost: it refuses a request whose
``Host`` is not one the console was bound to or told of (DNS rebinding), a
POST whose ``Origin`` is not the console's own (a cross-site form; the CSRF
token in each form is checked by the page as well), and it adds the
security headers to every answer, refusals included: a Content-Security-Policy
that allows only the console's own style sheet and no script at all,
``frame-ancestors 'none'``, no caching of pages that hold memory text, no
referrer off the site, no sniffing.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "Guard", "origins_of"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)

#: Added to every answer (a page's own value wins only for Cache-Control on static files).
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on a
    # form's POST, and the Origin check below needs the real one.
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
}
_NO_STORE = "no-store"
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def origins_of(hosts: Iterable[str], schemes: Iterable[str] = ("http",)) -> frozenset[str]:
    """The origins (``scheme://host[:port]``) a browser sends for pages served at ``hosts``."""
    return frozenset(f"{scheme}://{host}" for host in hosts for scheme in schemes)


class Guard:
    """Host and Origin checks and the security headers, around the whole app.

    ``hosts`` are the exact ``Host`` values accepted (``127.0.0.1:8765``,
    ``localhost:8765``, a proxy's ``console.example.com``); ``origins`` the
    exact ``Origin`` values a POST may carry.
    """

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(host.lower() for host in hosts)
        self.origins = frozenset(origin.lower() for origin in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self.refusal(scope["method"], headers.get("host"), headers.get("origin"))

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                secured = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    secured[name] = value
                if "cache-control" not in secured:
                    secured["cache-control"] = _NO_STORE
            await send(message)

        if refusal is not None:
            status, text = refusal
            await PlainTextResponse(text, status_code=status)(scope, receive, send_secured)
            return
        await self.app(scope, receive, send_secured)

    def refusal(self, method: str, host: str | None, origin: str | None) -> tuple[int, str] | None:
        """The status and reason a request is refused with before any page runs, or ``None``."""
        if host is None or host.lower() not in self.hosts:
            return 400, "Host not accepted: open the console by the address it printed."
        if method in _UNSAFE_METHODS and (origin is None or origin.lower() not in self.origins):
            return (
                403,
                "Cross-site request refused: forms are accepted from the console's own pages.",
            )
        return None
