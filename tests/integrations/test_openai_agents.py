"""The OpenAI Agents SDK adapter, run through the real SDK on its own ScriptedModel.

The harness runs each turn with ``Runner.run_sync`` or ``Runner.run``, keeps
each thread's history in an ``SQLiteSession`` (what the SDK persists), and
reports what the model saw: the instructions, every text of the input items,
and the tools as the Responses API would receive them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.agent_tool_state import get_agent_tool_state_scope
from agents.exceptions import ModelBehaviorError
from agents.models.openai_responses import Converter
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ModelCall as SDKModelCall
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

import docmem
from docmem import Backend, Stored
from docmem.integrations.openai_agents import DocmemMemory
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.testing.adapters import (
    AdapterHarness,
    AdapterTests,
    CountingStore,
    ModelCall,
    Reply,
    SeenTool,
    Step,
    ToolCall,
    TrustedContext,
    TurnRecord,
)

_T = TypeVar("_T")

INSTRUCTIONS = "You are the support agent."
NAMESPACE = "tests:openai-agents"
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


# -- the harness ----------------------------------------------------------------


def _sync(awaitable: Awaitable[_T]) -> _T:
    """Await from sync code, even inside a running loop (then in a thread of its own)."""

    async def run() -> _T:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def _field(item: object, name: str) -> object:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _part_texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, Sequence):
        return [text for part in content if isinstance(text := _field(part, "text"), str)]
    return []


def item_texts(items: object) -> list[tuple[str, str]]:
    """``(role, text)`` of every text-bearing input item, or part of one, in order."""
    if isinstance(items, str):
        return [("user", items)]
    texts: list[tuple[str, str]] = []
    for item in items if isinstance(items, Sequence) else ():
        kind = _field(item, "type")
        role = _field(item, "role")
        if kind == "function_call_output":
            texts.extend(("tool", text) for text in _part_texts(_field(item, "output")))
        elif kind in (None, "message") and isinstance(role, str) and role in ROLES:
            texts.extend((ROLES[role], text) for text in _part_texts(_field(item, "content")))
    return texts


def seen_call(call: SDKModelCall) -> ModelCall:
    """One ScriptedModel call as the model saw it; tools exactly as the Responses API gets them."""
    messages = [("system", call.system_instructions)] if call.system_instructions else []
    messages.extend(item_texts(call.input))
    converted = Converter.convert_tools(list(call.tools), list(call.handoffs)).tools
    tools = {
        str(tool["name"]): SeenTool(
            str(tool["name"]), str(tool.get("description") or ""), dict(tool["parameters"] or {})
        )
        for tool in converted
        if tool["type"] == "function"
    }
    return ModelCall(messages, tools)


def scripted(script: Sequence[Step]) -> list[Any]:
    """The steps as ScriptedModel responses."""
    steps: list[Any] = []
    for step in script:
        if isinstance(step, ToolCall):
            steps.append([function_call(step.name, dict(step.arguments), call_id=step.call_id)])
        else:
            steps.append([assistant_message(step.text)])
    return steps


class OpenAIAgentsHarness(AdapterHarness):
    """One DocmemMemory, an Agent per turn on a ScriptedModel, one SQLiteSession per thread."""

    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Callable[[TrustedContext], docmem.ScopeContext | None],
        *,
        sessions: dict[str, SQLiteSession] | None = None,
        **options: Any,
    ) -> None:
        self.slots = slots
        self.scope_context = scope_context
        self.options = options
        self.memory: DocmemMemory[TrustedContext] = DocmemMemory(
            slots, scope_context=scope_context, session_id=lambda ctx: ctx.thread, **options
        )
        self.sessions = sessions if sessions is not None else {}
        self.results: list[Any] = []

    def session(self, thread: str) -> SQLiteSession:
        if thread not in self.sessions:
            self.sessions[thread] = SQLiteSession(thread)
        return self.sessions[thread]

    def _turn(self, script: Sequence[Step]) -> tuple[ScriptedModel, Agent[TrustedContext]]:
        model = ScriptedModel(scripted(script))
        agent = Agent[TrustedContext](
            name="support", instructions=INSTRUCTIONS, tools=[*self.memory.tools()], model=model
        )
        return model, agent

    def _config(self) -> RunConfig:
        return self.memory.run_config(RunConfig(tracing_disabled=True))

    def _record(self, model: ScriptedModel, result: Any) -> TurnRecord:
        self.results.append(result)
        return TurnRecord([seen_call(call) for call in model.calls], str(result.final_output))

    def run(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        model, agent = self._turn(script)
        result = Runner.run_sync(
            agent,
            text,
            context=context,
            session=self.session(context.thread),
            run_config=self._config(),
            max_turns=len(script) + 2,
        )
        return self._record(model, result)

    async def arun(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        model, agent = self._turn(script)
        result = await Runner.run(
            agent,
            text,
            context=context,
            session=self.session(context.thread),
            run_config=self._config(),
            max_turns=len(script) + 2,
        )
        return self._record(model, result)

    def items(self, thread: str) -> list[Any]:
        return _sync(self.session(thread).get_items())

    def history(self, thread: str) -> list[tuple[str, str]]:
        return item_texts(self.items(thread))

    def seed(self, thread: str, messages: Sequence[tuple[str, str]]) -> None:
        items: list[Any] = []
        for role, text in messages:
            if role not in ("user", "assistant", "system"):
                raise ValueError(f"cannot seed a {role!r} message into an SDK session")
            items.append({"role": role, "content": text})
        session = self.session(thread)

        async def replace() -> None:
            await session.clear_session()
            await session.add_items(items)

        _sync(replace())

    def fresh(self) -> OpenAIAgentsHarness:
        return OpenAIAgentsHarness(
            self.slots, self.scope_context, sessions=self.sessions, **self.options
        )


class TestOpenAIAgentsAdapter(AdapterTests):
    """The contract every docmem adapter meets, through the real SDK."""

    def make_harness(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Callable[[TrustedContext], docmem.ScopeContext | None],
    ) -> AdapterHarness:
        return OpenAIAgentsHarness(slots, scope_context)


# -- fixtures -------------------------------------------------------------------


def trusted(context: TrustedContext) -> docmem.ScopeContext | None:
    """The application's mapping: its authenticated user, never the model's words."""
    if context.user is None:
        return None
    return docmem.ScopeContext(principal=docmem.Principal("user", "tests", context.user))


@pytest.fixture
def store() -> Iterator[CountingStore]:
    backend = CountingStore()
    yield backend
    backend.close()


def user_slots(store: Backend) -> list[docmem.MemorySlot]:
    return [
        docmem.MemorySlot(
            "user", docmem.FileMemory(store), scope=docmem.by_principal, namespace=NAMESPACE
        )
    ]


@pytest.fixture
def harness(store: CountingStore) -> OpenAIAgentsHarness:
    return OpenAIAgentsHarness(user_slots(store), trusted)


def bound(store: Backend, user: str) -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace=NAMESPACE, scope=("user", "tests", "", user))
    return docmem.FileMemory(store).bind(scope, slot="user")


def entries(store: Backend, user: str) -> list[str]:
    """The user's saved texts, by index."""
    doc = bound(store, user).read()
    return [] if doc is None else list(doc.entries.values())


