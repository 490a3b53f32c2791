"""The commit log of one key: immutable objects named by revision, newest wins.

Every write creates ``<rev:016x>.md``; the newest ``.md`` is the document and
its name is the version token. Two content-free markers share the numbering:

- ``<rev:016x>.tombstone``: written by ``delete`` above every version, so
  revision names never repeat after an operator purge. A tombstone at or above
  the newest version means the key does not exist.
- ``<rev:016x>.purge``: written by ``purge_history`` before it deletes the
  versions below ``rev``, so that a writer who re-created one of those freed
  names can tell (its outcome becomes unknown; see :meth:`Listing.verdict`).

A version records the version it was built on. Its object is one envelope
line, then the document's bytes::

    <!-- docmem-fsspec/2 {"parent":[1,"<SHA-256 of the parent object, base64url>"]} -->

(``"parent":null`` for a version built on no version: the first one, or the
first after a delete). The digest covers the parent's whole object, envelope
included, so the pointers chain: a name that garbage collection freed and a
stale writer re-created holds another object, and the versions above it do
not point at it. That is how a write is judged without trusting any clock
(:meth:`Listing.verdict`). Objects written by the previous release have no
envelope (format 1): they read as their bytes, and a version built on one
points at the digest of those bytes.

Superseded stays superseded. Call a version *superseded* once a version of a
higher revision, or a tombstone at or above its revision, exists. Names are
never overwritten, and an object is removed only from a listing that showed
an object above it which the remover leaves in place: garbage collection and
``purge_history`` keep the newest version and remove only what lies below it,
``delete`` removes only what lies below the tombstone it leaves, and none of
them removes a tombstone except ``delete``, below its own. So the highest of
those objects is never removed, and once version ``r`` is superseded it stays
superseded. Hence, with no clock (:meth:`Listing.supersedes`): if this process
holds the object of ``<r>.md`` from some moment, and a later listing of just
the names after ``<r>.md`` shows nothing that supersedes ``r``, then nothing
superseded it in between, so that object was never removed or replaced and is
the current version now. That one short listing is how a read confirms its
cached version and a write confirms its create. And so garbage collection
never frees a name a writer on the current version creates: that name lies
above the current version, and was never used. Only a writer holding a
superseded version can aim at a freed name, and the listing after its create
shows what superseded it.

This module is pure: it parses listings and objects and decides; the backend
does the I/O.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import msgspec

from docmem.errors import DocumentCorrupt

__all__ = [
    "Entry",
    "Envelope",
    "Kind",
    "Leftover",
    "Listing",
    "Parent",
    "Verdict",
    "digest",
    "object_name",
    "parse_version",
    "unwrap",
    "wrap",
]

_NAME = re.compile(r"([0-9a-f]{16})\.(md|tombstone|purge)")
#: What the local filesystem's create writes before linking it into place.
_TEMPORARY = re.compile(r"\.tmp-[0-9a-f]{32}")
#: Where implementations put an object's store timestamp in ``ls(detail=True)``.
_TIMESTAMP_FIELDS = ("LastModified", "last_modified", "mtime", "updated", "modified")
_ENVELOPE_START = b"<!-- docmem-fsspec/2 "
_ENVELOPE_END = b" -->\n"
#: An envelope line is short; anything longer is not one (and is refused as corrupt).
_ENVELOPE_MAX = 256
_DIGEST = re.compile(r"[A-Za-z0-9_-]{43}")


class Kind(str, enum.Enum):
    """What an object of the log is."""

    VERSION = "md"
    TOMBSTONE = "tombstone"
    PURGE = "purge"


class Verdict(enum.Enum):
    """What a listing taken after a successful create says about that write."""

    COMMITTED = "committed"
    #: The create landed below the newest version: its object is garbage nobody reads.
    NOT_COMMITTED = "not_committed"
    UNKNOWN = "unknown"


class Parent(msgspec.Struct, frozen=True, array_like=True, forbid_unknown_fields=True):
    """The version a version was built on: its revision and the digest of its object."""

    revision: int
    digest: str


class Envelope(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The first line of a version object: what it was built on (``None``: on nothing)."""

    parent: Parent | None


_envelope_encoder = msgspec.json.Encoder()
_envelope_decoder = msgspec.json.Decoder(Envelope)


