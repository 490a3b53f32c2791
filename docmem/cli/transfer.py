"""What the transfer commands share: an export file read twice, and their answers' JSON fields.

``import`` and ``verify`` read the file twice (every check first, then the
work), so ``-`` (stdin) is copied to a temporary file first. A path that
cannot be opened is ``invalid_argument`` naming it, never a crash.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from docmem.provider.fencing import FenceReport
from docmem.provider.transfer import ExportSummary
from docmem.provider.transfer.files import readable

__all__ = ["fence_fields", "opened", "summary_fields"]


@contextlib.contextmanager
def opened(path: str) -> Iterator[BinaryIO]:
    """The export file to read (twice); stdin copied to a temporary file first."""
    if path != "-":
        with readable(path) as file:
            yield file
        return
    with tempfile.TemporaryFile(prefix="docmem-import-") as file:
        shutil.copyfileobj(sys.stdin.buffer, file)
        file.seek(0)
        yield file


def summary_fields(summary: ExportSummary) -> dict[str, Any]:
    """An export's summary as ``export`` and ``verify --file-only`` answer it (docs/cli.md)."""
    return {
        "source": summary.source,
        "created": summary.created,
        "fenced": summary.fenced,
        "fence": summary.fence,
        "documents": summary.documents,
        "bytes": summary.bytes,
        "logical_digest": summary.logical_digest,
        "sha256": summary.sha256,
    }


def fence_fields(result: FenceReport) -> dict[str, Any]:
    """A fence's or unfence's counts as ``fence`` and ``unfence`` answer them (docs/cli.md)."""
    return {
        "fence_id": result.fence_id,
        "documents": result.documents,
        "changed": result.changed,
        "unchanged": result.unchanged,
        "other": result.other,
    }
