"""The GCS side: request counting on google-cloud-storage clients (``docmem-gcs``, its baselines).

Needs no Google import: a client is anything with the SDK's requests session, ``_http``.
"""

from __future__ import annotations

from typing import Any

from . import s3

__all__ = ["Requests"]


class Requests(s3.Requests):
    """HTTP answers the clients received while counting, by method and status.

    The S3 harness's tally, fed by a response hook on each client's requests
    session, which sees every attempt.
    """

    def attach(self, *clients: Any) -> Requests:
        for client in clients:
            client._http.hooks["response"].append(self._answered)
        return self

    def _answered(self, response: Any, *_: Any, **__: Any) -> None:
        if not self._active:
            return
        key = (str(response.request.method), str(response.status_code))
        with self._lock:
            self._counts[key] += 1
