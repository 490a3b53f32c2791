"""The conflict loop: read, decide, write conditionally, again after a lost race.

It runs a batch of mutations of one key (:mod:`docmem.grouping` forms the
batches; a lone mutation is a batch of one). Each attempt reads the document
once and lets every member decide in arrival order on the document the
members before it left, each against the limits and its own journal record
on its own (:meth:`docmem.mutation.Mutation.decide`); then one conditional
write carries every change. On a lost race the whole batch tries again
within one retry budget.

What a member learns is its own truth (docs/design.md, section 5):

- its record already in the stored document: the recorded result;
- decided on the document its batch-mates changed (a refusal, a duplicate, a
  no-op): final only once the write that makes that document lands, since
  after a lost race the next attempt decides again on what the store holds;
- a lost answer: every member whose change the write carried has a pending
  write, settled for each by its own record (or another's at its revision).
  That is why a write never drops an earlier member's record from the
  journal: such a member waits for the next batch (it is *spilled*).
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, Union

from .. import telemetry
from ..errors import (
    Cancelled,
    DocmemError,
    MutationAmbiguous,
    StoreBusy,
    VersionConflict,
    WriteOutcomeUnknown,
)
from . import fencing, journal
from .document import MemoryDocument
from .grouping import Member
from .mutation import Aged, Mutation, Refused, Write
from .reading import KeyReader, Observed, Read
from .retry import Attempt, RetryPolicy

__all__ = ["KeyIO", "Observed", "PendingWrite", "Read", "Work", "commit_batch"]

logger = logging.getLogger("docmem")

_R = TypeVar("_R")


class KeyIO(KeyReader):
    """One key of one store as the loop uses it: the reads of :class:`KeyReader`, and writes."""

    def write(self, write: Write[Any], read: Read, observation: Observed) -> None:
        """``write`` over ``read``, conditionally; a create first asks whether fenced."""
        if read.version is None:
            with observation.request("read"):
                fencing.refuse_create_if_fenced(self.store)
        with observation.request("write"):
            self.store.write(self.key, write.data, expected=read.version)
        self._parsed.put(write.data, write.document)

    def confirm_created(self, observation: Observed) -> None:
        """After this key's document was created: ScopeFenced (unknown) if a fence went up."""
        with observation.request("read"):
            fencing.confirm_create(self.store, self.key)


class PendingWrite:
    """A write of ours whose answer was lost, until a read settles it.

    ``revision`` is the revision our record in it has, or ``None``: no such
    write, or a read proved it never landed; ``created`` says it made the
    document. While one is pending, a failure says ``unknown``, never
    ``not_committed``.
    """

    def __init__(self, observation: Observed = telemetry.NULL) -> None:
        self.revision: int | None = None
        self.created = False
        self._observation = observation

    def wrote(self, revision: int, *, created: bool) -> None:
        """A write that gives our record ``revision`` has an unknown outcome."""
        self.revision = revision
        self.created = created

    def settle(self, document: MemoryDocument | None) -> None:
        """What a read without our own record proves about the pending write.

        Still below its revision: it may yet land, keep it pending (the retry
        reuses the mutation id). Past it: the record at that revision is
        another mutation's, so ours never landed; if the journal no longer
        reaches back that far, nobody can tell, and re-applying could do it twice.
        """
        pending = self.revision
        current = document.revision if document is not None else 0
        if pending is None or current < pending:
            return
        assert document is not None
        if not any(record.rev == pending for record in document.journal):
            self._observation.settled("ambiguous")
            raise MutationAmbiguous(f"cannot tell whether the write of revision {pending} landed")
        self._observation.settled("not_committed")
        self.revision = None


@dataclass
class Work(Generic[_R]):
    """What a batch member carries: its mutation, its caller's observation and cancel."""

    mutation: Mutation[_R]
    observation: Observed
    cancel: threading.Event | None = None
    pending: PendingWrite = field(init=False)

    def __post_init__(self) -> None:
        self.pending = PendingWrite(self.observation)

    def cancelled(self) -> bool:
        """Whether the caller's turn was abandoned: no new attempt for this member."""
        return self.cancel is not None and self.cancel.is_set()


#: A batch member: its :class:`Work` (the mutation and its bookkeeping) and its answer.
Batched = Member[Work[Any], Any]


def commit_batch(members: list[Batched], io: KeyIO, policy: RetryPolicy) -> list[Batched]:
    """Run ``members`` (each carrying a :class:`Work`) until each is finished or spilled.

    The first member's observation reports the store requests (its thread
    runs the batch); every member's says how many shared it
    (``docmem.batch.size``). Returns the spilled members, in order.
    """
    return _Batch(members, io, policy).run()


#: A member's answer decided on the document its batch-mates changed: final once that lands.
_Provisional = tuple[Batched, Union[DocmemError, Any]]  # noqa: UP007