def recall_text(store: Backend, user: str) -> str:
    """The whole text of the user's current copy, as docmem renders it for a model."""
    [copy] = docmem.MemoryRuntime(user_slots(store)).recall(trusted(TrustedContext(user)))
    return copy.content


ALICE = TrustedContext("alice", "thread-a")


def save(text: str, call_id: str = "call_1") -> ToolCall:
    return ToolCall("user__save_memory", {"text": text}, call_id)


def copies(call: ModelCall) -> list[str]:
    return [text for text in call.texts() if docmem.is_recalled(text)]


# -- the tool surface ------------------------------------------------------------


def test_the_model_sees_docmem_tools_with_docmem_schema(harness: OpenAIAgentsHarness) -> None:
    record = harness.run(ALICE, "Hello", [Reply("Hi.")])
    tools = record.calls[0].tools
    specs = harness.memory.runtime.tool_specs()
    assert sorted(tools) == ["user__remove_memory", "user__save_memory"]
    for name, spec in specs.items():
        assert tools[name].description == spec.description
        assert tools[name].parameters == spec.parameters  # strict mode keeps docmem's schema
    assert all(tool.strict_json_schema for tool in harness.memory.tools())


def test_a_slot_whose_scope_is_disabled_hides_its_tools(store: CountingStore) -> None:
    slots = [
        *user_slots(store),
        docmem.MemorySlot(
            "team", docmem.FileMemory(store), scope=lambda context: None, namespace=NAMESPACE
        ),
    ]
    harness = OpenAIAgentsHarness(slots, trusted)
    record = harness.run(ALICE, "Hello", [Reply("Hi.")])
    assert sorted(record.calls[0].tools) == ["user__remove_memory", "user__save_memory"]


