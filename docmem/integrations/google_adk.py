"""docmem in Google ADK: one toolset with the memory tools, and memory in every model request.

::

    from docmem.integrations.google_adk import DocmemToolset

    memory = DocmemToolset(slots, scope_context=lambda ctx: scope_for(ctx.user_id))
    agent = LlmAgent(name="support", model=model, instruction="...", tools=[memory])

``ctx`` is ADK's ``ReadonlyContext`` of the run: ``user_id`` (what the
application passed to ``Runner.run_async(user_id=...)``), ``session`` and
``state``. ADK never takes them from the model, so the scope comes from them
and from nothing the model says. (ADK's own server, ``adk web`` and ``adk
api_server``, takes ``user_id`` from the request without authenticating it:
an application that exposes it maps its authenticated user itself.)

The toolset is the whole adapter. ADK rebuilds the ``LlmRequest`` from the
session's events before every model call and asks each toolset of the agent
for its tools (``get_tools``, here: the tools of the slots the run's scope
enables) and to edit the request (``process_llm_request``, here: drop every
earlier copy of this toolset's memories from the contents and add one fresh
copy per document). It runs on every model call of the agent, the one right
after a tool result included, so a save made in one model call shows in the
next. The request's contents are ADK's per-request copies of the events, and
this toolset assigns a new list without changing any part it was given: the
session never holds a copy. Only the agents that carry the toolset get memory:
an ``AgentTool`` child or a sub-agent without it sees neither tools nor
memory, whatever plugins the app runs.

A plugin's or an agent's ``before_model_callback`` runs later and sees the
request with its copy. One that trims the contents (ADK's
``ContextFilterPlugin``) cuts a copy placed at the front: with such a plugin
use ``position="before_last_user"``, which keeps the copy inside the newest
invocation, the part a filter keeps. It also keeps the copy out of the prefix
ADK's context cache (``App(context_cache_config=...)``) stores, so a change to
memory does not invalidate the cache. A live session (``run_live``) sends the
request once, when it connects: memory is read then, not refreshed during it.

A tool call's mutation id is ``<session id>/<invocation id>/<call id>``: a
model that numbers its calls ``call_1`` in every run makes a new mutation
each run, while a call ADK runs again within its invocation is one entry
(a resumed invocation, ``run_async(invocation_id=...)``, replays a stored call
that has no stored answer: ADK promises at least once, docmem makes it once).
The call id is ``ToolContext.function_call_id``: the model's own id or, when
the model sends none (Gemini often does not), the ``adk-<uuid>`` ADK mints
as the model's answer arrives, before the event is stored. The stored event
keeps it, so a replay of that call is recognised; a model call made again
(its answer never stored) is a new answer with a new id, and its save a new
mutation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

try:
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.google_adk needs Google ADK: pip install "agent-docmem[google-adk]"'
    ) from error

from docmem.errors import InvalidArgument
from docmem.host.injection import (
    Position,
    ProjectedRecall,
    checked_position,
    place_recalls,
    recalled_slot,
)
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, ScopeContext
from docmem.provider.tools import ToolSpec

__all__ = ["DocmemToolset", "Placement", "Position"]

#: Where the documents go: user contents of the request, or the end of the system instruction.
Placement = Literal["contents", "instructions"]


class DocmemToolset(BaseToolset):
    """docmem's slots as an ADK toolset: the memory tools, and memory in every request.

    Build one per application and list it in the ``tools`` of each agent
    that should have memory; it keeps no per-run state, so concurrent runs
    share it. ``runtime`` is the one :class:`docmem.MemoryRuntime` it builds
    from ``slots``.

    ``scope_context`` maps ADK's ``ReadonlyContext`` (a ``ToolContext`` in
    tool calls) to a :class:`docmem.ScopeContext`; ``None`` turns memory off
    for that run: no tools, no recall, no store read. A resolver that raises
    fails the model call: that is a bug in the host, never hidden. A thread
    slot keyed on ``ctx.session.id`` sees another thread inside an
    ``AgentTool`` child (ADK gives it a session of its own, with a copy of
    the state): key threads on a state value instead.

    ``placement="contents"`` (the default) adds one user content per
    document, at ``position``: ``"after_system"`` (before the conversation,
    after a ``static_instruction``'s user-role prefix: the prefix stays
    cache-stable while memory is unchanged) or ``"before_last_user"`` (just
    before the newest user message; a function response, which ADK sends as
    a user content, counts as a tool turn, so a call and its response are
    never split).

    ``placement="instructions"`` appends the documents to the system
    instruction instead. Use it with the Interactions API
    (``Gemini(use_interactions_api=True)``): there each request sends only
    the current turn and the server keeps it, so a copy in the contents
    would be stored with every call and never replaced, while the system
    instruction is sent afresh with every request. The price: memory then
    speaks with the instruction's authority, and any change to memory
    changes the system instruction, so a context cache or prompt cache
    misses from the start of the request. ``position`` does not apply there.

    Copies are recognised by docmem's marker, so one another process left in
    a session (an ordinary user event) is dropped too; only copies of this
    toolset's own slots are touched, so two toolsets on one agent each keep
    their own. Tool results reach the model as ``{"result": text}``, errors
    (memory full, a credential, bad arguments, a store that is down) as
    ``{"error": text}`` with docmem's sentence: a tool call never ends the
    run. A failed recall fails the model call with docmem's error: memory is
    never silently empty. Outside a run (``get_tools(None)``, as an agent
    card lists tools) every tool is listed; a call always resolves its scope.
    """

    def __init__(
        self,
        slots: Sequence[MemorySlot],
        *,
        scope_context: Callable[[ReadonlyContext], ScopeContext | None],
        placement: Placement = "contents",
        position: Position = "after_system",
    ) -> None:
        if placement not in ("contents", "instructions"):
            raise InvalidArgument("placement must be 'contents' or 'instructions'")
        if not callable(scope_context):
            raise InvalidArgument("scope_context must be a callable of ADK's ReadonlyContext")
        super().__init__()
        # ADK caches a toolset's tools per invocation; the scope may follow state that
        # a tool changes mid-invocation, and listing them does no I/O.
        self._use_invocation_cache = False
        self.runtime = MemoryRuntime(slots)
        self._scope_context = scope_context
        self._placement: Placement = placement
        self._position: Position = checked_position(position)
        self._slot_names = frozenset(slot.name for slot in self.runtime.slots)
        self._tools = {
            name: _DocmemTool(self, spec) for name, spec in self.runtime.tool_specs().items()
        }

    def __repr__(self) -> str:
        return f"DocmemToolset(tools={sorted(self._tools)!r}, placement={self._placement!r})"

    def _scope(self, context: ReadonlyContext) -> ScopeContext | None:
        return self._scope_context(context)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The tools of the slots the run's scope enables (no I/O); all of them outside a run."""
        if readonly_context is None:
            return list(self._tools.values())
        enabled = self.runtime.tool_specs_for(self._scope(readonly_context))
        return [tool for name, tool in self._tools.items() if name in enabled]

    async def process_llm_request(
        self, *, tool_context: ToolContext, llm_request: LlmRequest
    ) -> None:
        """This model call's request without earlier copies and with one fresh copy per document.

        Called by ADK before every model call of an agent carrying this
        toolset. A store that cannot be read fails the call (a
        :class:`docmem.DocmemError`).
        """
        scope = self._scope(tool_context)
        contents = list(llm_request.contents)
        prefix = _static_prefix(llm_request, contents)
        conversation = self._strip(contents[prefix:])
        recalls = await self.runtime.arecall(scope, messages=conversation)
        if self._placement == "instructions":
            llm_request.contents = [*contents[:prefix], *conversation]
            _append_instructions(llm_request, recalls)
            return
        placed = place_recalls(conversation, recalls, position=self._position, role_of=_role)
        llm_request.contents = [*contents[:prefix], *(_content(item) for item in placed)]

    def _strip(self, contents: Sequence[types.Content]) -> list[types.Content]:
        """``contents`` without this toolset's copies, part by part (a changed content is new)."""
        kept: list[types.Content] = []
        for content in contents:
            if _role(content) != "user" or not content.parts:
                kept.append(content)
                continue
            parts = [part for part in content.parts if not self._is_copy(part)]
            if len(parts) == len(content.parts):
                kept.append(content)
            elif parts:
                kept.append(content.model_copy(update={"parts": parts}))
        return kept

    def _is_copy(self, part: types.Part) -> bool:
        return part.text is not None and recalled_slot(part.text) in self._slot_names


