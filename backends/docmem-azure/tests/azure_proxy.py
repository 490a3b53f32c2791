"""A proxy on 127.0.0.1 that rewrites headers between a client and Azurite.

``strip``: request headers removed before forwarding. Removing ``If-Match``
and ``If-None-Match`` makes Azurite a server that ignores conditional
writes. SharedKey signs those headers (they are in its string-to-sign), so a
store reaching the proxy with the account key would only meet 403s; the tests
give it a SAS instead, which signs the URL's resource and permissions, never
the headers. ``add``: response headers added to every answer
(``x-ms-version-id``: an account that keeps blob versions, which Azurite
cannot be). :attr:`HeaderProxy.seen` records (method, query, stripped) per
request, so a test can tell what was sent and that the proxy was on the path.
The forwarding itself is :class:`docmem.testing.rewriting_proxy.RewritingProxy`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from docmem.testing.rewriting_proxy import Answer, Request, RewritingProxy

__all__ = ["HeaderProxy"]


class HeaderProxy(RewritingProxy):
    """``with HeaderProxy(upstream, strip=..., add=...) as proxy: proxy.url``; see the module."""

    def __init__(
        self,
        upstream: str,
        *,
        strip: tuple[str, ...] = (),
        add: Mapping[str, str] | None = None,
    ) -> None:
        self.strip = {name.lower() for name in strip}
        self.add = dict(add or {})
        self.seen: list[tuple[str, str, tuple[str, ...]]] = []
        self._lock = threading.Lock()
        super().__init__(upstream, rewrite_request=self._strip, rewrite_answer=self._add)

    def stripped(self) -> int:
        """How many requests had a header taken away."""
        with self._lock:
            return sum(1 for _, _, names in self.seen if names)

    def note(self, method: str, query: str, names: tuple[str, ...]) -> None:
        with self._lock:
            self.seen.append((method, query, names))

    def _strip(self, request: Request) -> None:
        names = sorted(name.lower() for name in request.headers if name.lower() in self.strip)
        request.headers = {k: v for k, v in request.headers.items() if k.lower() not in self.strip}
        self.note(request.method, urlsplit(request.target).query, tuple(names))

    def _add(self, request: Request, answer: Answer) -> None:
        answer.headers.extend(self.add.items())
