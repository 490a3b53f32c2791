"""S3 and S3-compatible storage for docmem.

``docmem.open_store("s3://bucket/prefix?endpoint_url=...&region=...")`` after
``pip install docmem-s3``; see :class:`S3Backend` for the options and
:func:`probe` for checking that a store honours conditional writes. Errors
are docmem's (``docmem.errors``); two are this plug-in's own, both
``StoreUnavailable``: :class:`ConditionsNotHonoured` and
:class:`ProtocolViolation`.
"""

from __future__ import annotations

from .backend import S3Backend, normalize_etag, probe
from .errors import ProtocolViolation
from .probe import ConditionsNotHonoured, ProbeReport

__all__ = [
    "ConditionsNotHonoured",
    "ProbeReport",
    "ProtocolViolation",
    "S3Backend",
    "normalize_etag",
    "probe",
]
