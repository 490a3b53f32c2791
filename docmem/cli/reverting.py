"""One scope's revert as the ``revert`` command makes it: find the revision, plan, revert.

The plan (:meth:`BoundMemory.plan_revert`) comes first, always: a dry run
prints it and writes nothing, and a revert passes the revision it was
computed on as ``expected_revision``, so a save that lands in between
refuses the revert (``RevertRefused``) instead of being undone unseen. The
revision is given (``--to``) or found by time (``--before``): the newest
version the store kept at or before that instant, by the store's own time
(:attr:`docmem.backend.KeptVersion.modified`), to the millisecond.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Literal

from docmem.backend import Backend
from docmem.errors import DocmemError, DocumentCorrupt, RevertRefused
from docmem.provider.document import parse
from docmem.provider.memory import FileMemory, RevertPlan

from .address import Address
from .memory import PLAIN_SLOT
from .moments import iso_milliseconds, milliseconds, milliseconds_of_seconds

__all__ = ["Outcome", "Target", "revert_scope"]

Status = Literal["planned", "reverted", "unchanged", "replayed", "refused", "failed"]


@dataclass(frozen=True)
class Target:
    """The revision to go back to: ``revision`` as given, or the newest kept at or ``before``."""

    revision: int | None = None
    before: datetime.datetime | None = None

    def fields(self) -> dict[str, Any]:
        """How the answer names it (docs/cli.md)."""
        before = None if self.before is None else iso_milliseconds(milliseconds(self.before))
        return {"to": self.revision, "before": before}


@dataclass(frozen=True)
class Outcome:
    """What one scope's revert did or would do; ``plan`` holds the entries' text, for show only."""

    key: str
    status: Status
    to_revision: int | None = None
    planned_on: int | None = None
    revision: int | None = None
    removed: tuple[int, ...] = ()
    restored: tuple[int, ...] = ()
    error: DocmemError | None = None
    plan: RevertPlan | None = field(default=None, compare=False, repr=False)

    @property
    def stopped(self) -> bool:
        """Whether it was refused or failed: the command then exits 1."""
        return self.status in ("refused", "failed")

    def fields(self) -> dict[str, Any]:
        """The scope's object in ``--json`` (docs/cli.md): indexes, never text."""
        error = self.error
        return {
            "key": self.key,
            "status": self.status,
            "to_revision": self.to_revision,
            "planned_on": self.planned_on,
            "revision": self.revision,
            "removed": list(self.removed),
            "restored": list(self.restored),
            "error": None if error is None else {"code": error.code, "message": error.message},
        }

    def line(self) -> str:
        """What happened, in one line for a person (without the key)."""
        if self.status == "planned":
            return (
                f"would revert to revision {self.to_revision} (computed on revision "
                f"{self.planned_on}): {_changes(self.removed, self.restored, 'remove', 'restore')}"
            )
        if self.status == "unchanged":
            return (
                f"unchanged: revision {self.revision} already holds the entries of revision "
                f"{self.to_revision}"
            )
        if self.status == "reverted":
            changed = _changes(self.removed, self.restored, "removed", "restored")
            to, now = self.to_revision, self.revision
            return f"reverted to revision {to} as revision {now} ({changed})"
        if self.status == "replayed":
            return (
                "replayed: this mutation id was applied before; nothing changed "
                f"(revision {self.revision})"
            )
        assert self.error is not None
        if self.status == "refused":
            return f"refused: {self.error.message}"
        return f"failed: {self.error.code}: {self.error.message}"


def revert_scope(
    store: Backend,
    memory: FileMemory,
    address: Address,
    target: Target,
    *,
    mutation_id: str | None,
    expected_revision: int | None = None,
) -> Outcome:
    """Plan one scope's revert, and make it unless ``mutation_id`` is ``None`` (a dry run).

    Raises what docmem raises: :class:`RevertRefused` when it cannot be made
    as asked (the memory moved on from ``expected_revision`` or from the
    plan, the revision is not kept, before an erase, or none is kept at or
    before the time), any other :class:`DocmemError` when the store fails.
    """
    bound = memory.bind(address.scope, slot=PLAIN_SLOT)
    to_revision = target.revision
    if to_revision is None:
        assert target.before is not None
        to_revision = _revision_at(store, address.key, target.before)
    plan = bound.plan_revert(to_revision)
    if expected_revision is not None and plan.revision != expected_revision:
        raise RevertRefused(
            f"the memory changed since the dry run (revision {expected_revision} is now "
            f"{plan.revision}); review the new changes and revert again"
        )
    removed, restored = tuple(plan.changes.removed), tuple(plan.changes.added)
    if mutation_id is None:
        return Outcome(
            address.key,
            "planned" if plan.changes else "unchanged",
            to_revision,
            plan.revision,
            plan.revision,
            removed,
            restored,
            plan=plan,
        )
    result = bound.revert(to_revision, mutation_id=mutation_id, expected_revision=plan.revision)
    status: Status = result.status
    if status == "reverted" and result.revision <= plan.revision:
        # The journal's own record answered: this id reverted the scope before the plan was
        # read (a run resumed under the same id), so this call changed nothing.
        status = "replayed"
    return Outcome(
        address.key,
        status,
        to_revision,
        plan.revision,
        result.revision,
        result.removed,
        result.restored,
        plan=plan,
    )


def _revision_at(store: Backend, key: str, before: datetime.datetime) -> int:
    """The revision of the newest version kept at or before ``before``; RevertRefused if none."""
    cutoff = milliseconds(before)
    when = iso_milliseconds(cutoff)
    chosen = None
    kept = store.history(key)
    for version in kept:
        if version.modified is None:
            raise RevertRefused(
                "the store does not say when it wrote its versions, so --before cannot "
                "place them: pass --to REVISION (`docmem history` lists them)"
            )
        if milliseconds_of_seconds(version.modified) <= cutoff:
            chosen = version
    if chosen is None:
        if not kept:
            raise RevertRefused("the scope has no document to revert")
        assert kept[0].modified is not None
        oldest = iso_milliseconds(milliseconds_of_seconds(kept[0].modified))
        raise RevertRefused(
            f"no version of this scope kept at or before {when}: the oldest kept is of {oldest}"
        )
    stored = store.read_version(key, chosen.version)
    if stored is None:
        raise RevertRefused(
            f"the newest version kept at or before {when} is gone since the store listed it"
        )
    try:
        return parse(bytes(stored.data)).revision
    except DocumentCorrupt:
        raise RevertRefused(
            f"the newest version kept at or before {when} is corrupt: pass --to REVISION"
        ) from None


def _changes(removed: tuple[int, ...], restored: tuple[int, ...], out: str, back: str) -> str:
    parts = []
    if removed:
        parts.append(f"{out} {_indexes(removed)}")
    if restored:
        parts.append(f"{back} {_indexes(restored)}")
    return "; ".join(parts) or "no change"


def _indexes(indexes: tuple[int, ...]) -> str:
    return ", ".join(str(index) for index in indexes)
