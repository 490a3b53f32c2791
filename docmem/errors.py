"""The one exception tree of docmem.

Every error carries a stable ``code`` (a class attribute, safe to branch on and
to log) and a message that never contains memory text, queries or raw scope
values: only ids, revisions, sizes, counts and codes.

::

    DocmemError                   docmem_error
    ├── InvalidScope              invalid_scope
    ├── InvalidArgument           invalid_argument
    ├── StoreNotConfigured        store_not_configured
    ├── StoreUnavailable          store_unavailable
    │   ├── ConditionsNotHonoured conditions_not_honoured (a store's own checks)
    │   └── HistoryKept           history_kept           (an erase's purge not done)
    ├── VersionConflict           version_conflict       (backend level)
    ├── WriteOutcomeUnknown       write_outcome_unknown  (backend level)
    ├── StoreBusy                 store_busy
    ├── LimitExceeded             limit_exceeded
    ├── ContentRejected           content_rejected
    │   └── SecretDetected        secret_detected
    ├── IndexExhausted            index_exhausted
    ├── DocumentCorrupt           document_corrupt
    │   └── PlaintextDocument     plaintext_document     (encrypted stores)
    ├── UnknownKey                unknown_key            (encrypted stores)
    ├── MutationConflict          mutation_conflict
    ├── MutationAmbiguous         mutation_ambiguous
    ├── ScopeFenced               scope_fenced
    ├── ExportInvalid             export_invalid         (docmem export files)
    ├── TransferRefused           transfer_refused       (import, verify, migrate)
    ├── HistoryNotKept            history_not_kept       (a store without older versions)
    ├── RevertRefused             revert_refused
    ├── StaleRevision             stale_revision         (expected_revision moved on)
    ├── RecallBatchInvalid        recall_batch_invalid
    └── Cancelled                 cancelled

``VersionConflict`` and ``WriteOutcomeUnknown`` are raised by backends and
handled inside :class:`docmem.FileMemory`; callers of the provider see the
others. A failed mutation additionally tells whether it took effect through
``outcome``: ``"not_committed"`` (provably no effect), ``"unknown"``, or
``"committed"`` (the change is stored but a follow-up step failed, such as
purging old versions after an erase).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "Cancelled",
    "ConditionsNotHonoured",
    "ContentRejected",
    "DocmemError",
    "DocumentCorrupt",
    "ExportInvalid",
    "HistoryKept",
    "HistoryNotKept",
    "IndexExhausted",
    "InvalidArgument",
    "InvalidScope",
    "LimitExceeded",
    "MutationAmbiguous",
    "MutationConflict",
    "Outcome",
    "PlaintextDocument",
    "RecallBatchInvalid",
    "RevertRefused",
    "ScopeFenced",
    "SecretDetected",
    "StaleRevision",
    "StoreBusy",
    "StoreNotConfigured",
    "StoreUnavailable",
    "TransferRefused",
    "UnknownKey",
    "VersionConflict",
    "WriteOutcomeUnknown",
]

Outcome = Literal["committed", "not_committed", "unknown"]


class DocmemError(Exception):
    """Base of every docmem error; ``code`` is stable, the message content-free."""

    code: str = "docmem_error"
    #: For a failed mutation: whether it may have taken effect. ``None`` elsewhere.
    outcome: Outcome | None = None

    def __init__(self, message: str, *, outcome: Outcome | None = None) -> None:
        super().__init__(message)
        self.message = message
        if outcome is not None:
            self.outcome = outcome

    def __str__(self) -> str:
        return self.message


class InvalidScope(DocmemError, ValueError):
    """A namespace, scope value or item id breaks the key limits."""

    code = "invalid_scope"


class InvalidArgument(DocmemError, ValueError):
    """A caller passed an argument of the wrong type or range (e.g. a negative index)."""

    code = "invalid_argument"


class StoreNotConfigured(DocmemError):
    """No store URL was given, or its scheme has no installed backend."""

    code = "store_not_configured"


class StoreUnavailable(DocmemError):
    """The store could not be reached or refused the request; never read as empty."""

    code = "store_unavailable"


class ConditionsNotHonoured(StoreUnavailable):
    """The server ignores or refuses conditional writes; docmem will not write to it.

    Raised by a store's own check of the server before its first write
    (docmem-s3's probe, docmem-fsspec's second create), one class for every
    store so that one ``except`` catches them all.
    """

    code = "conditions_not_honoured"

    @classmethod
    def failed(cls, scheme: str, checks: list[str]) -> ConditionsNotHonoured:
        """The refusal of a ``scheme`` store that failed the named ``checks``."""
        return cls(
            f"the {scheme} store does not honour conditional writes as docmem needs them, so "
            f"concurrent updates would be lost or fail; docmem refuses it. Failed: "
            f"{'; '.join(checks)}"
        )


class HistoryKept(StoreUnavailable):
    """The store may still hold older versions of an erased document: the purge is not done.

    Raised by a versioned store's ``purge_history``, so an erase reports it
    with outcome ``committed``: the header-only document is stored, older
    copies of the erased text are left. Each plug-in that keeps versions
    raises its own subclass, saying in its own terms what is left and how to
    remove it; one ``except`` catches them all.
    """

    code = "history_kept"
    #: Whether erasing again under the same mutation id retries the purge (docmem-s3's
    #: does, once the store allows it); ``False`` for a store that never deletes versions.
    erase_again_purges: bool = True


class VersionConflict(DocmemError):
    """A conditional write lost: the stored version is not the expected one."""

    code = "version_conflict"


class WriteOutcomeUnknown(DocmemError):
    """A write may or may not have been applied (timeout, lost response)."""

    code = "write_outcome_unknown"
    outcome: Outcome | None = "unknown"


class StoreBusy(DocmemError):
    """The retry budget ran out while other writers kept winning."""

    code = "store_busy"


class LimitExceeded(DocmemError, ValueError):
    """An entry, the document, or the rendered recall would exceed a limit."""

    code = "limit_exceeded"


class ContentRejected(DocmemError, ValueError):
    """The text cannot be stored (empty after normalization, forbidden characters)."""

    code = "content_rejected"


class SecretDetected(ContentRejected):
    """The text looks like a credential; secrets are not memory."""

    code = "secret_detected"


class IndexExhausted(DocmemError):
    """The scope has allocated every index up to 2**53 - 1."""

    code = "index_exhausted"


class DocumentCorrupt(DocmemError):
    """The stored document breaks the format; it is never overwritten by a save."""

    code = "document_corrupt"


class PlaintextDocument(DocumentCorrupt):
    """An encrypted store holds a document that is not encrypted; it is refused, never used.

    Reading it as memory would let whoever can write the bucket plant notes
    for a user; a store opened with ``allow_plaintext=true`` (a migration in
    place) reads it, and its next write encrypts it.
    """

    code = "plaintext_document"


class UnknownKey(DocmemError):
    """A document is encrypted under a key id the keyring does not hold (or holds no primary)."""

    code = "unknown_key"


class MutationConflict(DocmemError):
    """A mutation id was reused for a different request."""

    code = "mutation_conflict"


class MutationAmbiguous(DocmemError):
    """A write's outcome can no longer be decided: the journal moved past it."""

    code = "mutation_ambiguous"
    outcome: Outcome | None = "unknown"


