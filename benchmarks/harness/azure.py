"""The Azure side: request counting on the Azure SDK's clients (``docmem-azure``, its baselines).

Needs no Azure import: a client is anything with the SDK's pipeline.
"""

from __future__ import annotations

from typing import Any

from . import s3

__all__ = ["Requests"]


class Requests(s3.Requests):
    """HTTP responses the clients received while counting, by method and status.

    The S3 harness's tally, fed by the Azure SDK's response hook instead of
    botocore's events: ``StorageResponseHook`` sits inside the retry loop, so
    each attempt counts.
    """

    def attach(self, *clients: Any) -> Requests:
        """Hook every ``ContainerClient``'s StorageResponseHook."""
        for client in clients:
            for policy in client._pipeline._impl_policies:
                if type(policy).__name__ == "StorageResponseHook":
                    policy._response_callback = self._answered
        return self

    def _answered(self, response: Any) -> None:
        if not self._active:
            return
        key = (str(response.http_request.method), str(response.http_response.status_code))
        with self._lock:
            self._counts[key] += 1
