"""What one mutation does to the document it read: the decisions of the conflict loop.

Each operation (:class:`Save`, :class:`Remove`, :class:`Erase`) checks its
arguments when it is made and then, for every document an attempt reads,
:meth:`Mutation.decide` says what that document calls for:

- :class:`Done`: our own journal record (or our id among the older ids) is
  there, the mutation already happened;
- :class:`NoOp`: nothing to write (a duplicate save, an absent index or document);
- :class:`Refused`: the document refuses the change (a fence, a limit, no index left);
- :class:`Write`: these bytes, written over the version read, make the change.

Every refusal and limit is decided here, nothing is read or written here: the
loop in :mod:`docmem.memory` acts on the decision (docs/design.md, section 5).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar, Generic, Literal, TypeVar

from ..errors import (
    DocmemError,
    IndexExhausted,
    InvalidArgument,
    LimitExceeded,
    MutationConflict,
    ScopeFenced,
    SecretDetected,
)
from . import journal
from .document import (
    MAX_DOCUMENT_BYTES,
    MemoryDocument,
    new_document,
    normalize_entry,
    recall_length,
    serialize,
    serialize_shrinking,
)
from .journal import JournalRecord, Op
from .secrets import SecretFilter

__all__ = [
    "Aged",
    "Decision",
    "Done",
    "Erase",
    "EraseResult",
    "Mutation",
    "NoOp",
    "Refused",
    "Remove",
    "RemoveResult",
    "Save",
    "SaveResult",
    "Write",
]

_R = TypeVar("_R")


# ``"replayed"``, in every result: the mutation id was applied before and its
# record has aged out of the journal, so only the id is known (docs/design.md,
# section 5). Nothing was written, and ``revision`` is the document's current one.


@dataclass(frozen=True)
class Aged:
    """This mutation's id is among ``document``'s older ids: applied once, its result gone."""

    document: MemoryDocument


@dataclass(frozen=True)
class SaveResult:
    """A committed save (``"saved"``), an entry already there (``"duplicate"``), or a replay.

    ``index`` is ``None`` only for a ``"replayed"`` save whose text is gone (removed
    or erased since); a replayed save whose text is there has that entry's index.
    """

    status: Literal["saved", "duplicate", "replayed"]
    index: int | None
    revision: int


@dataclass(frozen=True)
class RemoveResult:
    """A committed removal (``"removed"``), an index with no entry (``"absent"``), or a replay."""

    status: Literal["removed", "absent", "replayed"]
    index: int
    revision: int


@dataclass(frozen=True)
class EraseResult:
    """A committed erase (``"erased"``), a scope with no document (``"absent"``), or a replay."""

    status: Literal["erased", "absent", "replayed"]
    revision: int


# -- decisions -------------------------------------------------------------------


@dataclass(frozen=True)
class Done(Generic[_R]):
    """Our own record is in the document: the recorded result, without a second effect."""

    result: _R


@dataclass(frozen=True)
class NoOp(Generic[_R]):
    """The document already is as asked: a successful result that writes nothing."""

    result: _R


@dataclass(frozen=True)
class Refused:
    """The document refuses the change: raise ``error`` (once a fresh read confirms it)."""

    error: DocmemError


@dataclass(frozen=True)
class Write(Generic[_R]):
    """Write ``data``, the bytes of ``document``, over the version read; then ``result``."""

    document: MemoryDocument
    data: bytes
    result: _R


Decision = Done[_R] | NoOp[_R] | Refused | Write[_R]

#: What :meth:`Mutation.apply` makes of a document: nothing to do, or the new document.
Change = NoOp[_R] | tuple[MemoryDocument, _R]


# -- mutations -------------------------------------------------------------------


class Mutation(abc.ABC, Generic[_R]):
    """One save, remove or erase under its ``mutation_id``, ready to decide on any document.

    Subclasses say what the change is (:meth:`apply`) and what a journal record
    of it means (:meth:`replay`, :meth:`replayed`); :meth:`decide` adds what
    every mutation shares.
    A ``shrinking`` change never fails a limit (docs/design.md, section 3).
    """

    op: ClassVar[Op]
    shrinking: ClassVar[bool] = True

    def __init__(self, mutation_id: str, arg: str) -> None:
        self.id_digest = journal.id_digest(journal.checked_mutation_id(mutation_id))
        self.request_digest = journal.request_digest(mutation_id, self.op, arg)

    def decide(self, document: MemoryDocument | None) -> Decision[_R]:
        """What ``document`` (``None``: the scope has none) calls for; see the module docstring."""
        mine = self.own_record(document)
        if mine is not None:
            return Done(self.result_of(mine))
        if document is not None and document.fence is not None:
            return Refused(
                ScopeFenced("this memory is being migrated; changes are refused for now")
            )
        try:
            change = self.apply(document)
            return change if isinstance(change, NoOp) else self._serialized(*change)
        except (LimitExceeded, IndexExhausted) as refusal:
            return Refused(refusal)

    def own_record(self, document: MemoryDocument | None) -> JournalRecord | Aged | None:
        """This mutation's record in ``document``; the same id for another request is refused.

        An id found only among the older ids is :class:`Aged`: which request
        it made is no longer known, so it is taken to be this one.
        """
        if document is None:
            return None
        mine = journal.find(document.journal, self.id_digest)
        if mine is None:
            if journal.find_older(document.older_ids, self.id_digest):
                return Aged(document)
            return None
        if mine.request_digest != self.request_digest:
            raise MutationConflict("this mutation id was already used for a different request")
        return mine

    def result_of(self, record: JournalRecord | Aged) -> _R:
        """The result :meth:`own_record`'s answer stands for."""
        if isinstance(record, Aged):
            return self.replayed(record.document)
        return self.replay(record)

    @abc.abstractmethod
    def apply(self, document: MemoryDocument | None) -> Change[_R]:
        """The change on ``document``; raises LimitExceeded or IndexExhausted to refuse it."""

    @abc.abstractmethod
    def replay(self, record: JournalRecord) -> _R:
        """The result this mutation's journal ``record`` stands for."""

    @abc.abstractmethod
    def replayed(self, document: MemoryDocument) -> _R:
        """The result of this mutation, found among ``document``'s older ids: nothing to do."""

    def record(self, document: MemoryDocument, index: int | None) -> JournalRecord:
        """The journal record of this mutation written over ``document``."""
        return JournalRecord(
            self.id_digest,
            self.request_digest,
            document.revision + 1,
            self.op,
            journal.OUTCOME_OF[self.op],
            index,
        )

    def _serialized(self, document: MemoryDocument, result: _R) -> Write[_R]:
        """The write of ``document``, within the byte cap (by dropping old records if shrinking)."""
        if self.shrinking:
            document, data = serialize_shrinking(document)
        else:
            data = serialize(document)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise LimitExceeded(
                f"memory is full: the stored document would be {len(data):,} of at most "
                f"{MAX_DOCUMENT_BYTES:,} bytes; remove an entry by index first"
            )
        return Write(document, data, result)


