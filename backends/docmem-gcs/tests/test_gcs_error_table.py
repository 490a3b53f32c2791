"""The GCS error table: every answer GCS gives maps to exactly what docs/design.md, section 4 says.

Both tables are covered row by row: the error answers (:data:`RULES`) and the
failures below GCS (:data:`FAILURES`); a row no case reaches fails the suite.
"""

from __future__ import annotations

import http.client
from typing import Any

import google.auth.exceptions
import pytest
import requests
import requests.exceptions
import urllib3.exceptions
from google.api_core import exceptions as api
from google.cloud.storage.exceptions import DataCorruption

from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem_gcs.errors import (
    BUCKET_MISSING,
    FAILURES,
    PERMISSIONS,
    RULES,
    UNSUPPORTED,
    Missing,
    NotModified,
    Operation,
    answer,
    classify,
    classify_failure,
    gcs_answers,
    never_sent,
    usable_generation,
)

CASES = [
    # (operation, status, reason, expected)
    ("read", 304, "", NotModified),
    ("read", 404, BUCKET_MISSING, StoreNotConfigured),
    ("create", 404, BUCKET_MISSING, StoreNotConfigured),
    ("list", 404, BUCKET_MISSING, StoreNotConfigured),
    ("read", 404, "notFound", Missing),
    ("read", 404, "", Missing),
    ("delete", 404, "notFound", Missing),
    ("list", 404, "", StoreNotConfigured),
    ("list-versions", 404, "notFound", StoreNotConfigured),
    ("create", 404, "", StoreNotConfigured),
    ("update", 404, "notFound", StoreNotConfigured),
    ("create", 412, "conditionNotMet", VersionConflict),
    ("update", 412, "", VersionConflict),
    ("update", 409, "conflict", VersionConflict),
    ("read", 401, "required", StoreNotConfigured),
    ("create", 401, "", StoreNotConfigured),
    ("read", 403, "forbidden", StoreUnavailable),
    ("update", 403, "forbidden", StoreUnavailable),
    ("list", 403, "", StoreUnavailable),
    ("read", 429, "rateLimitExceeded", StoreUnavailable),
    ("update", 429, "", StoreUnavailable),
    ("create", 501, "", StoreUnavailable),
    ("create", 500, "backendError", WriteOutcomeUnknown),
    ("update", 502, "", WriteOutcomeUnknown),
    ("update", 503, "", WriteOutcomeUnknown),
    ("create", 504, "", WriteOutcomeUnknown),
    ("create", 599, "", WriteOutcomeUnknown),  # no row: any other 5xx of a write
    ("update", 400, "invalid", StoreUnavailable),
    ("read", 500, "", StoreUnavailable),
    ("read", 416, "", StoreUnavailable),
    ("delete", 503, "", StoreUnavailable),
    ("list", 500, "", StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "status", "reason", "expected"), CASES)
def test_classify(operation: Operation, status: int, reason: str, expected: object) -> None:
    assert classify(operation, status, reason) == expected


def test_every_rule_is_exercised() -> None:
    """A row no case reaches is either dead or untested: both are bugs (transport rows too)."""
    used = set()
    for operation, status, reason, _ in CASES:
        for number, rule in enumerate(RULES):
            if (
                operation in rule.operations
                and rule.status in (None, status)
                and rule.reason in (None, reason)
            ):
                used.add(number)
                break
    assert used == set(range(len(RULES)))
    failures = {FAILURES.index(classify_failure(op, exc)) for op, exc, _ in FAILURE_CASES}
    assert failures == set(range(len(FAILURES)))


def _refused() -> requests.exceptions.ConnectionError:
    """What requests raises when nothing listens: urllib3's NewConnectionError inside."""
    reason = urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]
    pool_error = urllib3.exceptions.MaxRetryError(None, "/", reason)  # type: ignore[arg-type]
    return requests.exceptions.ConnectionError(pool_error)


def _reset() -> requests.exceptions.ConnectionError:
    """What requests raises for a connection reset once the request went out."""
    inner = urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104))
    return requests.exceptions.ConnectionError(inner)


_NO_POOL: Any = None

#: (operation, what a client call raised, expected): the classes requests, urllib3,
#: google-auth and the SDK raise (tests/test_gcs_protocol.py meets several for real).
FAILURE_CASES: list[tuple[Operation, Exception, type[DocmemError]]] = [
    ("read", google.auth.exceptions.DefaultCredentialsError("none"), StoreNotConfigured),
    ("create", google.auth.exceptions.DefaultCredentialsError("none"), StoreNotConfigured),
    ("update", google.auth.exceptions.RefreshError("invalid_grant"), StoreNotConfigured),
    ("read", google.auth.exceptions.RefreshError("invalid_grant"), StoreNotConfigured),
    ("read", google.auth.exceptions.RefreshError("metadata 503", retryable=True), StoreUnavailable),
    ("create", google.auth.exceptions.TransportError("no token endpoint"), StoreUnavailable),
    ("read", _refused(), StoreUnavailable),
    ("create", _refused(), StoreUnavailable),
    ("update", requests.exceptions.ConnectTimeout(), StoreUnavailable),
    ("create", _reset(), WriteOutcomeUnknown),
    ("update", requests.exceptions.ReadTimeout(), WriteOutcomeUnknown),
    ("update", requests.exceptions.ChunkedEncodingError(), WriteOutcomeUnknown),
    ("update", urllib3.exceptions.ProtocolError("Connection broken"), WriteOutcomeUnknown),
    ("create", ValueError("Expecting value"), WriteOutcomeUnknown),
    ("create", ConnectionResetError(), WriteOutcomeUnknown),
    ("read", _reset(), StoreUnavailable),
    ("read", requests.exceptions.ChunkedEncodingError(), StoreUnavailable),
    ("read", urllib3.exceptions.ReadTimeoutError(_NO_POOL, "/", "timed out"), StoreUnavailable),
    ("read", http.client.IncompleteRead(b""), StoreUnavailable),
    ("list", KeyError("items"), StoreUnavailable),
    ("delete", requests.exceptions.ReadTimeout(), StoreUnavailable),
    ("create", DataCorruption(None, "checksum"), WriteOutcomeUnknown),
    ("read", DataCorruption(None, "checksum"), StoreUnavailable),
    ("list-versions", RuntimeError("nobody expects it"), StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "raised", "expected"), FAILURE_CASES)
