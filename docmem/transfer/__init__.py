"""Portable export and import (``docmem-export/1``), verification, and fenced migration.

::

    with open("memory.jsonl", "wb") as out:
        summary = docmem.export_store(store, out)             # consistent per scope
    with open("memory.jsonl", "rb") as file:
        report = docmem.import_store(other, file)             # create-only, resumable
    with open("memory.jsonl", "rb") as file:
        assert docmem.verify_store(other, file).ok

The file format is docs/export-format.md; the migration's steps are
docs/design.md, section 4.2; the commands are ``docmem export | import |
verify | migrate`` (docs/cli.md).
"""

from __future__ import annotations

from .export import export_store, write_export
from .format import FORMAT
from .importer import ImportReport, import_store
from .migration import MigrationReport, RollbackReport, migrate, rollback
from .reader import ExportSummary, check_export
from .verify import VerifyReport, verify_store

__all__ = [
    "FORMAT",
    "ExportSummary",
    "ImportReport",
    "MigrationReport",
    "RollbackReport",
    "VerifyReport",
    "check_export",
    "export_store",
    "import_store",
    "migrate",
    "rollback",
    "verify_store",
    "write_export",
]
