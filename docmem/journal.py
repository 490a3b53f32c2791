"""The mutation journal: which recent mutations a document already contains.

Each committed *writing* mutation leaves one record in the document it wrote,
in the same conditional write, so a retried request is recognised (replay
without a second effect) and an ambiguous write can be reconciled by reading.
Records hold digests, never ids or text: the request digest covers the id so
the journal cannot be used to confirm a guessed text.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from typing import Literal

import msgspec

from .errors import InvalidArgument
from .keys import encode_str, encode_tuple_header

__all__ = [
    "MAX_RECORDS",
    "JournalRecord",
    "Op",
    "OpOutcome",
    "append",
    "checked_mutation_id",
    "find",
    "fresh_mutation_id",
    "id_digest",
    "request_digest",
]

MAX_RECORDS = 32
Op = Literal["save", "remove", "erase"]
OpOutcome = Literal["saved", "removed", "erased"]
OUTCOME_OF: dict[str, str] = {"save": "saved", "remove": "removed", "erase": "erased"}

_ID_TAG = b"docmem.mid.v1\0"
_REQUEST_TAG = b"docmem.req.v1\0"


class JournalRecord(msgspec.Struct, array_like=True, frozen=True, forbid_unknown_fields=True):
    """``[id_digest, request_digest, rev, op, outcome, index]`` as stored in the header."""

    id_digest: str
    request_digest: str
    rev: int
    op: str
    outcome: str
    index: int | None


def _digest16(data: bytes) -> str:
    raw = hashlib.sha256(data).digest()[:16]
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def fresh_mutation_id() -> str:
    """A mutation id of its own, for a caller that has none to give.

    It makes the mutation idempotent only within itself: a retry of the same
    request under another fresh id is a second mutation.
    """
    return f"docmem-{uuid.uuid4()}"


def checked_mutation_id(mutation_id: str) -> str:
    """``mutation_id`` if it can be digested: a non-empty string of at most 1,024 UTF-8 bytes.

    The refusal never holds the id: a lone surrogate is reported as invalid
    UTF-8 after the encoder's error (which quotes the string) is gone.
    """
    if not isinstance(mutation_id, str) or not mutation_id:
        raise InvalidArgument("mutation_id must be a non-empty string")
    try:
        size: int | None = len(mutation_id.encode("utf-8"))
    except UnicodeEncodeError:
        size = None
    if size is None:
        raise InvalidArgument("mutation_id is not valid UTF-8")
    if size > 1024:
        raise InvalidArgument("mutation_id is longer than 1,024 bytes")
    return mutation_id


def id_digest(mutation_id: str) -> str:
    """22 base64url characters naming a mutation id without revealing it."""
    return _digest16(_ID_TAG + encode_str(mutation_id.encode("utf-8")))


def request_digest(mutation_id: str, op: Op, arg: str) -> str:
    """Digest of (id, op, arg): ``arg`` is the normalized text, the decimal index, or ``""``."""
    body = (
        encode_tuple_header(3)
        + encode_str(mutation_id.encode("utf-8"))
        + encode_str(op.encode("ascii"))
        + encode_str(arg.encode("utf-8"))
    )
    return _digest16(_REQUEST_TAG + body)


def find(records: tuple[JournalRecord, ...], digest: str) -> JournalRecord | None:
    """The record of a mutation id digest, newest first, or ``None``."""
    for record in reversed(records):
        if record.id_digest == digest:
            return record
    return None


def append(records: tuple[JournalRecord, ...], record: JournalRecord) -> tuple[JournalRecord, ...]:
    """The journal with ``record`` added, keeping only the newest :data:`MAX_RECORDS`."""
    return (*records, record)[-MAX_RECORDS:]