def object_name(revision: int, kind: Kind = Kind.VERSION) -> str:
    """``<revision as 16 hex digits>.<kind>``: the object's name inside the key's folder."""
    return f"{revision:016x}.{kind.value}"


def parse_version(token: str) -> int | None:
    """The revision a version token names, or ``None`` for anything not a version name."""
    match = _NAME.fullmatch(token) if isinstance(token, str) else None
    if match is None or match.group(2) != Kind.VERSION.value:
        return None
    return int(match.group(1), 16)


def digest(blob: bytes) -> str:
    """The identity of a stored object: SHA-256 of its bytes, base64url without padding."""
    raw = hashlib.sha256(blob).digest()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def wrap(data: bytes, parent: Parent | None) -> bytes:
    """The object of a new version: the envelope naming ``parent``, then ``data``."""
    body = _envelope_encoder.encode(Envelope(parent=parent))
    return _ENVELOPE_START + body + _ENVELOPE_END + data


def unwrap(blob: bytes) -> tuple[Envelope | None, bytes]:
    """(envelope, document bytes) of a version object; no envelope for the previous format.

    An object that starts like an envelope but is not exactly one is refused
    as corrupt rather than handed out with the damaged line in it.
    """
    if not blob.startswith(_ENVELOPE_START):
        return None, blob
    end = blob.find(_ENVELOPE_END, 0, _ENVELOPE_MAX)
    if end < 0:
        raise DocumentCorrupt("a version's envelope line is damaged")
    body = blob[len(_ENVELOPE_START) : end]
    try:
        envelope = _envelope_decoder.decode(body)
    except msgspec.DecodeError:
        raise DocumentCorrupt("a version's envelope line is damaged") from None
    if _envelope_encoder.encode(envelope) != body or not _valid(envelope.parent):
        raise DocumentCorrupt("a version's envelope line is not in canonical form")
    return envelope, blob[end + len(_ENVELOPE_END) :]


def _valid(parent: Parent | None) -> bool:
    return parent is None or (parent.revision >= 1 and bool(_DIGEST.fullmatch(parent.digest)))


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