# -- request-only injection -------------------------------------------------------


def test_to_input_list_and_the_session_hold_no_copy(
    harness: OpenAIAgentsHarness, store: CountingStore
) -> None:
    record = harness.run(ALICE, "I like tea.", [save("Likes tea."), Reply("Noted.")])
    first, second = record.calls
    assert copies(first) == []  # nothing saved yet
    assert copies(second) == [recall_text(store, "alice")]
    assert ("tool", "Saved as memory 0.") in second.messages
    # The SDK's own history has no copy: neither the session nor to_input_list().
    assert not any(docmem.is_recalled(text) for _, text in harness.history("thread-a"))
    assert not any(
        docmem.is_recalled(text) for _, text in item_texts(harness.results[-1].to_input_list())
    )
    assert not any(docmem.is_recalled(text) for _, text in item_texts(harness.results[-1].input))


def test_the_copy_is_a_plain_user_message_after_the_instructions(
    harness: OpenAIAgentsHarness,
) -> None:
    harness.run(ALICE, "I like tea.", [save("Likes tea."), Reply("Noted.")])
    model = ScriptedModel([[assistant_message("Hi.")]])
    agent = Agent[TrustedContext](
        name="support", instructions=INSTRUCTIONS, tools=[*harness.memory.tools()], model=model
    )
    Runner.run_sync(agent, "Hello", context=ALICE, run_config=harness._config())
    [call] = model.calls
    assert isinstance(call.input, list)
    first = call.input[0]
    assert set(first) == {"role", "content"}  # no key of docmem's: items go to the API as-is
    assert first["role"] == "user"
    assert docmem.is_recalled(first["content"])
    assert call.input[1] == {"role": "user", "content": "Hello"}


def test_before_last_user_puts_the_copy_just_before_the_newest_user_message(
    store: CountingStore,
) -> None:
    harness = OpenAIAgentsHarness(user_slots(store), trusted, position="before_last_user")
    harness.run(ALICE, "I like tea.", [save("Likes tea."), Reply("Noted.")])
    record = harness.run(ALICE, "Hello again", [Reply("Hi.")])
    texts = record.calls[0].messages
    at = texts.index(("user", "Hello again"))
    assert docmem.is_recalled(texts[at - 1][1])
    assert len(copies(record.calls[0])) == 1


