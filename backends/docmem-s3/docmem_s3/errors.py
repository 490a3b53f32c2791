"""How S3 answers map onto docmem's errors: one table, most specific row first.

S3 errors are told apart by their code, not only their status: a 404 is a
missing object on a read, a lost race on a conditional update (the object was
deleted meanwhile), and a misconfiguration when the bucket is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from docmem.errors import (
    DocmemError,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)

__all__ = ["MISSING", "NOT_MODIFIED", "RULES", "Operation", "Rule", "answer", "classify"]

Operation = Literal["read", "create", "update", "delete", "list"]

#: Sentinels for the two answers that are not errors.
MISSING = "missing"  # the object does not exist: read() returns None
NOT_MODIFIED = "not_modified"  # 304 to a conditional GET: the cached copy is current

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
    """The S3 error code and HTTP status of a botocore ``ClientError`` ("" and 0 if absent)."""
    response = exc.response
    code = str(response.get("Error", {}).get("Code", ""))
    return code, int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


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
