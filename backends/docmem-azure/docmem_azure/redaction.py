"""Keep a SAS out of the logs of the HTTP library underneath the Azure SDK.

A SAS rides in every request's query string, and urllib3 logs each request's
full URL at DEBUG (``urllib3.connectionpool``: ``"GET /c/b?...&sig=... HTTP/1.1"
200``). azure-core's own logging policy redacts query values, urllib3's does
not. A filter on that one logger rewrites the signature, and the SAS fields
that may identify a key, to ``REDACTED`` before any handler sees the record;
it is installed once, when docmem-azure builds its first clients, and it
changes nothing else.
"""

from __future__ import annotations

import logging
import re
import threading

__all__ = ["SasRedactingFilter", "install"]

#: The query parameters whose values are (or point at) the secret part of a SAS.
_SECRET = re.compile(r"(?i)\b(sig|skoid|sktid|skt|ske|sks|skv|saoid|suoid|scid)=[^&\s\"']*")
_LOGGERS = ("urllib3.connectionpool",)
_lock = threading.Lock()


class SasRedactingFilter(logging.Filter):
    """Rewrites a record whose text carries a SAS signature; never drops one."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record that cannot format is passed on as it is
            return True
        if "=" in message and _SECRET.search(message):
            record.msg = _SECRET.sub(lambda match: f"{match.group(1)}=REDACTED", message)
            record.args = ()
        return True


def install() -> None:
    """Put the filter on urllib3's request logger, once per process."""
    with _lock:
        for name in _LOGGERS:
            logger = logging.getLogger(name)
            if not any(isinstance(each, SasRedactingFilter) for each in logger.filters):
                logger.addFilter(SasRedactingFilter())
