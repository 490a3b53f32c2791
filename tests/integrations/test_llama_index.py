"""DocmemFunctionAgent through LlamaIndex's real FunctionAgent and AgentWorkflow steps.

The model is LlamaIndex's own ``MockFunctionCallingLLM``, scripted through its
``response_generator``, which receives exactly the messages and the tool
objects an LLM integration would send. The harness keeps each thread's
history where a LlamaIndex application does: in the agent's memory, on a
chat store shared by the runs, passed to every run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import pytest
from isolation import import_errors_without
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ToolCall
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer, Memory, StaticMemoryBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore
from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata
from llama_index.core.workflow import Context
from pydantic import BaseModel, ConfigDict
from traced import docmem_spans

import docmem
from docmem.integrations.llama_index import (
    TRUSTED_KEY,
    DocmemFunctionAgent,
    Position,
    set_trusted,
)
from docmem.testing.adapters import (
    SMUGGLED,
    AdapterHarness,
    AdapterTests,
    CountingStore,
    ModelCall,
    Reply,
    SeenTool,
    Step,
    TrustedContext,
    TurnRecord,
    trusted_scope,
)
from docmem.testing.redaction import SCOPE_CANARY

#: Pinned: LlamaIndex's workflows find an agent's steps with ``inspect.getmembers``, which
#: reads pydantic's deprecated attributes of the agent: dozens of warnings a run, none ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince20"),
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecatedSince211"),
]

SYSTEM = "You are a careful assistant."
NS = "tests:llama-index:user"
Resolver = Callable[[TrustedContext], "docmem.ScopeContext | None"]

#: One scripted answer: text, one tool call ``(name, arguments, call id)``, or several calls.
Call = tuple[str, dict[str, Any], str]
Answer = Union[str, Call, list[Call]]  # noqa: UP007


# -- the scripted model ----------------------------------------------------------


@dataclass
class Seen:
    """What one model call received: the messages and the tools, as the LLM got them."""

    messages: list[ChatMessage]
    tools: list[BaseTool]

    def transcript(self) -> list[tuple[str, str]]:
        """``(role, text)`` of every text block, in order (tool results as ``"tool"``)."""
        return [
            (message.role.value, block.text)
            for message in self.messages
            for block in message.blocks
            if isinstance(block, TextBlock)
        ]

    def copies(self) -> list[str]:
        return [text for _, text in self.transcript() if docmem.is_recalled(text)]

    def tool_names(self) -> list[str]:
        return [tool.metadata.get_name() for tool in self.tools]

    def request(self) -> str:
        """Everything an OpenAI-style request would carry, as one JSON text."""
        tools = [tool.metadata.to_openai_tool() for tool in self.tools]
        messages = [message.model_dump(mode="json") for message in self.messages]
        return json.dumps({"messages": messages, "tools": tools})


@dataclass
class Script:
    """LlamaIndex's MockFunctionCallingLLM answering from a script, recording every call."""

    answers: list[Answer]
    calls: list[Seen] = field(default_factory=list)

    def llm(self) -> MockFunctionCallingLLM:
        return MockFunctionCallingLLM(response_generator=self.respond)

    def respond(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = list(kwargs.get("tools") or [])
        self.calls.append(Seen([m.model_copy(deep=True) for m in messages], tools))
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            return ChatMessage(role="assistant", content=answer)
        calls = answer if isinstance(answer, list) else [answer]
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=dict(arguments))
                for name, arguments, call_id in calls
            ],
        )


# -- the harness -----------------------------------------------------------------


def answers(script: Sequence[Step]) -> list[Answer]:
    return [
        step.text if isinstance(step, Reply) else (step.name, dict(step.arguments), step.call_id)
        for step in script
    ]


def model_call(seen: Seen) -> ModelCall:
    tools = {}
    for tool in seen.tools:
        function = tool.metadata.to_openai_tool()["function"]
        tools[function["name"]] = SeenTool(
            function["name"], function["description"], function["parameters"]
        )
    return ModelCall(seen.transcript(), tools)