def test_classify_failure(operation: Operation, raised: Exception, expected: type) -> None:
    assert classify_failure(operation, raised).result is expected


def test_only_what_never_left_counts_as_never_sent() -> None:
    assert never_sent(_refused())
    assert never_sent(requests.exceptions.ConnectTimeout())
    assert not never_sent(_reset())
    assert not never_sent(requests.exceptions.ReadTimeout())


def _answer(status: int, reason: str = "", text: str = "the server's words") -> Exception:
    response = requests.Response()
    response.status_code = status
    response._content = text.encode()
    errors = [{"reason": reason, "message": text}] if reason else []
    return api.from_http_status(status, text, response=response, errors=errors)


@pytest.mark.parametrize(("operation", "status", "reason", "expected"), CASES)
def test_gcs_answers_raises_what_the_table_says(
    operation: Operation, status: int, reason: str, expected: type[Exception]
) -> None:
    if reason == BUCKET_MISSING:
        sent = _answer(status, "notFound", "The specified bucket does not exist.")
    else:
        sent = _answer(status, reason)
    with pytest.raises(expected) as caught, gcs_answers(operation, bucket="b"):
        raise sent
    assert type(caught.value) is expected
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    if isinstance(caught.value, DocmemError):
        assert "the server's words" not in caught.value.message


@pytest.mark.parametrize(("operation", "raised", "expected"), FAILURE_CASES)
def test_gcs_answers_maps_failures_by_their_class_never_their_text(
    operation: Operation, raised: Exception, expected: type[DocmemError]
) -> None:
    with pytest.raises(expected) as caught, gcs_answers(operation):
        raise raised
    assert type(caught.value) is expected
    assert not str(raised) or str(raised) not in caught.value.message
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_answer_reads_a_missing_bucket_from_its_text_only_on_a_404() -> None:
    said = "The specified bucket does not exist."
    assert answer(_answer(404, "notFound", said)) == (404, BUCKET_MISSING)  # type: ignore[arg-type]
    assert answer(_answer(404, "notFound", "No such object: b/o")) == (404, "notFound")  # type: ignore[arg-type]
    assert answer(_answer(403, "forbidden", said)) == (403, "forbidden")  # type: ignore[arg-type]


def test_gcs_answers_passes_docmem_errors_and_interrupts_through() -> None:
    own = VersionConflict("decided inside the block")
    with pytest.raises(VersionConflict) as caught, gcs_answers("update"):
        raise own
    assert caught.value is own
    with pytest.raises(KeyboardInterrupt), gcs_answers("read"):
        raise KeyboardInterrupt
    with gcs_answers("read") as answers:
        pass
    assert answers.rule is None


def test_gcs_answers_names_the_row_that_decided() -> None:
    answers = gcs_answers("create")
    with pytest.raises(StoreUnavailable), answers:
        raise _answer(501)
    assert answers.rule in UNSUPPORTED
    answers = gcs_answers("update")
    with pytest.raises(WriteOutcomeUnknown), answers:
        raise _reset()
    assert answers.rule in FAILURES


@pytest.mark.parametrize(("operation", "permission"), sorted(PERMISSIONS.items()))
def test_a_refused_call_names_the_permission_it_needs(
    operation: Operation, permission: str
) -> None:
    with pytest.raises(StoreUnavailable) as caught, gcs_answers(operation):
        raise _answer(403, "forbidden")
    assert permission in caught.value.message


def test_a_missing_bucket_is_named_in_the_message() -> None:
    missing = pytest.raises(StoreNotConfigured, match="'the-bucket' does not exist")
    with missing, gcs_answers("list", bucket="the-bucket"):
        raise _answer(404, "notFound")


@pytest.mark.parametrize(
    ("generation", "usable"),
    [
        ("1796222055497710", True),
        (1796222055497710, True),
        ("1", True),
        ("0", False),  # as ifGenerationMatch: "does not exist", never a version
        ("", False),
        ("-5", False),
        ("01", False),
        ("1_0", False),
        (" 12", False),
        ("1" * 21, False),
        ('"abc"', False),
        (True, False),
        (None, False),
        (b"12", False),
    ],
)
def test_usable_generation(generation: object, usable: bool) -> None:
    assert usable_generation(generation) is usable
