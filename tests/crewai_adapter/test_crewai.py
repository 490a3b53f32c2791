"""DocmemMemory through real CrewAI runs, on docmem's ScriptedLLM.

The contract suite runs each turn as a standalone ``Agent.kickoff`` /
``await Agent.akickoff`` with the thread's conversation passed in and the
output's messages kept as the thread's history (what an application
persists). The pitfall tests below run crews (``kickoff``/``akickoff``),
CrewAI's threads, checkpoints, its tool cache and its hooks.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.hooks.dispatch import HookAborted, InterceptionPoint, get_scoped_hooks
from crewai.memory.unified_memory import Memory
from crewai.state.checkpoint_config import CheckpointConfig
from crewai.tools import BaseTool
from isolation import import_errors_without, loaded_test_tools
from traced import docmem_spans

import docmem
from docmem.host.injection import user_text
from docmem.integrations.crewai import DocmemMemory, crewai_tool_name
from docmem.testing.adapters import (
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
from docmem.testing.crewai_model import RecordedCall, ScriptedLLM, tool_call

Resolver = Callable[[TrustedContext], "docmem.ScopeContext | None"]

#: How CrewAI frames the request of ``Agent.kickoff`` with native tool calls ("native_task").
_REQUEST = re.compile(r"\nCurrent Task: (.*)", re.DOTALL)


def text_of(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if not isinstance(content, str) or not content:
        return None
    framed = _REQUEST.fullmatch(content) if message.get("role") == "user" else None
    return framed.group(1) if framed else content


def transcript(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(role, text)`` of every message with text, the request unframed."""
    return [(m["role"], text) for m in messages if (text := text_of(m)) is not None]


def model_call(recorded: RecordedCall) -> ModelCall:
    tools = {
        tool["function"]["name"]: SeenTool(
            tool["function"]["name"],
            tool["function"]["description"],
            tool["function"]["parameters"],
        )
        for tool in recorded.tools
    }
    return ModelCall(transcript(recorded.messages), tools)


def steps(script: Sequence[Step]) -> list[Any]:
    return [
        step.text if isinstance(step, Reply) else tool_call(step.name, step.arguments, step.call_id)
        for step in script
    ]