class Leftover(msgspec.Struct, frozen=True, order=True):
    """A temporary file a local create left behind (a crash between writing and linking)."""

    path: str
    modified: float | None

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Leftover | None:
        path = str(info.get("name", "")).rstrip("/")
        if not _TEMPORARY.fullmatch(path.rsplit("/", 1)[-1]) or info.get("type") != "file":
            return None
        return cls(path=path, modified=_timestamp(info))


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

    def __init__(self, entries: Iterable[Entry], leftovers: Iterable[Leftover] = ()) -> None:
        self.entries: tuple[Entry, ...] = tuple(sorted(entries))
        self.versions: tuple[Entry, ...] = tuple(
            entry for entry in self.entries if entry.kind is Kind.VERSION
        )
        self.leftovers: tuple[Leftover, ...] = tuple(sorted(leftovers))

    @classmethod
    def from_infos(cls, infos: Iterable[Mapping[str, Any]], *, folder: str) -> Listing:
        """The log objects directly inside ``folder``, from ``ls(detail=True)`` records.

        Some implementations list by name prefix (adlfs lists ``key-10/...`` for
        ``key-1``), so anything from another folder is left out here.
        """
        inside = folder.strip("/")
        own = [info for info in infos if _parent_folder(info) == inside]
        parsed = (Entry.from_info(info) for info in own)
        leftovers = (Leftover.from_info(info) for info in own)
        return cls(
            (entry for entry in parsed if entry is not None),
            (leftover for leftover in leftovers if leftover is not None),
        )

    @property
    def top(self) -> int:
        """The highest revision any object uses (0 when there is none)."""
        return self.entries[-1].revision if self.entries else 0

    @property
    def current(self) -> Entry | None:
        """The newest version, unless a tombstone at or above it says the key is deleted.

        The newest version is always one built on the version that was newest
        when it was created: a re-created name lands below a newer version
        (the newest version is never deleted, only ones below it), so it is
        never the highest and a reader never picks it.
        """
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

    def successor(self, created: int) -> Entry | None:
        """The version whose envelope :meth:`verdict` needs to judge ``created``, if any.

        That is the version right above ``created``, when the verdict turns on it:
        ``created`` is listed, no marker clouds it, and newer versions exist.
        """
        if self.find(created) is None or self._marked_from(created):
            return None
        if self.versions[-1].revision == created:
            return None
        return self.find(created + 1)

    def verdict(self, created: int, own_digest: str, successor: Envelope | None = None) -> Verdict:
        """Whether the version this process just created at ``created`` is committed.

        ``own_digest`` is the digest of the object it created; ``successor`` the
        envelope of :meth:`successor`'s object (``None`` when it was not read,
        is gone, or has no envelope). No clock is consulted:

        - the object missing, or a tombstone or purge marker at or above it: a
          delete or purge ran meanwhile, and nothing can tell whether the object
          counted. Unknown; the provider settles it through the journal.
        - the object is the newest version: committed. Had its name been freed,
          a newer version would still be listed (the newest is never deleted).
        - the version above it records it as its parent: committed (whoever
          built on it saw it as the newest).
        - the version above it records another parent: the name was freed and
          re-created below the newest version, and the object is garbage that no
          reader picks. Not committed.
        - anything else (no version right above it, or one without an
          envelope): unknown.
        """
        if self.find(created) is None or self._marked_from(created):
            return Verdict.UNKNOWN
        if self.versions[-1].revision == created:
            return Verdict.COMMITTED
        if successor is None or self.find(created + 1) is None:
            return Verdict.UNKNOWN
        if successor.parent == Parent(revision=created, digest=own_digest):
            return Verdict.COMMITTED
        return Verdict.NOT_COMMITTED

    def after(self, name: str) -> Listing:
        """The objects whose names sort after ``name`` (a version's name), oldest first.

        Names are fixed-width lowercase hex, so name order is revision order,
        and the objects after ``<r>.md`` are ``r``'s purge marker and tombstone
        and everything of a higher revision: all that :meth:`supersedes` needs.
        """
        return Listing(
            (entry for entry in self.entries if entry.name > name),
            (leftover for leftover in self.leftovers if leftover.path.rsplit("/", 1)[-1] > name),
        )

    def supersedes(self, revision: int) -> bool:
        """Whether these objects supersede version ``revision`` (see the module docstring).

        A version of a higher revision, or a tombstone at or above it, does; a
        purge marker never does (it is written at the revision of a version
        that existed, which is listed itself or superseded in turn).
        """
        return any(
            (entry.kind is Kind.VERSION and entry.revision > revision)
            or (entry.kind is Kind.TOMBSTONE and entry.revision >= revision)
            for entry in self.entries
        )

    def _marked_from(self, revision: int) -> bool:
        return any(
            entry.kind is not Kind.VERSION and entry.revision >= revision for entry in self.entries
        )

    def expired(self, *, retain: int, grace: float) -> list[Entry]:
        """What garbage collection may delete now, oldest first.

        A version goes once it is not among the newest ``retain`` and its
        successor is more than ``grace`` seconds older than the newest object,
        by the store's own timestamps; the newest version never goes. Purge
        markers go once they are themselves that old. Tombstones stay, so
        revision names never repeat. Without store timestamps nothing goes.
        Timestamps decide only when garbage goes: a wrong clock frees names
        early, and :meth:`verdict` still judges every write by the chain.
        """
        cutoff = self._cutoff(grace)
        if cutoff is None:
            return []
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

    def stale_leftovers(self, *, grace: float) -> list[Leftover]:
        """Temporary files more than ``grace`` older than the newest object, oldest first.

        Removing one is safe even if its writer still runs: a create links its
        temporary file into place, and a link of a removed file fails, so that
        create reports nothing committed. (The local filesystem also keeps a
        live writer's file locked, and the sweep skips locked files.)
        """
        cutoff = self._cutoff(grace)
        if cutoff is None:
            return []
        return [
            leftover
            for leftover in self.leftovers
            if leftover.modified is not None and leftover.modified < cutoff
        ]

    def _cutoff(self, grace: float) -> float | None:
        """The newest object's timestamp minus ``grace``; ``None`` unless every object has one."""
        stamps = [entry.modified for entry in self.entries]
        if not stamps or any(stamp is None for stamp in stamps):
            return None
        return max(stamp for stamp in stamps if stamp is not None) - grace


def _parent_folder(info: Mapping[str, Any]) -> str:
    return str(info.get("name", "")).rstrip("/").rsplit("/", 1)[0].strip("/")
