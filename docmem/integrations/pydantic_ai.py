"""docmem in Pydantic AI (V2): one capability with the memory tools and memory in every request.

::

    from docmem.integrations.pydantic_ai import DocmemCapability

    agent = Agent(model, deps_type=Deps,
                  capabilities=[DocmemCapability(slots, scope_context=lambda deps: deps.scope)])

``deps`` is what the application passes as ``agent.run(..., deps=...)``
(``RunContext.deps``): Pydantic AI never sends it to the model, so the scope
comes from it and from nothing the model says.

Before every model request, ``before_model_request`` drops every earlier copy
of a memory from the request and reads each active slot afresh, adding one
user prompt part per document. It returns a new message list, which Pydantic
AI sends without writing it to the run's history, so ``all_messages()`` never
holds a copy and a save made in one model request shows in the next.
Pydantic AI merges adjacent requests, so a copy can be one part among the
user's own: copies are dropped part by part, recognised by docmem's marker
(a copy another process persisted, or one whose metadata
``sanitize_messages`` dropped) or by the ``TextContent.metadata`` key
``"docmem"`` this capability stamps on its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

try:
    from pydantic_ai.capabilities import (
        AbstractCapability,
        CapabilityOrdering,
        ProcessHistory,
        ReinjectSystemPrompt,
    )
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelRequestPart,
        SystemPromptPart,
        TextContent,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_core import SchemaValidator, core_schema
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.pydantic_ai needs Pydantic AI: pip install "agent-docmem[pydantic-ai]"'
    ) from error

from docmem.host.injection import (
    Position,
    ProjectedRecall,
    checked_position,
    is_recalled,
)
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext

__all__ = ["METADATA_KEY", "DocmemCapability", "Position"]

DepsT = TypeVar("DepsT")

#: Where the copies go: after the leading system prompt parts of the first
#: request (the prefix stays cache-stable while memory is unchanged), or just
#: before the newest user prompt (the conversation before it stays stable).

#: The ``TextContent.metadata`` key on every copy this capability adds.
METADATA_KEY = "docmem"

#: Arguments reach docmem as the model sent them: docmem checks its own schema.
_ANY_ARGUMENTS = SchemaValidator(core_schema.any_schema())


class DocmemCapability(AbstractCapability[DepsT]):
    """docmem's slots as a Pydantic AI capability: the memory tools and per-request recall.

    Build one per application (it holds one :class:`docmem.MemoryRuntime`,
    ``runtime``) and share it between agents and runs, concurrent ones
    included: it keeps no per-run state. It orders itself inside
    ``ProcessHistory`` and ``ReinjectSystemPrompt``, which write the request
    they see into the history; list it after any other capability that does
    (a compaction, say), so that none stores or summarizes a copy.

    ``scope_context`` maps the run's ``deps`` to a :class:`docmem.ScopeContext`
    (``None``: memory is off for that run: no tools, no recall, no store
    read). A resolver that raises fails the run: that is a bug in the host,
    never hidden. ``position`` says where the copies go (:data:`Position`).

    A tool call's mutation id is ``<conversation_id>/<run_id>/<tool_call_id>``
    (the ``RunContext`` ids), so a model that numbers its calls ``call_1`` in
    every run makes a new mutation each run, while the same call id within
    one run is one entry. Tool errors (memory full, a credential, bad
    arguments, a store that is down) come back to the model as docmem's
    sentence, never as ``ModelRetry``, and never end the run (arguments that
    are not JSON at all are answered by Pydantic AI's own retry prompt before
    docmem sees them). A failed recall fails the request with docmem's error:
    memory is never silently empty.
    """

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        scope_context: Callable[[DepsT], ScopeContext | None],
        position: Position = "after_system",
    ) -> None:
        self.position: Position = checked_position(position)
        self.runtime = MemoryRuntime(slots)
        self.scope_context = scope_context
        self._toolset = _DocmemToolset(self)

    def __repr__(self) -> str:
        return f"DocmemCapability(slots={[slot.name for slot in self.runtime.slots]!r})"

    # The base dataclass compares ``id`` and ``description``: every instance would be equal.
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not buildable from an agent spec: it takes slots and a resolver."""
        return None

    def get_ordering(self) -> CapabilityOrdering:
        """Inside the capabilities that rewrite the run's history, so none of them stores a copy."""
        return CapabilityOrdering(wrapped_by=(ProcessHistory, ReinjectSystemPrompt))

    def get_toolset(self) -> AbstractToolset[DepsT]:
        """The memory tools, listed per run step for that run's scope."""
        return self._toolset

    def _scope(self, ctx: RunContext[DepsT]) -> ScopeContext | None:
        return self.scope_context(ctx.deps)

    async def before_model_request(
        self, ctx: RunContext[DepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """This request's messages without earlier copies and with one fresh copy per document.

        A copy found in the run's history (persisted by another process, or
        by an older release) is dropped from the history too.
        """
        if _holds_copies(ctx.messages):
            ctx.messages[:] = _strip(ctx.messages)
        conversation = _strip(request_context.messages)
        recalls = await self.runtime.arecall(self._scope(ctx), messages=conversation)
        messages = _place(conversation, [_part(recall) for recall in recalls], self.position)
        return dataclasses.replace(request_context, messages=messages)


class _DocmemToolset(AbstractToolset[DepsT]):
    """The tools of the slots active for a run's scope, dispatched to docmem as sent."""

    def __init__(self, capability: DocmemCapability[DepsT]) -> None:
        self._capability = capability

    @property
    def id(self) -> str:
        return "docmem"

    async def get_tools(self, ctx: RunContext[DepsT]) -> dict[str, ToolsetTool[DepsT]]:
        specs = self._capability.runtime.tool_specs_for(self._capability._scope(ctx))
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=spec.description,
                    parameters_json_schema=spec.json_schema(),
                ),
                max_retries=ctx.max_retries,
                args_validator=_ANY_ARGUMENTS,
            )
            for name, spec in specs.items()
        }

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[DepsT],
        tool: ToolsetTool[DepsT],
    ) -> str:
        result = await self._capability.runtime.adispatch(
            self._capability._scope(ctx),
            name,
            tool_args,
            call_id=ctx.tool_call_id,
            session_id=_session_id(ctx),
        )
        return result.text


