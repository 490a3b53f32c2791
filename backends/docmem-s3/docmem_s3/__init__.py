"""S3 and S3-compatible storage for docmem.

``docmem.open_store("s3://bucket/prefix?endpoint_url=...&region=...")`` after
``pip install agent-docmem-s3``; see :class:`S3Backend` for the options and
:func:`probe` for checking that a store honours conditional writes. Errors
are docmem's (``docmem.errors``); three are this plug-in's own, all
``StoreUnavailable``: :class:`ConditionsNotHonoured`,
:class:`ProtocolViolation`, and :class:`HistoryKept` (an erase on a versioned
bucket whose older versions could not all be deleted: outcome ``committed``).
"""

from __future__ import annotations

from .backend import S3Backend, normalize_etag, probe
from .errors import ProtocolViolation
from .history import HistoryKept
from .probe import ConditionsNotHonoured, ProbeReport

__all__ = [
    "ConditionsNotHonoured",
    "HistoryKept",
    "ProbeReport",
    "ProtocolViolation",
    "S3Backend",
    "normalize_etag",
    "probe",
]
