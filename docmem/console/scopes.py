"""Finding a scope the way an operator knows it, and reading what the scope pages show.

A scope is found by a principal (kind, authenticator, id, optional issuer)
and a namespace, through the same :func:`docmem.cli.address.resolve` the
``--principal`` flag goes through, or by a storage key pasted from a log.
From then on the console names it by its storage key alone: URLs, forms and
the action log hold the key, never the raw scope values.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass

from docmem.cli.address import Address, by_storage_key, resolve
from docmem.cli.command import UsageError
from docmem.cli.provenance import described
from docmem.errors import HistoryNotKept, InvalidArgument
from docmem.provider.document import MemoryDocument, render_recall
from docmem.provider.history import KeptRevision, changes
from docmem.provider.memory import BoundMemory, FileMemory

__all__ = [
    "DiffRow",
    "EntryRow",
    "Timeline",
    "bind",
    "diff_rows",
    "entry_rows",
    "find_scope",
    "recall_of",
    "timeline",
]


def find_scope(form: Mapping[str, str]) -> Address:
    """The scope a find form names: ``key``, or ``namespace`` with the principal's three parts.

    Raises :class:`~docmem.errors.InvalidArgument` with a sentence for the
    form (never quoting what was typed).
    """
    key = form.get("key", "").strip()
    if key:
        return by_storage_key(key)
    parts = [form.get(name, "").strip() for name in ("kind", "authenticator", "id")]
    namespace = form.get("namespace", "").strip()
    if not namespace or not all(parts):
        raise InvalidArgument(
            "give a namespace and the principal's kind, authenticator and id, or a storage key"
        )
    issuer = form.get("issuer", "").strip() or None
    flags = argparse.Namespace(
        namespace=namespace,
        principal=":".join(parts),
        issuer=issuer,
        scope=None,
        scalar_scope=None,
        key=None,
    )
    try:
        return resolve(flags)
    except UsageError as error:  # the form cannot combine flags wrongly; be safe all the same
        raise InvalidArgument(error.message) from None


def bind(memory: FileMemory, key: str, slot: str) -> BoundMemory:
    """The scope of storage key ``key`` bound under ``slot`` (the console's one FileMemory)."""
    return memory.bind(by_storage_key(key).scope, slot=slot)


@dataclass(frozen=True)
class EntryRow:
    """One entry as the scope page lists it: index, text, and its provenance in words."""

    index: int
    text: str
    provenance: str
    by: str | None


def entry_rows(document: MemoryDocument) -> list[EntryRow]:
    """Each entry with the words ``docmem show --provenance`` prints for it."""
    rows = []
    for index, text in document.entries.items():
        made = document.provenance.get(index)
        rows.append(EntryRow(index, text, described(made), None if made is None else made.by))
    return rows


def recall_of(document: MemoryDocument, slot: str) -> str:
    """The recall message exactly as the model sees it."""
    return render_recall(document, slot)


@dataclass(frozen=True)
class Timeline:
    """The kept revisions, oldest first, or why the store keeps none."""

    revisions: list[KeptRevision]
    not_kept: str | None = None

    def readable(self) -> list[int]:
        """The revisions that can be read (what the diff and revert forms offer)."""
        return [kept.revision for kept in self.revisions if kept.revision is not None]

    def document(self, revision: int) -> MemoryDocument | None:
        """The kept document of ``revision``, if kept and readable."""
        for kept in self.revisions:
            if kept.revision == revision:
                return kept.document
        return None


def timeline(memory: BoundMemory) -> Timeline:
    """``docmem history``'s listing; a store that keeps none says so (not an error)."""
    try:
        return Timeline(memory.history())
    except HistoryNotKept as refusal:
        return Timeline([], not_kept=refusal.message)


@dataclass(frozen=True)
class DiffRow:
    """One entry that differs between two revisions: ``-`` taken out, ``+`` added."""

    change: str
    index: int
    text: str


def diff_rows(before: MemoryDocument | None, after: MemoryDocument | None) -> list[DiffRow]:
    """The entries going from ``before`` to ``after`` takes out and adds, by index."""
    found = changes(before, after)
    rows = [DiffRow("-", index, text) for index, text in found.removed.items()]
    rows += [DiffRow("+", index, text) for index, text in found.added.items()]
    return sorted(rows, key=lambda row: (row.index, row.change))
