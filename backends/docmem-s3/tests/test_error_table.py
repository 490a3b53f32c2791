"""The S3 error table: every answer S3 gives maps to exactly what docs/design.md, section 4 says.

Both tables are covered row by row: the error answers (:data:`RULES`) and the
failures below S3 (:data:`FAILURES`); a row no case reaches fails the suite.
"""

from __future__ import annotations

import http.client
from typing import Any

import pytest
import urllib3.exceptions
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
    ProxyConnectionError,
    ReadTimeoutError,
)
from botocore.parsers import ResponseParserError

from docmem.errors import (
    DocmemError,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem_s3 import normalize_etag
from docmem_s3.errors import (
    FAILURES,
    PERMISSIONS,
    RULES,
    UNREADABLE,
    UNSUPPORTED,
    Missing,
    NotModified,
    NoVersioning,
    Operation,
    answer,
    classify,
    classify_failure,
    s3_answers,
    usable_etag,
)

CASES = [
    # (operation, code, status, expected)
    ("read", "304", 304, NotModified),
    ("read", "NoSuchKey", 404, Missing),
    ("read", "", 404, Missing),
    ("read", "NoSuchBucket", 404, StoreUnavailable),
    ("read", UNREADABLE, 404, StoreUnavailable),
    ("delete", UNREADABLE, 404, StoreUnavailable),
    ("update", UNREADABLE, 404, VersionConflict),
    ("create", UNREADABLE, 412, VersionConflict),
    ("read", "AccessDenied", 403, StoreUnavailable),
    ("read", "InternalError", 500, StoreUnavailable),
    ("create", "PreconditionFailed", 412, VersionConflict),
    ("create", "", 412, VersionConflict),
    ("create", "ConditionalRequestConflict", 409, VersionConflict),
    ("create", "NoSuchBucket", 404, StoreUnavailable),
    ("create", "AccessDenied", 403, StoreUnavailable),
    ("create", "NotImplemented", 501, StoreUnavailable),
    ("create", "", 501, StoreUnavailable),
    ("create", "", 409, VersionConflict),
    ("update", "BadGateway", 502, WriteOutcomeUnknown),
    ("update", "GatewayTimeout", 504, WriteOutcomeUnknown),
    ("create", "InternalError", 500, WriteOutcomeUnknown),
    ("create", "ServiceUnavailable", 503, WriteOutcomeUnknown),
    ("create", "SlowDown", 503, WriteOutcomeUnknown),
    ("create", "", 599, WriteOutcomeUnknown),
    ("update", "PreconditionFailed", 412, VersionConflict),
    ("update", "NoSuchKey", 404, VersionConflict),
    ("update", "", 404, VersionConflict),
    ("update", "ConditionalRequestConflict", 409, VersionConflict),
    ("update", "NoSuchBucket", 404, StoreUnavailable),
    ("update", "InvalidArgument", 400, StoreUnavailable),
    ("update", "InternalError", 500, WriteOutcomeUnknown),
    ("delete", "NoSuchKey", 404, Missing),
    ("delete", "NoSuchBucket", 404, StoreUnavailable),
    ("delete", "AccessDenied", 403, StoreUnavailable),
    ("list", "NoSuchBucket", 404, StoreUnavailable),
    ("list", "AccessDenied", 403, StoreUnavailable),
    # the history of a versioned bucket, purged after an erase (docmem_s3.history)
    ("get-versioning", "AccessDenied", 403, StoreUnavailable),
    ("get-versioning", "NotImplemented", 501, NoVersioning),
    ("get-versioning", "", 501, NoVersioning),
    ("get-versioning", "NoSuchBucket", 404, StoreUnavailable),
    ("list-versions", "AccessDenied", 403, StoreUnavailable),
    ("list-versions", "NotImplemented", 501, StoreUnavailable),
    ("list-versions", "InternalError", 500, StoreUnavailable),
    ("delete-version", "AccessDenied", 403, StoreUnavailable),
    ("delete-version", "NoSuchVersion", 404, Missing),
    ("delete-version", "NoSuchKey", 404, Missing),
    ("delete-version", "InvalidArgument", 400, StoreUnavailable),
    ("delete-version", UNREADABLE, 404, StoreUnavailable),
    # one older version read back for an operator (S3Backend.read_version)
    ("read-version", "NoSuchVersion", 404, Missing),
    ("read-version", "NoSuchKey", 404, Missing),
    ("read-version", "", 404, Missing),
    ("read-version", "MethodNotAllowed", 405, StoreUnavailable),
    ("read-version", "InvalidArgument", 400, StoreUnavailable),
    ("read-version", UNREADABLE, 404, StoreUnavailable),
    ("read-version", "NoSuchBucket", 404, StoreUnavailable),
    ("read-version", "AccessDenied", 403, StoreUnavailable),
    ("read-version", "InternalError", 500, StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "code", "status", "expected"), CASES)
def test_classify(operation: str, code: str, status: int, expected: object) -> None:
    assert classify(operation, code, status) == expected  # type: ignore[arg-type]


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


_NO_POOL: Any = None

#: (operation, what a client call raised, expected): every class botocore, urllib3 or the
#: parsers were seen to raise (tests/test_protocol.py pins them), and one nobody expects.
FAILURE_CASES: list[tuple[Operation, Exception, type[DocmemError]]] = [
    ("read", NoCredentialsError(), StoreNotConfigured),
    ("create", NoCredentialsError(), StoreNotConfigured),
    ("update", PartialCredentialsError(provider="env", cred_var="x"), StoreNotConfigured),
    ("read", EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), StoreUnavailable),
    ("create", EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), StoreUnavailable),
    ("update", ConnectTimeoutError(endpoint_url="http://127.0.0.1:1"), StoreUnavailable),
    ("list", ProxyConnectionError(proxy_url="http://proxy"), StoreUnavailable),
    ("create", ConnectionClosedError(endpoint_url="http://x"), WriteOutcomeUnknown),
    ("update", ReadTimeoutError(endpoint_url="http://x"), WriteOutcomeUnknown),
    ("update", ResponseParserError("garbled"), WriteOutcomeUnknown),
    ("create", ParamValidationError(report="refused"), WriteOutcomeUnknown),
    ("update", urllib3.exceptions.ProtocolError("Connection broken"), WriteOutcomeUnknown),
    ("update", ValueError("many"), WriteOutcomeUnknown),
    ("create", ConnectionResetError(), WriteOutcomeUnknown),
    ("read", ConnectionClosedError(endpoint_url="http://x"), StoreUnavailable),
    ("read", urllib3.exceptions.ProtocolError("Connection broken"), StoreUnavailable),
    ("read", urllib3.exceptions.ReadTimeoutError(_NO_POOL, "/", "timed out"), StoreUnavailable),
    ("read", http.client.IncompleteRead(b""), StoreUnavailable),
    ("read", ValueError("yesterday"), StoreUnavailable),
    ("list", KeyError("Key"), StoreUnavailable),
    ("delete", ResponseParserError("garbled"), StoreUnavailable),
    ("create", RuntimeError("nobody expects it"), WriteOutcomeUnknown),
    ("delete", RuntimeError("nobody expects it"), StoreUnavailable),
    ("list-versions", ConnectionResetError(), StoreUnavailable),
    ("delete-version", ReadTimeoutError(endpoint_url="http://x"), StoreUnavailable),
    ("get-versioning", EndpointConnectionError(endpoint_url="http://x"), StoreUnavailable),
    ("read-version", http.client.IncompleteRead(b""), StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "raised", "expected"), FAILURE_CASES)