def trusted_value(context: TrustedContext) -> dict[str, Any]:
    """The trusted context as the application stores it: a JSON-serializable value."""
    return {"user": context.user, "thread": context.thread}


class LlamaIndexHarness(AdapterHarness):
    """A DocmemFunctionAgent per turn, its own Context, the thread's memory on a shared store.

    The memory is what a FunctionAgent makes when given none, a
    ``ChatMemoryBuffer``, here on one ``SimpleChatStore`` keyed by thread (what
    an application persists with ``chat_store.persist()``). ``Memory`` on its
    SQL store is tested below, on its own.
    """

    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Resolver,
        chat_store: SimpleChatStore | None = None,
    ) -> None:
        self.slots = slots
        self.scope_context = scope_context
        self.chat_store = chat_store if chat_store is not None else SimpleChatStore()

    def agent(self, llm: MockFunctionCallingLLM) -> DocmemFunctionAgent:
        return DocmemFunctionAgent(
            self.slots,
            scope_context=lambda value: self.scope_context(TrustedContext(**value)),
            llm=llm,
            system_prompt=SYSTEM,
        )

    def memory(self, thread: str) -> ChatMemoryBuffer:
        return ChatMemoryBuffer.from_defaults(chat_store=self.chat_store, chat_store_key=thread)

    def run(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        # LlamaIndex's workflow agents have no synchronous entry point: this is the
        # harness driving the one async run, not a sync path of the adapter.
        return asyncio.run(self.arun(context, text, script))

    async def arun(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        scripted = Script(answers(script))
        agent = self.agent(scripted.llm())
        ctx = Context(agent)
        await set_trusted(ctx, trusted_value(context))
        result = await agent.run(text, ctx=ctx, memory=self.memory(context.thread))
        return TurnRecord([model_call(call) for call in scripted.calls], str(result))

    def history(self, thread: str) -> list[tuple[str, str]]:
        return [
            (message.role.value, block.text)
            for message in self.chat_store.get_messages(thread)
            for block in message.blocks
            if isinstance(block, TextBlock)
        ]

    def seed(self, thread: str, messages: Sequence[tuple[str, str]]) -> None:
        native = [ChatMessage(role=role, content=text) for role, text in messages]
        self.chat_store.set_messages(thread, native)

    def fresh(self) -> LlamaIndexHarness:
        return LlamaIndexHarness(self.slots, self.scope_context, self.chat_store)


class TestLlamaIndexAdapter(AdapterTests):
    """The contract every adapter meets, via ``await agent.run(...)`` and the mock LLM."""

    def make_harness(
        self, slots: Sequence[docmem.MemorySlot], scope_context: Resolver
    ) -> AdapterHarness:
        return LlamaIndexHarness(slots, scope_context)


# -- fixtures and helpers --------------------------------------------------------


ALICE = TrustedContext("alice", "t-alice")


@pytest.fixture
def store() -> Iterator[CountingStore]:
    backend = CountingStore()
    yield backend
    backend.close()


def user_slot(store: docmem.Backend) -> docmem.MemorySlot:
    return docmem.MemorySlot(
        "user",
        docmem.FileMemory(store),
        scope=docmem.by_principal,
        namespace=NS,
        description="What you know about the user.",
    )


def scope_of(value: dict[str, Any]) -> docmem.ScopeContext | None:
    return trusted_scope(TrustedContext(**value))


def agent(store: docmem.Backend, script: Script, **options: Any) -> DocmemFunctionAgent:
    options.setdefault("system_prompt", SYSTEM)
    return DocmemFunctionAgent(
        [user_slot(store)], scope_context=scope_of, llm=script.llm(), **options
    )


async def context(workflow: Any, who: TrustedContext | None = ALICE) -> Context:
    ctx = Context(workflow)
    if who is not None:
        await set_trusted(ctx, trusted_value(who))
    return ctx


def run(workflow: Any, text: str, who: TrustedContext | None = ALICE, **options: Any) -> Any:
    async def go() -> Any:
        return await workflow.run(text, ctx=await context(workflow, who), **options)

    return asyncio.run(go())


def bound(store: docmem.Backend, person: str = "alice") -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace=NS, scope=("user", "adapter-tests", "", person))
    return docmem.FileMemory(store).bind(scope, slot="user")


def current(store: docmem.Backend, who: TrustedContext = ALICE) -> list[str]:
    """The copies the model should see now: one fresh read, by an agent's own runtime."""
    runtime = agent(store, Script([])).docmem_runtime
    return [recall.content for recall in runtime.recall(trusted_scope(who))]


def save(text: str, call_id: str, **extra: Any) -> Call:
    return ("user__save_memory", {"text": text, **extra}, call_id)


def stored(memory: Memory | ChatMemoryBuffer) -> list[ChatMessage]:
    return list(asyncio.run(memory.aget_all()) if isinstance(memory, Memory) else memory.get_all())


def texts(messages: Sequence[ChatMessage]) -> list[str]:
    return [b.text for m in messages for b in m.blocks if isinstance(b, TextBlock)]


# -- the tool surface: docmem's schema, the model's arguments ---------------------


def test_the_model_gets_docmems_schema_where_llamaindex_would_drop_keys(
    store: CountingStore,
) -> None:
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        text: str

    assert Strict.model_json_schema()["additionalProperties"] is False
    plain = ToolMetadata(description="Save.", name="save", fn_schema=Strict)
    assert "additionalProperties" not in plain.get_parameters_dict()  # pinned: LlamaIndex drops it
    script = Script(["Hi."])
    run(agent(store, script), "Hello")
    specs = docmem.MemoryRuntime([user_slot(store)]).tool_specs()
    [call] = script.calls
    assert call.tool_names() == ["user__save_memory", "user__remove_memory"]
    for tool in call.tools:
        schema = specs[tool.metadata.get_name()].json_schema()
        assert schema["additionalProperties"] is False
        assert tool.metadata.to_openai_tool()["function"]["parameters"] == schema
        assert tool.metadata.fn_schema is not None  # what some LLM integrations read instead
        assert tool.metadata.fn_schema.model_json_schema() == schema
        assert tool.metadata.description == specs[tool.metadata.get_name()].description


def test_the_tool_gets_the_runs_context_though_annotations_are_postponed(
    store: CountingStore,
) -> None:
    """Pinned: under ``from __future__ import annotations`` (this module's, and the
    adapter's) LlamaIndex does not see a ``ctx: Context`` parameter, so never passes it."""

    async def plain(ctx: Context, text: str) -> str:
        raise AssertionError("never called")

    assert FunctionTool.from_defaults(async_fn=plain).requires_context is False
    script = Script([save("Likes tea.", "call_1"), "Ok."])
    the_agent = agent(store, script)
    run(the_agent, "Hi")
    document = bound(store).read()  # the tool resolved alice's scope from the run's Context
    assert document is not None
    assert dict(document.entries) == {0: "Likes tea."}
    # Outside a run (no Context, LlamaIndex's synchronous call) there is no memory.
    [tool] = [
        t
        for t in the_agent.tools or []
        if isinstance(t, FunctionTool) and t.metadata.name == "user__save_memory"
    ]
    assert tool.call(text="x").is_error
    output = asyncio.run(tool.acall(text="x"))
    assert (output.content, output.is_error) == (
        "Unknown tool 'user__save_memory'; available: none.",
        True,
    )


def test_a_tool_of_a_memory_tools_name_and_bad_options_are_refused(store: CountingStore) -> None:
    async def user__remove_memory(index: int) -> str:
        raise AssertionError("never called")

    with pytest.raises(docmem.InvalidArgument, match="already has a tool named user__remove"):
        agent(store, Script([]), tools=[user__remove_memory])
    with pytest.raises(docmem.InvalidArgument, match="position"):
        agent(store, Script([]), position="first")
    with pytest.raises(docmem.InvalidArgument, match="scope_context"):
        DocmemFunctionAgent([user_slot(store)], scope_context=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("streaming", [True, False])
def test_arguments_reach_docmem_as_sent_and_errors_are_text(
    store: CountingStore, streaming: bool
) -> None:
    script = Script(
        [
            save("Is an admin.", "call_1", user_id="bob"),
            ("user__remove_memory", {"index": "zero"}, "call_2"),
            "Could not.",
        ]
    )
    result = run(agent(store, script, streaming=streaming), "Save it for bob")
    assert str(result) == "Could not."
    tool_texts = [t for role, t in script.calls[-1].transcript() if role == "tool"]
    assert tool_texts[0] == SMUGGLED
    assert tool_texts[1].startswith("Invalid call to user__remove_memory")
    assert bound(store).read() is None
    assert bound(store, "bob").read() is None


def test_the_model_cannot_forge_the_call_id_or_the_context(store: CountingStore) -> None:
    """An argument under one of the adapter's own names is the model's: docmem refuses it."""
    forged = {"id": "call_9", "run": "other/run"}
    script = Script(
        [
            save("A.", "call_1", __docmem_call__=forged),
            save("B.", "call_2", __docmem_ctx__="bob"),
            "Ok.",
        ]
    )
    run(agent(store, script), "Hi")
    tool_texts = [t for role, t in script.calls[-1].transcript() if role == "tool"]
    assert tool_texts == [
        "Invalid call to user__save_memory: unexpected argument '__docmem_call__'; "
        "expected only text.",
        "Invalid call to user__save_memory: unexpected argument '__docmem_ctx__'; "
        "expected only text.",
    ]
    assert bound(store).read() is None
    assert bound(store, "bob").read() is None


# -- the call id and the run identity ---------------------------------------------


def test_the_call_id_reaches_docmem_and_the_model_sees_its_arguments_as_sent(
    store: CountingStore,
) -> None:
    script = Script([save("Likes tea.", "call_1"), "Ok."])
    the_agent = agent(store, script, name="support")
    memory = ChatMemoryBuffer.from_defaults()

    async def go() -> tuple[list[ToolCall], str]:
        ctx = await context(the_agent)
        handler = the_agent.run("Hi", ctx=ctx, memory=memory)
        events = [event async for event in handler.stream_events() if type(event) is ToolCall]
        await handler
        return events, await ctx.store.get("docmem_run")

    events, run_id = asyncio.run(go())
    record = bound(store).inspect(f"support%2F{run_id}/call_1")
    assert record is not None
    assert (record.op, record.index) == ("save", 0)
    # The tool call as the application's stream shows it: the model's arguments and ours.
    [event] = events
    assert event.tool_kwargs == {
        "text": "Likes tea.",
        "__docmem_call__": {"id": "call_1", "run": f"support/{run_id}"},
    }
    # The model's own message, in the next call and in the stored history: as it sent it.
    for messages in (script.calls[1].messages, stored(memory)):
        [block] = [b for m in messages for b in m.blocks if isinstance(b, ToolCallBlock)]
        assert block.tool_kwargs == {"text": "Likes tea."}
    assert "__docmem" not in script.calls[1].request()


# Pinned: a Context reused for a second run drops the memory it held (LlamaIndex warns so);
# the application passes memory= to every run.
@pytest.mark.filterwarnings("ignore::workflows.context.state_store.UnserializableKeyWarning")
def test_a_reused_context_keeps_its_trusted_value_and_draws_a_new_run(
    store: CountingStore,
) -> None:
    script = Script([save("A.", "call_1"), "One.", save("B.", "call_1"), "Two."])
    the_agent = agent(store, script)
    memory = Memory.from_defaults(session_id="reused")

    async def go() -> list[str]:
        ctx = await context(the_agent)  # trusted once, for both runs
        runs = []
        for text in ("First", "Second"):
            await the_agent.run(text, ctx=ctx, memory=memory)
            runs.append(await ctx.store.get("docmem_run"))
        return runs

    first, second = asyncio.run(go())
    assert first != second
    document = bound(store).read()
    assert document is not None
    assert dict(document.entries) == {0: "A.", 1: "B."}  # call_1 twice: two runs, two saves
    for run_id, index in ((first, 0), (second, 1)):
        record = bound(store).inspect(f"Agent%2F{run_id}/call_1")
        assert record is not None
        assert (record.op, record.index) == ("save", index)


def test_parallel_calls_in_one_answer_are_each_their_own_mutation(store: CountingStore) -> None:
    script = Script([[save("A.", "call_1"), save("B.", "call_2")], "Both."])
    run(agent(store, script), "Two things")
    document = bound(store).read()
    assert document is not None
    assert sorted(document.entries.values()) == ["A.", "B."]
    assert script.calls[1].copies() == current(store)


def test_one_agent_serves_two_users_at_once_each_in_their_own_context(
    store: CountingStore,
) -> None:
    scripts = {who: Script([save(f"I am {who}.", "call_1"), "Done."]) for who in ("alice", "bob")}

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        [asked] = [m.content for m in messages if m.role.value == "user" and m.content in scripts]
        return scripts[asked or ""].respond(messages, **kwargs)

    llm = MockFunctionCallingLLM(response_generator=respond)
    the_agent = DocmemFunctionAgent([user_slot(store)], scope_context=scope_of, llm=llm)

    async def both() -> None:
        async def one(who: str) -> None:
            ctx = await context(the_agent, TrustedContext(who, f"t-{who}"))
            await the_agent.run(who, ctx=ctx)

        await asyncio.gather(one("alice"), one("bob"))

    asyncio.run(both())
    for who, other in (("alice", "bob"), ("bob", "alice")):
        document = bound(store, who).read()
        assert document is not None
        assert dict(document.entries) == {0: f"I am {who}."}
        assert scripts[who].calls[1].copies() == current(store, TrustedContext(who))
        assert f"I am {other}" not in scripts[who].calls[1].request()


# -- the scope: from the Context store, never from what the model sees -------------


def test_state_is_shown_to_the_model_the_trusted_value_never(store: CountingStore) -> None:
    bound(store, SCOPE_CANARY).save("Prefers tea.")
    who = TrustedContext(SCOPE_CANARY, "t-canary")
    # Pinned: LlamaIndex renders the store's "state" into the user's message.
    shown = Script(["Hi."])
    run(FunctionAgent(llm=shown.llm(), initial_state={"user": SCOPE_CANARY}), "Hello", who=None)
    assert SCOPE_CANARY in shown.calls[0].request()
    # The trusted value sits under a key of its own: memory is the user's, the value unseen.
    script = Script([save("Likes jazz.", "call_1"), "Ok."])
    run(agent(store, script, initial_state={"mood": "calm"}), "Remember jazz", who=who)
    assert [len(call.copies()) for call in script.calls] == [1, 1]
    assert script.calls[1].copies() == current(store, who)  # the save shows in the next call
    for call in script.calls:
        assert SCOPE_CANARY not in call.request()
        assert TRUSTED_KEY not in call.request()
    # The state prompt wraps the user's message, never the copy.
    user = [text for role, text in script.calls[0].transcript() if role == "user"]
    assert docmem.is_recalled(user[0])
    assert user[1].startswith("Current state:")
    assert user[1].endswith("Remember jazz\n")


@pytest.mark.parametrize("given", ["no context", "None"])
def test_without_a_trusted_value_there_are_no_tools_and_no_store_read(
    store: CountingStore, given: str
) -> None:
    bound(store).save("Prefers tea.")
    store.reads = 0
    script = Script([save("Owned.", "call_1"), "Hello."])
    the_agent = agent(store, script)

    async def go() -> None:
        if given == "None":
            ctx = Context(the_agent)
            await set_trusted(ctx, None)
            await the_agent.run("Hi", ctx=ctx)
        else:
            await the_agent.run("Hi")  # LlamaIndex makes a Context, with nothing trusted

    asyncio.run(go())
    assert [call.tool_names() for call in script.calls] == [[], []]
    assert [call.copies() for call in script.calls] == [[], []]
    assert script.calls[1].transcript()[-1] == (
        "tool",
        "Unknown tool 'user__save_memory'; available: none.",
    )
    assert store.reads == 0
    document = bound(store).read()
    assert document is not None
    assert dict(document.entries) == {0: "Prefers tea."}


def test_set_trusted_refuses_a_running_context_and_what_is_no_context() -> None:
    script = Script(["Hi."])
    the_agent = FunctionAgent(llm=script.llm())

    async def go() -> None:
        handler = the_agent.run("Hello")
        with pytest.raises(docmem.InvalidArgument, match="run has not started"):
            await set_trusted(handler.ctx, {"user": "alice"})
        await handler
        with pytest.raises(docmem.InvalidArgument, match="not dict"):
            await set_trusted({}, {"user": "alice"})  # type: ignore[arg-type]

    asyncio.run(go())


def test_a_resolver_that_raises_fails_the_model_call(store: CountingStore) -> None:
    def broken(value: Any) -> docmem.ScopeContext | None:
        raise LookupError("no such session")

    script = Script(["Hi."])
    the_agent = DocmemFunctionAgent([user_slot(store)], scope_context=broken, llm=script.llm())
    with pytest.raises(LookupError):
        run(the_agent, "Hello")
    assert script.calls == []


def test_a_resolver_that_raises_in_a_tool_call_is_told_to_the_model(
    store: CountingStore, caplog: pytest.LogCaptureFixture
) -> None:
    calls = 0

    def flaky(value: dict[str, Any]) -> docmem.ScopeContext | None:
        nonlocal calls
        calls += 1
        if calls == 2:  # the tool call's, between two model calls
            raise LookupError(SCOPE_CANARY)
        return scope_of(value)

    script = Script([save("A.", "call_1"), "Ok."])
    the_agent = DocmemFunctionAgent([user_slot(store)], scope_context=flaky, llm=script.llm())
    run(the_agent, "Hi")
    assert script.calls[1].transcript()[-1] == (
        "tool",
        "Memory is unavailable: its scope could not be resolved.",
    )
    assert bound(store).read() is None
    assert "LookupError" in caplog.text
    assert SCOPE_CANARY not in caplog.text


def test_a_store_that_is_down_fails_the_model_call_never_shows_empty_memory(
    tmp_path: Path,
) -> None:
    missing = docmem.open_store(f"file://{tmp_path / 'not-a-store'}")  # every read raises
    script = Script(["Hi."])
    the_agent = agent(missing, script)
    with pytest.raises(docmem.StoreUnavailable):
        run(the_agent, "Hello")
    assert script.calls == []  # the model was never called without its memory


def test_an_llm_that_chains_its_requests_on_the_server_is_refused(store: CountingStore) -> None:
    class Chained(MockFunctionCallingLLM):
        track_previous_responses: bool = True  # as OpenAIResponses(track_previous_responses=True)

    with pytest.raises(docmem.InvalidArgument, match="track_previous_responses"):
        DocmemFunctionAgent([user_slot(store)], scope_context=scope_of, llm=Chained())
    script = Script(["Hi."])
    the_agent = agent(store, script)
    chained = Chained()
    chained.response_generator = script.respond
    the_agent.llm = chained  # swapped after construction
    with pytest.raises(docmem.InvalidArgument, match="track_previous_responses"):
        run(the_agent, "Hello")
    assert script.calls == []


# -- one current copy per call, never stored ---------------------------------------


def test_a_stale_copy_in_the_stored_history_is_dropped_block_by_block(
    store: CountingStore,
) -> None:
    bound(store).save("Prefers tea.")
    [stale] = current(store)
    bound(store).save("Works nights.")
    memory = ChatMemoryBuffer.from_defaults()
    memory.set(
        [
            ChatMessage(role="user", blocks=[TextBlock(text=stale), TextBlock(text="Hello")]),
            ChatMessage(role="assistant", content="Hi."),
            ChatMessage(role="user", content=stale),  # a copy persisted as a message of its own
            ChatMessage(role="assistant", content="Still here."),
        ]
    )
    script = Script(["Yes."])
    run(agent(store, script), "Again", memory=memory)
    [call] = script.calls
    assert call.transcript() == [
        ("system", SYSTEM),
        ("user", current(store)[0]),
        ("user", "Hello"),
        ("assistant", "Hi."),
        ("assistant", "Still here."),
        ("user", "Again"),
    ]
    assert texts(memory.get_all()).count(stale) == 2  # the history itself is not rewritten


def test_the_chat_memory_and_its_store_never_hold_a_copy(
    store: CountingStore, caplog: pytest.LogCaptureFixture
) -> None:
    """``Memory`` on its SQL chat store (in-memory SQLite), LlamaIndex's recommended memory."""
    caplog.set_level(logging.DEBUG, logger="aiosqlite")
    bound(store).save("Prefers tea.")
    chat_store = SQLAlchemyChatStore(table_name="no_copies")
    script = Script(["One.", save("Likes jazz.", "call_1"), "Two.", "Three."])
    the_agent = agent(store, script)
    for text in ("First", "Second", "Third"):
        run(the_agent, text, memory=Memory.from_defaults(session_id="s1", chat_store=chat_store))
    [last] = script.calls[-1:]
    assert last.copies() == current(store)
    assert len(last.copies()) == 1
    kept = asyncio.run(chat_store.get_messages("s1"))
    assert len(kept) == 8
    assert not [text for text in texts(kept) if docmem.is_recalled(text) or "Prefers" in text]
    assert "docmem:recall" not in json.dumps(chat_store.dump_store())
    # aiosqlite logs every statement with its parameters at DEBUG: the stored conversation
    # (what the model sent to save_memory included), never a copy.
    logged = [f"{r.getMessage()} {r.args!r}" for r in caplog.records if r.name == "aiosqlite"]
    assert logged
    assert not [line for line in logged if "docmem:recall" in line]


def test_memory_blocks_keep_their_system_message_ahead_of_the_copy(
    store: CountingStore,
) -> None:
    bound(store).save("Prefers tea.")
    policy = StaticMemoryBlock(name="policy", static_content=[TextBlock(text="Be brief.")])
    memory = Memory.from_defaults(session_id="blocks", memory_blocks=[policy])
    script = Script(["Ok."])
    run(agent(store, script), "Hi", memory=memory)
    [call] = script.calls
    roles = [message.role.value for message in call.messages]
    assert roles == ["system", "system", "user", "user"]
    assert "Be brief." in (call.messages[1].content or "")
    assert call.messages[2].content == current(store)[0]
    assert not [t for t in texts(asyncio.run(memory.aget_all())) if docmem.is_recalled(t)]


@pytest.mark.parametrize("position", ["after_system", "before_last_user"])
def test_the_copy_is_placed_as_asked_and_never_splits_a_call_from_its_result(
    store: CountingStore, position: Position
) -> None:
    bound(store).save("Prefers tea.")
    memory = ChatMemoryBuffer.from_defaults()
    script = Script(["One.", save("Likes jazz.", "call_1"), "Two."])
    the_agent = agent(store, script, position=position)
    run(the_agent, "First", memory=memory)
    run(the_agent, "Second", memory=memory)
    roles = [message.role.value for message in script.calls[2].messages]
    at = 1 if position == "after_system" else 3
    expected = ["system", "user", "assistant", "user", "assistant", "tool"]
    assert roles == [*expected[:at], "user", *expected[at:]]
    assert script.calls[2].messages[at].content == current(store)[0]
    assert script.calls[2].messages[at + 1].content == (
        "First" if position == "after_system" else "Second"
    )


# -- AgentWorkflow ---------------------------------------------------------------------


def test_an_agent_workflow_runs_the_memory_agent_and_hands_off_without_memory(
    store: CountingStore,
) -> None:
    bound(store).save("Prefers tea.")
    handoff = ("handoff", {"to_agent": "writer", "reason": "Write it."}, "call_2")
    memo_script = Script([save("Likes jazz.", "call_1"), handoff])
    writer_script = Script(["Written."])
    memo = agent(
        store,
        memo_script,
        name="memo",
        description="Keeps memory.",
        can_handoff_to=["writer"],
    )
    writer = FunctionAgent(
        name="writer", description="Writes.", llm=writer_script.llm(), system_prompt="Write."
    )
    workflow = AgentWorkflow(agents=[memo, writer], root_agent="memo")

    async def go() -> tuple[Any, str]:
        ctx = await context(workflow)
        result = await workflow.run("Remember jazz, then write", ctx=ctx)
        return result, await ctx.store.get("docmem_run")

    result, run_id = asyncio.run(go())
    assert str(result) == "Written."
    assert [len(call.copies()) for call in memo_script.calls] == [1, 1]
    assert "1: Likes jazz." in memo_script.calls[1].copies()[0]
    assert "user__save_memory" in memo_script.calls[0].tool_names()
    assert "handoff" in memo_script.calls[0].tool_names()
    [written] = writer_script.calls
    assert written.copies() == []  # a plain FunctionAgent in the workflow has no memory
    assert not [name for name in written.tool_names() if name.startswith("user__")]
    assert bound(store).inspect(f"memo%2F{run_id}/call_1") is not None


# -- processes: imports and telemetry ------------------------------------------------


@pytest.mark.process
def test_importing_docmem_never_imports_llama_index() -> None:
    errors = import_errors_without("llama_index", ["docmem.integrations.llama_index"])
    assert 'pip install "agent-docmem[llama-index]"' in "\n".join(errors)


_TRACED = """
import asyncio
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.workflow import Context

import docmem
from docmem.integrations.llama_index import DocmemFunctionAgent, set_trusted

answers = [ChatMessage(role="assistant", blocks=[ToolCallBlock(
    tool_call_id="call_1", tool_name="user__save_memory", tool_kwargs={"text": "Likes tea."})]),
    ChatMessage(role="assistant", content="Ok.")]
llm = MockFunctionCallingLLM(response_generator=lambda messages, **kwargs: answers.pop(0))
store = docmem.open_store("memory://")
slot = docmem.MemorySlot("user", docmem.FileMemory(store), scope=docmem.by_principal,
                         namespace="tests:llama-index:otel")
agent = DocmemFunctionAgent(
    [slot], llm=llm,
    scope_context=lambda user: docmem.ScopeContext(principal=docmem.Principal("user", "idp", user)))

async def main():
    ctx = Context(agent)
    await set_trusted(ctx, "alice")
    with trace.get_tracer("app").start_as_current_span("handle request"):
        await agent.run("Hi", ctx=ctx)

asyncio.run(main())
"""


@pytest.mark.process
def test_docmems_spans_are_children_of_the_span_current_at_the_run() -> None:
    found = docmem_spans(_TRACED)
    assert sorted(names[0] for names in found) == ["docmem.recall", "docmem.recall", "docmem.save"]
    assert all(names[-1] == "handle request" for names in found)