def test_a_stale_copy_in_any_item_shape_is_dropped(
    harness: OpenAIAgentsHarness, store: CountingStore
) -> None:
    harness.run(ALICE, "I like tea.", [save("Likes tea."), Reply("Noted.")])
    current = recall_text(store, "alice")
    stale = "# Memory: user <!-- docmem:recall user -->\n\n0: Likes coffee."
    marked_reply = {"role": "assistant", "content": stale}  # not a user message: kept
    items: list[Any] = [
        {"role": "user", "content": stale},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": stale}]},
        marked_reply,
        {"role": "user", "content": "Hello"},
    ]
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions=INSTRUCTIONS),
        agent=Agent[Any](name="support"),
        context=ALICE,
    )
    out = _sync(harness.memory.input_filter(data))
    assert out.input == [
        {"role": "user", "content": current},
        marked_reply,
        {"role": "user", "content": "Hello"},
    ]
    assert out.instructions == INSTRUCTIONS
    assert len(items) == 4  # the filter changed nothing it was given


def test_a_recall_failure_fails_the_model_call_rather_than_hiding_memory() -> None:
    class Down(MemoryBackend):
        def read(self, key: str) -> Stored | None:
            raise docmem.StoreUnavailable("store is down")

        read_recent = read

    harness = OpenAIAgentsHarness(user_slots(Down()), trusted)
    with pytest.raises(docmem.StoreUnavailable):
        harness.run(ALICE, "Hello", [Reply("Hi.")])


# -- placement="instructions" -----------------------------------------------------


def test_instructions_placement_under_server_managed_state(store: CountingStore) -> None:
    memory: DocmemMemory[TrustedContext] = DocmemMemory(
        user_slots(store), scope_context=trusted, placement="instructions"
    )
    model = ScriptedModel(
        [[function_call("user__save_memory", {"text": "Likes tea."}, call_id="c1")],
         [assistant_message("Noted.")]]
    )  # fmt: skip
    agent = Agent[TrustedContext](
        name="support", instructions=INSTRUCTIONS, tools=[*memory.tools()], model=model
    )
    Runner.run_sync(
        agent,
        "I like tea.",
        context=ALICE,
        auto_previous_response_id=True,
        run_config=memory.run_config(RunConfig(tracing_disabled=True)),
    )
    first, second = model.calls
    assert second.previous_response_id == "resp-789"  # the server holds the conversation
    assert first.system_instructions == INSTRUCTIONS
    assert second.system_instructions == f"{INSTRUCTIONS}\n\n{recall_text(store, 'alice')}"
    # Only the delta goes as input, and it holds no copy the server would keep.
    assert not any(docmem.is_recalled(text) for _, text in item_texts(second.input))
    assert ("tool", "Saved as memory 0.") in item_texts(second.input)


def test_instructions_placement_drops_input_copies_and_needs_no_instructions(
    store: CountingStore,
) -> None:
    bound(store, "alice").save("Likes tea.")
    memory: DocmemMemory[TrustedContext] = DocmemMemory(
        user_slots(store), scope_context=trusted, placement="instructions"
    )
    stale = {"role": "user", "content": "# Memory: user <!-- docmem:recall user -->\n\n0: old"}
    items: list[Any] = [stale, {"role": "user", "content": "Hi"}]
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions=None),
        agent=Agent[Any](name="support"),
        context=ALICE,
    )
    out = _sync(memory.input_filter(data))
    assert out.input == [{"role": "user", "content": "Hi"}]
    assert out.instructions == recall_text(store, "alice")


# -- run_config --------------------------------------------------------------------