def test_classify_failure(operation: Operation, raised: Exception, expected: type) -> None:
    assert classify_failure(operation, raised).result is expected


def _client_error(code: str, status: int, **headers: str) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": "the server's words"},
        "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers},
    }
    return ClientError(response, "PutObject")


@pytest.mark.parametrize(("operation", "code", "status", "expected"), CASES)
def test_s3_answers_raises_what_the_table_says(
    operation: str, code: str, status: int, expected: type[Exception]
) -> None:
    headers = {"content-length": "120"} if code == UNREADABLE else {}
    sent = _client_error(str(status) if code == UNREADABLE else code, status, **headers)
    with pytest.raises(expected) as caught, s3_answers(operation, bucket="b"):  # type: ignore[arg-type]
        raise sent
    assert type(caught.value) is expected
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


@pytest.mark.parametrize(("operation", "raised", "expected"), FAILURE_CASES)
def test_s3_answers_maps_failures_by_their_class_never_their_text(
    operation: Operation, raised: Exception, expected: type[DocmemError]
) -> None:
    with pytest.raises(expected) as caught, s3_answers(operation):
        raise raised
    assert type(caught.value) is expected
    assert not str(raised) or str(raised) not in caught.value.message  # it may quote the request
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_s3_answers_reads_the_answer_behind_an_s3fs_translation() -> None:
    """s3fs raises FileExistsError (or an OSError) with botocore's answer as its cause."""
    for code, status, expected in [
        ("PreconditionFailed", 412, VersionConflict),
        ("InternalError", 500, WriteOutcomeUnknown),
        ("AccessDenied", 403, StoreUnavailable),
    ]:
        translated = FileExistsError(17, "the server's words")
        translated.__cause__ = _client_error(code, status)
        with pytest.raises(expected), s3_answers("create"):
            raise translated


