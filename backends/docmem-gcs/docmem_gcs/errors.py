"""How GCS answers map onto docmem's errors: one table, one mapping, most specific row first.

Every client call that talks to GCS (the backend's, the probe's, the layout
guard's, the purge check's) runs inside :class:`gcs_answers`, which raises the
docmem error its row names::

    with gcs_answers("update", bucket=bucket):
        blob.upload_from_string(data, if_generation_match=generation, retry=None)

Two tables decide. :data:`RULES` classifies an error *answer* (a
``google.api_core.exceptions.GoogleAPICallError``, which the SDK raises for
JSON answers and media transfers alike) by its HTTP status and, where the
status alone is ambiguous, by what it says: a 404 is a missing object on a
read, but a misconfiguration when the bucket is missing (a listing, an
upload, or an answer saying so). :data:`FAILURES` classifies a conversation
that failed below GCS (no connection, a reset, a body cut short, credentials
that cannot be found or refreshed) by whether the request may have been
sent. Two error answers are no errors to docmem: :class:`Missing` and
:class:`NotModified` are raised for the caller to catch.

One kind of answer never reaches the tables: a successful answer without a
well-formed generation breaks the protocol (:func:`usable_generation`), since
that generation is no version and, sent back as ``ifGenerationMatch``, no
condition docmem can trust.
"""

from __future__ import annotations

import http.client
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import google.auth.exceptions
import requests.exceptions
import urllib3.exceptions
from google.api_core.exceptions import GoogleAPICallError

from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

__all__ = [
    "BUCKET_MISSING",
    "FAILURES",
    "MAY_HAVE_BEEN_SENT",
    "PERMISSIONS",
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
    "classify",
    "classify_failure",
    "gcs_answers",
    "generation_of",
    "generation_text",
    "never_sent",
    "usable_generation",
]

Operation = Literal["read", "create", "update", "delete", "list", "list-versions"]


class NotAnError(Exception):
    """A GCS error answer that is a plain answer to docmem, raised for the caller to catch.

    Never escapes a backend method: the caller turns it into a return value.
    """


class Missing(NotAnError):
    """The object does not exist: a read returns ``None``, a delete has nothing to do."""


class NotModified(NotAnError):
    """A 304 to a download with ``ifGenerationNotMatch``: the cached copy is current."""


#: The reason :func:`answer` gives a 404 whose text says the bucket is missing (GCS answers
#: "The specified bucket does not exist."); fake-gcs-server says only "Not Found", so a
#: store also lists its bucket once per process before its first request (docmem_gcs.layout).
BUCKET_MISSING = "bucketMissing"

#: What a row decides: a docmem error to raise, or a plain answer for the caller.
Result = type[DocmemError] | type[NotAnError]


@dataclass(frozen=True)
class Rule:
    """One row: operations it applies to, the HTTP status and/or reason, the result, why."""

    operations: frozenset[str]
    status: int | None
    reason: str | None
    result: Result
    why: str


_ANY = frozenset({"read", "create", "update", "delete", "list", "list-versions"})
_WRITES = frozenset({"create", "update"})
_READS = _ANY - _WRITES

#: The IAM permission each call needs, named when GCS refuses it (403).
PERMISSIONS = {
    "read": "storage.objects.get",
    "create": "storage.objects.create",
    "update": "storage.objects.create and storage.objects.delete",
    "delete": "storage.objects.delete",
    "list": "storage.objects.list",
    "list-versions": "storage.objects.list",
}

#: The server does not implement the request: the probe refuses such a store outright.
UNSUPPORTED: tuple[Rule, ...] = (
    Rule(_WRITES, 501, None, StoreUnavailable, "the server does not implement this request"),
)

