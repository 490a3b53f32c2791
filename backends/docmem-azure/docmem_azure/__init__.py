"""Azure Blob Storage for docmem, natively on azure-storage-blob.

``docmem.open_store("az://container/prefix?account_url=https://<account>.blob.core.windows.net")``
(or ``azblob://``) after ``pip install agent-docmem-azure``; see
:class:`AzureBlobBackend` for the options and the credential chain, and
:func:`probe` for checking that a store honours conditional writes. Errors
are docmem's (``docmem.errors``); three are this plug-in's own, all
``StoreUnavailable``: :class:`ConditionsNotHonoured`,
:class:`ProtocolViolation`, and :class:`HistoryKept` (an erase or a delete
on an account that keeps blob versions, which docmem-azure does not delete).
"""

from __future__ import annotations

from .backend import SCHEMES, AzureBlobBackend, AzureOptions, HistoryKept, probe
from .errors import ProtocolViolation
from .probe import ConditionsNotHonoured, ProbeReport

__all__ = [
    "SCHEMES",
    "AzureBlobBackend",
    "AzureOptions",
    "ConditionsNotHonoured",
    "HistoryKept",
    "ProbeReport",
    "ProtocolViolation",
    "probe",
]