def test_s3_answers_passes_docmem_errors_and_interrupts_through() -> None:
    own = VersionConflict("decided inside the block")
    with pytest.raises(VersionConflict) as caught, s3_answers("update"):
        raise own
    assert caught.value is own
    with pytest.raises(KeyboardInterrupt), s3_answers("read"):
        raise KeyboardInterrupt
    with s3_answers("read") as answers:
        pass
    assert answers.rule is None


def test_s3_answers_names_the_row_that_decided() -> None:
    answers = s3_answers("create")
    with pytest.raises(StoreUnavailable), answers:
        raise _client_error("NotImplemented", 501)
    assert answers.rule in UNSUPPORTED
    answers = s3_answers("update")
    with pytest.raises(WriteOutcomeUnknown), answers:
        raise ConnectionResetError
    assert answers.rule in FAILURES


@pytest.mark.parametrize(("operation", "permission"), sorted(PERMISSIONS.items()))
def test_a_refused_history_call_names_the_permission_it_needs(
    operation: Operation, permission: str
) -> None:
    with pytest.raises(StoreUnavailable) as caught, s3_answers(operation):
        raise _client_error("AccessDenied", 403)
    assert permission in caught.value.message
    assert "the server's words" not in caught.value.message


def test_a_refused_write_names_no_permission() -> None:
    """An AccessDenied on a PUT may be KMS refusing the key: naming s3:PutObject would mislead."""
    with pytest.raises(StoreUnavailable) as caught, s3_answers("create"):
        raise _client_error("AccessDenied", 403)
    assert "s3:" not in caught.value.message


def test_a_missing_bucket_is_named_in_the_message() -> None:
    missing = pytest.raises(StoreUnavailable, match="'the-bucket' does not exist")
    with missing, s3_answers("list", bucket="the-bucket"):
        raise _client_error("NoSuchBucket", 404)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [('"abc"', "abc"), ('W/"abc"', "abc"), ("abc", "abc"), (' "abc" ', "abc")],
)
def test_normalize_etag(raw: str, normal: str) -> None:
    assert normalize_etag(raw) == normal


@pytest.mark.parametrize(
    ("code", "headers", "read_as"),
    [
        ("NoSuchKey", {"content-length": "120"}, "NoSuchKey"),
        ("NoSuchBucket", {"content-length": "120"}, "NoSuchBucket"),
        # botocore's code when the announced body did not parse: the bare status
        ("404", {"content-length": "120"}, UNREADABLE),
        ("404", {"transfer-encoding": "chunked"}, UNREADABLE),
        ("404", {"Content-Length": "7"}, UNREADABLE),
        # no body at all: the status is all there is
        ("404", {"content-length": "0"}, "404"),
        ("404", {}, "404"),
    ],
)
def test_answer_tells_an_unreadable_body_from_none(
    code: str, headers: dict[str, Any], read_as: str
) -> None:
    error = ClientError(
        {
            "Error": {"Code": code},
            "ResponseMetadata": {"HTTPStatusCode": 404, "HTTPHeaders": headers},
        },
        "GetObject",
    )
    assert answer(error) == (read_as, 404)


@pytest.mark.parametrize(
    ("etag", "usable"),
    [
        ('"abc"', True),
        ('"0123456789abcdef0123456789abcdef-2"', True),
        ('W/"abc"', True),  # well formed; whether the server matches it is the probe's question
        ('"', False),
        ('""', False),
        ('W/""', False),
        ("", False),
        ("abc", False),
        ('"abc', False),
        ('"a"b"', False),
        ('"a b"', False),
        (' "abc"', False),
        ("*", False),
        (None, False),
        (b'"abc"', False),
    ],
)
def test_usable_etag(etag: object, usable: bool) -> None:
    assert usable_etag(etag) is usable
