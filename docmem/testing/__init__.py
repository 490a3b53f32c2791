"""The backend conformance suite: one pytest class every store must pass.

Each backend, built in or plug-in, subclasses :class:`BackendTests` once and
provides three fixtures; the inherited tests then prove the promise of
docs/design.md, section 4 against that store::

    import uuid

    import pytest
    from docmem.storage.registry import open_store
    from docmem.testing import BackendTests

    class TestS3Backend(BackendTests):
        @pytest.fixture
        def make_backend(self, bucket):
            # a factory: every call returns a fresh, empty store
            return lambda: open_store(f"s3://{bucket}/{uuid.uuid4().hex}")

        @pytest.fixture
        def raw(self, backend):
            # get/put that bypass the store under test (boto3 directly, say)
            return S3Raw(backend)

        @pytest.fixture
        def unavailable_backend(self):
            return open_store("s3://no-such-bucket-here/x")

``make_backend`` is a factory rather than a single store because the
Hypothesis state machine needs a fresh store for every example; the
``backend`` fixture (one store per test, closed afterwards) is derived from it.
Capabilities are class attributes: ``shared_between_processes`` defaults to
the backend class's own flag and turns the process races on (they pass the
pickled store to ``spawn``-ed children, so its class must be importable there).
Every store, shared or not, must pickle as its URL and options into a copy
that sees the same data within one process. To run the suite on a store
under :func:`docmem.encrypted`, wrap its raw access in
:class:`EncryptedRawAccess`.

**Stability.** This package is stable API for plug-in authors, like
``docmem.backend`` and ``docmem.errors``: the names below, the three
fixtures, the ``backend`` fixture and the capability attributes of
:class:`BackendTests` change only with a major version. The tests grow: a
release may add tests of the promise of docs/design.md, section 4, so a
store that never kept the whole promise may fail a newer suite.

The suites need the ``test`` extra (pytest, hypothesis). ``import docmem``
never imports this package, and this package imports the module behind each
name below only when the name is first used, so
the scripted framework models and :mod:`docmem.testing.redaction`, which
need neither, import without the extra.
:mod:`docmem.testing.conformance` holds :class:`BackendTests`
and its races, :mod:`docmem.testing.state_machine` the model-based test, and
:mod:`docmem.testing.campaigns` the SIGKILL campaign harness (writer
processes killed mid-save) for stores on a local disk,
:mod:`docmem.testing.faultproxy` a fault-injecting HTTP proxy for a
network store's fault campaigns (resets, lost answers, 5xx, cut bodies),
:mod:`docmem.testing.faultcampaign` the campaign run through it (writer
threads, then docmem's promises checked on the document read back),
:mod:`docmem.testing.rewriting_proxy` a forwarding HTTP proxy whose request and
answer rewriting is given by callables (an emulator made to ignore a precondition),
:mod:`docmem.testing.redaction` the canary helpers, and
:mod:`docmem.testing.volumes` a real tmpfs volume to unmount under a store;
each is imported from its module. For framework adapters,
:class:`AdapterTests` (:mod:`docmem.testing.adapters`) is the same kind of
suite, run through the real framework, with an offline model for each
framework that ships none usable: :mod:`docmem.testing.langchain_model` (a
LangChain fake chat model that takes tools),
:mod:`docmem.testing.adk_model` (a Google ADK ``BaseLlm``),
:mod:`docmem.testing.strands_model` (a Strands ``Model``) and
:mod:`docmem.testing.crewai_model` (a CrewAI ``BaseLLM``), each imported
only explicitly, with its framework's extra alone.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .adapters import AdapterHarness, AdapterTests
    from .conformance import BackendTests, EncryptedRawAccess, RawAccess, increment_counter
    from .state_machine import BackendFactory, BackendStateMachine

#: Each public name and the module that defines it, imported when the name is first used.
_MODULES = {
    "AdapterHarness": "adapters",
    "AdapterTests": "adapters",
    "BackendFactory": "state_machine",
    "BackendStateMachine": "state_machine",
    "BackendTests": "conformance",
    "EncryptedRawAccess": "conformance",
    "RawAccess": "conformance",
    "increment_counter": "conformance",
}

__all__ = [
    "AdapterHarness",
    "AdapterTests",
    "BackendFactory",
    "BackendStateMachine",
    "BackendTests",
    "EncryptedRawAccess",
    "RawAccess",
    "increment_counter",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
