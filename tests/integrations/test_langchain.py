"""DocmemMiddleware through the real LangChain ``create_agent`` on RecordingFakeChatModel.

Every turn runs the real agent graph (LangGraph, ToolNode, an InMemorySaver
checkpointer) with LangChain's own fake chat model, subclassed only to bind
tools and record what each call was sent. Texts are compared whole.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

import docmem
from docmem import Backend, Stored
from docmem.integrations.langchain import DocmemMiddleware, copy_id, is_copy
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
from docmem.testing.langchain_model import RecordedCall, RecordingFakeChatModel

NS = "tests:langchain"
SYSTEM = "You are a terse assistant."
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


# -- the harness -----------------------------------------------------------------------------------


def scope_of(context: TrustedContext) -> docmem.ScopeContext | None:
    """The test application's resolver: the authenticated user, or memory off."""
    if context.user is None:
        return None
    return docmem.ScopeContext(principal=docmem.Principal("user", "test", context.user))


def _reply(step: Step) -> AIMessage:
    if isinstance(step, Reply):
        return AIMessage(content=step.text)
    call = {"name": step.name, "args": dict(step.arguments), "id": step.call_id}
    return AIMessage(content="", tool_calls=[call])


def _pairs(messages: Sequence[BaseMessage]) -> list[tuple[str, str]]:
    """``(role, text)`` of every text-bearing message."""
    return [(_ROLES.get(m.type, m.type), m.text) for m in messages if m.text]


def _model_call(call: RecordedCall) -> ModelCall:
    tools = {}
    for tool in call.tools:
        function = tool["function"]
        tools[function["name"]] = SeenTool(
            function["name"], function.get("description", ""), function.get("parameters", {})
        )
    return ModelCall(_pairs(call.messages), tools)


def _native(role: str, text: str) -> AnyMessage:
    if role == "user":
        return HumanMessage(content=text)
    if role == "assistant":
        return AIMessage(content=text)
    if role == "system":
        return SystemMessage(content=text)
    raise ValueError(f"cannot seed a {role!r} message into a LangChain thread")


