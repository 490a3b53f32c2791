"""The commands on one scope: ``show``, ``save``, ``remove``, ``erase`` and ``inspect``.

Each goes through :class:`docmem.FileMemory`, as an application would, so a
save from the command line meets the same limits, secret filter, conflict
loop and journal. ``save``, ``remove`` and ``erase`` always run under a
mutation id, the given ``--mutation-id`` or a fresh one, and print it: the
same command again with that id has no second effect, and ``inspect`` finds
its record.
"""

from __future__ import annotations

import argparse
import sys

from docmem.backend import Backend
from docmem.errors import InvalidArgument
from docmem.provider.document import MemoryDocument, parse, render_recall
from docmem.provider.journal import fresh_mutation_id
from docmem.provider.memory import BoundMemory, FileMemory
from docmem.provider.mutation import RemoveResult, SaveResult
from docmem.provider.tools import check_slot_name

from .address import Address, resolve
from .parser import UsageError
from .report import Reporter, counted
from .store import open_from

__all__ = ["erase", "inspect", "remove", "save", "show"]

#: The slot a command binds when it renders nothing (the slot shapes only the rendering).
_PLAIN_SLOT = "user"


def _bound(
    store: Backend, address: Address, slot: str, *, max_characters: int = 4000
) -> BoundMemory:
    return FileMemory(store, max_characters=max_characters).bind(address.scope, slot=slot)


def _mutation_id(arguments: argparse.Namespace) -> str:
    given: str | None = arguments.mutation_id
    return fresh_mutation_id() if given is None else given


def show(arguments: argparse.Namespace, report: Reporter) -> int:
    """Print the document as the model sees it (the recall message), or that there is none."""
    address = resolve(arguments)
    slot = check_slot_name(arguments.slot)
    report.note(**address.fields(), slot=slot)
    with open_from(arguments) as store:
        document: MemoryDocument | None
        if arguments.at is not None:
            report.note(version=arguments.at)
            document = _older(store, address.key, arguments.at)
        else:
            document = _bound(store, address, slot).read()
    if document is None:
        return report.done(
            f"no memory is stored under {address.key}",
            exists=False,
            revision=None,
            last_index=None,
            fence=None,
            entries=[],
            rendered=None,
        )
    rendered = render_recall(document, slot)
    count = len(document.entries)
    at = "" if arguments.at is None else f" (version {arguments.at})"
    header = f"{address.key}{at}  revision {document.revision}, {counted(count, 'entry')}"
    return report.done(
        rendered if report.quiet else f"{header}\n\n{rendered}",
        shown=True,
        exists=True,
        revision=document.revision,
        last_index=document.last,
        fence=document.fence,
        entries=[{"index": index, "text": text} for index, text in document.entries.items()],
        rendered=rendered,
    )


def _older(store: Backend, key: str, version: str) -> MemoryDocument:
    """An older version of the document, from a store that keeps them (docmem-fsspec)."""
    read_version = getattr(store, "read_version", None)
    if not callable(read_version):
        raise InvalidArgument(
            "this store keeps no older versions, so there is nothing to show --at; "
            "docmem-fsspec stores keep them (see `docmem history`)"
        )
    stored = read_version(key, version)
    if stored is None:
        raise InvalidArgument(
            "that version of this key is not kept (collected, purged or never written): "
            "`docmem history` lists the versions there are"
        )
    return parse(bytes(stored.data))


def save(arguments: argparse.Namespace, report: Reporter) -> int:
    """Save one entry (``-`` reads the text from stdin); a text already there is a no-op."""
    address = resolve(arguments)
    mutation_id = _mutation_id(arguments)
    report.note(**address.fields(), mutation_id=mutation_id)
    text: str = sys.stdin.read() if arguments.text == "-" else arguments.text
    with open_from(arguments) as store:
        bound = _bound(store, address, arguments.slot, max_characters=arguments.max_characters)
        result = bound.save(text, mutation_id=mutation_id)
    if result.status == "saved":
        line = f"saved as memory {result.index} at revision {result.revision}"
    elif result.status == "replayed":
        line = _replayed(result.revision)
    else:
        line = f"already saved as memory {result.index}, unchanged at revision {result.revision}"
    return _done_at_index(report, line, mutation_id, result)


def remove(arguments: argparse.Namespace, report: Reporter) -> int:
    """Remove the entry at INDEX; an index with no entry is a no-op."""
    address = resolve(arguments)
    mutation_id = _mutation_id(arguments)
    report.note(**address.fields(), mutation_id=mutation_id)
    with open_from(arguments) as store:
        result = _bound(store, address, _PLAIN_SLOT).remove(
            arguments.index, mutation_id=mutation_id
        )
    if result.status == "removed":
        line = f"removed memory {result.index} at revision {result.revision}"
    elif result.status == "replayed":
        line = _replayed(result.revision)
    else:
        line = f"no memory {result.index}, nothing removed (revision {result.revision})"
    return _done_at_index(report, line, mutation_id, result)


def _replayed(revision: int) -> str:
    """The line for a mutation id among the journal's older ids (docs/design.md, section 5)."""
    return f"this mutation id was applied before; nothing changed (revision {revision})"


def _done_at_index(
    report: Reporter, line: str, mutation_id: str, result: SaveResult | RemoveResult
) -> int:
    """The report of a save or remove: its line, then what ``--json`` gives."""
    return report.done(
        f"{line}; mutation id {mutation_id}",
        status=result.status,
        index=result.index,
        revision=result.revision,
    )


def erase(arguments: argparse.Namespace, report: Reporter) -> int:
    """Empty the scope's memory (the next recall shows the empty state); needs ``--yes``."""
    address = resolve(arguments)
    if not arguments.yes:
        raise UsageError("erase empties this scope's memory for good: pass --yes to confirm")
    mutation_id = _mutation_id(arguments)
    report.note(**address.fields(), mutation_id=mutation_id)
    with open_from(arguments) as store:
        result = _bound(store, address, _PLAIN_SLOT).erase(mutation_id=mutation_id)
    if result.status == "erased":
        line = f"erased: the memory is empty at revision {result.revision}"
    elif result.status == "replayed":
        line = _replayed(result.revision)
    else:
        line = "no memory is stored, nothing erased"
    return report.done(
        f"{line}; mutation id {mutation_id}", status=result.status, revision=result.revision
    )


def inspect(arguments: argparse.Namespace, report: Reporter) -> int:
    """Whether a mutation landed: its record in the document's journal, if it is still there."""
    address = resolve(arguments)
    mutation_id: str = arguments.mutation_id
    report.note(**address.fields(), mutation_id=mutation_id)
    with open_from(arguments) as store:
        record = _bound(store, address, _PLAIN_SLOT).inspect(mutation_id)
    if record is None:
        return report.done(
            f"mutation {mutation_id} has no record here: it changed nothing (it never landed, "
            "or was a no-op), or its record is gone (the journal keeps the last 32 writes, "
            "an erase only its own)",
            landed=False,
            op=None,
            outcome=None,
            index=None,
            revision=None,
        )
    what = (
        "erased the memory" if record.index is None else f"{record.outcome} memory {record.index}"
    )
    return report.done(
        f"mutation {mutation_id} landed: {what} at revision {record.revision}",
        landed=True,
        op=record.op,
        outcome=record.outcome,
        index=record.index,
        revision=record.revision,
    )