def test_run_config_composes_with_the_hosts_filter_which_runs_first(
    store: CountingStore,
) -> None:
    memory: DocmemMemory[TrustedContext] = DocmemMemory(user_slots(store), scope_context=trusted)
    seen: list[list[Any]] = []

    def host(data: CallModelData[Any]) -> ModelInputData:
        seen.append(list(data.model_data.input))
        added: Any = {"role": "user", "content": "host note"}
        return ModelInputData(input=[*data.model_data.input, added], instructions="host rules")

    base = RunConfig(tracing_disabled=True, call_model_input_filter=host, workflow_name="w")
    config = memory.run_config(base)
    assert base.call_model_input_filter is host  # the host's config is not changed
    assert config.tracing_disabled
    assert config.workflow_name == "w"
    model = ScriptedModel(
        [[function_call("user__save_memory", {"text": "Likes tea."}, call_id="c1")],
         [assistant_message("Noted.")]]
    )  # fmt: skip
    agent = Agent[TrustedContext](name="s", instructions="x", tools=[*memory.tools()], model=model)
    Runner.run_sync(agent, "I like tea.", context=ALICE, run_config=config)
    second = model.calls[1]
    assert second.system_instructions == "host rules"
    assert ("user", "host note") in item_texts(second.input)
    assert len([t for _, t in item_texts(second.input) if docmem.is_recalled(t)]) == 1
    assert not any(docmem.is_recalled(t) for _, t in item_texts(seen[1]))  # host ran first
    assert memory.run_config(memory.run_config()).call_model_input_filter == memory.input_filter


def test_an_async_host_filter_is_awaited(store: CountingStore) -> None:
    memory: DocmemMemory[TrustedContext] = DocmemMemory(user_slots(store), scope_context=trusted)

    async def host(data: CallModelData[Any]) -> ModelInputData:
        return ModelInputData(input=data.model_data.input, instructions="async rules")

    model = ScriptedModel([[assistant_message("Hi.")]])
    agent = Agent[TrustedContext](name="s", instructions="x", tools=[*memory.tools()], model=model)
    config = memory.run_config(RunConfig(tracing_disabled=True, call_model_input_filter=host))
    Runner.run_sync(agent, "Hello", context=ALICE, run_config=config)
    assert model.calls[0].system_instructions == "async rules"


# -- scope and mutation identity ------------------------------------------------------


def test_the_sdk_refuses_one_call_id_for_two_different_calls_in_one_run(
    harness: OpenAIAgentsHarness, store: CountingStore
) -> None:
    """Pins an SDK fact (agents/run_internal/tool_planning.py): the run fails before the tool."""
    with pytest.raises(ModelBehaviorError, match="reused a completed tool call ID"):
        harness.run(ALICE, "Tea", [save("Likes tea."), save("Likes jazz."), Reply("Noted.")])
    assert entries(store, "alice") == ["Likes tea."]


def test_a_replayed_call_in_one_run_is_one_mutation(
    harness: OpenAIAgentsHarness, store: CountingStore
) -> None:
    """A retry inside one run (same run identity, same call id) returns the recorded result."""
    tool = next(t for t in harness.memory.tools() if t.name == "user__save_memory")
    results: list[Any] = []
    for _ in range(2):
        context = ToolContext(
            ALICE, tool_name=tool.name, tool_call_id="call_1", tool_arguments='{"text": "Tea."}'
        )
        context._agent_tool_state_scope_id = "run-1"  # type: ignore[attr-defined]
        results.append(_sync(tool.on_invoke_tool(context, '{"text": "Tea."}')))
    assert results == ["Saved as memory 0.", "Saved as memory 0."]
    assert entries(store, "alice") == ["Tea."]
    record = bound(store, "alice").inspect("thread-a%2Frun-1/call_1")
    assert record is not None
    assert record.outcome == "saved"


def test_the_sdk_gives_each_run_its_own_identity_and_every_tool_call_of_it(
    store: CountingStore,
) -> None:
    """Pins the SDK fact the mutation ids rest on (agents/run.py sets a uuid per run)."""
    identities: list[str | None] = []
    memory: DocmemMemory[TrustedContext] = DocmemMemory(user_slots(store), scope_context=trusted)
    [save_tool, _] = sorted(memory.tools(), key=lambda tool: tool.name != "user__save_memory")
    invoke = save_tool.on_invoke_tool

    async def spy(context: ToolContext[Any], arguments: str) -> Any:
        identities.append(get_agent_tool_state_scope(context))
        return await invoke(context, arguments)

    save_tool.on_invoke_tool = spy
    for _ in range(2):
        model = ScriptedModel(
            [[function_call("user__save_memory", {"text": "a"}, call_id="c1")],
             [function_call("user__save_memory", {"text": "b"}, call_id="c2")],
             [assistant_message("ok")]]
        )  # fmt: skip
        agent = Agent[TrustedContext](name="s", instructions="x", tools=[save_tool], model=model)
        Runner.run_sync(
            agent,
            "hi",
            context=ALICE,
            run_config=memory.run_config(RunConfig(tracing_disabled=True)),
        )
    assert all(identities)
    assert identities[0] == identities[1] != identities[2] == identities[3]