@dataclass
class _Plan:
    """What one attempt decided: the writes in order (the last is the document to store)."""

    accepted: list[tuple[Batched, Write[Any]]] = field(default_factory=list)
    provisional: list[_Provisional] = field(default_factory=list)


class _Batch:
    """One batch of one key's mutations, from its first read to every member's answer.

    ``live`` holds the members still to be answered, in arrival order (the
    order they decide in); a member leaves it exactly once, answered
    (:meth:`_finish`, :meth:`_fail`) or handed back to the queue
    (:meth:`_spill`). The batch shares one retry budget (``attempts``): a
    lost race costs every member the same attempt, since they all decide
    again on the next read. The leader's observation (``lead``) reports the
    store requests, because the leader's thread makes them.
    """

    def __init__(self, members: list[Batched], io: KeyIO, policy: RetryPolicy) -> None:
        self.live = list(members)
        self.spilled: list[Batched] = []
        self.io = io
        self.lead: Observed = members[0].work.observation
        # A lone mutation's back-off waits on its own cancel; a batch outlives any one cancel.
        alone = members[0].work.cancel if len(members) == 1 else None
        self.attempts = policy.attempts(cancel=alone)
        for member in members:
            member.work.observation.set("docmem.batch.size", len(members))

    def run(self) -> list[Batched]:
        """Attempt until every member is answered or spilled; the spilled ones, in order.

        A failure no attempt can get past (a store that is down, a corrupt
        document) answers every live member with its own copy of it; an
        exhausted budget settles what is pending first (:meth:`_give_up`).
        """
        try:
            for attempt in self.attempts:
                self._drop_cancelled()
                if not self.live:
                    return self.spilled
                for member in self.live:
                    member.work.observation.attempt(attempt.number)
                self._attempt(attempt)
                if not self.live:
                    return self.spilled
            self._give_up()
        except DocmemError as error:
            self._fail_all(error)
        return self.spilled

    # -- one attempt -------------------------------------------------------------

    def _attempt(self, attempt: Attempt) -> None:
        """One read, every member's decision on it, and the one write they call for."""
        io = self.io
        recent = attempt.number == 0 and io.store.recent_reads_may_be_stale
        read = io.load(self.lead, recent=recent)
        plan = self._plan(read)
        if not plan.accepted:
            if read.from_cache and plan.provisional:
                attempt.retry_at_once()  # confirm a no-op or refusal on a fresh read
            else:
                self._answer(plan.provisional)
            return
        final = plan.accepted[-1][1]
        created = read.version is None
        try:
            io.write(final, read, self.lead)
        except VersionConflict:
            logger.debug("docmem: version conflict on %s, attempt %d", io.key, attempt.number)
            for member in self.live:
                member.work.observation.lost_race()
            if read.from_cache:
                attempt.retry_at_once()  # a stale cache is no sign of contention
            return
        except WriteOutcomeUnknown:
            logger.info(
                "docmem: write outcome unknown on %s at rev %d, reconciling",
                io.key,
                final.document.revision,
            )
            revisions = {
                _request(member): write.document.revision for member, write in plan.accepted
            }
            for member in self.live:  # a batch-mate under the same id and request rides along
                work = member.work
                revision = revisions.get(_request(member))
                if revision is not None:
                    work.observation.unknown()
                    work.pending.wrote(revision, created=created)
            return
        written = final.document
        for member, _ in plan.accepted:
            observation = member.work.observation
            observation.settled("not_committed")  # a lost write of ours would have conflicted
            observation.document(
                len(final.data), len(written.entries), written.revision, written=True
            )
        if created:
            io.confirm_created(self.lead)
        for member, write in plan.accepted:
            self._finish(member, write.result)
        self._answer(plan.provisional)

    def _plan(self, read: Read) -> _Plan:
        """Each live member's decision on ``read``, in order, each on its predecessors' document.

        Members the stored document decides are answered now: their record is
        in it, or their pending write can no longer be settled.
        """
        plan = _Plan()
        document = read.document
        for member in list(self.live):
            work = member.work
            try:
                mine = work.mutation.own_record(read.document)
                if mine is not None:
                    self._committed(member, mine)
                    continue
                work.pending.settle(read.document)
            except DocmemError as error:
                self._fail(member, error)
                continue
            if work.cancelled():
                self._fail(member, _unmade(cancelled=True, pending=_pending(member)))
                continue
            try:
                decision = work.mutation.decide(document)
            except DocmemError as error:  # this id in a batch-mate's record, another request
                plan.provisional.append((member, error))
                continue
            if isinstance(decision, Write):
                if plan.accepted and not _keeps_records(decision.document, plan.accepted):
                    self._spill(self.live[self.live.index(member) :])
                    break
                plan.accepted.append((member, decision))
                document = decision.document
            elif isinstance(decision, Refused):
                plan.provisional.append((member, decision.error))
            else:  # NoOp, or Done by a batch-mate under the same id and request
                plan.provisional.append((member, decision.result))
        return plan

    # -- answers ------------------------------------------------------------------

    def _committed(self, member: Batched, record: journal.JournalRecord | Aged) -> None:
        """``member``'s record is stored: its recorded result (after a lost answer, settled)."""
        work = member.work
        if work.pending.revision is not None:
            work.observation.settled("committed")  # our record is in it: the lost write landed
            if work.pending.created:  # a create whose answer was lost: fenced meanwhile?
                self.io.confirm_created(self.lead)
        self._finish(member, work.mutation.result_of(record))

    def _answer(self, provisional: list[_Provisional]) -> None:
        """Give the provisional answers as final: the document they were decided on is stored."""
        for member, answer in provisional:
            if isinstance(answer, DocmemError):
                self._fail(member, answer)
            else:
                self._finish(member, answer)

    def _finish(self, member: Batched, result: Any) -> None:
        """Answer ``member`` with ``result``, which wakes its caller."""
        # The last touch of the member's observation: its caller ends it once woken.
        member.work.observation.backed_off(self.attempts.slept)
        self.live.remove(member)
        member.finish(result)

    def _fail(self, member: Batched, error: DocmemError) -> None:
        """Answer ``member`` with ``error``, its ``outcome`` set from what is pending.

        An error that does not say whether the change was made gets
        ``unknown`` while a write of it is pending, ``not_committed`` otherwise.
        """
        if error.outcome is None:
            error.outcome = "unknown" if _pending(member) else "not_committed"
        member.work.observation.backed_off(self.attempts.slept)
        self.live.remove(member)
        member.fail(error)

    def _fail_all(self, error: DocmemError) -> None:
        """One failure for every live member, each with its own copy and outcome."""
        live = list(self.live)
        errors = [error] + [copy.copy(error) for _ in live[1:]]
        for member, own in zip(live, errors, strict=True):
            self._fail(member, own)

    def _spill(self, members: list[Batched]) -> None:
        """Hand ``members`` back to the queue for the next batch, which the first of them leads.

        For a member whose write would drop a batch-mate's journal record
        (an erase, a remove at the byte cap): see the module docstring.
        """
        for member in members:
            self.live.remove(member)
        self.spilled.extend(members)

    # -- the end of the budget -----------------------------------------------------

    def _drop_cancelled(self) -> None:
        """Members cancelled with nothing pending stop now; a pending one is settled first."""
        for member in list(self.live):
            if member.work.cancelled() and not _pending(member):
                logger.info("docmem: mutation on %s cancelled", self.io.key)
                self._fail(member, _unmade(cancelled=True, pending=False))

    def _give_up(self) -> None:
        """No attempt left (budget spent or turn cancelled): settle pending writes, then raise.

        The budget, or a cancel, stops new writes, not the read that settles the last.
        """
        if self.attempts.cancelled:
            logger.info("docmem: mutation on %s cancelled", self.io.key)
        else:
            logger.warning("docmem: retry budget exhausted on %s", self.io.key)
        document = None
        if any(_pending(member) for member in self.live):
            document = self.io.load(self.lead).document
        for member in list(self.live):
            work = member.work
            cancelled = self.attempts.cancelled or work.cancelled()
            if _pending(member):
                try:
                    mine = work.mutation.own_record(document)
                    if mine is not None:
                        self._committed(member, mine)
                        continue
                    work.pending.settle(document)
                except DocmemError as error:
                    self._fail(member, error)
                    continue
            self._fail(member, _unmade(cancelled=cancelled, pending=_pending(member)))


