"""A fenced migration between two stores, with no dual write, and the way back.

:func:`migrate` runs the steps of docs/design.md, section 4.3, in order, each
resumable by running it again with the same fence id: preflight (the
destination passes its probe and is empty), fence the source (the marker,
then every document), export the fenced source, import it, verify the
destination, and list the source once more (a scope created as the fence
went up is carried by another round). The source stays fenced and readable:
the way back is :func:`rollback`, which lifts the fence unless the
destination has accepted writes since.

What is resumed is read from the stores themselves, never from a local
state file: a source whose marker carries this id is a migration under way.

A migration out of an encrypted store into a plaintext one would store
every memory in the clear: it is refused unless asked for (``decrypt``,
:mod:`docmem.transfer.plaintext`). A kept export is written as ``docmem
export`` writes its file (:func:`docmem.transfer.files.published`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ...backend import Backend
from ...errors import DocumentCorrupt, InvalidArgument, ScopeFenced, StoreBusy, TransferRefused
from ...storage.parallel import ordered
from ...storage.progress import NO_PROGRESS, Progress
from ..document import parse
from ..fencing import FENCE_KEY, FenceReport, check_fence_id, fence, listed, store_fence, unfence
from ..fencing import unfenced as without_fence
from .export import late_keys, write_export
from .files import check_writable, published
from .importer import ImportReport, import_checked
from .plaintext import check_decryption
from .reader import ExportSummary, check_export
from .verify import VerifyReport, verify_checked, verify_versions
from .words import counted

__all__ = ["MigrationReport", "RollbackReport", "migrate", "rollback"]

#: Export, import and verify at most this often (each round only after new scopes appeared).
_MAX_ROUNDS = 5


@dataclass(frozen=True)
class MigrationReport:
    """A finished migration: each step's report, and the store to configure now."""

    fence_id: str
    #: Both stores' secret-free URLs; ``destination`` is the configuration change to make.
    source: str
    destination: str
    #: Whether this run found the migration under way (the source fenced by this id).
    resumed: bool
    fenced: FenceReport
    exported: ExportSummary
    imported: ImportReport
    verified: VerifyReport
    #: Export-import-verify rounds (more than 1 when scopes appeared during the first).
    rounds: int
    #: Whether the copy left client-side encryption (an encrypted source, a plaintext
    #: destination: allowed by ``decrypt``).
    decrypted: bool = False


@dataclass(frozen=True)
class RollbackReport:
    """A rollback: the source documents compared with the destination, then unfenced."""

    fence_id: str
    #: Source documents compared with their copies (the destination had ``copies`` of them).
    documents: int
    copies: int
    unfenced: FenceReport


def _identity(store: Backend) -> tuple[str, list[tuple[str, str]]]:
    """What tells two stores apart: the URL and the options, but ``create`` (not a place)."""
    options = sorted((name, repr(value)) for name, value in store.options.items())
    return store.url, [(name, value) for name, value in options if name != "create"]


def _has_documents(store: Backend) -> bool:
    """Whether ``store`` holds any document under its prefix; stops at the first key."""
    listing = store.keys()  # a Backend's listing, not a dict's
    return any(key != FENCE_KEY for key in listing)


def _preflight(
    source: Backend, destination: Backend, fence_id: str, probe: Callable[[Backend], None]
) -> bool:
    """Refuse what must never be migrated; True when the migration is under way already."""
    if _identity(source) == _identity(destination):
        raise InvalidArgument("the source and the destination are the same store")
    current = store_fence(source)
    if current is not None and current != fence_id:
        raise ScopeFenced(
            f"the source is fenced by another migration (fence id {current}); "
            "finish it (same id) or roll it back first"
        )
    if store_fence(destination) is not None:
        raise TransferRefused("the destination store is fenced: it is itself being migrated")
    probe(destination)
    resumed = current == fence_id
    if not resumed and _has_documents(destination):
        raise TransferRefused(
            "the destination already holds documents under its prefix; a migration never "
            "merges two stores: use an empty bucket or prefix"
        )
    return resumed


@contextlib.contextmanager
def _export_file(path: str | os.PathLike[str] | None) -> Iterator[BinaryIO]:
    """Where a round's export goes: an anonymous temporary file, or ``path`` (kept).

    A kept export becomes ``path`` once its round has verified, as ``docmem
    export`` writes (mode 0600, under a temporary name, never through a link).
    """
    if path is None:
        with tempfile.TemporaryFile(prefix="docmem-export-") as file:
            yield file
        return
    with published(path) as file:
        yield file


