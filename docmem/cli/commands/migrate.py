"""``docmem migrate SRC DST [--id ID] [--rollback]``: a fenced, verified move between stores.

The steps (:func:`docmem.transfer.migrate`) print as they finish; each is
resumable, so after a Ctrl-C or a failure the same command with the same
``--id`` goes on from where it stopped. Without ``--id`` a new one is made
and printed first. The preflight probe is ``docmem probe``'s: the store's
own checks where it has them (docmem-s3's on ``s3://``), the backend
contract's elsewhere.

An encrypted SRC into a plaintext DST is refused, before anything is done,
unless ``--decrypt`` says the operator means it (then it warns); a kept
export from an encrypted SRC is plaintext, and the command warns so.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import uuid

from docmem.backend import Backend
from docmem.provider.transfer import encrypts, migrate, rollback
from docmem.provider.transfer.plaintext import check_decryption
from docmem.storage.registry import open_store

from ..bars import Bars, human_bytes
from ..checks import probe_destination
from ..command import Command, UsageError
from ..flags import add_output, add_workers
from ..report import Reporter, counted

__all__ = ["COMMAND"]


class Migrate(Command):
    help = "move a store into an empty one under a fence, verified"

    def configure(self, parser: argparse.ArgumentParser) -> None:
        add_output(parser)
        add_workers(parser, doing="read or written")
        parser.add_argument("source", metavar="SRC", help="the store to move (it stays fenced)")
        parser.add_argument("destination", metavar="DST", help="the empty store to move it into")
        parser.add_argument(
            "--id",
            metavar="ID",
            help="the migration's fence id; the same id resumes (default: new)",
        )
        parser.add_argument(
            "--rollback",
            action="store_true",
            help="lift the fence on SRC, unless DST has accepted writes since the import "
            "(needs --id)",
        )
        parser.add_argument(
            "--keep-export",
            metavar="FILE",
            help="keep the export file the migration wrote (mode 0600; plaintext, even from an "
            "encrypted SRC)",
        )
        parser.add_argument(
            "--read-back",
            action="store_true",
            help="verify by reading every copied document back, even where DST lists versions",
        )
        parser.add_argument(
            "--decrypt",
            action="store_true",
            help="allow an encrypted SRC into a plaintext DST: every memory is stored there in "
            "plaintext",
        )

    def run(self, arguments: argparse.Namespace, report: Reporter) -> int:
        """Migrate SRC into DST, or with ``--rollback`` lift the fence on SRC."""
        if arguments.rollback and arguments.id is None:
            raise UsageError("--rollback needs the --id of the migration to roll back")
        fence_id: str = arguments.id or _new_id()
        report.note(fence_id=fence_id, rollback=arguments.rollback)
        if arguments.id is None:
            report.say(f"migration id {fence_id} (run again with --id {fence_id} to resume)")
        source, destination = open_store(arguments.source), open_store(arguments.destination)
        with source, destination:
            try:
                if arguments.rollback:
                    return _rollback(source, destination, fence_id, arguments, report)
                return _migrate(source, destination, fence_id, arguments, report)
            except KeyboardInterrupt:
                print(
                    f"the migration stopped part-way: run it again with --id {fence_id} to go on",
                    file=sys.stderr,
                )
                raise


COMMAND = Migrate()


def _new_id() -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"mig-{stamp}-{uuid.uuid4().hex[:8]}"


def _refuse_decrypting(
    source: Backend, destination: Backend, arguments: argparse.Namespace, report: Reporter
) -> None:
    """Refuse an encrypted SRC into a plaintext DST unless ``--decrypt``; with it, warn."""
    with report.advising(
        "pass --decrypt if DST is meant to hold plaintext; else give DST as encrypted+ and "
        "its URL, with a keyring (docs/encryption.md)"
    ):
        decrypting = check_decryption(source, destination, decrypt=arguments.decrypt)
    if decrypting:
        report.warn("SRC is encrypted and DST is not: DST will hold every memory in plaintext")


def _warn_of_kept_plaintext(source: Backend, path: str | None, report: Reporter) -> None:
    """A kept export of an encrypted SRC is plaintext: say so once it is written."""
    if path is None or not encrypts(source):
        return
    report.warn(
        f"SRC is encrypted, but the kept export {path} is not: it holds every memory in "
        "plaintext; keep it where only those who hold the keyring can read it, and delete "
        "it when done"
    )


def _migrate(
    source: Backend,
    destination: Backend,
    fence_id: str,
    arguments: argparse.Namespace,
    report: Reporter,
) -> int:
    _refuse_decrypting(source, destination, arguments, report)
    result = migrate(
        source,
        destination,
        fence_id,
        probe=probe_destination,
        workers=arguments.workers,
        progress=Bars(report),
        export_to=arguments.keep_export,
        read_back=arguments.read_back,
        decrypt=arguments.decrypt,
    )
    _warn_of_kept_plaintext(source, arguments.keep_export, report)
    text = (
        f"done: {counted(result.verified.store_documents, 'document')} "
        f"({human_bytes(result.exported.bytes)}) moved and verified.\n"
        f"Change the store URL to {result.destination} (the DST you gave, with its options).\n"
        f"The source stays fenced and readable; to go back: "
        f"docmem migrate SRC DST --rollback --id {fence_id}"
    )
    return report.done(
        text,
        source=result.source,
        destination=result.destination,
        new_store=result.destination,
        resumed=result.resumed,
        rounds=result.rounds,
        documents=result.verified.store_documents,
        bytes=result.exported.bytes,
        created=result.imported.created,
        skipped=result.imported.skipped,
        logical_digest=result.exported.logical_digest,
        verified_by=result.verified.method,
        decrypted=result.decrypted,
    )


def _rollback(
    source: Backend,
    destination: Backend,
    fence_id: str,
    arguments: argparse.Namespace,
    report: Reporter,
) -> int:
    result = rollback(
        source, destination, fence_id, workers=arguments.workers, progress=Bars(report)
    )
    lifted = result.unfenced
    if lifted.changed or lifted.marker_changed:
        text = (
            f"rolled back {fence_id}: the source takes saves again "
            f"({counted(lifted.changed, 'document')} unfenced); the destination is left as "
            f"it is ({counted(result.copies, 'copy')} of the source's documents)"
        )
    else:
        text = f"nothing to roll back: the source carries no fence {fence_id}"
    return report.done(
        text,
        source=source.url,
        destination=destination.url,
        documents=result.documents,
        copies=result.copies,
        unfenced=lifted.changed,
    )
