"""The public surface: a sorted __all__, every name documented, one exception tree."""

from __future__ import annotations

import inspect

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


@pytest.mark.process
def test_importing_docmem_does_not_import_test_tools() -> None:
    import subprocess
    import sys

    code = "import sys, docmem; print('docmem.testing' in sys.modules, 'pytest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