class CrewAIHarness(AdapterHarness):
    """A fresh Agent per turn, with one DocmemMemory; histories as the outputs' messages."""

    def __init__(
        self,
        slots: Sequence[docmem.MemorySlot],
        scope_context: Resolver,
        threads: dict[str, list[dict[str, Any]]] | None = None,
    ) -> None:
        self.slots = slots
        self.scope_context = scope_context
        self.memory = DocmemMemory(slots)
        self.threads = threads if threads is not None else {}

    def agent(self, llm: ScriptedLLM) -> Agent:
        return Agent(
            role="Assistant",
            goal="Help the user.",
            backstory="Careful.",
            llm=llm,
            tools=[*self.memory.tools],
        )

    def request(self, context: TrustedContext, text: str) -> list[dict[str, Any]]:
        return [*self.threads.get(context.thread, []), {"role": "user", "content": text}]

    def keep(self, context: TrustedContext, output: Any) -> None:
        """The output's messages, as an application stores them (CrewAI adds its prompt anew)."""
        self.threads[context.thread] = [
            {key: value for key, value in m.items() if key != "cache_breakpoint"}
            for m in output.messages
            if m["role"] != "system"
        ]

    def run(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        llm = ScriptedLLM(script=steps(script))
        with self.memory.scope(self.scope_context(context)):
            output = self.agent(llm).kickoff(self.request(context, text))
        self.keep(context, output)
        return TurnRecord([model_call(call) for call in llm.calls], output.raw)

    async def arun(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        llm = ScriptedLLM(script=steps(script))
        with self.memory.scope(self.scope_context(context)):
            output = await self.agent(llm).akickoff(self.request(context, text))
        self.keep(context, output)
        return TurnRecord([model_call(call) for call in llm.calls], output.raw)

    def history(self, thread: str) -> list[tuple[str, str]]:
        return transcript(self.threads.get(thread, []))

    def seed(self, thread: str, messages: Sequence[tuple[str, str]]) -> None:
        self.threads[thread] = [{"role": role, "content": text} for role, text in messages]

    def fresh(self) -> CrewAIHarness:
        return CrewAIHarness(self.slots, self.scope_context, self.threads)


class TestCrewAIAdapter(AdapterTests):
    """The contract every adapter meets, via ``Agent.kickoff`` / ``akickoff`` and ScriptedLLM."""

    def make_harness(
        self, slots: Sequence[docmem.MemorySlot], scope_context: Resolver
    ) -> AdapterHarness:
        return CrewAIHarness(slots, scope_context)

    def tool_name(self, name: str) -> str:
        return crewai_tool_name(name)


# -- fixtures and helpers --------------------------------------------------------

NS = "tests:crewai:user"
ALICE = TrustedContext("alice", "t-alice")
SAVE = crewai_tool_name("user__save_memory")
REMOVE = crewai_tool_name("user__remove_memory")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def store() -> Iterator[CountingStore]:
    backend = CountingStore()
    yield backend
    backend.close()


def user_slot(store: docmem.Backend, **options: Any) -> docmem.MemorySlot:
    return docmem.MemorySlot(
        "user",
        docmem.FileMemory(store),
        scope=docmem.by_principal,
        namespace=NS,
        description="What you know about the user.",
        **options,
    )


def scope_of(person: str = "alice") -> docmem.ScopeContext:
    scope = trusted_scope(TrustedContext(person))
    assert scope is not None
    return scope


def bound(store: docmem.Backend, person: str = "alice") -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace=NS, scope=("user", "adapter-tests", "", person))
    return docmem.FileMemory(store).bind(scope, slot="user")


def entries(store: docmem.Backend, person: str = "alice") -> dict[int, str]:
    document = bound(store, person).read()
    return dict(document.entries) if document is not None else {}


def save(text: str, call_id: str, **extra: Any) -> dict[str, Any]:
    return tool_call(SAVE, {"text": text, **extra}, call_id)


def is_copy(message: Any) -> bool:
    return docmem.is_recalled(user_text(message))


def copies(messages: Sequence[Any]) -> list[str]:
    return [message["content"] for message in messages if is_copy(message)]


def tool_results(call: RecordedCall) -> list[str]:
    return [m["content"] for m in call.messages if m["role"] == "tool"]


def crew(
    memory: DocmemMemory, /, *llms: ScriptedLLM, tools: Sequence[BaseTool] = (), **options: Any
) -> Crew:
    """One agent with the memory tools (and ``tools``) per llm, each with a task, in order."""
    agents = [
        Agent(
            role=f"Agent {n}",
            goal="Help.",
            backstory="Careful.",
            llm=llm,
            tools=[*memory.tools, *tools],
        )
        for n, llm in enumerate(llms)
    ]
    tasks = [
        Task(description=f"Task {n}", expected_output="An answer.", agent=agent)
        for n, agent in enumerate(agents)
    ]
    return Crew(agents=agents, tasks=tasks, **options)


def document(memory: DocmemMemory, person: str = "alice") -> list[str]:
    return [recall.content for recall in memory.runtime.recall(scope_of(person))]


class Probe(BaseTool):
    """A plain tool that reports what its agent's executor holds while a tool runs."""

    name: str = "probe"
    description: str = "Look around."
    seen: list[int] = []  # noqa: RUF012 - pydantic copies field defaults
    agent: Any = None

    def _run(self, **arguments: Any) -> str:
        self.seen.append(len(copies(self.agent.agent_executor.messages)))
        return "Looked."


# -- the tool surface ------------------------------------------------------------


def test_the_model_sees_docmems_schemas_under_names_crewai_keeps(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(script=["Hi."])
    with memory.scope(scope_of()):
        crew(memory, llm).kickoff()
    specs = memory.runtime.tool_specs()
    assert llm.calls[0].tools == [
        {
            "type": "function",
            "function": {
                "name": crewai_tool_name(name),
                "description": spec.description,
                "parameters": spec.json_schema(),
                "strict": True,
            },
        }
        for name, spec in specs.items()
    ]
    assert llm.calls[0].tool_names == ["user_save_memory", "user_remove_memory"]


def test_slots_crewai_would_name_alike_are_refused(store: CountingStore) -> None:
    slots = [
        docmem.MemorySlot(name, docmem.FileMemory(store), scope=docmem.by_principal, namespace=NS)
        for name in ("team-notes", "team_notes")
    ]
    with pytest.raises(docmem.InvalidArgument, match="team_notes_save_memory: rename one"):
        DocmemMemory(slots)


def test_a_call_by_docmems_own_spelling_reaches_the_tool(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(script=[tool_call("user__save_memory", {"text": "Likes tea."}, "c1"), "Ok."])
    with memory.scope(scope_of()):
        crew(memory, llm).kickoff()
    assert tool_results(llm.calls[1]) == ["Saved as memory 0."]
    assert entries(store) == {0: "Likes tea."}


def test_extra_arguments_reach_docmem_and_are_refused_there(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(script=[save("Owned.", "c1", user_id="bob"), "Ok."])
    with memory.scope(scope_of()):
        output = crew(memory, llm).kickoff()
    [refused] = tool_results(llm.calls[1])
    assert refused.startswith("Invalid call to user__save_memory: unexpected argument 'user_id'")
    [failure] = output.tasks_output[0].tool_failures  # a ToolFailure for CrewAI, text for the model
    assert failure.message == refused
    assert entries(store) == {} == entries(store, "bob")


# -- copies: placed before each call, never kept ----------------------------------


def test_no_copy_stays_in_the_executor_the_task_output_or_while_a_tool_runs(
    store: CountingStore,
) -> None:
    memory = DocmemMemory([user_slot(store)])
    bound(store).save("Prefers tea.")
    llm = ScriptedLLM(script=[save("Likes jazz.", "c1"), tool_call("probe", {}, "c2"), "Done."])
    probe = Probe()
    team = crew(memory, llm, tools=[probe])
    [agent] = team.agents
    probe.agent = agent
    with memory.scope(scope_of()):
        output = team.kickoff()
    assert [len(copies(call.messages)) for call in llm.calls] == [1, 1, 1]
    assert copies(llm.calls[2].messages) == document(memory)  # the save shows at once
    assert tool_results(llm.calls[2])[-1] == "Looked."
    assert probe.seen == [0]  # taken out before any tool of a tool-call answer runs
    assert agent.agent_executor is not None
    assert copies(agent.agent_executor.messages) == []
    assert copies(output.tasks_output[0].messages) == []
    assert "Prefers tea." not in json.dumps(output.tasks_output[0].messages)


def test_checkpoints_hold_no_copy_in_their_state(store: CountingStore, tmp_path: Path) -> None:
    memory = DocmemMemory([user_slot(store)])
    bound(store).save("Prefers tea.")
    llm = ScriptedLLM(script=[save("Likes jazz.", "c1"), "Done."])
    every_event = CheckpointConfig(location=str(tmp_path), on_events=["*"])
    with memory.scope(scope_of()):
        crew(memory, llm, checkpoint=every_event).kickoff()
    from crewai.events.event_bus import crewai_event_bus

    crewai_event_bus.flush()  # checkpoints are written by the event bus' worker threads
    written = [json.loads(path.read_text()) for path in tmp_path.rglob("*.json")]
    assert len(written) >= 4
    for checkpoint in written:
        assert "docmem:recall" not in json.dumps(checkpoint["entities"]), checkpoint["trigger"]
    # Pinned: CrewAI also records every event, each model call's input included, as a trace.
    assert any("docmem:recall" in json.dumps(c["event_record"]) for c in written)


class _MemoryLLM(ScriptedLLM):
    """The model of CrewAI's own memory: answers its structured requests, records them."""

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(RecordedCall(json.loads(json.dumps(messages, default=str))))
        model = kwargs.get("response_model")
        if model is not None and "memories" in model.model_fields:
            return model.model_validate({"memories": ["The user ordered tea."]})
        if model is not None:
            return model.model_validate({"suggested_scope": "/", "categories": []})
        return json.dumps({"memories": ["The user ordered tea."]})


def test_crewais_own_memory_never_gets_a_copy(store: CountingStore, tmp_path: Path) -> None:
    memory = DocmemMemory([user_slot(store)])
    bound(store).save("Prefers tea.")
    analysis = _MemoryLLM()
    crew_memory = Memory(
        llm=analysis,
        storage=str(tmp_path / "lancedb"),
        embedder=lambda texts: [[0.1] * 8 for _ in texts],
    )
    llm = ScriptedLLM(script=[save("Likes jazz.", "c1"), "Ordered tea."])
    with memory.scope(scope_of()):
        crew(memory, llm, memory=crew_memory).kickoff()
    crew_memory.drain_writes()
    assert copies(llm.calls[0].messages)  # there was a copy to leak
    assert analysis.calls  # CrewAI's memory extracted and analysed what the task produced
    assert "docmem:recall" not in json.dumps([call.messages for call in analysis.calls])
    stored = crew_memory.recall("tea", depth="shallow")
    assert [match.record.content for match in stored] == ["The user ordered tea."]


def test_position_before_last_user_puts_the_copy_before_the_newest_ask(
    store: CountingStore,
) -> None:
    memory = DocmemMemory([user_slot(store)], position="before_last_user")
    bound(store).save("Prefers tea.")
    llm = ScriptedLLM(script=["Yes."])
    agent = Agent(role="A", goal="Help.", backstory="Careful.", llm=llm, tools=[*memory.tools])
    history = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}]
    with memory.scope(scope_of()):
        agent.kickoff([*history, {"role": "user", "content": "Again"}])
    assert transcript(llm.calls[0].messages)[1:] == [
        ("user", "Hello"),
        ("assistant", "Hi."),
        ("user", document(memory)[0]),
        ("user", "Again"),
    ]


# -- CrewAI's tool cache, failures and refusals ------------------------------------


def test_crewais_tool_cache_never_answers_a_memory_tool(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(
        script=[
            save("Likes tea.", "c1"),
            tool_call(REMOVE, {"index": 0}, "c2"),
            "Done.",
            save("Likes tea.", "c1"),  # the same call in the next run: CrewAI's cache key
            "Done again.",
        ]
    )
    team = crew(memory, llm, cache=True)  # CrewAI's result cache, on for this crew
    with memory.scope(scope_of()):
        team.kickoff()
        team.kickoff()
    assert tool_results(llm.calls[1]) == ["Saved as memory 0."]
    assert tool_results(llm.calls[4])[-1] == "Saved as memory 1."  # run, not answered from cache
    assert entries(store) == {1: "Likes tea."}


def test_a_store_that_cannot_be_read_shows_an_error_never_an_empty_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = docmem.open_store(f"file://{tmp_path / 'not-a-store'}")  # every read raises
    memory = DocmemMemory([user_slot(missing)])
    llm = ScriptedLLM(script=[save("Likes tea.", "c1"), "Sorry."])
    with memory.scope(scope_of()):
        output = crew(memory, llm).kickoff()
    for call in llm.calls:  # in place of the copy, each call: docmem's sentence, marked
        [notice] = copies(call.messages)
        assert notice.startswith("# Memory: user <!-- docmem:recall user -->\n\n")
        assert "Memory could not be read: The file:// root directory does not exist" in notice
        assert "It is not empty" in notice
    assert tool_results(llm.calls[1])[0].startswith("The file:// root directory does not exist")
    assert copies(output.tasks_output[0].messages) == []
    assert "docmem: recall for a CrewAI model call failed (store_unavailable)" in caplog.text


def test_a_scope_resolver_that_raises_aborts_the_run(store: CountingStore) -> None:
    def broken(context: docmem.ScopeContext) -> str:
        raise RuntimeError("bug")

    memory = DocmemMemory(
        [
            user_slot(store)
            if False
            else docmem.MemorySlot("user", docmem.FileMemory(store), scope=broken, namespace=NS)
        ]
    )
    llm = ScriptedLLM(script=["Hi."])
    with memory.scope(scope_of()), pytest.raises(HookAborted, match="recall failed"):
        crew(memory, llm).kickoff()
    assert llm.calls == []  # never called without its memory


def test_a_model_that_keeps_the_conversation_server_side_is_refused(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(script=["Hi."])
    llm.auto_chain = True  # what CrewAI's OpenAI Responses model chains calls with
    with memory.scope(scope_of()), pytest.raises(HookAborted, match="auto_chain"):
        crew(memory, llm).kickoff()
    assert llm.calls == []


# -- mutation ids: the run identity and the recovered call id ----------------------


def mutation(memory: DocmemMemory, team: Crew, call_id: str, number: int = 0) -> str:
    session = f"{memory.run_id()}/{team.agents[number].id}/{team.tasks[number].id}"
    return f"{session.replace('/', '%2F')}/{call_id}"


def test_the_mutation_id_is_run_agent_task_and_the_models_call_id(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(
        script=[save("Likes tea.", "call_1"), "Ok.", save("Likes jazz.", "call_1"), "Ok."]
    )
    team = crew(memory, llm)
    with memory.scope(scope_of()):
        team.kickoff()
        first, run = mutation(memory, team, "call_1"), memory.run_id()
        team.kickoff()  # the same crew again, in the same block: a new run
        assert memory.run_id() != run
        second = mutation(memory, team, "call_1")
    assert [(r.op, r.index) for r in map(bound(store).inspect, (first, second)) if r] == [
        ("save", 0),
        ("save", 1),
    ]
    assert entries(store) == {0: "Likes tea.", 1: "Likes jazz."}


def test_parallel_calls_get_their_own_ids_and_identical_ones_fresh_ids(
    store: CountingStore,
) -> None:
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(
        script=[
            [save("Likes tea.", "c1"), save("Likes jazz.", "c2")],  # told apart by arguments
            [save("Owns a cat.", "c3"), save("Owns a cat.", "c4")],  # not: fresh ids
            "Ok.",
        ]
    )
    team = crew(memory, llm)
    with memory.scope(scope_of()):
        team.kickoff()
        ids = {call: mutation(memory, team, call) for call in ("c1", "c2", "c3", "c4")}
    found = {call: bound(store).inspect(ids[call]) for call in ids}
    recovered = {call: record for call, record in found.items() if record is not None}
    assert sorted(recovered) == ["c1", "c2"]  # the parallel calls ran in either order
    assert sorted((r.op, r.index) for r in recovered.values()) == [("save", 0), ("save", 1)]
    assert sorted(tool_results(llm.calls[2])[2:]) == [
        "Already saved as memory 2.",
        "Saved as memory 2.",
    ]


def test_an_id_crewai_made_up_from_an_object_id_is_not_trusted(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    minted = "call_140234567890123"  # CrewAI's f"call_{id(tool_call)}"
    llm = ScriptedLLM(script=[save("Likes tea.", minted), "Ok."])
    team = crew(memory, llm)
    with memory.scope(scope_of()):
        team.kickoff()
        assert bound(store).inspect(mutation(memory, team, minted)) is None
    assert entries(store) == {0: "Likes tea."}


# -- the scope: one block, CrewAI's threads, concurrent runs ------------------------


def test_the_scope_follows_crewai_into_async_tasks_and_kickoff_async(
    store: CountingStore,
) -> None:
    memory = DocmemMemory([user_slot(store)])
    first = ScriptedLLM(script=[save("Likes tea.", "c1"), "Ok."])
    second = ScriptedLLM(script=[save("Likes jazz.", "c1"), "Ok."])
    team = crew(memory, first, second)
    team.tasks[0].async_execution = True  # run in a thread of its own

    async def run() -> None:
        with memory.scope(scope_of()):
            await team.kickoff_async()  # asyncio.to_thread(kickoff)

    asyncio.run(run())
    assert entries(store) == {0: "Likes tea.", 1: "Likes jazz."}
    assert [len(copies(call.messages)) for call in (*first.calls, *second.calls)] == [0, 1, 1, 1]


def test_two_crews_at_once_in_threads_each_see_only_their_own(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    for person in ("alice", "bob"):
        bound(store, person).save(f"I am {person}.")
    both_running = threading.Barrier(2, timeout=30)

    class Meet(BaseTool):
        name: str = "meet"
        description: str = "Wait for the other run."

        def _run(self, **arguments: Any) -> str:
            both_running.wait()
            return "Met."

    llms = {
        person: ScriptedLLM(
            script=[tool_call("meet", {}, "m1"), save(f"{person} again.", "c1"), "Ok."]
        )
        for person in ("alice", "bob")
    }

    def run(person: str) -> None:
        team = crew(memory, llms[person], tools=[Meet()])
        with memory.scope(scope_of(person)):
            team.kickoff()

    threads = [threading.Thread(target=run, args=(person,)) for person in llms]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for person, other in (("alice", "bob"), ("bob", "alice")):
        seen = json.dumps([call.messages for call in llms[person].calls])
        assert f"I am {person}." in seen
        assert f"I am {other}." not in seen
        assert entries(store, person) == {0: f"I am {person}.", 1: f"{person} again."}


def test_sync_and_async_crews_agree_and_the_hooks_keep_off_the_event_loop(
    store: CountingStore,
) -> None:
    memory = DocmemMemory([user_slot(store)])
    for person in ("alice", "bob"):
        bound(store, person).save("Prefers tea.")
    script: list[Any] = [save("Likes jazz.", "c1"), "Ok."]
    sync, async_ = ScriptedLLM(script=list(script)), ScriptedLLM(script=list(script))
    with memory.scope(scope_of("bob")):
        crew(memory, sync).kickoff()
    recall = memory.runtime.recall
    threads: list[threading.Thread] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return recall(*args, **kwargs)

    memory.runtime.recall = spy  # type: ignore[method-assign]

    async def run() -> threading.Thread:
        with memory.scope(scope_of()):
            await crew(memory, async_).akickoff()
        return threading.current_thread()

    loop_thread = asyncio.run(run())
    assert len(threads) == 2
    assert loop_thread not in threads  # CrewAI runs the sync hooks in worker threads
    assert [len(copies(call.messages)) for call in async_.calls] == [1, 1]
    assert [c.messages for c in sync.calls] == [c.messages for c in async_.calls]
    assert entries(store) == entries(store, "bob") == {0: "Prefers tea.", 1: "Likes jazz."}


def test_outside_a_scope_block_there_is_no_memory_and_the_host_is_warned(
    store: CountingStore, caplog: pytest.LogCaptureFixture
) -> None:
    memory = DocmemMemory([user_slot(store)])
    bound(store).save("Prefers tea.")
    with memory.scope(scope_of()):
        pass
    assert get_scoped_hooks(InterceptionPoint.PRE_MODEL_CALL) == []  # nothing left behind
    store.reads = 0
    llm = ScriptedLLM(script=[save("Owned.", "c1"), "Ok."])
    crew(memory, llm).kickoff()  # the application forgot memory.scope(...)
    assert [copies(call.messages) for call in llm.calls] == [[], []]
    assert tool_results(llm.calls[1]) == ["Unknown tool 'user__save_memory'; available: none."]
    assert "called outside memory.scope()" in caplog.text
    assert store.reads == 0
    assert entries(store) == {0: "Prefers tea."}


def test_nested_blocks_the_inner_one_wins_and_hooks_run_once(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    bound(store).save("Prefers tea.")
    outer, inner, after = (ScriptedLLM(script=["Ok."]) for _ in range(3))
    with memory.scope(scope_of()):
        with memory.scope(None):
            crew(memory, inner).kickoff()
        with memory.scope(scope_of()):
            store.reads = 0
            crew(memory, after).kickoff()
            assert store.reads == 1  # one recall for the one model call, not one per block
        crew(memory, outer).kickoff()
    assert copies(inner.calls[0].messages) == []
    assert inner.calls[0].tool_names == []  # memory off: the tools left out
    assert copies(after.calls[0].messages) == copies(outer.calls[0].messages) == document(memory)
    assert get_scoped_hooks(InterceptionPoint.PRE_MODEL_CALL) == []


def test_an_agent_without_the_tools_gets_no_copy(store: CountingStore) -> None:
    memory = DocmemMemory([user_slot(store)])
    bound(store).save("Prefers tea.")
    with_memory, without = ScriptedLLM(script=["One."]), ScriptedLLM(script=["Two."])
    plain = Agent(role="Plain", goal="Help.", backstory="Careful.", llm=without)
    team = crew(memory, with_memory)
    team = Crew(
        agents=[*team.agents, plain],
        tasks=[*team.tasks, Task(description="Task 1", expected_output="An answer.", agent=plain)],
    )
    with memory.scope(scope_of()):
        team.kickoff()
    assert copies(with_memory.calls[0].messages) == document(memory)
    assert copies(without.calls[0].messages) == []


def test_text_tool_calling_gets_memory_but_crewai_drops_extra_arguments(
    store: CountingStore,
) -> None:
    """Pinned: CrewAI's ReAct path keeps only the schema's arguments; no call id there."""
    memory = DocmemMemory([user_slot(store)])
    llm = ScriptedLLM(
        function_calling=False,
        script=[
            'Thought: save\nAction: user_save_memory\nAction Input: {"text": "Likes tea.", '
            '"user_id": "bob"}',
            "Thought: done\nFinal Answer: Noted.",
        ],
    )
    with memory.scope(scope_of()):
        output = crew(memory, llm).kickoff()
    assert output.raw == "Noted."
    assert copies(llm.calls[1].messages) == document(memory)
    assert entries(store) == {0: "Likes tea."}  # the trusted scope's, whatever was sent
    assert entries(store, "bob") == {}


# -- processes: imports and telemetry ------------------------------------------------


@pytest.mark.process
def test_importing_docmem_never_imports_crewai() -> None:
    modules = ["docmem.integrations.crewai", "docmem.testing.crewai_model"]
    errors = import_errors_without("crewai", modules)
    assert "\n".join(errors).count('pip install "agent-docmem[crewai]"') == 2


@pytest.mark.process
def test_the_crewai_model_needs_no_test_tools() -> None:
    assert loaded_test_tools("docmem.testing.crewai_model") == []


_TRACED = """
import warnings
warnings.simplefilter("ignore")

import docmem
from crewai import Agent, Crew, Task
from docmem.integrations.crewai import DocmemMemory
from docmem.testing.crewai_model import ScriptedLLM, tool_call

store = docmem.open_store("memory://")
slot = docmem.MemorySlot("user", docmem.FileMemory(store), scope=docmem.by_principal,
                         namespace="tests:crewai:otel")
memory = DocmemMemory([slot])
llm = ScriptedLLM(script=[tool_call("user_save_memory", {"text": "Likes tea."}, "c1"), "Ok."])
agent = Agent(role="A", goal="Help.", backstory="Careful.", llm=llm, tools=[*memory.tools])
crew = Crew(agents=[agent], tasks=[Task(description="T", expected_output="E", agent=agent)])
scope = docmem.ScopeContext(principal=docmem.Principal("user", "idp", "alice"))
with trace.get_tracer("app").start_as_current_span("handle request"):
    with memory.scope(scope):
        crew.kickoff()
"""


@pytest.mark.process
def test_docmems_spans_are_children_of_the_span_around_the_run() -> None:
    found = docmem_spans(_TRACED)
    assert sorted(names[0] for names in found) == ["docmem.recall", "docmem.recall", "docmem.save"]
    assert all(names[-1] == "handle request" for names in found), found
