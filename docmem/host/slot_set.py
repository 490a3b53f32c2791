"""An application's slots as the runtime calls them: locks, recall, tools.

Both faces of :class:`~docmem.host.runtime.MemoryRuntime` (the per-call API
for frameworks and the turn lifecycle) reach the providers through here, so a
provider's failure is met and logged the same way in both: a recall failure
raises (nothing is applied), a failing ``tools`` costs its slot its tools.
Every log line names slots, boundaries and error codes or types, never content.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import Cancelled, DocmemError, InvalidArgument, RecallBatchInvalid
from ..provider.protocol import Boundary, RecallContext, ToolsContext
from ..provider.tools import Tool
from .recall_pool import run_all
from .slot import MemorySlot, ScopeContext, SlotLock

__all__ = ["SlotSet", "cancelled", "checked_context", "error_code"]

logger = logging.getLogger("docmem")


class SlotSet:
    """The slots, sorted by name (the order every batch and every answer keeps)."""

    def __init__(self, slots: Sequence[MemorySlot]) -> None:
        self._by_name = {slot.name: slot for slot in slots}
        if len(self._by_name) != len(slots):
            raise InvalidArgument("two memory slots share a name")
        self.slots = sorted(slots, key=lambda slot: slot.name)

    def slot(self, name: str) -> MemorySlot:
        """The slot named ``name``, which a lock of this set names."""
        return self._by_name[name]

    def find(self, name: str | None) -> MemorySlot | None:
        """The slot named ``name``, or ``None`` (a model may name anything)."""
        return self._by_name.get(name) if name is not None else None

    def locks(self, scope_context: ScopeContext, app_root: str, node: str) -> tuple[SlotLock, ...]:
        """Every active slot's lock; ``scope_context`` was checked where it entered."""
        locks = []
        for slot in self.slots:
            lock = slot.lock(scope_context, app_root=app_root, node=node)
            if lock is not None:
                locks.append(lock)
        return tuple(locks)

    def recall(
        self,
        boundary: Boundary,
        operation: str,
        view: Sequence[Any],
        locks: Sequence[SlotLock],
        cancel: threading.Event | None,
    ) -> list[tuple[SlotLock, list[Any]]]:
        """Every active slot's recall, read concurrently; the first failure (slot order) raises."""

        def one(lock: SlotLock) -> list[Any]:
            context = RecallContext(boundary, lock.slot, lock.scope, operation, view, cancel=cancel)
            try:
                return _items(lock.slot, self.slot(lock.slot).provider.recall(context))
            except Exception as error:
                logger.warning(
                    "docmem: recall failed for slot %s at %s (%s); nothing applied",
                    lock.slot,
                    boundary,
                    error_code(error),
                )
                raise

        return list(zip(locks, run_all(one, locks), strict=True))

    def tools(
        self,
        lock: SlotLock,
        operation: str,
        messages: Sequence[Any],
        cancel: threading.Event | None,
    ) -> dict[str, Tool]:
        """One slot's tools for a locked scope; a provider that fails offers none (logged)."""
        context = ToolsContext(lock.slot, lock.scope, operation, messages, cancel=cancel)
        try:
            return self.slot(lock.slot).qualified_tools(context)
        except Exception as error:
            _omitted(lock, error)
            return {}

    def tool(
        self, lock: SlotLock, name: str, operation: str, cancel: threading.Event | None
    ) -> Tool | None:
        """The one tool ``name`` of a locked slot, for one call: none built but it (logged)."""
        context = ToolsContext(lock.slot, lock.scope, operation, (), cancel=cancel)
        try:
            return self.slot(lock.slot).qualified_tool(context, name)
        except Exception as error:
            _omitted(lock, error)
            return None

    def active_tools(
        self, scope_context: ScopeContext, operation: str, app_root: str, node: str
    ) -> dict[str, Tool]:
        """The tools of every slot that resolves for this context (for an unknown name's answer)."""
        tools: dict[str, Tool] = {}
        for slot in self.slots:
            try:
                lock = slot.lock(scope_context, app_root=app_root, node=node)
            except Exception:  # an unresolvable slot offers no tools; its own calls say why
                continue
            if lock is not None:
                tools.update(self.tools(lock, operation, (), scope_context.cancel))
        return tools


def checked_context(scope_context: object) -> ScopeContext | None:
    """``scope_context`` if it is a :class:`ScopeContext` or ``None``, else InvalidArgument.

    A host's resolver is checked where its answer enters docmem, so that a
    wrong type (a bare ``Principal``, say) is named there, not met as a missing
    attribute deep in a turn.
    """
    if scope_context is None or isinstance(scope_context, ScopeContext):
        return scope_context
    raise InvalidArgument(
        f"the scope context is a {type(scope_context).__name__}, not a docmem.ScopeContext "
        "or None; a resolver returns e.g. docmem.ScopeContext(principal=docmem.Principal(...))"
    )


def cancelled() -> Cancelled:
    """What a call of an abandoned turn gets, before any resolver, provider or store runs."""
    return Cancelled("the turn was cancelled; nothing was changed", outcome="not_committed")


def error_code(error: BaseException) -> str:
    """A content-free name for an error: its docmem code, else its type."""
    return error.code if isinstance(error, DocmemError) else type(error).__name__


def _omitted(lock: SlotLock, error: Exception) -> None:
    logger.warning("docmem: tools of slot %s omitted this turn (%s)", lock.slot, error_code(error))


def _items(slot: str, recalled: object) -> list[Any]:
    """A provider's recall answer as a list of items; ``None`` recalls nothing.

    A lone string or mapping would otherwise be taken apart into characters
    or keys, each then refused as an item that is not one, which hides what
    was wrong: refuse the answer itself, naming the shape it must have.
    """
    if recalled is None:
        return []
    if isinstance(recalled, (str, bytes, Mapping)) or not hasattr(recalled, "__iter__"):
        raise RecallBatchInvalid(
            f"recall batch rejected: slot {slot!r} returned a {type(recalled).__name__}; "
            "recall returns a list of items (or None)"
        )
    return list(recalled)
