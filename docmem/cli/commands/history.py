"""``docmem history``: a scope's older versions, where the store keeps them.

docmem-fsspec keeps each document as a commit log of immutable versions
(``FsspecBackend.history`` and ``read_version``); ``file://``, ``s3://`` and
``memory://`` replace a document in place, and the command says so plainly.
Each version is listed with what changed it (the op of its own journal
record) and its entry count, never its text: ``docmem show --at VERSION``
shows one.
"""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from docmem.backend import Backend, Stored
from docmem.errors import DocumentCorrupt
from docmem.provider.document import parse

from ..address import resolve
from ..command import Command
from ..flags import add_output, add_scope, add_store
from ..report import Reporter, counted
from ..store import open_from

__all__ = ["COMMAND"]

_HEADER = ("version", "modified (UTC)", "bytes", "revision", "entries", "change")


class History(Command):
    help = "list a scope's older versions, where the store keeps them"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_store(parser)
        add_scope(parser)
        add_output(parser)

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """List the versions oldest first, or say that the store keeps none."""
        address = resolve(arguments)
        report.note(**address.fields())
        with open_from(arguments) as store:
            history = getattr(store, "history", None)
            read_version = getattr(store, "read_version", None)
            if not (callable(history) and callable(read_version)):
                return report.done(_not_kept(store), supported=False, versions=[])
            versions = [_version(read_version, address.key, kept) for kept in history(address.key)]
        if not versions:
            return report.done(
                f"no versions are stored under {address.key}", supported=True, versions=[]
            )
        lines = [
            f"{address.key}: {counted(len(versions), 'version')} "
            "kept, oldest first; `docmem show --at VERSION` shows one",
            "",
            _table(versions),
        ]
        return report.done("\n".join(lines), supported=True, versions=versions)


COMMAND = History()


def _not_kept(store: Backend) -> str:
    scheme = urlsplit(store.url).scheme or "this store"
    return (
        f"{scheme}:// keeps no older versions: each change replaces the document in place. "
        "docmem-fsspec stores (fsspec+file://, fsspec+s3://, gs://, az://) keep them"
    )


def _version(
    read_version: Callable[[str, str], Stored | None], key: str, kept: Any
) -> dict[str, Any]:
    """One version's row: the store's facts, and what its document says (never its text)."""
    modified = kept.modified
    row: dict[str, Any] = {
        "version": kept.version,
        "modified": None if modified is None else _timestamp(modified),
        "bytes": kept.size,
        "state": "gone",
        "revision": None,
        "entries": None,
        "op": None,
    }
    stored = read_version(key, kept.version)
    if stored is None:
        return row  # collected since the listing
    try:
        document = parse(bytes(stored.data))
    except DocumentCorrupt:
        row["state"] = "corrupt"
        return row
    made_by = next((r for r in document.journal if r.rev == document.revision), None)
    row.update(
        state="ok",
        revision=document.revision,
        entries=len(document.entries),
        op=made_by.op if made_by is not None else None,
    )
    return row


def _timestamp(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _table(versions: list[dict[str, Any]]) -> str:
    def cell(value: object) -> str:
        return "-" if value is None else str(value)

    rows = [_HEADER] + [
        (
            row["version"],
            cell(row["modified"]).replace("T", " ").rstrip("Z"),
            f"{row['bytes']:,}",
            cell(row["revision"]),
            cell(row["entries"]),
            row["op"] or (row["state"] if row["state"] != "ok" else "-"),
        )
        for row in versions
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_HEADER))]
    numeric = {2, 3, 4}
    return "\n".join(
        "  ".join(
            text.rjust(width) if column in numeric else text.ljust(width)
            for column, (text, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )
