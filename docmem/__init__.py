"""docmem: bounded, versioned, per-scope Markdown memory for AI agents.

Each memory scope owns one small document in a store (local disk, S3, other
blob stores), changed only with conditional writes, so many agent processes
can share one store and never lose an update::

    import docmem

    store = docmem.open_store("file:///var/lib/agent/memory")
    memory = docmem.FileMemory(store, max_characters=4000)
    scope = docmem.lock_scope(namespace="acme:prod:support", scope=("user", "u_123"))
    mem = memory.bind(scope, slot="user")
    mem.save("Prefers metric units.", mutation_id="call_abc")
    mem.recall()   # one keyed message with the whole document

The names below are the stable API for applications. For plug-in authors,
``docmem.backend``, ``docmem.errors``, ``docmem.options``, ``docmem.localfs``
and ``docmem.testing`` are stable too, for adapter authors
``docmem.integrations``, and ``docmem.telemetry`` for whoever configures
OpenTelemetry; every other module is an implementation detail, in the layer
folders ``storage/``, ``provider/`` and ``host/`` that docs/design.md, section
1, maps.
"""

from __future__ import annotations

import importlib as _importlib

from ._version import __version__ as __version__

TYPE_CHECKING = False  # not typing's: importing typing costs more than all the rest
if TYPE_CHECKING:
    from .backend import Backend, KeptVersion, Stored
    from .errors import (
        Cancelled,
        ConditionsNotHonoured,
        ContentRejected,
        DocmemError,
        DocumentCorrupt,
        ExportInvalid,
        HistoryKept,
        HistoryNotKept,
        IndexExhausted,
        InvalidArgument,
        InvalidScope,
        LimitExceeded,
        MutationAmbiguous,
        MutationConflict,
        PlaintextDocument,
        RecallBatchInvalid,
        RevertRefused,
        ScopeFenced,
        SecretDetected,
        StaleRevision,
        StoreBusy,
        StoreNotConfigured,
        StoreUnavailable,
        TransferRefused,
        UnknownKey,
        VersionConflict,
        WriteOutcomeUnknown,
    )
    from .host.formats import ToolDispatcher, anthropic_tools, openai_tools
    from .host.injection import (
        ProjectedRecall,
        is_recalled,
        message_role,
        message_text,
        place_recalls,
        recalled_slot,
        split_recalls,
        user_text,
    )
    from .host.recall import LedgerCache, Recalled, RecallLedger
    from .host.runtime import MemoryRuntime, TurnContext, TurnMemory
    from .host.slot import (
        MemorySlot,
        NamespaceContext,
        Principal,
        ScopeContext,
        SlotLock,
        by_principal,
        default_namespace,
    )
    from .provider.document import MemoryDocument
    from .provider.fencing import FenceReport, fence, unfence
    from .provider.history import EntryChanges, KeptRevision
    from .provider.keys import LockedScope, lock_scope
    from .provider.memory import (
        BoundMemory,
        EraseResult,
        FileMemory,
        MutationRecord,
        RecallMessage,
        RemoveResult,
        RevertPlan,
        RevertResult,
        SaveResult,
    )
    from .provider.protocol import (
        CaptureContext,
        MemoryProvider,
        RecallContext,
        RecalledItem,
        ToolsContext,
    )
    from .provider.provenance import Provenance, Restored
    from .provider.retry import RetryPolicy
    from .provider.secrets import default_secret_filter
    from .provider.tools import Tool, ToolResult, ToolSpec
    from .provider.transfer import (
        ExportSummary,
        ImportReport,
        VerifyReport,
        check_export,
        export_store,
        import_store,
        verify_store,
    )
    from .storage.encryption import EncryptedStore, Keyring, encrypted
    from .storage.progress import Progress
    from .storage.registry import open_store, register_backend

del TYPE_CHECKING


