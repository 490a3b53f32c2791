"""How Azure Blob answers map onto docmem's errors: one table, one mapping, most specific row first.

Every client call that talks to the blob service (the backend's, the probe's,
the layout check's) runs inside :class:`azure_answers`, which raises the
docmem error its row names::

    with azure_answers("update", container=container):
        blob.upload_blob(data, overwrite=True, etag=etag, match_condition=IfNotModified)

Two tables decide. :data:`RULES` classifies an error *answer* (an azure-core
``HttpResponseError`` that carries a response) by the service's error code
(``x-ms-error-code``) and its status: a 404 is a missing blob on a read, a
lost race on a conditional update (the blob was deleted meanwhile), and a
misconfiguration when the container is missing. :data:`FAILURES` classifies
a conversation that failed below the service (no connection, a reset, a
timeout, a body cut short) by whether the request may have been sent:
azure-core raises ``ServiceRequestError`` only when it was not
(``azure.core.pipeline.transport._requests_basic``: a refused or timed-out
connection), ``ServiceResponseError`` once it may have been. Two answers are
no errors to docmem: :class:`Missing` and :class:`NotModified` are raised for
the caller to catch.

One kind of answer never reaches the tables: a successful answer whose ETag
is missing, empty or malformed breaks the protocol (:func:`etag_of`), since
that ETag is no version and, sent back as ``If-Match``, no condition at all.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import urllib3.exceptions
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)

from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

__all__ = [
    "FAILURES",
    "MAY_HAVE_BEEN_SENT",
    "NOT_SENT",
    "RULES",
    "UNSUPPORTED",
    "Failure",
    "Missing",
    "NotAnError",
    "NotModified",
    "Operation",
    "ProtocolViolation",
    "Result",
    "Rule",
    "answer",
    "azure_answers",
    "classify",
    "classify_failure",
    "etag_of",
    "usable_etag",
]

#: What a client call does: the docmem operations, and ``layout`` (the one listing with a
#: delimiter that looks for a docmem-fsspec store under the prefix, :mod:`docmem_azure.layout`).
Operation = Literal["read", "create", "update", "delete", "list", "layout"]


class NotAnError(Exception):
    """An answer the caller handles itself: raised out of :class:`azure_answers`, never shown."""


class Missing(NotAnError):
    """No such blob (a read answers ``None``, a delete is done)."""


class NotModified(NotAnError):
    """A read with ``If-None-Match`` was answered 304: the cached copy is current."""


#: A docmem error, or a plain answer for the caller.
Result = type[DocmemError] | type[NotAnError]


@dataclass(frozen=True)
class Rule:
    """One row: the operations it applies to, the error code and/or HTTP status, the result."""

    operations: frozenset[str]
    code: str | None
    status: int | None
    result: Result
    why: str


_ANY = frozenset({"read", "create", "update", "delete", "list", "layout"})
_WRITES = frozenset({"create", "update"})
_READS = _ANY - _WRITES

#: The service does not implement what a conditional Put Blob needs: the probe refuses it.
UNSUPPORTED: tuple[Rule, ...] = (
    Rule(_WRITES, None, 501, StoreUnavailable, "the server does not implement this request"),
)

RULES: tuple[Rule, ...] = (
    Rule(frozenset({"read"}), None, 304, NotModified, "conditional GET: unchanged"),
    Rule(_ANY, "ContainerNotFound", None, StoreUnavailable, "the container does not exist"),
    Rule(frozenset({"read", "delete"}), "BlobNotFound", None, Missing, "no such blob"),
    Rule(
        frozenset({"read", "delete"}),
        None,
        404,
        StoreUnavailable,
        "a 404 without the service's error code is not the blob service's answer (a proxy, "
        "a wrong endpoint): never taken as missing",
    ),
    Rule(
        frozenset({"update"}),
        "BlobNotFound",
        None,
        VersionConflict,
        "If-Match on a blob deleted meanwhile",
    ),
    Rule(_WRITES, None, 412, VersionConflict, "the condition did not hold (ConditionNotMet)"),
    Rule(
        _WRITES,
        "BlobAlreadyExists",
        409,
        VersionConflict,
        "If-None-Match: * on a blob that exists (a concurrent create won)",
    ),
    *UNSUPPORTED,
    Rule(_WRITES, None, 500, WriteOutcomeUnknown, "server error: the write may have landed"),
    Rule(_WRITES, None, 502, WriteOutcomeUnknown, "bad gateway: the write may have landed"),
    Rule(_WRITES, None, 503, WriteOutcomeUnknown, "server busy: the write may have landed"),
    Rule(_WRITES, None, 504, WriteOutcomeUnknown, "gateway timeout: the write may have landed"),
)


@dataclass(frozen=True)
class Failure:
    """One transport row: operations, the exception classes it covers, the result, a message.

    The message names the operation and the exception's class, never its text:
    azure-core's text quotes the request URL, and a SAS rides in its query.
    """

    operations: frozenset[str]
    raised: tuple[type[BaseException], ...]
    result: type[DocmemError]
    message: str
    why: str


#: Failures that provably happened before a byte of the request was sent.
NOT_SENT: tuple[type[Exception], ...] = (ServiceRequestError,)

#: What a client call raises once the request may have been sent: azure-core's
#: ``ServiceResponseError`` (a reset or timeout while waiting for the answer), an
#: ``HttpResponseError`` without an error status (``DecodeError``, ``IncompleteReadError``:
#: a body cut short or garbled), and what a body read outside azure-core's wrapping raises.
MAY_HAVE_BEEN_SENT: tuple[type[Exception], ...] = (
    ServiceResponseError,
    AzureError,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
    ValueError,
)

_LANDED = "the azure {operation} may or may not have landed ({name})"
_FAILED = "the azure {operation} failed on the way to or from the store ({name})"

FAILURES: tuple[Failure, ...] = (
    Failure(
        _ANY,
        (ClientAuthenticationError,),
        StoreNotConfigured,
        "no usable Azure credential ({name}): pass credential=... in code, set "
        "AZURE_STORAGE_CONNECTION_STRING, or configure DefaultAzureCredential's chain",
        "a token could not be had: nothing was sent, and retrying will not help",
    ),
    Failure(
        _ANY,
        NOT_SENT,
        StoreUnavailable,
        "the azure {operation} could not reach the store ({name})",
        "no connection: nothing was sent",
    ),
    Failure(
        _WRITES,
        MAY_HAVE_BEEN_SENT,
        WriteOutcomeUnknown,
        _LANDED,
        "the write may have been sent and landed: the journal settles it",
    ),
    Failure(_READS, MAY_HAVE_BEEN_SENT, StoreUnavailable, _FAILED, "no usable answer"),
    Failure(
        _WRITES,
        (Exception,),
        WriteOutcomeUnknown,
        _LANDED,
        "anything else a client call raised, whatever library: the write may have been sent",
    ),
    Failure(
        _READS,
        (Exception,),
        StoreUnavailable,
        _FAILED,
        "anything else a client call raised, whatever library",
    ),
)


def answer(exc: HttpResponseError) -> tuple[str, int]:
    """The service's error code and the HTTP status of an error answer ("" and 0 if absent).

    The code is the ``x-ms-error-code`` header, which the service sends with
    every error (a HEAD has no body to carry it), else what the SDK read
    from the body.
    """
    response = exc.response
    status = int(getattr(response, "status_code", 0) or 0)
    headers = getattr(response, "headers", None) or {}
    code = headers.get("x-ms-error-code") or getattr(exc, "error_code", None) or ""
    return str(getattr(code, "value", code)), status


def _rule_for(operation: Operation, code: str, status: int) -> Rule | None:
    for rule in RULES:
        if operation not in rule.operations:
            continue
        if rule.code is not None and rule.code != code:
            continue
        if rule.status is not None and rule.status != status:
            continue
        return rule
    return None


def classify(operation: Operation, code: str, status: int) -> Result:
    """The result of an error answer; anything no row matches is StoreUnavailable (5xx on a
    write: WriteOutcomeUnknown)."""
    rule = _rule_for(operation, code, status)
    if rule is not None:
        return rule.result
    if operation in _WRITES and status >= 500:
        return WriteOutcomeUnknown
    return StoreUnavailable


def classify_failure(operation: Operation, exc: BaseException) -> Failure:
    """The transport row for anything but an error answer a client call raised."""
    for failure in FAILURES:
        if operation in failure.operations and isinstance(exc, failure.raised):
            return failure
    raise TypeError(f"no transport row covers {type(exc).__name__}")  # FAILURES end in Exception


def _is_answer(exc: BaseException) -> bool:
    """An error *answer*: an HttpResponseError with a response whose status is an error's.

    A DecodeError or IncompleteReadError is an HttpResponseError too, on a 200
    whose body broke: that is a failed conversation, for :data:`FAILURES`.
    """
    if not isinstance(exc, HttpResponseError):
        return False
    status = getattr(exc.response, "status_code", None) or exc.status_code or 0
    return int(status) >= 300


class azure_answers:  # lower case, like contextlib's context managers
    """Raise, for anything the block raises, the docmem error the tables name for it.

    The block holds one client call of ``operation``. An error answer goes
    through :data:`RULES` (:class:`Missing` and :class:`NotModified` are
    raised for the caller to catch), any other exception through
    :data:`FAILURES`; a docmem error, or a ``BaseException`` that is no
    ``Exception`` (``KeyboardInterrupt``), passes unchanged. The mapped error
    is raised ``from None``: its message carries the code, status or class
    that matters, and the SDK's own exception, which quotes the request URL
    (and so a SAS), is no part of what a caller prints. :attr:`rule` is the
    row that decided (``None`` until one did).

    ``container`` only names the container in a ``ContainerNotFound`` message.
    """

    def __init__(self, operation: Operation, *, container: str = "") -> None:
        self.operation: Operation = operation
        self.container = container
        self.rule: Rule | Failure | None = None

    def __enter__(self) -> azure_answers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or not isinstance(exc, Exception):
            return
        if isinstance(exc, (DocmemError, NotAnError)):
            return
        raise self._mapped(exc) from None

    def _mapped(self, exc: Exception) -> Exception:
        if not _is_answer(exc):
            failure = classify_failure(self.operation, exc)
            self.rule = failure
            name = type(exc).__name__
            return failure.result(failure.message.format(operation=self.operation, name=name))
        assert isinstance(exc, HttpResponseError)
        code, status = answer(exc)
        self.rule = _rule_for(self.operation, code, status)
        result = classify(self.operation, code, status)
        if issubclass(result, NotAnError):
            return result()
        return self._answer_error(result, _safe_code(code), status)

    def _answer_error(self, result: type[DocmemError], code: str, status: int) -> DocmemError:
        operation = self.operation
        if result is VersionConflict:
            return VersionConflict(f"the azure {operation} condition did not hold ({code})")
        if result is WriteOutcomeUnknown:
            return WriteOutcomeUnknown(
                f"the azure {operation} may or may not have landed (HTTP {status}, {code})"
            )
        if code == "ContainerNotFound":
            named = f" {self.container!r}" if self.container else ""
            return StoreUnavailable(
                f"the azure container{named} does not exist: create it first (docmem never "
                "creates containers, and never reads a missing one as an empty store)"
            )
        if status == 403:
            return result(
                f"the azure {operation} was refused (HTTP 403, {code}): check the credential "
                "and its permissions on the container"
            )
        return result(f"the azure {operation} failed (HTTP {status}, {code})")


_CODE = re.compile(r"[A-Za-z0-9]{1,64}")


def _safe_code(code: str) -> str:
    """An error code fit for a message: the service's are short words; others are not shown."""
    return code if _CODE.fullmatch(code) else "unknown"


