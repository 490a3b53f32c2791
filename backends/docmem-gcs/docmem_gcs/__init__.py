"""Google Cloud Storage for docmem, with generation preconditions on every write.

``docmem.open_store("gs://bucket/prefix")`` (or ``gcs://``) after ``pip install
agent-docmem-gcs``; see :class:`GcsBackend` for the options and :func:`probe`
for checking that a store honours the preconditions. Errors are docmem's
(``docmem.errors``); two are this plug-in's own, both ``StoreUnavailable``:
:class:`ProtocolViolation`, and :class:`HistoryKept` (an erase or a delete on
a bucket with object versioning that still holds older generations: an
erase's outcome is ``committed``).
"""

from __future__ import annotations

from docmem.errors import ConditionsNotHonoured

from .backend import MAX_UPLOAD_BYTES, GcsBackend, GcsOptions, probe
from .errors import ProtocolViolation
from .history import HistoryKept
from .probe import ProbeReport

__all__ = [
    "MAX_UPLOAD_BYTES",
    "ConditionsNotHonoured",
    "GcsBackend",
    "GcsOptions",
    "HistoryKept",
    "ProbeReport",
    "ProtocolViolation",
    "probe",
]