#: The module that defines each public name. ``import docmem`` imports none of them:
#: each is imported on first use (PEP 562), so a command line or an MCP server
#: starts without loading what it does not use.
_WHERE = {
    "Backend": "backend",
    "BoundMemory": "provider.memory",
    "Cancelled": "errors",
    "ConditionsNotHonoured": "errors",
    "CaptureContext": "provider.protocol",
    "ContentRejected": "errors",
    "DocmemError": "errors",
    "DocumentCorrupt": "errors",
    "EncryptedStore": "storage.encryption",
    "EntryChanges": "provider.history",
    "EraseResult": "provider.memory",
    "ExportInvalid": "errors",
    "ExportSummary": "provider.transfer",
    "FenceReport": "provider.fencing",
    "FileMemory": "provider.memory",
    "HistoryKept": "errors",
    "HistoryNotKept": "errors",
    "ImportReport": "provider.transfer",
    "IndexExhausted": "errors",
    "InvalidArgument": "errors",
    "InvalidScope": "errors",
    "KeptRevision": "provider.history",
    "KeptVersion": "backend",
    "Keyring": "storage.encryption",
    "LedgerCache": "host.recall",
    "LimitExceeded": "errors",
    "LockedScope": "provider.keys",
    "MemoryDocument": "provider.document",
    "MemoryProvider": "provider.protocol",
    "MemoryRuntime": "host.runtime",
    "MemorySlot": "host.slot",
    "MutationAmbiguous": "errors",
    "MutationConflict": "errors",
    "MutationRecord": "provider.memory",
    "NamespaceContext": "host.slot",
    "PlaintextDocument": "errors",
    "Principal": "host.slot",
    "Progress": "storage.progress",
    "ProjectedRecall": "host.injection",
    "Provenance": "provider.provenance",
    "RecallBatchInvalid": "errors",
    "RecallContext": "provider.protocol",
    "RecallLedger": "host.recall",
    "RecallMessage": "provider.memory",
    "Recalled": "host.recall",
    "RecalledItem": "provider.protocol",
    "RemoveResult": "provider.memory",
    "Restored": "provider.provenance",
    "RevertPlan": "provider.memory",
    "RevertRefused": "errors",
    "RevertResult": "provider.memory",
    "RetryPolicy": "provider.retry",
    "SaveResult": "provider.memory",
    "ScopeContext": "host.slot",
    "ScopeFenced": "errors",
    "SecretDetected": "errors",
    "StaleRevision": "errors",
    "SlotLock": "host.slot",
    "StoreBusy": "errors",
    "StoreNotConfigured": "errors",
    "StoreUnavailable": "errors",
    "Stored": "backend",
    "Tool": "provider.tools",
    "ToolDispatcher": "host.formats",
    "ToolResult": "provider.tools",
    "ToolSpec": "provider.tools",
    "ToolsContext": "provider.protocol",
    "TransferRefused": "errors",
    "TurnContext": "host.runtime",
    "TurnMemory": "host.runtime",
    "UnknownKey": "errors",
    "VerifyReport": "provider.transfer",
    "VersionConflict": "errors",
    "WriteOutcomeUnknown": "errors",
    "anthropic_tools": "host.formats",
    "by_principal": "host.slot",
    "check_export": "provider.transfer",
    "default_namespace": "host.slot",
    "default_secret_filter": "provider.secrets",
    "encrypted": "storage.encryption",
    "export_store": "provider.transfer",
    "fence": "provider.fencing",
    "import_store": "provider.transfer",
    "is_recalled": "host.injection",
    "lock_scope": "provider.keys",
    "message_role": "host.injection",
    "message_text": "host.injection",
    "open_store": "storage.registry",
    "openai_tools": "host.formats",
    "place_recalls": "host.injection",
    "recalled_slot": "host.injection",
    "register_backend": "storage.registry",
    "split_recalls": "host.injection",
    "unfence": "provider.fencing",
    "user_text": "host.injection",
    "verify_store": "provider.transfer",
}

__all__ = [
    "Backend",
    "BoundMemory",
    "Cancelled",
    "CaptureContext",
    "ConditionsNotHonoured",
    "ContentRejected",
    "DocmemError",
    "DocumentCorrupt",
    "EncryptedStore",
    "EntryChanges",
    "EraseResult",
    "ExportInvalid",
    "ExportSummary",
    "FenceReport",
    "FileMemory",
    "HistoryKept",
    "HistoryNotKept",
    "ImportReport",
    "IndexExhausted",
    "InvalidArgument",
    "InvalidScope",
    "KeptRevision",
    "KeptVersion",
    "Keyring",
    "LedgerCache",
    "LimitExceeded",
    "LockedScope",
    "MemoryDocument",
    "MemoryProvider",
    "MemoryRuntime",
    "MemorySlot",
    "MutationAmbiguous",
    "MutationConflict",
    "MutationRecord",
    "NamespaceContext",
    "PlaintextDocument",
    "Principal",
    "Progress",
    "ProjectedRecall",
    "Provenance",
    "RecallBatchInvalid",
    "RecallContext",
    "RecallLedger",
    "RecallMessage",
    "Recalled",
    "RecalledItem",
    "RemoveResult",
    "Restored",
    "RetryPolicy",
    "RevertPlan",
    "RevertRefused",
    "RevertResult",
    "SaveResult",
    "ScopeContext",
    "ScopeFenced",
    "SecretDetected",
    "SlotLock",
    "StaleRevision",
    "StoreBusy",
    "StoreNotConfigured",
    "StoreUnavailable",
    "Stored",
    "Tool",
    "ToolDispatcher",
    "ToolResult",
    "ToolSpec",
    "ToolsContext",
    "TransferRefused",
    "TurnContext",
    "TurnMemory",
    "UnknownKey",
    "VerifyReport",
    "VersionConflict",
    "WriteOutcomeUnknown",
    "anthropic_tools",
    "by_principal",
    "check_export",
    "default_namespace",
    "default_secret_filter",
    "encrypted",
    "export_store",
    "fence",
    "import_store",
    "is_recalled",
    "lock_scope",
    "message_role",
    "message_text",
    "open_store",
    "openai_tools",
    "place_recalls",
    "recalled_slot",
    "register_backend",
    "split_recalls",
    "unfence",
    "user_text",
    "verify_store",
]


def __getattr__(name: str) -> object:
    """A public name (or a submodule) on first use; then it is an ordinary attribute."""
    module = _WHERE.get(name)
    if module is None:
        try:
            return _importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module 'docmem' has no attribute {name!r}") from None
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