def _session_id(ctx: RunContext[Any]) -> str | None:
    """The run-scoped session of a tool call's mutation id: ``<conversation_id>/<run_id>``."""
    return "/".join(part for part in (ctx.conversation_id, ctx.run_id) if part) or None


def _part(recall: ProjectedRecall) -> UserPromptPart:
    """One copy as a user prompt part, stamped so this capability knows it as its own."""
    stamp = {METADATA_KEY: {"slot": recall.slot, "item_key": recall.item_key}}
    return UserPromptPart([TextContent(recall.content, metadata=stamp)])


def _is_copy(part: ModelRequestPart) -> bool:
    """Whether a request part is a copy: stamped by this capability, or by docmem's marker."""
    if not isinstance(part, UserPromptPart):
        return False
    if isinstance(part.content, str):
        return is_recalled(part.content)
    texts: list[str] = []
    for item in part.content:
        if isinstance(item, TextContent):
            if isinstance(item.metadata, Mapping) and METADATA_KEY in item.metadata:
                return True
            texts.append(item.content)
        elif isinstance(item, str):
            texts.append(item)
    return bool(texts) and is_recalled("\n".join(texts))


def _holds_copies(messages: Sequence[ModelMessage]) -> bool:
    return any(
        isinstance(message, ModelRequest) and any(_is_copy(part) for part in message.parts)
        for message in messages
    )


def _strip(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """``messages`` without copies, part by part, as new requests (the originals are untouched).

    A request left empty is dropped, except the last: Pydantic AI sends a
    history that ends with a request.
    """
    stripped: list[ModelMessage] = []
    last = len(messages) - 1
    for number, message in enumerate(messages):
        if isinstance(message, ModelRequest) and any(_is_copy(part) for part in message.parts):
            parts = [part for part in message.parts if not _is_copy(part)]
            if not parts and number != last:
                continue
            message = dataclasses.replace(message, parts=parts)
        stripped.append(message)
    return stripped


def _place(
    messages: list[ModelMessage], copies: list[UserPromptPart], position: Position
) -> list[ModelMessage]:
    """``messages`` with ``copies`` inserted together at ``position`` (new request objects)."""
    if not copies:
        return messages
    if position == "before_last_user":
        for number in range(len(messages) - 1, -1, -1):
            message = messages[number]
            if not isinstance(message, ModelRequest):
                continue
            users = [at for at, p in enumerate(message.parts) if isinstance(p, UserPromptPart)]
            if users:
                return _insert(messages, number, users[-1], copies)
        # No user prompt (a run resumed from history): at the end, as place_recalls does.
        if messages and isinstance(messages[-1], ModelRequest):
            return _insert(messages, len(messages) - 1, len(messages[-1].parts), copies)
        return [*messages, ModelRequest(parts=copies)]
    first = messages[0] if messages else None
    if not isinstance(first, ModelRequest):
        return [ModelRequest(parts=copies), *messages]
    at = 0
    while at < len(first.parts) and isinstance(first.parts[at], SystemPromptPart):
        at += 1
    return _insert(messages, 0, at, copies)


def _insert(
    messages: list[ModelMessage], number: int, at: int, copies: list[UserPromptPart]
) -> list[ModelMessage]:
    request = messages[number]
    assert isinstance(request, ModelRequest)
    parts = [*request.parts[:at], *copies, *request.parts[at:]]
    return [*messages[:number], dataclasses.replace(request, parts=parts), *messages[number + 1 :]]
