"""Portable export and import (``docmem-export/1``), verification, and fenced migration.

::

    with open("memory.jsonl", "wb") as out:
        summary = docmem.export_store(store, out)             # consistent per scope
    with open("memory.jsonl", "rb") as file:
        report = docmem.import_store(other, file)             # create-only, resumable
    with open("memory.jsonl", "rb") as file:
        assert docmem.verify_store(other, file).ok

The file format is docs/export-format.md; the migration's steps are
docs/design.md, section 4.3; the commands are ``docmem export | import |
verify | migrate`` (docs/cli.md).

Each name is imported on first use, as ``docmem``'s own are: the command
line's reporting takes :func:`docmem.transfer.words.counted` from here, and
``docmem show`` must not load the whole of the transfer code to say "1 entry".
"""

from __future__ import annotations

import importlib as _importlib

TYPE_CHECKING = False  # not typing's: importing typing costs more than all the rest
if TYPE_CHECKING:
    from .export import export_store, write_export
    from .format import FORMAT
    from .importer import ImportPlan, ImportReport, import_store, plan_import
    from .migration import MigrationReport, RollbackReport, migrate, rollback
    from .plaintext import encrypts
    from .reader import ExportSummary, check_export
    from .verify import VerifyReport, verify_store

#: Where each public name lives.
_WHERE = {
    "FORMAT": "format",
    "ExportSummary": "reader",
    "ImportPlan": "importer",
    "ImportReport": "importer",
    "MigrationReport": "migration",
    "RollbackReport": "migration",
    "VerifyReport": "verify",
    "check_export": "reader",
    "encrypts": "plaintext",
    "export_store": "export",
    "import_store": "importer",
    "migrate": "migration",
    "plan_import": "importer",
    "rollback": "migration",
    "verify_store": "verify",
    "write_export": "export",
}

__all__ = [
    "FORMAT",
    "ExportSummary",
    "ImportPlan",
    "ImportReport",
    "MigrationReport",
    "RollbackReport",
    "VerifyReport",
    "check_export",
    "encrypts",
    "export_store",
    "import_store",
    "migrate",
    "plan_import",
    "rollback",
    "verify_store",
    "write_export",
]


def __getattr__(name: str) -> object:
    """A public name on first use; then it is an ordinary attribute."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'docmem.provider.transfer' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
