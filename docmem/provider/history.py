"""A scope's kept revisions, as an operator and a revert read them (docs/design.md, section 3.1).

The store lists the versions it keeps (:meth:`docmem.backend.Backend.history`)
as opaque tokens; this module reads each one as a document, so that a
version is known by its revision (what the journal, ``docmem show`` and a
revert speak of) and by what changed it, and finds the document of one
revision for a revert. A version collected or purged since the listing, or
one that does not parse, is shown as such and never restored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..backend import Backend, KeptVersion
from ..errors import DocumentCorrupt, RevertRefused, UnknownKey
from .document import MemoryDocument, parse

__all__ = ["EntryChanges", "KeptRevision", "changes", "kept_revisions", "revision_document"]


@dataclass(frozen=True)
class KeptRevision:
    """One kept version of a scope's document and what it holds.

    ``state`` is ``"ok"`` with its ``document``, ``"gone"`` when the store
    dropped it since listing, ``"corrupt"`` when it does not parse or open,
    ``"sealed"`` when an encrypted store no longer holds its key (an older
    version left under a key retired after a rotation).
    """

    kept: KeptVersion
    state: Literal["ok", "gone", "corrupt", "sealed"]
    document: MemoryDocument | None

    @property
    def revision(self) -> int | None:
        """The document's revision, ``None`` unless readable."""
        return None if self.document is None else self.document.revision

    @property
    def op(self) -> str | None:
        """What made this revision (its own journal record's op), if the journal says."""
        document = self.document
        if document is None:
            return None
        made = next((r for r in document.journal if r.rev == document.revision), None)
        return None if made is None else made.op


@dataclass(frozen=True)
class EntryChanges:
    """What going from one document to another changes, by index: for a dry run or a diff."""

    removed: Mapping[int, str]
    added: Mapping[int, str]
    unchanged: int

    def __bool__(self) -> bool:
        return bool(self.removed or self.added)


def kept_revisions(store: Backend, key: str) -> list[KeptRevision]:
    """Every version the store keeps of ``key``, oldest first, each read and parsed.

    Raises :class:`~docmem.errors.HistoryNotKept` for a store that keeps none.
    """
    return [_read(store, key, kept) for kept in store.history(key)]


def revision_document(store: Backend, key: str, revision: int) -> MemoryDocument:
    """The kept document of ``revision``, looked for newest first; RevertRefused if none."""
    for kept in reversed(store.history(key)):
        found = _read(store, key, kept)
        if found.document is not None and found.document.revision == revision:
            return found.document
        if found.document is not None and found.document.revision < revision:
            break  # older versions hold older revisions only
    raise RevertRefused(
        f"revision {revision} is not among the versions the store keeps of this scope; "
        "`docmem history` lists them"
    )


def changes(before: MemoryDocument | None, after: MemoryDocument | None) -> EntryChanges:
    """The entries ``after`` lacks and adds compared with ``before`` (an index is never reused)."""
    old = {} if before is None else before.entries
    new = {} if after is None else after.entries
    removed = {i: text for i, text in old.items() if new.get(i) != text}
    added = {i: text for i, text in new.items() if old.get(i) != text}
    return EntryChanges(removed, added, len(old) - len(removed))


def _read(store: Backend, key: str, kept: KeptVersion) -> KeptRevision:
    """One kept version as a revision; one that cannot be read never hides the others."""
    try:
        stored = store.read_version(key, kept.version)
    except UnknownKey:
        return KeptRevision(kept, "sealed", None)
    except DocumentCorrupt:  # an envelope that does not open
        return KeptRevision(kept, "corrupt", None)
    if stored is None:
        return KeptRevision(kept, "gone", None)
    try:
        document = parse(bytes(stored.data))
    except DocumentCorrupt:
        return KeptRevision(kept, "corrupt", None)
    return KeptRevision(kept, "ok", document)
