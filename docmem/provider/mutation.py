"""What one mutation does to the document it read: the decisions of the conflict loop.

Each operation (:class:`Save`, :class:`Remove`, :class:`Erase`,
:class:`Revert`) checks its
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

import msgspec

from ..errors import (
    DocmemError,
    IndexExhausted,
    InvalidArgument,
    LimitExceeded,
    MutationConflict,
    RevertRefused,
    ScopeFenced,
    SecretDetected,
    StaleRevision,
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
from .history import changes
from .journal import JournalRecord, Op
from .provenance import Provenance, Restored, check_made_by
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
    "Revert",
    "RevertResult",
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


@dataclass(frozen=True)
class RevertResult:
    """A committed revert (``"reverted"``), one that changes nothing (``"unchanged"``), a replay.

    ``removed`` and ``restored`` are the indexes the revert took out and
    brought back. A retry answered from the journal is ``"reverted"`` with
    both empty, as a save's retry is ``"saved"``: the record says it landed,
    not what it changed; ``"replayed"`` is an id found only among the older ids.
    """

    status: Literal["reverted", "unchanged", "replayed"]
    to_revision: int
    revision: int
    removed: tuple[int, ...] = ()
    restored: tuple[int, ...] = ()


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
    #: The revision the caller based this change on; ``None``: whatever is current.
    expected_revision: int | None = None

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
        revision = 0 if document is None else document.revision
        if self.expected_revision is not None and revision != self.expected_revision:
            return Refused(
                StaleRevision(
                    f"the memory changed since revision {self.expected_revision} (it is now "
                    f"{revision}); read it again and decide anew"
                )
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
        at: int,
        made_by: str = "api",
        session_id: str | None = None,
    ) -> None:
        self.text = normalize_entry(text)
        kind = secret_filter(self.text)
        if kind is not None:
            raise SecretDetected(
                f"the text looks like a credential ({kind}); secrets are not saved as memory"
            )
        try:
            made_by = check_made_by(made_by)
        except ValueError as refusal:
            raise InvalidArgument(str(refusal)) from None
        if session_id is not None:
            session_id = journal.checked_mutation_id(session_id, name="session_id")
        self.slot = slot
        self.max_characters = max_characters
        self.mutation_id = mutation_id
        #: When the save was asked for (ms since the epoch), who asked, in which session.
        self.made = (at, made_by, session_id)
        super().__init__(mutation_id, self.text)

    def apply(self, document: MemoryDocument | None) -> Change[SaveResult]:
        current = document or new_document()
        existing = current.index_of(self.text)
        if existing is not None:
            return NoOp(SaveResult("duplicate", existing, current.revision))
        at, made_by, session = self.made
        index = current.last + 1
        made = Provenance(index, at, made_by, self.mutation_id, session)
        updated = current.with_entry(self.text, self.record(current, index), made)
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
    """Remove the entry at ``index``; an index with no entry is a successful no-op.

    With ``expected_revision``, refused (StaleRevision) unless the document is
    still at that revision.
    """

    op = "remove"

    def __init__(
        self, index: int, mutation_id: str, *, expected_revision: int | None = None
    ) -> None:
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InvalidArgument("index must be a non-negative integer")
        self.index = index
        self.expected_revision = expected_revision
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
    """Rewrite the document header-only: ``last`` kept, the journal reduced to this record.

    With ``expected_revision``, refused (StaleRevision) unless the document is
    still at that revision: an erase never takes a save its caller did not see.
    """

    op = "erase"

    def __init__(self, mutation_id: str, *, expected_revision: int | None = None) -> None:
        self.expected_revision = expected_revision
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


class Revert(Mutation[RevertResult]):
    """Make the scope's entries those of an older revision, as a new revision.

    ``target`` is that revision's document, as the store kept it. Entries
    present in both stay as they are; entries only in the target come back
    under their own index, with their provenance and the revert's
    :class:`~docmem.provider.provenance.Restored` mark; entries only in the
    current document go. ``last`` is kept, so no new save reuses an index.
    Refused (:class:`~docmem.errors.RevertRefused`) when an erase lies
    between the target and the current document (a revert never undoes a
    right-to-be-forgotten request), and when ``expected_revision`` is given
    and the document has moved on from it (the caller's dry run is stale).
    The recall's ``max_characters`` is not checked: the target met it when
    it was written, and refusing would leave poisoned memory in place; the
    byte cap is.
    """

    op = "revert"
    shrinking = False

    def __init__(
        self,
        target: MemoryDocument,
        mutation_id: str,
        *,
        at: int,
        expected_revision: int | None = None,
    ) -> None:
        self.target = target
        self.mutation_id = mutation_id
        self.at = at
        self.expected_revision = expected_revision
        super().__init__(mutation_id, str(target.revision))

    def check(self, current: MemoryDocument | None) -> None:
        """Raise RevertRefused if ``current`` cannot be reverted to the target as asked."""
        check_revert(self.target.revision, current, self.expected_revision)

    def decide(self, document: MemoryDocument | None) -> Decision[RevertResult]:
        mine = self.own_record(document)
        if mine is None:
            try:
                self.check(document)
            except RevertRefused as refusal:
                return Refused(refusal)
        return super().decide(document)

    def apply(self, document: MemoryDocument | None) -> Change[RevertResult]:
        assert document is not None, "check() refuses a scope with no document"
        target = self.target
        diff = changes(document, target)
        removed, restored = tuple(diff.removed), tuple(diff.added)
        if not diff:
            return NoOp(RevertResult("unchanged", target.revision, document.revision))
        provenance = {i: p for i, p in document.provenance.items() if i not in removed}
        mark = Restored(self.at, self.mutation_id)
        for index in restored:
            made = target.provenance.get(index)
            if made is None:  # saved before provenance: all that is known is this revert
                provenance[index] = Provenance(index, self.at, "revert", self.mutation_id, None)
            else:
                provenance[index] = msgspec.structs.replace(made, restored=mark)
        updated = document.reverted(target.entries, provenance, self.record(document, None))
        return updated, RevertResult(
            "reverted", target.revision, updated.revision, removed=removed, restored=restored
        )

    def replay(self, record: JournalRecord) -> RevertResult:
        return RevertResult("reverted", self.target.revision, record.rev)

    def replayed(self, document: MemoryDocument) -> RevertResult:
        return RevertResult("replayed", self.target.revision, document.revision)


def check_revert(
    target: int, current: MemoryDocument | None, expected_revision: int | None = None
) -> None:
    """Raise RevertRefused if ``current`` cannot be reverted to revision ``target`` as asked.

    What a revert's decision and its dry run (``BoundMemory.plan_revert``) both refuse.
    """
    revision = 0 if current is None else current.revision
    if expected_revision is not None and revision != expected_revision:
        raise RevertRefused(
            f"the memory changed since the dry run (revision {expected_revision} "
            f"is now {revision}); review the new changes and revert again"
        )
    if current is None:
        raise RevertRefused("the scope has no document to revert")
    if target > current.revision:
        raise RevertRefused(
            f"revision {target} is newer than the memory's revision {current.revision}"
        )
    erase = current.last_erase()
    if erase is not None and target < erase:
        raise RevertRefused(
            f"revision {target} is before the erase at revision {erase}; "
            "a revert never brings erased memory back"
        )


def _index(record: JournalRecord) -> int:
    assert record.index is not None, "save and remove records always carry an index"
    return record.index
