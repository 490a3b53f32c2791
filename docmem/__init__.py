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
``docmem.backend``, ``docmem.errors`` and ``docmem.testing`` are stable too;
every other module is an implementation detail. The modules come in three
layers, each importing only from those before it and ``errors``: storage
(``backend``, ``registry``, ``options``, ``backends/``), the document and the
provider (``keys``, ``document``, ``journal``, ``mutation``, ``retry``,
``secrets``, ``provider``, ``memory``) and host integration (``tools``,
``slot``, ``injection``, ``recall``, ``runtime``, ``formats``; the framework
adapters in ``docmem.integrations`` sit on top, each behind its extra). One import goes the other
way: ``memory`` builds its tools with ``tools``.
"""

from __future__ import annotations

import importlib as _importlib

TYPE_CHECKING = False  # not typing's: importing typing costs more than all the rest
if TYPE_CHECKING:
    from .backend import Backend, Stored
    from .document import MemoryDocument
    from .encryption import EncryptedStore, Keyring, encrypted
    from .errors import (
        Cancelled,
        ConditionsNotHonoured,
        ContentRejected,
        DocmemError,
        DocumentCorrupt,
        ExportInvalid,
        IndexExhausted,
        InvalidArgument,
        InvalidScope,
        LimitExceeded,
        MutationAmbiguous,
        MutationConflict,
        PlaintextDocument,
        RecallBatchInvalid,
        ScopeFenced,
        SecretDetected,
        StoreBusy,
        StoreNotConfigured,
        StoreUnavailable,
        TransferRefused,
        UnknownKey,
        VersionConflict,
        WriteOutcomeUnknown,
    )
    from .fencing import FenceReport, fence, unfence
    from .formats import ToolDispatcher, anthropic_tools, openai_tools
    from .injection import (
        ProjectedRecall,
        is_recalled,
        message_role,
        message_text,
        place_recalls,
        recalled_slot,
        split_recalls,
        user_text,
    )
    from .keys import LockedScope, lock_scope
    from .memory import (
        BoundMemory,
        EraseResult,
        FileMemory,
        MutationRecord,
        RecallMessage,
        RemoveResult,
        SaveResult,
    )
    from .progress import Progress
    from .provider import CaptureContext, MemoryProvider, RecallContext, RecalledItem, ToolsContext
    from .recall import LedgerCache, Recalled, RecallLedger
    from .registry import open_store, register_backend
    from .retry import RetryPolicy
    from .runtime import MemoryRuntime, TurnContext, TurnMemory
    from .secrets import default_secret_filter
    from .slot import (
        MemorySlot,
        NamespaceContext,
        Principal,
        ScopeContext,
        SlotLock,
        by_principal,
        default_namespace,
    )
    from .tools import Tool, ToolResult, ToolSpec
    from .transfer import (
        ExportSummary,
        ImportReport,
        VerifyReport,
        check_export,
        export_store,
        import_store,
        verify_store,
    )

del TYPE_CHECKING

__version__ = "0.1.0"

#: The module that defines each public name. ``import docmem`` imports none of them:
#: each is imported on first use (PEP 562), so a command line or an MCP server
#: starts without loading what it does not use.
_WHERE = {
    "Backend": "backend",
    "BoundMemory": "memory",
    "Cancelled": "errors",
    "ConditionsNotHonoured": "errors",
    "CaptureContext": "provider",
    "ContentRejected": "errors",
    "DocmemError": "errors",
    "DocumentCorrupt": "errors",
    "EncryptedStore": "encryption",
    "EraseResult": "memory",
    "ExportInvalid": "errors",
    "ExportSummary": "transfer",
    "FenceReport": "fencing",
    "FileMemory": "memory",
    "ImportReport": "transfer",
    "IndexExhausted": "errors",
    "InvalidArgument": "errors",
    "InvalidScope": "errors",
    "Keyring": "encryption",
    "LedgerCache": "recall",
    "LimitExceeded": "errors",
    "LockedScope": "keys",
    "MemoryDocument": "document",
    "MemoryProvider": "provider",
    "MemoryRuntime": "runtime",
    "MemorySlot": "slot",
    "MutationAmbiguous": "errors",
    "MutationConflict": "errors",
    "MutationRecord": "memory",
    "NamespaceContext": "slot",
    "PlaintextDocument": "errors",
    "Principal": "slot",
    "Progress": "progress",
    "ProjectedRecall": "injection",
    "RecallBatchInvalid": "errors",
    "RecallContext": "provider",
    "RecallLedger": "recall",
    "RecallMessage": "memory",
    "Recalled": "recall",
    "RecalledItem": "provider",
    "RemoveResult": "memory",
    "RetryPolicy": "retry",
    "SaveResult": "memory",
    "ScopeContext": "slot",
    "ScopeFenced": "errors",
    "SecretDetected": "errors",
    "SlotLock": "slot",
    "StoreBusy": "errors",
    "StoreNotConfigured": "errors",
    "StoreUnavailable": "errors",
    "Stored": "backend",
    "Tool": "tools",
    "ToolDispatcher": "formats",
    "ToolResult": "tools",
    "ToolSpec": "tools",
    "ToolsContext": "provider",
    "TransferRefused": "errors",
    "TurnContext": "runtime",
    "TurnMemory": "runtime",
    "UnknownKey": "errors",
    "VerifyReport": "transfer",
    "VersionConflict": "errors",
    "WriteOutcomeUnknown": "errors",
    "anthropic_tools": "formats",
    "by_principal": "slot",
    "check_export": "transfer",
    "default_namespace": "slot",
    "default_secret_filter": "secrets",
    "encrypted": "encryption",
    "export_store": "transfer",
    "fence": "fencing",
    "import_store": "transfer",
    "is_recalled": "injection",
    "lock_scope": "keys",
    "message_role": "injection",
    "message_text": "injection",
    "open_store": "registry",
    "openai_tools": "formats",
    "place_recalls": "injection",
    "recalled_slot": "injection",
    "register_backend": "registry",
    "split_recalls": "injection",
    "unfence": "fencing",
    "user_text": "injection",
    "verify_store": "transfer",
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
    "EraseResult",
    "ExportInvalid",
    "ExportSummary",
    "FenceReport",
    "FileMemory",
    "ImportReport",
    "IndexExhausted",
    "InvalidArgument",
    "InvalidScope",
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
    "RecallBatchInvalid",
    "RecallContext",
    "RecallLedger",
    "RecallMessage",
    "Recalled",
    "RecalledItem",
    "RemoveResult",
    "RetryPolicy",
    "SaveResult",
    "ScopeContext",
    "ScopeFenced",
    "SecretDetected",
    "SlotLock",
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