RULES: tuple[Rule, ...] = (
    Rule(frozenset({"read"}), 304, None, NotModified, "ifGenerationNotMatch: unchanged"),
    Rule(_ANY, 404, BUCKET_MISSING, StoreNotConfigured, "the bucket does not exist"),
    Rule(frozenset({"read", "delete"}), 404, None, Missing, "no such object"),
    Rule(
        frozenset({"list", "list-versions"}),
        404,
        None,
        StoreNotConfigured,
        "a listing 404s only when the bucket is missing",
    ),
    Rule(
        _WRITES,
        404,
        None,
        StoreNotConfigured,
        "an upload 404s only when the bucket is missing (a failed generation match is a 412)",
    ),
    Rule(_WRITES, 412, None, VersionConflict, "the generation condition did not hold"),
    Rule(
        _WRITES,
        409,
        None,
        VersionConflict,
        "another write of the object was in flight: re-read and retry",
    ),
    Rule(_ANY, 401, None, StoreNotConfigured, "the credentials were refused"),
    Rule(_ANY, 403, None, StoreUnavailable, "the credentials lack the permission this call needs"),
    Rule(_ANY, 429, None, StoreUnavailable, "rate limited: the request was refused, not applied"),
    *UNSUPPORTED,
    Rule(_WRITES, 500, None, WriteOutcomeUnknown, "server error: the write may have landed"),
    Rule(_WRITES, 502, None, WriteOutcomeUnknown, "bad gateway: the write may have landed"),
    Rule(_WRITES, 503, None, WriteOutcomeUnknown, "unavailable: the write may have landed"),
    Rule(_WRITES, 504, None, WriteOutcomeUnknown, "gateway timeout: the write may have landed"),
)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc``, its causes and what it wraps (requests wraps urllib3's error in ``args``)."""
    seen: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending and len(seen) < 16:
        current = pending.pop()
        if any(current is known for known in seen):
            continue
        seen.append(current)
        for inner in (current.__cause__, current.__context__, getattr(current, "reason", None)):
            if isinstance(inner, BaseException):
                pending.append(inner)
        pending.extend(arg for arg in current.args if isinstance(arg, BaseException))
    return seen


#: urllib3's errors that provably came before a byte of the request was sent.
_NOT_SENT = (
    urllib3.exceptions.NewConnectionError,
    urllib3.exceptions.ConnectTimeoutError,
    urllib3.exceptions.NameResolutionError,
)


def never_sent(exc: BaseException) -> bool:
    """Whether ``exc`` shows the request never left: no connection, or no credentials to sign.

    requests raises ``ConnectionError`` for a refused connection and for a
    connection reset after the request went out alike; the urllib3 error it
    wraps tells them apart. google-auth refreshes a token before it sends the
    request, so a failed refresh sent nothing to GCS.
    """
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return True
    if isinstance(exc, google.auth.exceptions.GoogleAuthError):
        return True
    return isinstance(exc, requests.exceptions.ConnectionError) and any(
        isinstance(inner, _NOT_SENT) for inner in _chain(exc)
    )


@dataclass(frozen=True)
class Failure:
    """One transport row: operations, the exceptions it covers, the result, a message, why.

    ``when`` narrows the row to exceptions it accepts. The message names the
    operation and the exception's class, never its text: a library's text may
    quote the request (its URL, a token endpoint's answer).
    """

    operations: frozenset[str]
    raised: tuple[type[BaseException], ...]
    result: type[DocmemError]
    message: str
    why: str
    when: Callable[[BaseException], bool] | None = None

    def covers(self, operation: str, exc: BaseException) -> bool:
        if operation not in self.operations or not isinstance(exc, self.raised):
            return False
        return self.when is None or self.when(exc)


#: What a client call raises when the request may have been sent: requests' errors (a
#: reset, a read timeout, a body cut short), urllib3's and http.client's underneath them,
#: the SDK's own for a checksum that does not match or an answer it cannot use
#: (``google.cloud.storage.exceptions``: plain ``Exception`` subclasses), ``ValueError``
#: for JSON that does not parse.
MAY_HAVE_BEEN_SENT: tuple[type[Exception], ...] = (
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
    ValueError,
    KeyError,
)

_LANDED = "the gs {operation} may or may not have landed ({name})"
_FAILED = "the gs {operation} failed on the way to or from the store ({name})"

FAILURES: tuple[Failure, ...] = (
    Failure(
        _ANY,
        (google.auth.exceptions.DefaultCredentialsError,),
        StoreNotConfigured,
        "no usable Google credentials: set up application-default credentials "
        "(GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, a "
        "metadata server), or give credentials_file, or pass credentials in code",
        "no credentials: nothing was sent, and retrying will not help",
    ),
    Failure(
        _ANY,
        (google.auth.exceptions.RefreshError,),
        StoreNotConfigured,
        "the Google credentials could not be refreshed ({name}): check them",
        "the token endpoint refused the credentials for good: nothing was sent to GCS",
        when=lambda exc: not getattr(exc, "retryable", False),
    ),
    Failure(
        _ANY,
        (Exception,),
        StoreUnavailable,
        "the gs {operation} could not reach the store ({name})",
        "no connection, or a token refresh that may succeed later: nothing was sent",
        when=never_sent,
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

_BUCKET_TEXT = re.compile(r"bucket does not exist", re.IGNORECASE)


def answer(exc: GoogleAPICallError) -> tuple[int, str]:
    """The HTTP status of an error answer and its reason ("" if it gives none).

    :data:`BUCKET_MISSING` when a 404 says the bucket does not exist. Only
    the reason is kept, never the answer's text, which may quote the request.
    """
    status = int(exc.code or 0)
    reason = _reason_of(exc)
    if status == 404 and _BUCKET_TEXT.search(_text_of(exc)):
        reason = BUCKET_MISSING
    return status, reason


def _reason_of(exc: GoogleAPICallError) -> str:
    """The first ``errors[].reason`` of a JSON error answer (``conditionNotMet``, ``notFound``)."""
    errors = exc.errors or []
    first = errors[0] if errors else None
    reason = first.get("reason") if isinstance(first, dict) else None
    return reason if isinstance(reason, str) else ""


def _text_of(exc: GoogleAPICallError) -> str:
    response = getattr(exc, "response", None)
    text = getattr(response, "text", None)
    try:
        return f"{exc.message} {text if isinstance(text, str) else ''}"
    except Exception:  # a response whose text cannot be decoded says nothing useful
        return str(exc.message)


def _rule_for(operation: Operation, status: int, reason: str) -> Rule | None:
    for rule in RULES:
        if operation not in rule.operations:
            continue
        if rule.status is not None and rule.status != status:
            continue
        if rule.reason is not None and rule.reason != reason:
            continue
        return rule
    return None


def classify(operation: Operation, status: int, reason: str = "") -> Result:
    """The result of a GCS error answer; anything no row matches is StoreUnavailable."""
    rule = _rule_for(operation, status, reason)
    if rule is not None:
        return rule.result
    if operation in _WRITES and status >= 500:
        return WriteOutcomeUnknown
    return StoreUnavailable


def classify_failure(operation: Operation, exc: BaseException) -> Failure:
    """The transport row for anything but a GCS error answer a client call raised."""
    for failure in FAILURES:
        if failure.covers(operation, exc):
            return failure
    raise TypeError(f"no transport row covers {type(exc).__name__}")  # FAILURES end in Exception


class gcs_answers:  # lower case, like contextlib's context managers
    """Raise, for anything the block raises, the docmem error the tables name for it.

    The block holds one client call of ``operation``. An error answer goes
    through :data:`RULES` (:class:`Missing` and :class:`NotModified` are
    raised for the caller to catch), any other exception through
    :data:`FAILURES`; a docmem error, or a ``BaseException`` that is no
    ``Exception``, passes unchanged. The mapped error is raised ``from
    None``: the library's own exception quotes the request URL and the
    server's words, no part of what a caller prints. :attr:`rule` is the row
    that decided. ``bucket`` only names the bucket in a missing-bucket message.
    """

    def __init__(self, operation: Operation, *, bucket: str = "") -> None:
        self.operation: Operation = operation
        self.bucket = bucket
        self.rule: Rule | Failure | None = None

    def __enter__(self) -> gcs_answers:
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
        if not isinstance(exc, GoogleAPICallError) or not exc.code:
            failure = classify_failure(self.operation, exc)
            self.rule = failure
            name = type(exc).__name__
            return failure.result(failure.message.format(operation=self.operation, name=name))
        status, reason = answer(exc)
        self.rule = _rule_for(self.operation, status, reason)
        result = classify(self.operation, status, reason)
        if issubclass(result, NotAnError):
            return result()
        return self._answer_error(result, status)

    def _answer_error(self, result: type[DocmemError], status: int) -> DocmemError:
        operation = self.operation
        if result is VersionConflict:
            return VersionConflict(f"the gs {operation} condition did not hold (HTTP {status})")
        if result is WriteOutcomeUnknown:
            return WriteOutcomeUnknown(
                f"the gs {operation} may or may not have landed (HTTP {status})"
            )
        if status == 404 and result is StoreNotConfigured:
            named = f" {self.bucket!r}" if self.bucket else ""
            return StoreNotConfigured(
                f"the gs bucket{named} does not exist: create it (docmem never creates buckets)"
            )
        if status == 401:
            return result(f"the gs {operation} was refused (HTTP 401): check the credentials")
        if status == 403:
            return result(
                f"the gs {operation} was refused (HTTP 403): the credentials need "
                f"{PERMISSIONS[operation]}"
            )
        return result(f"the gs {operation} failed (HTTP {status})")


class ProtocolViolation(StoreUnavailable):
    """The server's answer breaks the GCS protocol docmem relies on, so it cannot be used.

    For example a download or listing without a well-formed generation:
    docmem has no version to make its next write conditional on.
    """

    code = "protocol_violation"


_GENERATION = re.compile(r"[1-9][0-9]{0,19}")


def usable_generation(value: object) -> bool:
    """Whether ``value`` is an object generation: a positive decimal of at most 20 digits.

    ``0`` is no generation (as ``ifGenerationMatch`` it means "does not
    exist"), and neither is a blank or anything that is not a decimal.
    """
    return (
        isinstance(value, (str, int))
        and not isinstance(value, bool)
        and (_GENERATION.fullmatch(str(value)) is not None)
    )


def generation_of(value: Any, operation: Operation) -> str:
    """The generation a successful read or listing names, as a decimal; else ProtocolViolation."""
    if usable_generation(value):
        return str(value)
    state = "no" if value is None else "a malformed"
    raise ProtocolViolation(
        f"the gs {operation} answer carries {state} generation, so docmem cannot make the "
        "next write conditional on it; the store (or a proxy in front of it) breaks the GCS "
        "protocol and is not written to"
    )


def generation_text(blob: Any) -> str:
    """The generation the SDK took from the last answer about ``blob`` ("" if none or malformed).

    From a download's ``x-goog-generation`` header or an upload's JSON answer:
    the generation of exactly the bytes that answer carried or stored.
    """
    try:
        value = blob.generation
    except (TypeError, ValueError):
        return ""
    return "" if value is None else str(value)
