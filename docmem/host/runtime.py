"""What a host framework calls: tool specs, dispatch, per-call recall, and the turn lifecycle.

A runtime is built once per application, from its slots. Frameworks that
call the model several times per turn and keep their own history inject
memory into each model request only::

    runtime = docmem.MemoryRuntime([user_slot, channel_slot])
    specs = runtime.tool_specs()                  # build the framework's tools once
    prompt = runtime.prepare_model_call(messages, trusted)   # before every model call
    result = runtime.dispatch(trusted, "user__save_memory", arguments,
                              call_id=call_id, session_id=f"{thread_id}/{run_id}")

Hosts that keep recalled records beside their stored history use the turn
lifecycle and a ledger per conversation (passed per call, or one per
session id in a bounded :class:`~docmem.LedgerCache`)::

    runtime = docmem.MemoryRuntime([user_slot, channel_slot])
    turn = runtime.turn_started(docmem.TurnContext(operation_id=turn_id, history=history,
                                                   scope_context=trusted, node="support"))
    prompt = turn.messages + [user_input]       # recalled memory sits before the input
    result = turn.dispatch("user__save_memory", {"text": "..."}, call_id=call_id)
    runtime.turn_completed(...)

The runtime composes one part per job: :mod:`docmem.host.model_calls` (the
per-call API), :mod:`docmem.host.turns` (the turn lifecycle), both reaching
the providers through :mod:`docmem.host.slot_set`, whose concurrent slot
reads run on :mod:`docmem.host.recall_pool`.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model_calls import ModelCallMemory
from .recall import LedgerCache, RecallLedger
from .slot import MemorySlot
from .slot_set import SlotSet

# Defined with the lifecycle; this module is where applications have always found them.
from .turns import TurnContext as TurnContext
from .turns import TurnLifecycle
from .turns import TurnMemory as TurnMemory

__all__ = ["MemoryRuntime", "TurnContext", "TurnMemory"]


class MemoryRuntime(ModelCallMemory, TurnLifecycle):
    """The memory slots of one application, and where its conversations' ledgers live.

    The boundary methods use, in this order: the ``ledger`` passed to the
    call; the ledger of the context's session id in ``sessions``, when given;
    the runtime's own ``ledger`` (one conversation's, for a host that builds
    one runtime per conversation). Tool specs, :meth:`dispatch` and
    :meth:`prepare_model_call` use no ledger at all.
    """

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        ledger: RecallLedger | None = None,
        sessions: LedgerCache | None = None,
    ) -> None:
        slot_set = SlotSet(slots)
        ModelCallMemory.__init__(self, slot_set)
        TurnLifecycle.__init__(self, slot_set, ledger=ledger, sessions=sessions)
        self.slots = slot_set.slots
