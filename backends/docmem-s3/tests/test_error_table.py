"""The S3 error table: every answer S3 gives maps to exactly what DESIGN section 4 says."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from docmem.errors import StoreUnavailable, VersionConflict, WriteOutcomeUnknown
from docmem_s3 import normalize_etag
from docmem_s3.errors import (
    MISSING,
    NOT_MODIFIED,
    RULES,
    UNREADABLE,
    answer,
    classify,
    usable_etag,
)

CASES = [
    # (operation, code, status, expected)
    ("read", "304", 304, NOT_MODIFIED),
    ("read", "NoSuchKey", 404, MISSING),
    ("read", "", 404, MISSING),
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
    ("delete", "NoSuchKey", 404, MISSING),
    ("delete", "NoSuchBucket", 404, StoreUnavailable),
    ("delete", "AccessDenied", 403, StoreUnavailable),
    ("list", "NoSuchBucket", 404, StoreUnavailable),
    ("list", "AccessDenied", 403, StoreUnavailable),
]


@pytest.mark.parametrize(("operation", "code", "status", "expected"), CASES)
def test_classify(operation: str, code: str, status: int, expected: object) -> None:
    assert classify(operation, code, status) == expected  # type: ignore[arg-type]


def test_every_rule_is_exercised() -> None:
    """A row no case reaches is either dead or untested: both are bugs."""
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
