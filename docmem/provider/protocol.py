"""The provider protocol: what a memory provider implements and the contexts it is handed.

It sits between the provider (:class:`docmem.FileMemory`, or an application's
own) and the host integration (slots, the recall ledger, the runtime): a
provider implements it without importing the host side, and the host calls
any provider through it. Every context carries keys only, never raw scope
values.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from .keys import LockedScope

__all__ = [
    "Boundary",
    "CaptureBoundary",
    "CaptureContext",
    "MemoryProvider",
    "RecallContext",
    "RecalledItem",
    "ToolsContext",
]

#: The boundaries at which a provider recalls: ``model_call`` is a recall for one
#: model request only (:meth:`docmem.MemoryRuntime.prepare_model_call`), never kept.
Boundary = Literal["turn_started", "compaction_completed", "model_call"]
#: The boundaries at which a provider captures.
CaptureBoundary = Literal["compaction_requested", "turn_completed"]


@dataclass(frozen=True)
class RecallContext:
    """What a provider's ``recall`` receives at ``turn_started`` or ``compaction_completed``.

    ``messages`` is the projected history before the turn's input (recalled
    records included, as the model will see them). ``cancel`` is the turn's
    :attr:`docmem.ScopeContext.cancel`: a provider stops touching its store once it is set.
    """

    boundary: Boundary
    slot: str
    scope: LockedScope
    operation_id: str
    messages: Sequence[Any]
    cancel: threading.Event | None = None


@dataclass(frozen=True)
class ToolsContext:
    """What a provider's ``tools`` receives: the locked scope and the turn's messages.

    ``cancel`` is the turn's :attr:`docmem.ScopeContext.cancel`; tools made for the turn
    should refuse to touch the store once it is set.
    """

    slot: str
    scope: LockedScope
    operation_id: str
    messages: Sequence[Any]
    cancel: threading.Event | None = None


@dataclass(frozen=True)
class CaptureContext:
    """What a provider's ``capture`` receives at ``compaction_requested`` or ``turn_completed``.

    ``cancel`` is the turn's :attr:`docmem.ScopeContext.cancel`, as in :class:`RecallContext`:
    a capture that writes stops once it is set.
    """

    boundary: CaptureBoundary
    slot: str
    scope: LockedScope
    operation_id: str
    messages: Sequence[Any]
    cancel: threading.Event | None = None


class RecalledItem(Protocol):
    """What ``recall`` returns items of: ``content`` and an optional ``id`` that keys it.

    :class:`docmem.Recalled` and FileMemory's :class:`docmem.RecallMessage` both fit.
    A mapping with a ``"content"`` key and an optional ``"id"`` key (what a
    provider built on JSON has at hand) is taken the same way.
    """

    @property
    def content(self) -> str:
        """The text shown to the model."""
        ...

    @property
    def id(self) -> str | None:
        """The provider's stable id for keyed supersession; ``None`` appends."""
        ...


@runtime_checkable
class MemoryProvider(Protocol):
    """What a slot's provider implements.

    ``recall`` is required: called at every ``turn_started`` and after every
    compaction (``context.boundary`` tells which; return ``None`` to recall
    nothing). Optional methods, found by name: ``tools(ToolsContext) ->
    Mapping[str, Tool] | None`` (unqualified names; the runtime qualifies them),
    ``tool_specs(slot: str) -> Mapping[str, ToolSpec] | None`` (the same tools'
    names, descriptions and schemas, with no scope and no I/O, for hosts that
    build their tool objects up front), ``tool_for_call(ToolsContext, name) ->
    Tool | None`` (only the tool a model called, beside ``tools``; without it
    a call builds the whole set and takes one) and ``capture(CaptureContext) -> None``.
    Recall must be observational.
    """

    def recall(self, context: RecallContext) -> Sequence[RecalledItem | Mapping[str, Any]] | None:
        """The messages to recall for this slot and scope, or ``None``."""
        ...