class ProtocolViolation(StoreUnavailable):
    """The server's answer breaks the blob protocol docmem relies on, so it cannot be used.

    For example a successful answer without a well-formed ETag: docmem has no
    version to make its next write conditional on, and writing without one
    could lose another writer's update.
    """

    code = "protocol_violation"


# RFC 9110 entity-tag: an optional weak marker, then a quoted, here non-empty, run of etagc.
_ETAG = re.compile(r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]+"')


def usable_etag(value: object) -> bool:
    """Whether ``value`` is a well-formed, non-empty entity tag (the service's are quoted).

    A blank or ``""`` ETag is no version: sent back as ``If-Match`` it is no
    condition a server can be trusted to apply.
    """
    return isinstance(value, str) and _ETAG.fullmatch(value) is not None


def etag_of(properties: Mapping[str, Any] | Any, operation: Operation) -> str:
    """The ETag of a successful read exactly as sent, or ProtocolViolation.

    A write's answer without one is WriteOutcomeUnknown instead (the bytes may
    have landed, only their version is unknown): see ``AzureBlobBackend.write``.
    """
    etag = properties.get("etag") if isinstance(properties, Mapping) else properties.etag
    if usable_etag(etag):
        return str(etag)
    state = "no" if not etag else "a malformed"
    raise ProtocolViolation(
        f"the azure {operation} answer carries {state} ETag, so docmem cannot make the next "
        "write conditional on it; the store (or a proxy or gateway in front of it) breaks "
        "the blob protocol and is not written to"
    )
