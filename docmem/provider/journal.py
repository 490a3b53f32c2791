"""The mutation journal: which recent mutations a document already contains.

Each committed *writing* mutation leaves one record in the document it wrote,
in the same conditional write, so a retried request is recognised (replay
without a second effect) and an ambiguous write can be reconciled by reading.
Records hold digests, never ids or text: the request digest covers the id so
the journal cannot be used to confirm a guessed text.

The newest :data:`MAX_RECORDS` records are kept whole. The ids of older ones
(and of those an erase drops) are kept as short digests only, the newest
:data:`MAX_OLDER_IDS` of them: enough to refuse a late replay a second effect
long after its record aged out, at a fraction of a record's bytes
(docs/design.md, section 5).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Iterable
from typing import Literal

import msgspec

from ..errors import InvalidArgument
from .keys import encode_str, encode_tuple_header

__all__ = [
    "MAX_OLDER_IDS",
    "MAX_RECORDS",
    "OLDER_ID_BYTES",
    "WHOLE_DOCUMENT_OPS",
    "JournalRecord",
    "Op",
    "OpOutcome",
    "append",
    "checked_mutation_id",
    "find",
    "find_older",
    "fresh_mutation_id",
    "id_digest",
    "remember",
    "request_digest",
]

MAX_RECORDS = 32
#: How many ids past the whole records are still recognised, and the bytes of each.
MAX_OLDER_IDS = 320
OLDER_ID_BYTES = 8
Op = Literal["save", "remove", "erase", "revert"]
OpOutcome = Literal["saved", "removed", "erased", "reverted"]
OUTCOME_OF: dict[str, str] = {
    "save": "saved",
    "remove": "removed",
    "erase": "erased",
    "revert": "reverted",
}
#: The ops whose records carry no entry index: they change the document as a whole.
WHOLE_DOCUMENT_OPS = frozenset({"erase", "revert"})

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


def checked_mutation_id(mutation_id: str, *, name: str = "mutation_id") -> str:
    """``mutation_id`` if it can be digested: a non-empty string of at most 1,024 UTF-8 bytes.

    The refusal never holds the id: a lone surrogate is reported as invalid
    UTF-8 after the encoder's error (which quotes the string) is gone.
    ``name`` is what the refusal calls it (a session id is checked the same way).
    """
    if not isinstance(mutation_id, str) or not mutation_id:
        raise InvalidArgument(f"{name} must be a non-empty string")
    try:
        size: int | None = len(mutation_id.encode("utf-8"))
    except UnicodeEncodeError:
        size = None
    if size is None:
        raise InvalidArgument(f"{name} is not valid UTF-8")
    if size > 1024:
        raise InvalidArgument(f"{name} is longer than 1,024 bytes")
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


def append(
    records: tuple[JournalRecord, ...], older_ids: bytes, record: JournalRecord
) -> tuple[tuple[JournalRecord, ...], bytes]:
    """The journal with ``record`` added: the newest :data:`MAX_RECORDS` records, and the ids.

    A record pushed out of the whole records leaves its id among ``older_ids``.
    """
    grown = (*records, record)
    return grown[-MAX_RECORDS:], remember(older_ids, grown[:-MAX_RECORDS])


def _older_id(digest: str) -> bytes:
    """The first :data:`OLDER_ID_BYTES` of an id digest (22 base64url characters)."""
    return base64.urlsafe_b64decode(digest + "==")[:OLDER_ID_BYTES]


def remember(older_ids: bytes, records: Iterable[JournalRecord]) -> bytes:
    """``older_ids`` with the ids of ``records`` added after them, the newest ones kept."""
    added = b"".join([_older_id(record.id_digest) for record in records])
    if not added:
        return older_ids
    return (older_ids + added)[-MAX_OLDER_IDS * OLDER_ID_BYTES :]


def find_older(older_ids: bytes, digest: str) -> bool:
    """Whether the id ``digest`` names is among ``older_ids`` (aligned: no match across two)."""
    wanted = _older_id(digest)
    at = older_ids.find(wanted)
    while at != -1:
        if at % OLDER_ID_BYTES == 0:
            return True
        at = older_ids.find(wanted, at + 1)
    return False
