"""How S3 answers map onto docmem's errors: one table, most specific row first.

S3 errors are told apart by their code, not only their status: a 404 is a
missing object on a read, a lost race on a conditional update (the object was
deleted meanwhile), and a misconfiguration when the bucket is missing.

Two kinds of answer never reach the table. A successful answer whose ETag is
missing, empty or malformed breaks the protocol (:func:`etag_of`): that ETag
is no version, and sent back as ``If-Match`` it would be no condition at all.
And a conversation that fails below S3 (a reset, a body cut short, an answer
botocore cannot parse) is a transport failure (:func:`transport_failure`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from botocore.exceptions import (
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ProxyConnectionError,
)

from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

__all__ = [
    "MISSING",
    "NOT_MODIFIED",
    "RULES",
    "UNREADABLE",
    "Operation",
    "ProtocolViolation",
    "Rule",
    "answer",
    "classify",
    "etag_of",
    "transport_failure",
    "usable_etag",
]

Operation = Literal["read", "create", "update", "delete", "list"]

#: Sentinels for the two answers that are not errors.
MISSING = "missing"  # the object does not exist: read() returns None
NOT_MODIFIED = "not_modified"  # 304 to a conditional GET: the cached copy is current
#: The code :func:`answer` gives an error whose announced body could not be parsed (cut
#: short or garbled): botocore then reports the status as the code, and a missing bucket
#: would look like a missing object.
UNREADABLE = "unreadable body"

Outcome = type[DocmemError] | str


@dataclass(frozen=True)
class Rule:
    """One row: operations it applies to, the S3 error code and/or HTTP status, the result."""

    operations: frozenset[str]
    code: str | None
    status: int | None
    result: Outcome
    why: str


_ANY = frozenset({"read", "create", "update", "delete", "list"})
_WRITES = frozenset({"create", "update"})

RULES: tuple[Rule, ...] = (
    Rule(frozenset({"read"}), None, 304, NOT_MODIFIED, "conditional GET: unchanged"),
    Rule(_ANY, "NoSuchBucket", None, StoreUnavailable, "the bucket does not exist"),
    Rule(
        frozenset({"read", "delete"}),
        UNREADABLE,
        404,
        StoreUnavailable,
        "a 404 whose error body was cut or garbled: perhaps NoSuchBucket, never taken as missing",
    ),
    Rule(frozenset({"read"}), "NoSuchKey", None, MISSING, "no such object"),
    Rule(frozenset({"read"}), None, 404, MISSING, "no such object (no error body)"),
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
    Rule(frozenset({"delete"}), "NoSuchKey", None, MISSING, "already gone"),
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
    Rule(
        _WRITES,
        "NotImplemented",
        None,
        StoreUnavailable,
        "the server does not implement conditional writes",
    ),
    Rule(_WRITES, None, 501, StoreUnavailable, "the server does not implement this request"),
    Rule(_WRITES, None, 500, WriteOutcomeUnknown, "server error: the write may have landed"),
    Rule(_WRITES, None, 502, WriteOutcomeUnknown, "bad gateway: the write may have landed"),
    Rule(_WRITES, None, 503, WriteOutcomeUnknown, "unavailable: the write may have landed"),
    Rule(_WRITES, None, 504, WriteOutcomeUnknown, "gateway timeout: the write may have landed"),
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


def classify(operation: Operation, code: str, status: int) -> Outcome:
    """The result of an S3 error answer; anything no row matches is StoreUnavailable."""
    for rule in RULES:
        if operation not in rule.operations:
            continue
        if rule.code is not None and rule.code != code:
            continue
        if rule.status is not None and rule.status != status:
            continue
        return rule.result
    if operation in _WRITES and status >= 500:
        return WriteOutcomeUnknown
    return StoreUnavailable


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


#: Failures that provably happened before a byte of the request was sent.
NOT_SENT: tuple[type[Exception], ...] = (
    EndpointConnectionError,
    ConnectTimeoutError,
    ProxyConnectionError,
)


def transport_failure(operation: Operation, exc: Exception) -> DocmemError:
    """The docmem error for anything but a ClientError raised by a client call.

    botocore does not wrap every failure. For an operation with a streaming
    answer (GetObject) it reads an *error* body in
    ``botocore.endpoint.convert_to_response_dict``, outside the ``try`` that
    wraps transport errors (``botocore.httpsession`` reads other bodies inside
    its own), so a body cut short raises urllib3's ``ProtocolError`` (or its
    ``ReadTimeoutError``, ``SSLError``). Its parsers raise ``ValueError`` for a
    malformed header of any answer (``Last-Modified``, ``x-amz-object-size``),
    and its url-decoding after-call handler ``KeyError`` for a listed object
    without a key; ``ResponseParserError`` is no ``BotoCoreError`` either.
    Each is the conversation with the store failing, whatever library raised
    it: a read, delete or listing is unavailable, and a write that may have
    been sent has an unknown outcome, which the provider settles through the
    journal.
    """
    name = type(exc).__name__
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return StoreNotConfigured(
            "no usable AWS credentials: configure the standard AWS chain "
            "(environment, shared config, instance role) or pass a boto3 session"
        )
    if isinstance(exc, NOT_SENT):
        return StoreUnavailable(f"the s3 {operation} could not reach the store ({name})")
    if operation in _WRITES:
        return WriteOutcomeUnknown(f"the s3 {operation} may or may not have landed ({name})")
    return StoreUnavailable(f"the s3 {operation} failed on the way to or from the store ({name})")