def _request(member: Batched) -> tuple[str, str]:
    """The member's mutation id and request, as its journal record would name them."""
    mutation = member.work.mutation
    return mutation.id_digest, mutation.request_digest


def _pending(member: Batched) -> bool:
    return member.work.pending.revision is not None


def _keeps_records(document: MemoryDocument, accepted: list[tuple[Batched, Write[Any]]]) -> bool:
    """Whether ``document``'s journal still holds the record of every accepted member.

    A journal only ever loses its oldest records (it is cut to its newest, or
    to an erase's own record), and each accepted member's record was added
    after the one before it: the first member's record still there means
    every later one is too. One look, not one per member, for each decision.
    """
    first = accepted[0][0].work.mutation.id_digest
    return journal.find(document.journal, first) is not None


def _unmade(*, cancelled: bool, pending: bool) -> DocmemError:
    """Why a mutation that ran out of attempts was not made (or not confirmed)."""
    if cancelled and pending:
        return Cancelled(
            "the turn was cancelled before this change was confirmed; it may still be applied"
        )
    if cancelled:
        return Cancelled("the turn was cancelled; this change was not made")
    if pending:
        return StoreBusy("memory did not confirm this change in time and it may still be applied")
    return StoreBusy("memory is busy: other writers kept changing it; try again shortly")