def test_without_a_run_identity_every_call_gets_a_fresh_mutation_id(
    harness: OpenAIAgentsHarness, store: CountingStore
) -> None:
    tool = next(t for t in harness.memory.tools() if t.name == "user__save_memory")
    for text in ("Tea.", "Jazz."):
        arguments = json.dumps({"text": text})
        context = ToolContext(
            ALICE, tool_name=tool.name, tool_call_id="call_1", tool_arguments=arguments
        )
        assert _sync(tool.on_invoke_tool(context, arguments)).startswith("Saved as memory")
    assert entries(store, "alice") == ["Tea.", "Jazz."]


def test_an_unresolvable_namespace_is_docmems_sentence_not_a_failed_run(
    store: CountingStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCMEM_ENVIRONMENT", raising=False)
    monkeypatch.delenv("DOCMEM_DEV", raising=False)
    slot = docmem.MemorySlot("user", docmem.FileMemory(store), scope=docmem.by_principal)
    memory: DocmemMemory[TrustedContext] = DocmemMemory([slot], scope_context=trusted)
    tool = next(t for t in memory.tools() if t.name == "user__save_memory")
    context = ToolContext(ALICE, tool_name=tool.name, tool_call_id="c", tool_arguments="{}")
    text: Any = _sync(tool.on_invoke_tool(context, '{"text": "Tea."}'))
    assert "DOCMEM_ENVIRONMENT is not set" in text


# -- entry points and concurrency ---------------------------------------------------------


def test_a_streamed_run_gets_the_same_memory(
    harness: OpenAIAgentsHarness, store: CountingStore
) -> None:
    model = ScriptedModel(
        [[function_call("user__save_memory", {"text": "Likes tea."}, call_id="c1")],
         [assistant_message("Noted.")]]
    )  # fmt: skip
    agent = Agent[TrustedContext](
        name="support", instructions=INSTRUCTIONS, tools=[*harness.memory.tools()], model=model
    )

    async def stream() -> Any:
        config = harness._config()
        result = Runner.run_streamed(agent, "I like tea.", context=ALICE, run_config=config)
        async for _ in result.stream_events():
            pass
        return result

    result = asyncio.run(stream())
    assert [call.streamed for call in model.calls] == [True, True]
    assert copies(seen_call(model.calls[1])) == [recall_text(store, "alice")]
    assert not any(docmem.is_recalled(text) for _, text in item_texts(result.to_input_list()))


# -- construction and import -------------------------------------------------------------


def test_bad_options_are_refused(store: CountingStore) -> None:
    with pytest.raises(docmem.InvalidArgument):
        DocmemMemory(user_slots(store), scope_context=trusted, placement="system")  # type: ignore[arg-type]
    with pytest.raises(docmem.InvalidArgument):
        DocmemMemory(user_slots(store), scope_context=trusted, position="end")  # type: ignore[arg-type]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-B", "-c", code], cwd=root, env=env, capture_output=True, text=True
    )


@pytest.mark.process
def test_import_docmem_never_imports_the_sdk() -> None:
    done = _python("import sys, docmem; print('agents' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.process
def test_a_missing_sdk_names_the_extra() -> None:
    done = _python(
        "import sys\nsys.modules['agents'] = None\n"
        "try:\n    import docmem.integrations.openai_agents\n"
        "except ImportError as error:\n    print(error)\n"
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "agent-docmem[openai-agents]"' in done.stdout
