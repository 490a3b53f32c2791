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
"""

from __future__ import annotations

from .backend import Backend, Stored, open_store, register_backend
from .document import MemoryDocument
from .errors import (
    Cancelled,
    ContentRejected,
    DocmemError,
    DocumentCorrupt,
    IndexExhausted,
    InvalidArgument,
    InvalidScope,
    LimitExceeded,
    MutationAmbiguous,
    MutationConflict,
    RecallBatchInvalid,
    ScopeFenced,
    SecretDetected,
    StoreBusy,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from .formats import ToolDispatcher, anthropic_tools, openai_tools
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
from .recall import ProjectedRecall, Recalled, RecallLedger, split_recalls
from .retry import RetryPolicy
from .runtime import MemoryRuntime, TurnContext, TurnMemory
from .secrets import default_secret_filter
from .slot import (
    CaptureContext,
    MemoryProvider,
    MemorySlot,
    NamespaceContext,
    Principal,
    RecallContext,
    RecalledItem,
    ScopeContext,
    SlotLock,
    ToolsContext,
    by_principal,
    default_namespace,
)
from .tools import Tool, ToolResult

__version__ = "0.1.0"

__all__ = [
    "Backend",
    "BoundMemory",
    "Cancelled",
    "CaptureContext",
    "ContentRejected",
    "DocmemError",
    "DocumentCorrupt",
    "EraseResult",
    "FileMemory",
    "IndexExhausted",
    "InvalidArgument",
    "InvalidScope",
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
    "Principal",
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
    "ToolsContext",
    "TurnContext",
    "TurnMemory",
    "VersionConflict",
    "WriteOutcomeUnknown",
    "anthropic_tools",
    "by_principal",
    "default_namespace",
    "default_secret_filter",
    "lock_scope",
    "open_store",
    "openai_tools",
    "register_backend",
    "split_recalls",
]
