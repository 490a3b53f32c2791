"""The Azure error table: each answer of the blob service maps to what docs/design.md (4) says.

Both tables are covered row by row: the error answers (:data:`RULES`) and the
failures below the service (:data:`FAILURES`); a row no case reaches fails the suite.
"""

from __future__ import annotations

import http.client
from typing import Any

import pytest
import urllib3.exceptions
from azure.core.exceptions import (
    ClientAuthenticationError,
    DecodeError,
    HttpResponseError,
    IncompleteReadError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceRequestTimeoutError,
    ServiceResponseError,
    ServiceResponseTimeoutError,
)

from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem_azure.errors import (
    FAILURES,
    RULES,
    UNSUPPORTED,
    Missing,
    NotModified,
    Operation,
    azure_answers,
    classify,
    classify_failure,
    usable_etag,
)

CASES = [
    # (operation, x-ms-error-code, status, expected)
    ("read", "ConditionNotMet", 304, NotModified),
    ("read", "", 304, NotModified),
    ("read", "BlobNotFound", 404, Missing),
    ("read", "ContainerNotFound", 404, StoreUnavailable),
    ("read", "", 404, StoreUnavailable),
    ("read", "AuthenticationFailed", 403, StoreUnavailable),
    ("read", "AuthorizationPermissionMismatch", 403, StoreUnavailable),
    ("read", "InternalError", 500, StoreUnavailable),
    ("read", "ServerBusy", 503, StoreUnavailable),
    ("read", "InvalidHeaderValue", 400, StoreUnavailable),
    ("create", "BlobAlreadyExists", 409, VersionConflict),
    ("create", "ConditionNotMet", 412, VersionConflict),
    ("create", "", 412, VersionConflict),
    ("create", "LeaseIdMissing", 412, VersionConflict),
    ("create", "LeaseIdMissing", 409, StoreUnavailable),
    ("create", "", 409, StoreUnavailable),
    ("create", "ContainerNotFound", 404, StoreUnavailable),
    ("create", "AuthenticationFailed", 403, StoreUnavailable),
    ("create", "RequestBodyTooLarge", 413, StoreUnavailable),
    ("create", "NotImplemented", 501, StoreUnavailable),
    ("create", "", 501, StoreUnavailable),
    ("create", "InternalError", 500, WriteOutcomeUnknown),
    ("create", "ServerBusy", 503, WriteOutcomeUnknown),
    ("create", "", 599, WriteOutcomeUnknown),
    ("update", "ConditionNotMet", 412, VersionConflict),
    ("update", "BlobNotFound", 404, VersionConflict),
    ("update", "", 404, StoreUnavailable),
    ("update", "ContainerNotFound", 404, StoreUnavailable),
    ("update", "InvalidHeaderValue", 400, StoreUnavailable),
    ("update", "", 502, WriteOutcomeUnknown),
    ("update", "OperationTimedOut", 500, WriteOutcomeUnknown),
    ("update", "", 504, WriteOutcomeUnknown),
    ("delete", "BlobNotFound", 404, Missing),
    ("delete", "", 404, StoreUnavailable),
    ("delete", "ContainerNotFound", 404, StoreUnavailable),
    ("delete", "AuthorizationFailure", 403, StoreUnavailable),
    ("list", "ContainerNotFound", 404, StoreUnavailable),
    ("list", "AuthenticationFailed", 403, StoreUnavailable),
    ("layout", "ContainerNotFound", 404, StoreUnavailable),
    ("layout", "InternalError", 500, StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "code", "status", "expected"), CASES)
def test_classify(operation: Operation, code: str, status: int, expected: object) -> None:
    assert classify(operation, code, status) == expected


def test_every_rule_is_exercised() -> None:
    """A row no case reaches is either dead or untested: both are bugs (transport rows too)."""
    used = set()
    for operation, code, status, _ in CASES:
        for number, rule in enumerate(RULES):
            if (
                operation in rule.operations
                and rule.code in (None, code)
                and rule.status in (None, status)
            ):
                used.add(number)
                break
    assert used == set(range(len(RULES)))
    failures = {FAILURES.index(classify_failure(op, exc)) for op, exc, _ in FAILURE_CASES}
    assert failures == set(range(len(FAILURES)))


#: (operation, what a client call raised, expected): what azure-core's requests transport
#: raises (``_requests_basic.RequestsTransport.send``), what the downloader raises after its
#: own retries of a cut body, what a body read raises beneath it, and one nobody expects.
FAILURE_CASES: list[tuple[Operation, Exception, type[DocmemError]]] = [
    ("read", ClientAuthenticationError("no token"), StoreNotConfigured),
    ("create", ClientAuthenticationError("no token"), StoreNotConfigured),
    ("read", ServiceRequestError("refused"), StoreUnavailable),
    ("create", ServiceRequestError("refused"), StoreUnavailable),
    ("update", ServiceRequestTimeoutError("connect timeout"), StoreUnavailable),
    ("list", ServiceRequestError("refused"), StoreUnavailable),
    ("create", ServiceResponseError("reset after sending"), WriteOutcomeUnknown),
    ("update", ServiceResponseTimeoutError("read timeout"), WriteOutcomeUnknown),
    ("update", DecodeError("garbled"), WriteOutcomeUnknown),
    ("create", IncompleteReadError("cut"), WriteOutcomeUnknown),
    ("create", HttpResponseError("wrapped by the downloader"), WriteOutcomeUnknown),
    ("update", urllib3.exceptions.ProtocolError("Connection broken"), WriteOutcomeUnknown),
    ("update", ValueError("Content-Range missing"), WriteOutcomeUnknown),
    ("create", ConnectionResetError(), WriteOutcomeUnknown),
    ("read", ServiceResponseError("reset"), StoreUnavailable),
    ("read", HttpResponseError("wrapped by the downloader"), StoreUnavailable),
    ("read", IncompleteReadError("cut"), StoreUnavailable),
    ("read", http.client.IncompleteRead(b""), StoreUnavailable),
    ("read", ValueError("Required Content-Range response header is missing"), StoreUnavailable),
    ("delete", urllib3.exceptions.ProtocolError("Connection broken"), StoreUnavailable),
    ("layout", ConnectionResetError(), StoreUnavailable),
    ("create", RuntimeError("nobody expects it"), WriteOutcomeUnknown),
    ("delete", RuntimeError("nobody expects it"), StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "raised", "expected"), FAILURE_CASES)
