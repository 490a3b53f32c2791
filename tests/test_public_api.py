"""The public surface: a sorted __all__, every name documented, one exception tree."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import docmem
import docmem.errors


def test_all_is_sorted_and_complete() -> None:
    assert docmem.__all__ == sorted(docmem.__all__)
    assert len(set(docmem.__all__)) == len(docmem.__all__)
    for name in docmem.__all__:
        assert hasattr(docmem, name), name
    public = {
        name
        for name, value in vars(docmem).items()
        if not name.startswith("_") and not inspect.ismodule(value) and name != "annotations"
    }
    assert public == set(docmem.__all__)


@pytest.mark.parametrize("name", docmem.__all__)
def test_every_public_name_has_a_docstring(name: str) -> None:
    value = getattr(docmem, name)
    assert inspect.getdoc(value), name


def test_one_exception_tree_with_stable_unique_codes() -> None:
    classes = [
        value
        for value in vars(docmem.errors).values()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert all(issubclass(cls, docmem.DocmemError) for cls in classes)
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes))
    assert docmem.SecretDetected.code == "secret_detected"
    for name in (
        "InvalidScope",
        "StoreNotConfigured",
        "StoreUnavailable",
        "VersionConflict",
        "WriteOutcomeUnknown",
        "StoreBusy",
        "LimitExceeded",
        "ContentRejected",
        "IndexExhausted",
        "DocumentCorrupt",
        "MutationConflict",
        "MutationAmbiguous",
        "ScopeFenced",
        "RecallBatchInvalid",
    ):
        assert issubclass(getattr(docmem, name), docmem.DocmemError)


def test_every_error_class_is_drawn_in_the_module_docstring() -> None:
    doc = docmem.errors.__doc__ or ""
    for name in docmem.errors.__all__:
        if name != "Outcome":
            assert name in doc, name
            assert getattr(docmem.errors, name).code in doc, name


def test_importing_docmem_does_not_import_test_tools() -> None:
    import subprocess
    import sys

    code = "import sys, docmem; print('docmem.testing' in sys.modules, 'pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- the layers: storage <- the document and the provider <- host integration --------------

DOCMEM = Path(docmem.__file__).resolve().parent
#: Each core module's layer; a module imports only from its own layer or those below.
LAYERS = {
    "errors": 0,  # the one exception tree, under every layer
    "_threads": 0,  # async twins' worker threads, asyncio imported only when awaited
    "telemetry": 0,  # content-free spans and metrics, for every layer (a no-op without the API)
    "progress": 0,  # what operator walks (fence, export, import) report, counts only
    "_parallel": 0,  # bounded, ordered parallel walks over a store
    "backend": 1,
    "registry": 1,
    "options": 1,
    "backends": 1,
    "encryption": 1,  # a Backend around a Backend: client-side encryption
    "keys": 2,
    "document": 2,
    "journal": 2,
    "mutation": 2,
    "memory": 2,
    "commit": 2,  # the conflict loop over a batch of mutations of one key
    "grouping": 0,  # group commit's queue: threads only, no I/O
    "provider": 2,
    "retry": 2,
    "secrets": 2,
    "fencing": 2,  # migration fences: the store-level marker and each document's field
    "transfer": 2,  # docmem-export/1: export, import, verify, fenced migration
    "tools": 3,
    "slot": 3,
    "injection": 3,
    "recall": 3,
    "runtime": 3,
    "formats": 3,
    "testing": 4,  # the conformance suite, for plug-in authors' tests
    "integrations": 5,  # the framework adapters, on top of everything
    "cli": 5,  # the docmem command, on top of everything
    "__main__": 5,  # python -m docmem
}
#: Imports against the layers, each with its reason.
UPWARD = {
    ("memory", "tools"): "FileMemory builds its Tool objects itself",
}


def _imported(path: Path) -> set[str]:
    """The top-level docmem modules ``path`` imports (``backends`` for any of its modules)."""
    package = path.relative_to(DOCMEM).parts[:-1]  # the file's package, below docmem
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            if base or node.module:
                found.add((*base, node.module or "")[0].split(".")[0])
            else:  # from . import journal
                found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("docmem."):
            found.add((node.module or "").split(".")[1])
        elif isinstance(node, ast.Import):
            names = (alias.name for alias in node.names)
            found |= {name.split(".")[1] for name in names if name.startswith("docmem.")}
    return found


@pytest.mark.parametrize(
    "path",
    sorted(p for p in DOCMEM.rglob("*.py") if p != DOCMEM / "__init__.py"),
    ids=lambda p: str(p.relative_to(DOCMEM)),
)
def test_modules_import_only_their_own_layer_and_below(path: Path) -> None:
    module = path.relative_to(DOCMEM).parts[0].removesuffix(".py")
    assert module in LAYERS, f"docmem/{module} has no layer in LAYERS: give it one"
    for imported in _imported(path) - {module}:
        assert imported in LAYERS, f"{module} imports docmem.{imported}, which has no layer"
        if (module, imported) not in UPWARD:
            assert LAYERS[imported] <= LAYERS[module], f"{module} imports {imported}, above it"