class LangChainHarness(AdapterHarness):
    """``create_agent`` with one DocmemMiddleware, a shared InMemorySaver and a scripted model.

    Each turn builds the agent around a RecordingFakeChatModel holding that
    turn's script (so concurrent conversations never share a script); the
    middleware instance and the checkpointer outlive the turns.
    """

    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Callable[[TrustedContext], docmem.ScopeContext | None],
        *,
        saver: InMemorySaver | None = None,
        **options: Any,
    ) -> None:
        self.slots = slots
        self.scope_context = scope_context
        self.options = options
        self.middleware: DocmemMiddleware[Any] = DocmemMiddleware(
            slots, scope_context=scope_context, **options
        )
        self.saver = saver if saver is not None else InMemorySaver()
        self.models: list[RecordingFakeChatModel] = []
        self.reader = self.agent(RecordingFakeChatModel(messages=iter(())))

    def agent(self, model: RecordingFakeChatModel, **options: Any) -> Any:
        return create_agent(
            model,
            system_prompt=SYSTEM,
            context_schema=TrustedContext,
            checkpointer=self.saver,
            middleware=[self.middleware],
            **options,
        )

    def _turn(self, script: Sequence[Step]) -> tuple[Any, RecordingFakeChatModel]:
        model = RecordingFakeChatModel(messages=iter([_reply(step) for step in script]))
        self.models.append(model)
        return self.agent(model), model

    @staticmethod
    def config(thread: str) -> Any:
        return {"configurable": {"thread_id": thread}}

    @staticmethod
    def _record(model: RecordingFakeChatModel, result: dict[str, Any]) -> TurnRecord:
        return TurnRecord([_model_call(call) for call in model.calls], result["messages"][-1].text)

    def run(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        agent, model = self._turn(script)
        result = agent.invoke(
            {"messages": [HumanMessage(content=text)]}, self.config(context.thread), context=context
        )
        return self._record(model, result)

    async def arun(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        agent, model = self._turn(script)
        result = await agent.ainvoke(
            {"messages": [HumanMessage(content=text)]}, self.config(context.thread), context=context
        )
        return self._record(model, result)

    def state(self, thread: str) -> dict[str, Any]:
        values: dict[str, Any] = self.reader.get_state(self.config(thread)).values
        return values

    def messages(self, thread: str) -> list[AnyMessage]:
        found: list[AnyMessage] = self.state(thread).get("messages", [])
        return found

    def history(self, thread: str) -> list[tuple[str, str]]:
        return _pairs(self.messages(thread))

    def seed(self, thread: str, messages: Sequence[tuple[str, str]]) -> None:
        native = [_native(role, text) for role, text in messages]
        self.reader.update_state(
            self.config(thread), {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *native]}
        )

    def fresh(self) -> LangChainHarness:
        return LangChainHarness(self.slots, self.scope_context, saver=self.saver, **self.options)


class TestLangChainAdapter(AdapterTests):
    """The shared adapter contract, through ``create_agent`` with DocmemMiddleware."""

    def make_harness(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Callable[[TrustedContext], docmem.ScopeContext | None],
    ) -> AdapterHarness:
        return LangChainHarness(slots, scope_context)


class TestLangChainAdapterPersisted(AdapterTests):
    """The same contract with ``persist=True``, except what persisting changes on purpose."""

    def make_harness(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Callable[[TrustedContext], docmem.ScopeContext | None],
    ) -> AdapterHarness:
        return LangChainHarness(slots, scope_context, persist=True)

    def test_the_frameworks_history_never_holds_a_copy(self, store: CountingStore) -> None:
        # Overridden: persist=True keeps copies in the checkpoint on purpose, the current ones.
        alice = TrustedContext("alice")
        self.memory(store, alice).save("Prefers tea.")
        harness = self.harness(store)
        cake = ToolCall("user__save_memory", {"text": "Likes cake."}, "call_1")
        harness.run(alice, "Remember cake.", [cake, Reply("Sure.")])
        harness.run(alice, "Thanks", [Reply("Welcome.")])
        history = harness.history(alice.thread)
        assert [text for _, text in history if docmem.is_recalled(text)] == self.expected(
            store, alice
        )
        assert history[1:3] == [("user", "Remember cake."), ("tool", "Saved as memory 1.")]


# -- fixtures and helpers --------------------------------------------------------------------------


@pytest.fixture
def store() -> CountingStore:
    return CountingStore()


@pytest.fixture
def memory(store: Backend) -> docmem.FileMemory:
    return docmem.FileMemory(store)


@pytest.fixture
def slots(memory: docmem.FileMemory) -> list[docmem.MemorySlot]:
    return [
        docmem.MemorySlot(
            "user", memory, scope=docmem.by_principal, namespace=NS, description="About the user."
        )
    ]


@pytest.fixture
def harness(slots: list[docmem.MemorySlot]) -> LangChainHarness:
    return LangChainHarness(slots, scope_of)


def bound(memory: docmem.FileMemory, user: str) -> docmem.BoundMemory:
    context = scope_of(TrustedContext(user))
    assert context is not None
    scope = docmem.by_principal(context)
    assert scope is not None
    return memory.bind(docmem.lock_scope(namespace=NS, scope=scope), slot="user")


def entries(memory: docmem.FileMemory, user: str) -> dict[int, str]:
    document = bound(memory, user).read()
    return dict(document.entries) if document is not None else {}


def document_text(memory: docmem.FileMemory, user: str) -> str:
    [message] = bound(memory, user).recall()
    return message.content


def recalled(memory: docmem.FileMemory, user: str, runtime: docmem.MemoryRuntime) -> str:
    """The exact copy the model is shown for ``user`` now."""
    [copy] = runtime.recall(scope_of(TrustedContext(user)))
    return copy.content


def copies(call: ModelCall) -> list[str]:
    return [text for role, text in call.messages if docmem.is_recalled(text)]


def save(text: str, call_id: str = "call_1", **extra: Any) -> ToolCall:
    return ToolCall("user__save_memory", {"text": text, **extra}, call_id)


ALICE = TrustedContext("alice")
BOB = TrustedContext("bob", thread="thread-bob")


# -- the fake model and framework facts ------------------------------------------------------------


def test_generic_fake_chat_model_cannot_bind_tools_so_create_agent_needs_the_subclass() -> None:
    # langchain_core/language_models/chat_models.py: BaseChatModel.bind_tools raises.
    model = GenericFakeChatModel(messages=iter(["hi"]))
    tool = StructuredTool.from_function(func=lambda: "x", name="t", description="d.")
    with pytest.raises(NotImplementedError):
        model.bind_tools([tool])


def test_recording_model_records_each_call_with_the_tools_it_was_bound_with() -> None:
    model = RecordingFakeChatModel(messages=iter(["one", "two"]))
    tool = StructuredTool.from_function(func=lambda: "x", name="t", description="Tool t.")
    assert model.bind_tools([tool]).invoke("hello").text == "one"
    assert model.invoke([HumanMessage(content="again")]).text == "two"
    first, second = model.calls
    assert [m.text for m in first.messages] == ["hello"]
    assert first.tools == [convert_to_openai_tool(tool)]
    assert second.tools == []
    with pytest.raises(RuntimeError, match="no answer for call 2"):
        model.invoke("three")


def test_recording_model_records_async_calls() -> None:
    model = RecordingFakeChatModel(messages=iter(["one"]))
    assert asyncio.run(model.ainvoke("hello")).text == "one"
    assert [m.text for m in model.calls[0].messages] == ["hello"]


def test_streaming_agents_keep_the_scripted_tool_calls(harness: LangChainHarness) -> None:
    # GenericFakeChatModel's own _stream drops tool calls; the subclass never streams.
    model = RecordingFakeChatModel(messages=iter([_reply(save("Likes tea.")), "Ok."]))
    agent = harness.agent(model)
    config = harness.config("streamed")
    list(
        agent.stream(
            {"messages": [HumanMessage("Hi.")]}, config, context=ALICE, stream_mode="messages"
        )
    )
    assert [m.text for m in harness.messages("streamed") if m.type == "tool"] == [
        "Saved as memory 0."
    ]


def test_tools_carry_docmem_schema_verbatim_and_hide_the_runtime(
    harness: LangChainHarness,
) -> None:
    specs = harness.middleware.runtime.tool_specs()
    tools = {tool.name: tool for tool in harness.middleware.tools}
    assert set(tools) == set(specs) == {"user__save_memory", "user__remove_memory"}
    for name, tool in tools.items():
        sent = convert_to_openai_tool(tool)["function"]
        assert sent == {
            "name": name,
            "description": specs[name].description,
            "parameters": dict(specs[name].parameters),
        }
        assert sent["description"].startswith("About the user.\n\n")
        assert "runtime" not in str(tool.tool_call_schema)
        assert isinstance(tool, StructuredTool)
        assert tool.func is not None
        assert tool.coroutine is not None


def test_the_model_sees_exactly_those_tools(harness: LangChainHarness) -> None:
    turn = harness.run(ALICE, "Hi.", [Reply("Hello.")])
    specs = harness.middleware.runtime.tool_specs()
    assert turn.calls[0].tools == {
        name: SeenTool(name, spec.description, dict(spec.parameters))
        for name, spec in specs.items()
    }


# -- recall: request-only, fresh every call --------------------------------------------------------


def run_save_turns(
    harness: LangChainHarness, memory: docmem.FileMemory, *, use_async: bool
) -> None:
    def turn(context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        if use_async:
            return asyncio.run(harness.arun(context, text, script))
        return harness.run(context, text, script)

    bound(memory, "alice").save("Prefers metric units.")
    old = recalled(memory, "alice", harness.middleware.runtime)
    first = turn(ALICE, "I drink tea.", [save("Likes tea."), Reply("Noted.")])
    new = recalled(memory, "alice", harness.middleware.runtime)
    assert old != new
    assert first.output == "Noted."
    call0, call1 = first.calls
    assert call0.messages == [("system", SYSTEM), ("user", old), ("user", "I drink tea.")]
    assert call1.messages == [
        ("system", SYSTEM),
        ("user", new),
        ("user", "I drink tea."),
        ("tool", "Saved as memory 1."),
    ]
    second = turn(ALICE, "Units?", [Reply("Metric.")])
    assert second.calls[0].messages == [
        ("system", SYSTEM),
        ("user", new),
        ("user", "I drink tea."),
        ("tool", "Saved as memory 1."),
        ("assistant", "Noted."),
        ("user", "Units?"),
    ]
    # The checkpoint holds the conversation only: no copy, no memory text.
    assert harness.history(ALICE.thread) == [
        ("user", "I drink tea."),
        ("tool", "Saved as memory 1."),
        ("assistant", "Noted."),
        ("user", "Units?"),
        ("assistant", "Metric."),
    ]
    assert not any(is_copy(message) for message in harness.messages(ALICE.thread))
    assert entries(memory, "alice") == {0: "Prefers metric units.", 1: "Likes tea."}


def test_sync_save_shows_in_the_next_call_and_turn_and_never_in_the_checkpoint(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    run_save_turns(harness, memory, use_async=False)


def test_async_save_shows_in_the_next_call_and_turn_and_never_in_the_checkpoint(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    run_save_turns(harness, memory, use_async=True)


def test_copies_carry_a_docmem_id_in_the_request(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    bound(memory, "alice").save("Prefers metric units.")
    harness.run(ALICE, "Hi.", [Reply("Hello.")])
    [sent] = harness.models[-1].calls
    copies_sent = [m for m in sent.messages if is_copy(m)]
    [copy] = harness.middleware.runtime.recall(scope_of(ALICE))
    assert [(type(m), m.id) for m in copies_sent] == [(HumanMessage, copy_id(copy))]
    assert copy_id(copy).startswith("docmem:user:")


def test_a_stale_copy_in_the_checkpoint_is_replaced_also_by_a_fresh_middleware(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    bound(memory, "alice").save("Prefers metric units.")
    stale = recalled(memory, "alice", harness.middleware.runtime)
    bound(memory, "alice").save("Likes tea.")
    current = recalled(memory, "alice", harness.middleware.runtime)
    # Yesterday's process persisted its copy as a plain user message: no docmem id.
    harness.seed(ALICE.thread, [("user", "Hi."), ("user", stale), ("assistant", "Hello.")])
    for each in (harness, harness.fresh()):
        turn = each.run(ALICE, "Again.", [Reply("Yes.")])
        assert copies(turn.calls[0]) == [current]
        assert stale not in turn.calls[0].texts()
    # The seeded copy stays where the host put it; docmem only keeps it out of requests.
    assert ("user", stale) in harness.history(ALICE.thread)


def test_a_copy_with_a_docmem_id_but_edited_text_is_stripped_too(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    bound(memory, "alice").save("Prefers metric units.")
    harness.reader.update_state(
        harness.config(ALICE.thread),
        {"messages": [HumanMessage(content="# Memory (edited)", id="docmem:user:old")]},
    )
    turn = harness.run(ALICE, "Hi.", [Reply("Hello.")])
    assert "# Memory (edited)" not in turn.calls[0].texts()
    assert len(copies(turn.calls[0])) == 1


def test_before_last_user_placement(
    slots: list[docmem.MemorySlot], memory: docmem.FileMemory
) -> None:
    harness = LangChainHarness(slots, scope_of, position="before_last_user")
    bound(memory, "alice").save("Prefers metric units.")
    harness.run(ALICE, "One.", [Reply("Ok.")])
    turn = harness.run(ALICE, "Two.", [Reply("Ok.")])
    copy = recalled(memory, "alice", harness.middleware.runtime)
    assert turn.calls[0].messages == [
        ("system", SYSTEM),
        ("user", "One."),
        ("assistant", "Ok."),
        ("user", copy),
        ("user", "Two."),
    ]


def test_two_slots_each_once_in_slot_name_order(memory: docmem.FileMemory) -> None:
    def team(context: docmem.ScopeContext) -> str | None:
        return context.channel_metadata.get("team")

    slots = [
        docmem.MemorySlot("user", memory, scope=docmem.by_principal, namespace=NS),
        docmem.MemorySlot("channel", memory, scope=team, namespace=f"{NS}:channel"),
    ]

    def resolve(context: TrustedContext) -> docmem.ScopeContext | None:
        base = scope_of(context)
        return None if base is None else docmem.ScopeContext(base.principal, "web", {"team": "t1"})

    harness = LangChainHarness(slots, resolve)
    script: list[Step] = [
        ToolCall("user__save_memory", {"text": "Likes tea."}, "call_1"),
        ToolCall("channel__save_memory", {"text": "Team ships Fridays."}, "call_2"),
        Reply("Done."),
    ]
    turn = harness.run(ALICE, "Remember.", script)
    last = turn.calls[-1]
    found = [docmem.recalled_slot(text) for text in copies(last)]
    assert found == ["channel", "user"]
    assert set(last.tools) == {
        "channel__remove_memory",
        "channel__save_memory",
        "user__remove_memory",
        "user__save_memory",
    }


def test_a_slot_that_is_off_for_the_context_shows_no_tools(memory: docmem.FileMemory) -> None:
    def team(context: docmem.ScopeContext) -> str | None:
        return context.channel_metadata.get("team")

    slots = [
        docmem.MemorySlot("user", memory, scope=docmem.by_principal, namespace=NS),
        docmem.MemorySlot("channel", memory, scope=team, namespace=f"{NS}:channel"),
    ]
    harness = LangChainHarness(slots, scope_of)  # no channel metadata: the channel slot is off
    turn = harness.run(
        ALICE, "Hi.", [ToolCall("channel__save_memory", {"text": "x"}, "call_1"), Reply("Ok.")]
    )
    assert set(turn.calls[0].tools) == {"user__remove_memory", "user__save_memory"}
    assert turn.calls[1].messages[-1][1].startswith("Unknown tool")
    assert turn.output == "Ok."


# -- scope: trusted context only -------------------------------------------------------------------


def test_an_extra_user_id_is_refused_and_the_other_user_is_untouched(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    bound(memory, "bob").save("Bob's note.")
    before = bound(memory, "bob").read()
    turn = harness.run(ALICE, "Hi.", [save("Evil.", user_id="bob"), Reply("Sorry.")])
    assert turn.calls[1].messages[-1] == (
        "tool",
        "Invalid call to user__save_memory: unexpected argument 'user_id'; expected only text.",
    )
    assert turn.output == "Sorry."
    assert bound(memory, "bob").read() == before
    assert entries(memory, "alice") == {}
    [tool_message] = [m for m in harness.messages(ALICE.thread) if m.type == "tool"]
    assert tool_message.status == "error"


def test_langchain_consumes_its_reserved_argument_names_before_docmem_sees_them(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    # BaseTool.run merges run_manager/config over the input and ToolNode injects
    # runtime by parameter name (langchain_core/tools/base.py, run();
    # langgraph/prebuilt/tool_node.py, _get_all_injected_args), so these three
    # keys never reach docmem's schema check. The scope is unaffected.
    turn = harness.run(
        ALICE,
        "Hi.",
        [save("Likes tea.", config="x", runtime="bob", run_manager=1), Reply("Ok.")],
    )
    assert turn.calls[1].messages[-1] == ("tool", "Saved as memory 0.")
    assert entries(memory, "alice") == {0: "Likes tea."}
    assert entries(memory, "bob") == {}


def test_memory_off_gives_no_tools_no_recall_and_no_store_read(
    harness: LangChainHarness, memory: docmem.FileMemory, store: CountingStore
) -> None:
    bound(memory, "alice").save("Prefers metric units.")
    reads = store.reads
    nobody = TrustedContext(None)
    turn = harness.run(nobody, "Hi.", [save("Sneaky."), Reply("Ok.")])
    first, second = turn.calls
    assert first.tools == {}
    assert first.messages == [("system", SYSTEM), ("user", "Hi.")]
    assert second.messages[-1][0] == "tool"
    assert second.messages[-1][1].startswith("Unknown tool")
    assert store.reads == reads


def test_the_tools_stay_when_only_memory_is_off_and_other_tools_exist(
    harness: LangChainHarness,
) -> None:
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}."

    model = RecordingFakeChatModel(messages=iter(["Ok."]))
    agent = create_agent(
        model,
        [weather],
        context_schema=TrustedContext,
        checkpointer=harness.saver,
        middleware=[harness.middleware],
    )
    agent.invoke(
        {"messages": [HumanMessage("Hi.")]}, harness.config("w"), context=TrustedContext(None)
    )
    assert [tool["function"]["name"] for tool in model.calls[0].tools] == ["weather"]


# -- mutation identity -----------------------------------------------------------------------------


def test_a_call_id_replayed_in_one_run_is_one_mutation_and_reused_next_run_is_new(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    bound(memory, "alice").save("Prefers metric units.")
    remove = ToolCall("user__remove_memory", {"index": 0}, "call_1")
    first = harness.run(ALICE, "Forget units.", [remove, remove, Reply("Done.")])
    # The replay returns the recorded answer, not "does not exist": one mutation.
    assert [call.messages[-1] for call in first.calls[1:]] == [
        ("tool", "Removed memory 0."),
        ("tool", "Removed memory 0."),
    ]
    revision = bound(memory, "alice").read()
    assert revision is not None
    assert revision.revision == 2
    # A model that numbers its calls per run says call_1 again: a new mutation.
    second = harness.run(ALICE, "I drink tea.", [save("Likes tea."), Reply("Noted.")])
    assert second.calls[1].messages[-1] == ("tool", "Saved as memory 1.")
    assert entries(memory, "alice") == {1: "Likes tea."}


def test_a_run_resumed_after_an_interrupt_keeps_its_run_id(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    model = RecordingFakeChatModel(
        messages=iter([_reply(save("Likes tea.")), _reply(save("Likes tea.")), "Ok."])
    )
    agent = harness.agent(model, interrupt_before=["tools"])
    config = harness.config(ALICE.thread)
    agent.invoke({"messages": [HumanMessage("Tea.")]}, config, context=ALICE)
    run = harness.state(ALICE.thread)["docmem_run"]
    for _ in range(2):  # resumed, not restarted: no before_agent, the same run id
        agent.invoke(None, config, context=ALICE)
        assert harness.state(ALICE.thread)["docmem_run"] == run
    results = [m.text for m in harness.messages(ALICE.thread) if m.type == "tool"]
    # The second call_1 is the same mutation replayed, not a duplicate save ("Already saved").
    assert results == ["Saved as memory 0.", "Saved as memory 0."]
    document = bound(memory, "alice").read()
    assert document is not None
    assert document.revision == 1


def test_an_unknown_position_is_refused(slots: list[docmem.MemorySlot]) -> None:
    with pytest.raises(docmem.InvalidArgument, match="position"):
        DocmemMiddleware(slots, scope_context=scope_of, position="end")  # type: ignore[arg-type]


def test_runtime_run_id_is_the_config_run_id_but_mutations_take_the_drawn_one(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    # Pin: ExecutionInfo.run_id is the RunnableConfig's run_id (None without it), and
    # the tool's own config has it removed (langgraph/pregel/_algo.py; runnables/config.py).
    seen: list[tuple[str | None, object]] = []

    def probe(runtime: ToolRuntime[Any, Any]) -> str:
        """Report the run identity."""
        info = runtime.execution_info
        seen.append((info.run_id if info else None, runtime.config.get("run_id")))
        return "ok"

    run_id = "0b6c1f1e-0000-4000-8000-000000000001"
    for config_run_id in (None, run_id):
        model = RecordingFakeChatModel(
            messages=iter(
                [AIMessage("", tool_calls=[{"name": "probe", "args": {}, "id": "c"}]), "x"]
            )
        )
        agent = create_agent(
            model, [probe], context_schema=TrustedContext, middleware=[harness.middleware]
        )
        config: RunnableConfig = {"run_id": uuid.UUID(config_run_id)} if config_run_id else {}
        agent.invoke({"messages": [HumanMessage("Hi.")]}, config, context=ALICE)
    assert seen == [(None, None), (run_id, None)]
    # The middleware does not use that run_id: each invocation draws its own (resume safety),
    # so two invocations under one run_id are two runs, and the same call id is two mutations
    # (under one mutation id, the second request would be a MutationConflict).
    for text in ("Tea.", "Coffee."):
        agent = harness.agent(RecordingFakeChatModel(messages=iter([_reply(save(text)), "ok"])))
        agent.invoke(
            {"messages": [HumanMessage("Hi.")]},
            {"configurable": {"thread_id": "r"}, "run_id": uuid.UUID(run_id)},
            context=ALICE,
        )
    assert entries(memory, "alice") == {0: "Tea.", 1: "Coffee."}
    record = bound(memory, "alice").read()
    assert record is not None
    assert record.revision == 2


def test_the_run_id_lives_in_private_graph_state_and_changes_per_run(
    harness: LangChainHarness,
) -> None:
    harness.run(ALICE, "One.", [Reply("Ok.")])
    first = harness.state(ALICE.thread)["docmem_run"]
    harness.run(ALICE, "Two.", [Reply("Ok.")])
    assert harness.state(ALICE.thread)["docmem_run"] != first
    assert (
        "docmem_run"
        not in harness.agent(
            RecordingFakeChatModel(messages=iter(()))
        ).output_schema.model_json_schema()["properties"]
    )


# -- tool errors -----------------------------------------------------------------------------------


def test_tool_errors_reach_the_model_and_never_end_the_run() -> None:
    small = docmem.FileMemory(docmem.open_store("memory://"), max_characters=300)
    slots = [docmem.MemorySlot("user", small, scope=docmem.by_principal, namespace=NS)]
    harness = LangChainHarness(slots, scope_of)
    bound(small, "alice").save("a" * 60)
    secret = "My key is AKIAIOSFODNN7EXAMPLE."
    script: list[Step] = [
        save(secret, "call_1"),
        save("b" * 60, "call_2"),
        ToolCall("user__remove_memory", {"index": "zero"}, "call_3"),
        Reply("Sorry."),
    ]
    turn = harness.run(ALICE, "Hi.", script)
    results = [call.messages[-1] for call in turn.calls[1:]]
    assert [role for role, _ in results] == ["tool", "tool", "tool"]
    assert results[0][1].startswith("The text looks like a credential")
    assert results[1][1].startswith("Memory is full: ")
    assert results[2][1].startswith("Invalid call to user__remove_memory")
    assert turn.output == "Sorry."
    statuses = [m.status for m in harness.messages(ALICE.thread) if m.type == "tool"]
    assert statuses == ["error", "error", "error"]
    assert secret not in str(harness.messages(ALICE.thread)[2:])


def test_a_failing_resolver_in_a_tool_is_an_error_result(slots: list[docmem.MemorySlot]) -> None:
    calls = {"n": 0}

    def resolver(context: TrustedContext) -> docmem.ScopeContext | None:
        calls["n"] += 1  # model call, tool call, model call: the tool call's resolution fails
        if calls["n"] == 2:
            raise KeyError(context.user)
        return scope_of(context)

    harness = LangChainHarness(slots, resolver)
    turn = harness.run(ALICE, "Hi.", [save("Tea."), Reply("Ok.")])
    assert turn.calls[1].messages[-1] == (
        "tool",
        "Memory is unavailable: its scope could not be resolved.",
    )
    assert turn.output == "Ok."


def test_a_recall_failure_fails_the_model_call_and_never_shows_empty_memory(
    slots: list[docmem.MemorySlot], store: CountingStore
) -> None:
    harness = LangChainHarness(slots, scope_of)

    def down(key: str) -> Stored | None:
        raise docmem.StoreUnavailable("store down")

    store.read = down  # type: ignore[method-assign]
    with pytest.raises(docmem.StoreUnavailable):
        harness.run(ALICE, "Hi.", [Reply("Ok.")])
    assert harness.models[-1].calls == []


# -- persist=True ----------------------------------------------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
def test_persist_keeps_exactly_one_current_copy_in_state(
    slots: list[docmem.MemorySlot], memory: docmem.FileMemory, use_async: bool
) -> None:
    harness = LangChainHarness(slots, scope_of, persist=True)

    def turn(text: str, script: Sequence[Step]) -> TurnRecord:
        if use_async:
            return asyncio.run(harness.arun(ALICE, text, script))
        return harness.run(ALICE, text, script)

    bound(memory, "alice").save("Prefers metric units.")
    first = turn(
        "Tea.", [save("Likes tea.", "call_1"), save("Likes cake.", "call_2"), Reply("Ok.")]
    )
    current = recalled(memory, "alice", harness.middleware.runtime)
    assert entries(memory, "alice") == {
        0: "Prefers metric units.",
        1: "Likes tea.",
        2: "Likes cake.",
    }
    for call in first.calls:
        assert len(copies(call)) == 1
    assert copies(first.calls[-1]) == [current]
    state = harness.messages(ALICE.thread)
    persisted = [m for m in state if is_copy(m)]
    assert [(m.id, m.text) for m in persisted] == [
        (copy_id(harness.middleware.runtime.recall(scope_of(ALICE))[0]), current)
    ]
    # Placed first when it appeared, then replaced in place there.
    assert state[0].text == current
    assert state[1].text == "Tea."

    second = turn("Cake?", [Reply("Yes.")])
    assert copies(second.calls[0]) == [current]
    assert [m.text for m in harness.messages(ALICE.thread) if is_copy(m)] == [current]


def test_persist_removes_a_stale_unmarked_copy_and_all_copies_when_memory_is_off(
    slots: list[docmem.MemorySlot], memory: docmem.FileMemory
) -> None:
    harness = LangChainHarness(slots, scope_of, persist=True)
    bound(memory, "alice").save("Prefers metric units.")
    stale = recalled(memory, "alice", harness.middleware.runtime)
    bound(memory, "alice").save("Likes tea.")
    harness.seed(ALICE.thread, [("user", "Hi."), ("user", stale)])
    harness.run(ALICE, "Again.", [Reply("Yes.")])
    current = recalled(memory, "alice", harness.middleware.runtime)
    assert [m.text for m in harness.messages(ALICE.thread) if is_copy(m)] == [current]
    off = TrustedContext(None, thread=ALICE.thread)
    turn = harness.run(off, "Who am I?", [Reply("No idea.")])
    assert copies(turn.calls[0]) == []
    assert not any(is_copy(m) for m in harness.messages(ALICE.thread))


# -- concurrency and logs --------------------------------------------------------------------------


def test_two_users_concurrently_under_gather(
    harness: LangChainHarness, memory: docmem.FileMemory
) -> None:
    async def both() -> tuple[TurnRecord, TurnRecord]:
        return await asyncio.gather(
            harness.arun(ALICE, "Tea.", [save("Likes tea."), Reply("Ok.")]),
            harness.arun(BOB, "Coffee.", [save("Likes coffee."), Reply("Ok.")]),
        )

    alice, bob = asyncio.run(both())
    assert entries(memory, "alice") == {0: "Likes tea."}
    assert entries(memory, "bob") == {0: "Likes coffee."}
    assert copies(alice.calls[1]) == [recalled(memory, "alice", harness.middleware.runtime)]
    assert copies(bob.calls[1]) == [recalled(memory, "bob", harness.middleware.runtime)]
    assert harness.history(BOB.thread)[0] == ("user", "Coffee.")


# -- packaging -------------------------------------------------------------------------------------


@pytest.mark.process
def test_importing_docmem_imports_no_framework() -> None:
    code = (
        "import sys, docmem, docmem.integrations, docmem.testing;"
        "print([m for m in ('langchain', 'langgraph', 'langchain_core') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.process
def test_a_missing_framework_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['langchain'] = None\n"
        "try:\n    import docmem.integrations.langchain\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True)
    assert 'pip install "agent-docmem[langchain]"' in out.stdout, out.stderr


def test_the_middleware_is_an_agent_middleware_with_its_tools(harness: LangChainHarness) -> None:
    assert isinstance(harness.middleware, AgentMiddleware)
    assert harness.middleware.name == "DocmemMiddleware"


def test_only_human_messages_are_copies_by_their_text() -> None:
    echo = "# Memory: user <!-- docmem:recall user -->\n\n0: Likes tea."
    assert is_copy(HumanMessage(echo))
    assert is_copy(HumanMessage("anything", id="docmem:user:key"))
    assert not is_copy(AIMessage(echo))  # a model echoing its memory keeps its message
    assert not is_copy(ToolMessage(echo, tool_call_id="call_1"))