def test_classify_failure(operation: Operation, raised: Exception, expected: type) -> None:
    assert classify_failure(operation, raised).result is expected


class _Answer:
    """What azure-core's exceptions read of an HTTP response."""

    def __init__(self, status: int, code: str) -> None:
        self.status_code = status
        self.reason = "the server's words"
        self.headers = {"x-ms-error-code": code} if code else {}
        self.content_type = "application/xml"

    def text(self, encoding: str | None = None) -> str:
        return ""

    def body(self) -> bytes:
        return b""


_SDK_CLASSES: dict[int, type[HttpResponseError]] = {
    304: ResourceModifiedError,  # what the SDK raises for a 304 on a download (pinned below)
    404: ResourceNotFoundError,
    409: ResourceExistsError,
    412: ResourceModifiedError,
}


def _answer_error(code: str, status: int) -> HttpResponseError:
    kind = _SDK_CLASSES.get(status, HttpResponseError)
    answer: Any = _Answer(status, code)
    return kind(message="the server's words https://acct/c/b?sig=SECRET", response=answer)


@pytest.mark.parametrize(("operation", "code", "status", "expected"), CASES)
def test_azure_answers_raises_what_the_table_says(
    operation: Operation, code: str, status: int, expected: type[Exception]
) -> None:
    with pytest.raises(expected) as caught, azure_answers(operation, container="c"):
        raise _answer_error(code, status)
    assert type(caught.value) is expected
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert "SECRET" not in str(caught.value)


@pytest.mark.parametrize(("operation", "raised", "expected"), FAILURE_CASES)
def test_azure_answers_maps_failures_by_their_class_never_their_text(
    operation: Operation, raised: Exception, expected: type[DocmemError]
) -> None:
    with pytest.raises(expected) as caught, azure_answers(operation):
        raise raised
    assert type(caught.value) is expected
    assert not str(raised) or str(raised) not in caught.value.message  # it may quote the URL
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_azure_answers_passes_docmem_errors_and_interrupts_through() -> None:
    own = VersionConflict("decided inside the block")
    with pytest.raises(VersionConflict) as caught, azure_answers("update"):
        raise own
    assert caught.value is own
    with pytest.raises(KeyboardInterrupt), azure_answers("read"):
        raise KeyboardInterrupt
    with azure_answers("read") as answers:
        pass
    assert answers.rule is None


def test_azure_answers_names_the_row_that_decided() -> None:
    answers = azure_answers("create")
    with pytest.raises(StoreUnavailable), answers:
        raise _answer_error("NotImplemented", 501)
    assert answers.rule in UNSUPPORTED
    answers = azure_answers("update")
    with pytest.raises(WriteOutcomeUnknown), answers:
        raise ServiceResponseError("reset")
    assert answers.rule in FAILURES


def test_a_missing_container_is_named_and_never_an_empty_store() -> None:
    missing = pytest.raises(StoreUnavailable, match="'the-container' does not exist")
    with missing, azure_answers("list", container="the-container"):
        raise _answer_error("ContainerNotFound", 404)


def test_an_error_code_that_is_no_word_is_not_shown() -> None:
    with pytest.raises(StoreUnavailable) as caught, azure_answers("read"):
        raise _answer_error("<script>sig=abc</script>", 400)
    assert "sig=abc" not in str(caught.value)
    assert "unknown" in str(caught.value)


@pytest.mark.parametrize(
    ("etag", "usable"),
    [
        ('"0x8DD2B5AF4D1C6A2"', True),
        ('W/"abc"', True),
        ("0x8DD2B5AF4D1C6A2", False),  # a listing's bare form: quoted before it is a version
        ('""', False),
        ("", False),
        ('"a b"', False),
        ("*", False),
        (None, False),
        (b'"abc"', False),
    ],
)
def test_usable_etag(etag: object, usable: bool) -> None:
    assert usable_etag(etag) is usable


def test_what_the_sdk_raises_for_each_answer_is_an_answer() -> None:
    """The classes pinned above are HttpResponseErrors with a response: classified by RULES."""
    for status, kind in _SDK_CLASSES.items():
        error = kind(message="x", response=_Answer(status, ""))  # type: ignore[arg-type]
        answers = azure_answers("read")
        with pytest.raises((StoreUnavailable, Missing, NotModified)), answers:
            raise error
        assert answers.rule is None or answers.rule in RULES
