"""How S3 answers map onto docmem's errors: one table, one mapping, most specific row first.

Every client call that talks to S3 (the backend's, the probe's, the history and
purge of a versioned bucket's older versions, docmem-fsspec's S3 create) runs inside
:class:`s3_answers`, which raises the docmem error its row names::

    with s3_answers("update", bucket=bucket):
        response = writer.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=etag)

Two tables decide. :data:`RULES` classifies an error *answer* (a botocore
``ClientError``) by its code, not only its status: a 404 is a missing object
on a read, a lost race on a conditional update (the object was deleted
meanwhile), and a misconfiguration when the bucket is missing.
:data:`FAILURES` classifies a conversation that failed below S3 (no
connection, a reset, a body cut short, an answer botocore cannot parse) by
whether the request may have been sent. Two error answers are no errors to
docmem: :class:`Missing` and :class:`NotModified` are raised for the caller
to catch, and so is :class:`NoVersioning` for a server without bucket versioning.

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
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ProxyConnectionError,
)
from botocore.parsers import ResponseParserError

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
    "PERMISSIONS",
    "REFUSED",
    "RULES",
    "UNREADABLE",
    "UNSUPPORTED",
    "Failure",
    "Missing",
    "NoVersioning",
    "NotAnError",
    "NotModified",
    "Operation",
    "ProtocolViolation",
    "Result",
    "Rule",
    "answer",
    "classify",
    "classify_failure",
    "etag_of",
    "s3_answers",
    "usable_etag",
]

Operation = Literal[
    "read",
    "create",
    "update",
    "delete",
    "list",
    "get-versioning",
    "list-versions",
    "delete-version",
    "read-version",
]


class NotAnError(Exception):
    """An S3 error answer that is a plain answer to docmem, raised for the caller to catch.

    Never escapes a backend method: the caller turns it into a return value.
    """


class Missing(NotAnError):
    """The object does not exist: a read returns ``None``, a delete has nothing to do."""


class NotModified(NotAnError):
    """A 304 to a conditional GET: the cached copy is current."""


class NoVersioning(NotAnError):
    """The server implements no bucket versioning, so it keeps no older versions to purge."""


#: The code :func:`answer` gives an error whose announced body could not be parsed (cut
#: short or garbled): botocore then reports the status as the code, and a missing bucket
#: would look like a missing object.
UNREADABLE = "unreadable body"

#: What a row decides: a docmem error to raise, or a plain answer for the caller.
Result = type[DocmemError] | type[NotAnError]


@dataclass(frozen=True)
class Rule:
    """One row: operations it applies to, the S3 error code and/or HTTP status, the result."""

    operations: frozenset[str]
    code: str | None
    status: int | None
    result: Result
    why: str


#: The calls on a versioned bucket's history: GetBucketVersioning, ListObjectVersions, and
#: DeleteObject and GetObject with a VersionId (``docmem_s3.history``).
_HISTORY = frozenset({"get-versioning", "list-versions", "delete-version", "read-version"})
_ANY = frozenset({"read", "create", "update", "delete", "list"}) | _HISTORY
_WRITES = frozenset({"create", "update"})
_READS = _ANY - _WRITES

#: The permission each history call needs, named when it is refused. Only these: an
#: AccessDenied on a PUT may be KMS refusing the key, not S3 refusing s3:PutObject.
PERMISSIONS: Mapping[str, str] = {
    "get-versioning": "s3:GetBucketVersioning",
    "list-versions": "s3:ListBucketVersions",
    "delete-version": "s3:DeleteObjectVersion",
    "read-version": "s3:GetObjectVersion (and kms:Decrypt for an SSE-KMS object)",
}

#: A history call refused: the message names the permission it needs (:data:`PERMISSIONS`).
REFUSED: tuple[Rule, ...] = (
    Rule(
        _HISTORY,
        "AccessDenied",
        None,
        StoreUnavailable,
        "refused: the credentials lack the one permission this history call needs",
    ),
)

#: The server does not implement conditional writes: the probe refuses such a store outright.
UNSUPPORTED: tuple[Rule, ...] = (
    Rule(
        _WRITES,
        "NotImplemented",
        None,
        StoreUnavailable,
        "the server does not implement conditional writes",
    ),
    Rule(_WRITES, None, 501, StoreUnavailable, "the server does not implement this request"),
)

RULES: tuple[Rule, ...] = (
    Rule(frozenset({"read"}), None, 304, NotModified, "conditional GET: unchanged"),
    Rule(_ANY, "NoSuchBucket", None, StoreUnavailable, "the bucket does not exist"),
    Rule(
        frozenset({"read", "delete", "read-version"}),
        UNREADABLE,
        404,
        StoreUnavailable,
        "a 404 whose error body was cut or garbled: perhaps NoSuchBucket, never taken as missing",
    ),
    Rule(
        frozenset({"read-version"}),
        "NoSuchVersion",
        None,
        Missing,
        "gone: purged since the listing that named it",
    ),
    Rule(frozenset({"read", "read-version"}), "NoSuchKey", None, Missing, "no such object"),
    Rule(frozenset({"read", "read-version"}), None, 404, Missing, "no such object (no error body)"),
    Rule(
        frozenset({"update"}),
        "NoSuchKey",
        None,
        VersionConflict,
        "If-Match on an object deleted meanwhile",
    ),
    Rule(
        frozenset({"update"}),
        None,
        404,
        VersionConflict,
        "If-Match on an object deleted meanwhile (no error body)",
    ),
    Rule(frozenset({"delete"}), "NoSuchKey", None, Missing, "already gone"),
    Rule(
        frozenset({"delete-version"}),
        "NoSuchVersion",
        None,
        Missing,
        "already gone: another purge deleted it first",
    ),
    Rule(frozenset({"delete-version"}), "NoSuchKey", None, Missing, "already gone"),
    *REFUSED,
    Rule(
        frozenset({"get-versioning"}),
        "NotImplemented",
        None,
        NoVersioning,
        "a server without bucket versioning keeps no older versions",
    ),
    Rule(
        frozenset({"get-versioning"}),
        None,
        501,
        NoVersioning,
        "a server without bucket versioning keeps no older versions (no error body)",
    ),
    Rule(_WRITES, "PreconditionFailed", None, VersionConflict, "the condition did not hold"),
    Rule(_WRITES, None, 412, VersionConflict, "the condition did not hold"),
    Rule(
        _WRITES,
        "ConditionalRequestConflict",
        None,
        VersionConflict,
        "another conditional write was in flight: re-read and retry",
    ),
    Rule(_WRITES, None, 409, VersionConflict, "a concurrent conditional write won"),
    *UNSUPPORTED,
    Rule(_WRITES, None, 500, WriteOutcomeUnknown, "server error: the write may have landed"),
    Rule(_WRITES, None, 502, WriteOutcomeUnknown, "bad gateway: the write may have landed"),
    Rule(_WRITES, None, 503, WriteOutcomeUnknown, "unavailable: the write may have landed"),
    Rule(_WRITES, None, 504, WriteOutcomeUnknown, "gateway timeout: the write may have landed"),
)


@dataclass(frozen=True)
class Failure:
    """One transport row: operations, the exception classes it covers, the result, a message.

    The message names the operation and the exception's class, never its text:
    a library's text may quote the request (botocore's parameter validation
    quotes the values it refuses).
    """

    operations: frozenset[str]
    raised: tuple[type[BaseException], ...]
    result: type[DocmemError]
    message: str
    why: str


#: Failures that provably happened before a byte of the request was sent.
NOT_SENT: tuple[type[Exception], ...] = (
    EndpointConnectionError,
    ConnectTimeoutError,
    ProxyConnectionError,
)

#: What a client call raises when the request may have been sent (each one pinned by
#: ``backends/docmem-s3/tests/test_protocol.py``). botocore does not wrap every failure:
#: for an operation with a streaming answer (GetObject) it reads an *error* body in
#: ``botocore.endpoint.convert_to_response_dict``, outside the ``try`` that wraps transport
#: errors, so a body cut short raises urllib3's ``ProtocolError`` (or ``ReadTimeoutError``,
#: ``SSLError``, http.client's ``IncompleteRead``); its parsers raise ``ValueError`` for a
#: malformed header (``Last-Modified``, ``x-amz-object-size``), its url-decoding handler
#: ``KeyError`` for a listed object without a key, and ``ResponseParserError`` is no
#: ``BotoCoreError`` either.
MAY_HAVE_BEEN_SENT: tuple[type[Exception], ...] = (
    BotoCoreError,
    ResponseParserError,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
    ValueError,
    KeyError,
)

_LANDED = "the s3 {operation} may or may not have landed ({name})"
_FAILED = "the s3 {operation} failed on the way to or from the store ({name})"

FAILURES: tuple[Failure, ...] = (
    Failure(
        _ANY,
        (NoCredentialsError, PartialCredentialsError),
        StoreNotConfigured,
        "no usable AWS credentials: configure the standard AWS chain "
        "(environment, shared config, instance role) or pass a boto3 session",
        "no credentials: nothing was sent, and retrying will not help",
    ),
    Failure(
        _ANY,
        NOT_SENT,
        StoreUnavailable,
        "the s3 {operation} could not reach the store ({name})",
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


def answer(exc: Any) -> tuple[str, int]:
    """The S3 error code and HTTP status of a botocore ``ClientError`` ("" and 0 if absent).

    When the answer announced a body but botocore could not parse it, botocore
    gives the status itself as the code (``botocore.parsers``, the status
    fallback of the rest-xml error parse): that is :data:`UNREADABLE` here, so
    it is not mistaken for an answer that had no body at all.
    """
    response = exc.response
    metadata = response.get("ResponseMetadata", {})
    status = int(metadata.get("HTTPStatusCode", 0))
    code = str(response.get("Error", {}).get("Code", ""))
    if code == str(status) and _announced_body(metadata.get("HTTPHeaders", {})):
        code = UNREADABLE
    return code, status


def _announced_body(headers: Mapping[str, Any]) -> bool:
    lowered = {str(name).lower(): value for name, value in headers.items()}
    length = str(lowered.get("content-length", "0")).strip()
    return "transfer-encoding" in lowered or (length.isdigit() and int(length) > 0)


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
    """The result of an S3 error answer; anything no row matches is StoreUnavailable."""
    rule = _rule_for(operation, code, status)
    if rule is not None:
        return rule.result
    if operation in _WRITES and status >= 500:
        return WriteOutcomeUnknown
    return StoreUnavailable


def classify_failure(operation: Operation, exc: BaseException) -> Failure:
    """The transport row for anything but an S3 error answer a client call raised."""
    for failure in FAILURES:
        if operation in failure.operations and isinstance(exc, failure.raised):
            return failure
    raise TypeError(f"no transport row covers {type(exc).__name__}")  # FAILURES end in Exception


def _client_error_in(exc: BaseException) -> ClientError | None:
    """The S3 answer behind ``exc``: itself, or the cause of s3fs's translation of it.

    s3fs raises its own exception for an error answer (``FileExistsError`` for a
    failed ``If-None-Match``, ``PermissionError``, ``OSError`` with an errno)
    and keeps botocore's as ``__cause__``; the answer decides, not the translation.
    """
    if isinstance(exc, ClientError):
        return exc
    cause = exc.__cause__
    return cause if isinstance(cause, ClientError) else None


class s3_answers:  # lower case, like contextlib's context managers
    """Raise, for anything the block raises, the docmem error the tables name for it.

    The block holds one client call of ``operation``. An S3 error answer goes
    through :data:`RULES` (:class:`Missing` and :class:`NotModified` are
    raised for the caller to catch), any other exception through
    :data:`FAILURES`; a docmem error, or a ``BaseException`` that is no
    ``Exception`` (``KeyboardInterrupt``), passes unchanged. The mapped error
    is raised ``from None``: its message carries the code, status or class
    that matters, and the library's own exception, which may quote the
    request, is no part of what a caller prints. :attr:`rule` is the row that
    decided (``None`` until one did, or when no S3 row matched).

    ``bucket`` only names the bucket in a ``NoSuchBucket`` message.
    """

    def __init__(self, operation: Operation, *, bucket: str = "") -> None:
        self.operation: Operation = operation
        self.bucket = bucket
        self.rule: Rule | Failure | None = None

    def __enter__(self) -> s3_answers:
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
        client_error = _client_error_in(exc)
        if client_error is None:
            failure = classify_failure(self.operation, exc)
            self.rule = failure
            name = type(exc).__name__
            return failure.result(failure.message.format(operation=self.operation, name=name))
        code, status = answer(client_error)
        self.rule = _rule_for(self.operation, code, status)
        result = classify(self.operation, code, status)
        if issubclass(result, NotAnError):
            return result()
        return self._answer_error(result, code or "unknown", status)

    def _answer_error(self, result: type[DocmemError], code: str, status: int) -> DocmemError:
        operation = self.operation
        if result is VersionConflict:
            return VersionConflict(f"the s3 {operation} condition did not hold ({code})")
        if result is WriteOutcomeUnknown:
            return WriteOutcomeUnknown(
                f"the s3 {operation} may or may not have landed (HTTP {status}, {code})"
            )
        if code == "NoSuchBucket":
            named = f" {self.bucket!r}" if self.bucket else ""
            return StoreUnavailable(f"the s3 bucket{named} does not exist")
        if self.rule in REFUSED:
            return result(
                f"the s3 {operation} was refused (HTTP {status}, {code}): the credentials "
                f"need {PERMISSIONS[operation]}"
            )
        return result(f"the s3 {operation} failed (HTTP {status}, {code})")


class ProtocolViolation(StoreUnavailable):
    """The server's answer breaks the S3 protocol docmem relies on, so it cannot be used.

    For example a successful answer without a well-formed ETag: docmem has no
    version to make its next write conditional on, and writing without one
    could lose another writer's update.
    """

    code = "protocol_violation"


# RFC 9110 entity-tag: an optional weak marker, then a quoted, here non-empty, run of etagc.
_ETAG = re.compile(r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]+"')


def usable_etag(value: object) -> bool:
    """Whether ``value`` is a well-formed, non-empty entity tag (weak ones included).

    A blank or ``""`` ETag is no version: sent back, a blank ``If-Match`` is
    no condition at all to LocalStack, which turns an update into an
    unconditional overwrite. Whether a weak one is matched is the probe's
    question (:mod:`docmem_s3.probe`).
    """
    return isinstance(value, str) and _ETAG.fullmatch(value) is not None


def etag_of(response: Mapping[str, Any], operation: Operation) -> str:
    """The ETag of a successful read exactly as sent, or ProtocolViolation.

    A write's answer without one is WriteOutcomeUnknown instead (the bytes may
    have landed, only their version is unknown): see ``S3Backend.write``.
    """
    etag = response.get("ETag")
    if usable_etag(etag):
        return str(etag)
    state = "no" if etag is None else "an empty or malformed"
    raise ProtocolViolation(
        f"the s3 {operation} answer carries {state} ETag, so docmem cannot make the next "
        "write conditional on it; the store (or a proxy or gateway in front of it) breaks "
        "the S3 protocol and is not written to"
    )