class ScopeFenced(DocmemError):
    """An operator fenced the scope for a migration; writes are refused until it lifts."""

    code = "scope_fenced"


class ExportInvalid(DocmemError):
    """An export file fails its checks (format, order, a digest, the count): nothing is imported.

    docs/export-format.md defines every check; a truncated, tampered or
    reordered file is refused before the first write.
    """

    code = "export_invalid"


class TransferRefused(DocmemError):
    """The stores are not as an import, a verification or a migration needs them.

    A key already holding other bytes, a destination that is not empty or
    has accepted writes since the import, a copy that does not match its
    export: the step stops, and never overwrites anything to go on.
    """

    code = "transfer_refused"


class HistoryNotKept(DocmemError):
    """The store keeps no older versions of its documents, so none can be listed or restored.

    The message says why in the store's own terms (``file://`` opened with
    ``history=0``, an S3 bucket without versioning), never which scope.
    """

    code = "history_not_kept"


class RevertRefused(DocmemError):
    """A revert cannot be made as asked; nothing was written.

    The revision is not among the versions the store keeps, lies before an
    erase (which a revert never undoes), or the document moved on from the
    revision the caller's dry run was based on.
    """

    code = "revert_refused"


class StaleRevision(DocmemError):
    """The memory moved on from the revision the caller based a change on; nothing was written.

    Raised by a remove or an erase given ``expected_revision`` (an operator
    acting on what a page showed) when another change landed since: the
    caller reads the memory again and decides anew.
    """

    code = "stale_revision"


class RecallBatchInvalid(DocmemError, ValueError):
    """A recall batch failed validation; nothing of it was applied."""

    code = "recall_batch_invalid"


class Cancelled(DocmemError):
    """The caller's cancel event was set (the turn was abandoned); nothing more was tried.

    Raised before the store is touched, or instead of a retry; a mutation's
    ``outcome`` says whether an earlier attempt of it may have landed.
    """

    code = "cancelled"