class _DocmemTool(BaseTool):
    """One docmem tool: declared from docmem's JSON schema, dispatched to docmem as sent."""

    def __init__(self, toolset: DocmemToolset, spec: ToolSpec) -> None:
        super().__init__(name=spec.name, description=spec.description)
        self._toolset = toolset
        self._spec = spec

    def _get_declaration(self) -> types.FunctionDeclaration:
        # ``self.name``, not the spec's: a toolset's tool_name_prefix renames the copy ADK uses.
        return types.FunctionDeclaration(
            name=self.name,
            description=self._spec.description,
            parameters_json_schema=self._spec.json_schema(),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, str]:
        """docmem's answer as ``{"result": ...}`` or ``{"error": ...}``; never raises."""
        result = await self._toolset.runtime.adispatch(
            self._toolset._scope(tool_context),
            self._spec.name,
            args,
            call_id=tool_context.function_call_id or None,
            session_id=_run_identity(tool_context),
        )
        return {"error" if result.is_error else "result": result.text}


def _run_identity(context: ReadonlyContext) -> str:
    """``<session id>/<invocation id>``: the run a tool call's mutation id belongs to."""
    return f"{context.session.id}/{context.invocation_id}"


def _static_prefix(request: LlmRequest, contents: Sequence[types.Content]) -> int:
    """How many leading contents are a ``static_instruction``'s cache-stable prefix.

    ADK puts the non-text parts of a static instruction (and the instruction
    that goes with it) first, as user contents, and records where they end in
    a private attribute of the request; without one there is no prefix.
    """
    end = getattr(request, "_static_instruction_prefix_end_index", None)
    return end if isinstance(end, int) and 0 <= end <= len(contents) else 0


def _role(content: object) -> str | None:
    """A content's role, ``"tool"`` for function responses (ADK sends them as ``"user"``)."""
    if isinstance(content, ProjectedRecall):
        return content.role
    assert isinstance(content, types.Content)
    if any(part.function_response is not None for part in content.parts or []):
        return "tool"
    return content.role


def _content(item: types.Content | ProjectedRecall) -> types.Content:
    if isinstance(item, ProjectedRecall):
        return types.Content(role="user", parts=[types.Part.from_text(text=item.content)])
    return item


def _append_instructions(request: LlmRequest, recalls: Sequence[ProjectedRecall]) -> None:
    """The system instruction with each document appended, separated by blank lines."""
    if not recalls:
        return
    instruction = request.config.system_instruction
    if instruction is not None and not isinstance(instruction, str):
        # ADK builds it as one string; anything else would drop the memory without a word.
        raise InvalidArgument("the system instruction is not text: memory cannot be appended")
    parts = [instruction] if instruction else []
    parts.extend(recall.content for recall in recalls)
    request.config.system_instruction = "\n\n".join(parts)
