"""The commit log of one key: immutable objects named by revision, newest wins.

Every write creates ``<rev:016x>.md``; the newest ``.md`` is the document and
its name is the version token. Two content-free markers share the numbering:

- ``<rev:016x>.tombstone``: written by ``delete`` above every version, so
  revision names never repeat after an operator purge. A tombstone at or above
  the newest version means the key does not exist.
- ``<rev:016x>.purge``: written by ``purge_history`` before it deletes the
  versions below ``rev``, so that a writer who re-created one of those freed
  names can tell (its outcome becomes unknown; see :meth:`Listing.verdict`).

This module is pure: it parses listings and decides; the backend does the I/O.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import msgspec

__all__ = [
    "Entry",
    "Kind",
    "Listing",
    "Verdict",
    "object_name",
    "parse_version",
]

_NAME = re.compile(r"([0-9a-f]{16})\.(md|tombstone|purge)")
#: Where implementations put an object's store timestamp in ``ls(detail=True)``.
_TIMESTAMP_FIELDS = ("LastModified", "last_modified", "mtime", "updated", "modified")


class Kind(str, enum.Enum):
    """What an object of the log is."""

    VERSION = "md"
    TOMBSTONE = "tombstone"
    PURGE = "purge"


class Verdict(enum.Enum):
    """What a listing taken after a successful create says about that write."""

    COMMITTED = "committed"
    UNKNOWN = "unknown"


def object_name(revision: int, kind: Kind = Kind.VERSION) -> str:
    """``<revision as 16 hex digits>.<kind>``: the object's name inside the key's folder."""
    return f"{revision:016x}.{kind.value}"


def parse_version(token: str) -> int | None:
    """The revision a version token names, or ``None`` for anything not a version name."""
    match = _NAME.fullmatch(token) if isinstance(token, str) else None
    if match is None or match.group(2) != Kind.VERSION.value:
        return None
    return int(match.group(1), 16)


class Entry(msgspec.Struct, frozen=True, order=True):
    """One object of the log, as listed: sorts by revision, then kind."""

    revision: int
    kind: Kind
    path: str
    size: int
    #: The store's own timestamp, seconds since the epoch; ``None`` if it gave none.
    modified: float | None

    @property
    def name(self) -> str:
        return object_name(self.revision, self.kind)

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Entry | None:
        """The entry an fsspec ``ls(detail=True)`` record describes; ``None`` if foreign."""
        path = str(info.get("name", "")).rstrip("/")
        match = _NAME.fullmatch(path.rsplit("/", 1)[-1])
        if match is None or info.get("type", "file") != "file":
            return None
        return cls(
            revision=int(match.group(1), 16),
            kind=Kind(match.group(2)),
            path=path,
            size=int(info.get("size") or 0),
            modified=_timestamp(info),
        )


def _timestamp(info: Mapping[str, Any]) -> float | None:
    for field in _TIMESTAMP_FIELDS:
        value = info.get(field)
        if isinstance(value, datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=timezone.utc)
            return value.timestamp()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value:
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=timezone.utc)
            return parsed.timestamp()
    return None


class Listing:
    """The objects of one key at one moment, sorted oldest first."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self.entries: tuple[Entry, ...] = tuple(sorted(entries))
        self.versions: tuple[Entry, ...] = tuple(
            entry for entry in self.entries if entry.kind is Kind.VERSION
        )

    @classmethod
    def from_infos(cls, infos: Iterable[Mapping[str, Any]], *, folder: str) -> Listing:
        """The log objects directly inside ``folder``, from ``ls(detail=True)`` records.

        Some implementations list by name prefix (adlfs lists ``key-10/...`` for
        ``key-1``), so anything from another folder is left out here.
        """
        inside = folder.strip("/")
        parsed = (Entry.from_info(info) for info in infos)
        return cls(
            entry
            for entry in parsed
            if entry is not None and entry.path.rsplit("/", 1)[0].strip("/") == inside
        )

    @property
    def top(self) -> int:
        """The highest revision any object uses (0 when there is none)."""
        return self.entries[-1].revision if self.entries else 0

    @property
    def current(self) -> Entry | None:
        """The newest version, unless a tombstone at or above it says the key is deleted."""
        if not self.versions:
            return None
        newest = self.versions[-1]
        if any(
            entry.kind is Kind.TOMBSTONE and entry.revision >= newest.revision
            for entry in self.entries
        ):
            return None
        return newest

    def find(self, revision: int) -> Entry | None:
        """The version with this revision, if it is listed."""
        for entry in self.versions:
            if entry.revision == revision:
                return entry
        return None

    def verdict(self, created: int) -> Verdict:
        """Whether the version this process just created at ``created`` is committed.

        Committed when it is still listed and no marker sits at or above it:
        then its name was never used before (rule 1 and the grace period keep a
        name from being freed while a writer may still aim at it), so any newer
        version was built on it. A tombstone or purge marker at or above it means
        a delete or purge ran meanwhile and the name may have been freed and
        re-created: the outcome is unknown, and the provider settles it through
        the document's journal.
        """
        if self.find(created) is None:
            return Verdict.UNKNOWN
        for entry in self.entries:
            if entry.kind is not Kind.VERSION and entry.revision >= created:
                return Verdict.UNKNOWN
        return Verdict.COMMITTED

    def expired(self, *, retain: int, grace: float) -> list[Entry]:
        """What garbage collection may delete now, oldest first (DESIGN section 4, rule 2).

        A version goes once it is not among the newest ``retain`` and its
        successor is more than ``grace`` seconds older than the newest object,
        by the store's own timestamps; the newest version never goes. Purge
        markers go once they are themselves that old. Tombstones stay, so
        revision names never repeat. Without store timestamps nothing goes.
        """
        stamps = [entry.modified for entry in self.entries]
        if not self.entries or any(stamp is None for stamp in stamps):
            return []
        now = max(stamp for stamp in stamps if stamp is not None)
        cutoff = now - grace
        doomed: list[Entry] = []
        old = self.versions[: max(0, len(self.versions) - max(retain, 1))]
        for entry, successor in zip(old, self.versions[1:], strict=False):
            if successor.modified is None or successor.modified >= cutoff:
                break
            doomed.append(entry)
        doomed.extend(
            entry
            for entry in self.entries
            if entry.kind is Kind.PURGE and entry.modified is not None and entry.modified < cutoff
        )
        return sorted(doomed)