class Save(Mutation[SaveResult]):
    """Save one entry, normalized; refused when it looks like a credential.

    ``max_characters`` bounds the recall message ``slot`` renders, inclusive.
    """

    op = "save"
    shrinking = False

    def __init__(
        self,
        text: str,
        mutation_id: str,
        *,
        slot: str,
        max_characters: int,
        secret_filter: SecretFilter,
    ) -> None:
        self.text = normalize_entry(text)
        kind = secret_filter(self.text)
        if kind is not None:
            raise SecretDetected(
                f"the text looks like a credential ({kind}); secrets are not saved as memory"
            )
        self.slot = slot
        self.max_characters = max_characters
        super().__init__(mutation_id, self.text)

    def apply(self, document: MemoryDocument | None) -> Change[SaveResult]:
        current = document or new_document()
        existing = current.index_of(self.text)
        if existing is not None:
            return NoOp(SaveResult("duplicate", existing, current.revision))
        updated = current.with_entry(self.text, self.record(current, current.last + 1))
        self._check_characters(current, updated)
        return updated, SaveResult("saved", updated.last, updated.revision)

    def replay(self, record: JournalRecord) -> SaveResult:
        return SaveResult("saved", _index(record), record.rev)

    def replayed(self, document: MemoryDocument) -> SaveResult:
        return SaveResult("replayed", document.index_of(self.text), document.revision)

    def _check_characters(self, before: MemoryDocument, after: MemoryDocument) -> None:
        """LimitExceeded when ``after`` renders past ``max_characters``, with what to do."""
        maximum = self.max_characters
        rendered = recall_length(after, self.slot)
        if rendered <= maximum:
            return
        if not before.entries:
            raise LimitExceeded(
                f"this note is too long for this memory: it would render to {rendered:,} "
                f"characters, at most {maximum:,} allowed; save a shorter note"
            )
        used = recall_length(before, self.slot)
        raise LimitExceeded(
            f"memory is full: {used:,} of {maximum:,} characters used and this note needs "
            f"{rendered - used:,}; remove an entry by index first or save a shorter note"
        )


class Remove(Mutation[RemoveResult]):
    """Remove the entry at ``index``; an index with no entry is a successful no-op."""

    op = "remove"

    def __init__(self, index: int, mutation_id: str) -> None:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InvalidArgument("index must be a non-negative integer")
        self.index = index
        super().__init__(mutation_id, str(index))

    def apply(self, document: MemoryDocument | None) -> Change[RemoveResult]:
        if document is None or self.index not in document.entries:
            revision = document.revision if document is not None else 0
            return NoOp(RemoveResult("absent", self.index, revision))
        updated = document.without_entry(self.index, self.record(document, self.index))
        return updated, RemoveResult("removed", self.index, updated.revision)

    def replay(self, record: JournalRecord) -> RemoveResult:
        return RemoveResult("removed", _index(record), record.rev)

    def replayed(self, document: MemoryDocument) -> RemoveResult:
        return RemoveResult("replayed", self.index, document.revision)


class Erase(Mutation[EraseResult]):
    """Rewrite the document header-only: ``last`` kept, the journal reduced to this record."""

    op = "erase"

    def __init__(self, mutation_id: str) -> None:
        super().__init__(mutation_id, "")

    def apply(self, document: MemoryDocument | None) -> Change[EraseResult]:
        if document is None:
            return NoOp(EraseResult("absent", 0))
        updated = document.erased(self.record(document, None))
        return updated, EraseResult("erased", updated.revision)

    def replay(self, record: JournalRecord) -> EraseResult:
        return EraseResult("erased", record.rev)

    def replayed(self, document: MemoryDocument) -> EraseResult:
        return EraseResult("replayed", document.revision)


def _index(record: JournalRecord) -> int:
    assert record.index is not None, "save and remove records always carry an index"
    return record.index
