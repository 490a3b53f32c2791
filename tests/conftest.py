"""Shared fixtures: stores, a locked scope and a bound memory on each built-in backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import docmem
from docmem.storage.builtin.local import LocalBackend


@pytest.fixture
def scope() -> docmem.LockedScope:
    return docmem.lock_scope(namespace="tests:docmem", scope=("user", "auth0", "", "u_123"))


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[docmem.Backend]:
    if request.param == "memory":
        backend = docmem.open_store("memory://")
    else:
        backend = docmem.open_store(f"file://{tmp_path}?create=true")
        assert isinstance(backend, LocalBackend)
    yield backend
    backend.close()


@pytest.fixture
def mem(store: docmem.Backend, scope: docmem.LockedScope) -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(scope, slot="user")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Cost markers for the conformance suite's tests, which docmem.testing cannot carry.

    docmem.testing is imported by plug-in authors' test suites, whose pytest would
    refuse an unregistered marker; so the core's own runs mark them here, by name:
    a process race starts processes, a state machine runs a long campaign.
    """
    for item in items:
        name = getattr(item, "originalname", item.name)
        if "process_race" in name:
            item.add_marker(pytest.mark.process)
        elif "state_machine" in name:
            item.add_marker(pytest.mark.slow)