def migrate(
    source: Backend,
    destination: Backend,
    fence_id: str,
    *,
    probe: Callable[[Backend], None],
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
    export_to: str | os.PathLike[str] | None = None,
    read_back: bool = False,
    decrypt: bool = False,
) -> MigrationReport:
    """Move every document of ``source`` into the empty ``destination`` under fence ``fence_id``.

    ``probe(destination)`` must raise when the destination fails its
    store's probe (the command line passes ``docmem probe``'s checks).
    ``export_to`` keeps the last round's export file (mode 0600; from an
    encrypted source it is plaintext). The copy is verified by the
    destination's listing of versions where it has one (an S3 listing: no
    read per document), else, or with ``read_back``, by reading every
    document back. Raises TransferRefused when a step finds the stores not
    as it must (a non-empty destination, a copy that does not verify), or,
    before anything is done, when the source is encrypted and the
    destination is not, unless ``decrypt``; InvalidArgument, before
    anything is done, when ``export_to`` cannot be written; ScopeFenced
    when another migration holds the source. Every step before a failure
    stays done, and running again with the same id resumes.
    """
    fence_id = check_fence_id(fence_id)
    decrypted = check_decryption(source, destination, decrypt=decrypt)
    if export_to is not None:
        check_writable(export_to)
    resumed = _preflight(source, destination, fence_id, probe)
    progress.note(
        "preflight: the destination passed its probe"
        + (" (resuming this migration)" if resumed else " and is empty")
    )
    fenced = fence(source, fence_id, workers=workers, progress=progress)
    progress.note(
        f"fenced the source: {counted(fenced.documents, 'document')} under fence id {fence_id}"
    )
    for rounds in range(1, _MAX_ROUNDS + 1):
        with _export_file(export_to) as file:
            exported, keys = write_export(
                source, file, fence_id=fence_id, workers=workers, progress=progress
            )
            progress.note(
                f"exported {counted(exported.documents, 'document')}, "
                f"{counted(exported.bytes, 'byte')}, logical digest {exported.logical_digest}"
            )
            summary = check_export(file, progress=progress)
            versions: dict[str, str] = {}
            imported = import_checked(
                destination,
                file,
                summary,
                create_missing=True,  # the preflight found it empty, or this migration's own
                workers=workers,
                progress=progress,
                versions=versions,
            )
            progress.note(
                f"imported {counted(imported.documents, 'document')} "
                f"({imported.created:,} created, {imported.skipped:,} already there)"
            )
            verified = _verified(destination, file, summary, versions, workers, progress, read_back)
        if not verified.ok:
            raise verified.refusal()
        how = "by the listing of versions" if verified.method == "versions" else "read back"
        progress.note(
            f"verified ({how}): {counted(verified.store_documents, 'document')}, "
            "logical digest equal"
        )
        late = late_keys(source, keys)
        if not late:
            return MigrationReport(
                fence_id=fence_id,
                source=source.url,
                destination=destination.url,
                resumed=resumed,
                fenced=fenced,
                exported=exported,
                imported=imported,
                verified=verified,
                rounds=rounds,
                decrypted=decrypted,
            )
        progress.note(f"{counted(len(late), 'scope')} appeared as the fence went up: another round")
    raise StoreBusy("scopes kept appearing in the fenced source; run the migration again")


def _verified(
    destination: Backend,
    file: BinaryIO,
    summary: ExportSummary,
    versions: dict[str, str],
    workers: int,
    progress: Progress,
    read_back: bool,
) -> VerifyReport:
    """The destination checked against the export: by its versions if it lists them, else read."""
    if not read_back:
        by_versions = verify_versions(
            destination, file, summary, versions, workers=workers, progress=progress
        )
        if by_versions is not None:
            return by_versions
    return verify_checked(destination, file, summary, workers=workers, progress=progress)


def _compared(
    source: Backend, destination: Backend, key: str, copied: bool
) -> tuple[bool, bool, str]:
    """``(the destination has a copy, it changed since the import, what the revisions say)``."""
    if not copied:
        return False, False, ""
    original, copy = source.read(key), destination.read(key)
    if copy is None:
        return False, False, ""
    if original is None:
        return True, True, "its source document is gone"
    changed = without_fence(copy.data) != without_fence(original.data)
    return True, changed, f"revision {_revision(original.data)} became {_revision(copy.data)}"


def _revision(data: bytes) -> str:
    try:
        return str(parse(data).revision)
    except DocumentCorrupt:
        return "?"


def rollback(
    source: Backend,
    destination: Backend,
    fence_id: str,
    *,
    workers: int = 8,
    progress: Progress = NO_PROGRESS,
) -> RollbackReport:
    """Lift fence ``fence_id`` from ``source``, unless ``destination`` took writes since the import.

    Every destination document must still be the source's (fence aside,
    their revisions equal) and the destination must hold no scope the
    source lacks; else TransferRefused, saying so, and nothing is unfenced.
    The destination is left as it is.
    """
    fence_id = check_fence_id(fence_id)
    current = store_fence(source)
    if current is not None and current != fence_id:
        raise ScopeFenced(
            f"the source is fenced by another migration (fence id {current}), not {fence_id}"
        )
    source_keys = listed(source)
    copies = set(listed(destination))
    extra = sorted(copies.difference(source_keys))
    if extra:
        raise TransferRefused(
            "the destination has accepted writes since the import: it holds scopes the "
            f"source does not ({counted(len(extra), 'scope')}, first: {extra[0]}); "
            "the fence stays up"
        )
    progress.begin("comparing", len(source_keys))
    copied = changed = 0
    first = ""
    try:
        work = ordered(
            lambda key: (key, *_compared(source, destination, key, key in copies)),
            source_keys,
            workers,
        )
        with contextlib.closing(work):
            for key, has_copy, differs, revisions in work:
                copied += has_copy
                changed += differs
                if differs and not first:
                    first = f"{key}: {revisions}"
                progress.advance(1, 0)
    finally:
        progress.end()
    if changed:
        raise TransferRefused(
            "the destination has accepted writes since the import: it differs from the "
            f"source in {counted(changed, 'document')} (first: {first}); the fence stays up"
        )
    lifted = unfence(source, fence_id, workers=workers, progress=progress)
    return RollbackReport(fence_id, len(source_keys), copied, lifted)
