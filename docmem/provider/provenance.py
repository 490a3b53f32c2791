"""Where each entry came from: when it was saved, by which mutation, in which session, by whom.

An operator asked "why does the bot believe this?" needs an answer per
entry that lives as long as the entry: the journal forgets after 32
writes, and holds digests only. So each entry saved by this release carries
a :class:`Provenance` record in the document header (docs/design.md,
section 3), written in the same conditional write as the entry. The model
never sees it (the recall renders entries only), and it counts toward the
document's byte cap, never toward the recall's ``max_characters``.

Everything here is pure: no I/O, no clock (the caller passes the time).
"""

from __future__ import annotations

import datetime
from typing import Literal

import msgspec

__all__ = [
    "MADE_BY",
    "MAX_ID_BYTES",
    "STORED_BY",
    "MadeBy",
    "Provenance",
    "Restored",
    "check_made_by",
    "problem",
]

#: Who asked for a save: a model's tool call, the Python API, the ``docmem`` command.
MadeBy = Literal["model", "api", "cli"]
MADE_BY: frozenset[str] = frozenset({"model", "api", "cli"})
#: What a stored record may say: also ``"revert"``, for an entry a revert brought back
#: whose original save left no provenance (it was saved before provenance existed).
STORED_BY: frozenset[str] = MADE_BY | {"revert"}
#: The longest mutation or session id a record holds, as :func:`journal.checked_mutation_id`.
MAX_ID_BYTES = 1024
_MAX_MILLISECONDS = 2**53 - 1


class Restored(msgspec.Struct, array_like=True, frozen=True, forbid_unknown_fields=True):
    """``[at, mutation]``: the revert that brought an entry back, and when (ms since the epoch)."""

    at: int
    mutation: str


class Provenance(msgspec.Struct, array_like=True, frozen=True, forbid_unknown_fields=True):
    """``[index, at, by, mutation, session, restored]`` as stored in the header.

    ``at`` is when the save was asked for, in milliseconds since the epoch
    (UTC); ``by`` who asked (:data:`MadeBy`); ``mutation`` its mutation id,
    which for a model's tool call is ``<session>/<call id>``, so it names the
    run and the call; ``session`` the host's session id where it gave one;
    ``restored`` the newest revert that brought the entry back, if any (the
    rest still describes the original save).
    """

    index: int
    at: int
    by: str
    mutation: str
    session: str | None
    restored: Restored | None = None

    @property
    def saved_at(self) -> datetime.datetime:
        """:attr:`at` as an aware UTC datetime."""
        return _moment(self.at)

    def to_dict(self) -> dict[str, object]:
        """The record as JSON-ready fields, times in ISO 8601 (``docmem show --json``)."""
        restored = self.restored
        return {
            "index": self.index,
            "saved_at": _iso(self.at),
            "by": self.by,
            "mutation_id": self.mutation,
            "session_id": self.session,
            "restored_at": None if restored is None else _iso(restored.at),
            "restored_by": None if restored is None else restored.mutation,
        }


def check_made_by(made_by: object) -> str:
    """``made_by`` if it is one of :data:`MADE_BY`, else ValueError (the caller's type of error)."""
    if made_by not in MADE_BY:
        raise ValueError(f"made_by must be one of {', '.join(sorted(MADE_BY))}")
    assert isinstance(made_by, str)
    return made_by


def problem(record: Provenance) -> str | None:
    """What makes a stored record invalid, or ``None``: the parser's check, fail closed."""
    if record.by not in STORED_BY:
        return "unknown 'by'"
    if not 0 <= record.at <= _MAX_MILLISECONDS:
        return "time outside 0..2**53-1"
    session = record.session
    if not _valid_id(record.mutation) or (session is not None and not _valid_id(session)):
        return f"an id is empty or over {MAX_ID_BYTES:,} bytes"
    restored = record.restored
    if restored is not None and not (
        0 <= restored.at <= _MAX_MILLISECONDS and _valid_id(restored.mutation)
    ):
        return "the revert's time or id is invalid"
    return None


def _valid_id(value: str) -> bool:
    """Non-empty and at most :data:`MAX_ID_BYTES` of UTF-8: every document parse asks."""
    if value.isascii():  # one byte a character: no encoding needed
        return 0 < len(value) <= MAX_ID_BYTES
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate, from code (JSON decoding refuses one)
        return False
    return size <= MAX_ID_BYTES


def _moment(milliseconds: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(milliseconds / 1000, datetime.timezone.utc)


def _iso(milliseconds: int) -> str:
    return _moment(milliseconds).isoformat(timespec="milliseconds").replace("+00:00", "Z")
