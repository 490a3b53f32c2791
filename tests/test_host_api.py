"""The host API frameworks build on: tool specs, dispatch, per-call recall, copies' marker."""

from __future__ import annotations

import asyncio
import contextvars
import multiprocessing
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wrappers import ScriptedBackend

import docmem
import docmem.provider.tools
from docmem import ProjectedRecall
from docmem.provider.protocol import RecallContext
from docmem.storage.builtin.inmemory import MemoryBackend

NS = "tests:host"
ALICE = docmem.ScopeContext(principal=docmem.Principal("user", "test", "alice"))
BOB = docmem.ScopeContext(principal=docmem.Principal("user", "test", "bob"))


class CountingBackend(MemoryBackend):
    """A real in-process store that counts reads, to prove where none happen."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read(self, key: str) -> docmem.Stored | None:
        self.reads += 1
        return super().read(key)

    def read_recent(self, key: str) -> docmem.Stored | None:
        self.reads += 1
        return super().read_recent(key)


@pytest.fixture
def counting() -> Iterator[CountingBackend]:
    store = CountingBackend()
    yield store
    store.close()


def slots(store: docmem.Backend, *names: str) -> list[docmem.MemorySlot]:
    memory = docmem.FileMemory(store)
    return [
        docmem.MemorySlot(
            name,
            memory,
            scope=docmem.by_principal,
            namespace=f"{NS}:{name}",
            description=f"About {name}.",
        )
        for name in names or ("user",)
    ]


def bound(store: docmem.Backend, context: docmem.ScopeContext, slot: str = "user") -> Any:
    assert context.principal is not None
    value = docmem.by_principal(context)
    assert value is not None
    scope = docmem.lock_scope(namespace=f"{NS}:{slot}", scope=value)
    return docmem.FileMemory(store).bind(scope, slot=slot)


# -- tool specs -------------------------------------------------------------------------


def test_tool_specs_need_no_scope_and_no_io(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting, "user", "team"))
    specs = runtime.tool_specs()
    assert list(specs) == [
        "team__save_memory",
        "team__remove_memory",
        "user__save_memory",
        "user__remove_memory",
    ]
    save = specs["user__save_memory"]
    assert save.name == "user__save_memory"
    assert (
        save.description
        == "About user.\n\n" + docmem.provider.tools.SAVE_MEMORY.description.format(slot="user")
    )
    assert save.parameters == docmem.provider.tools.SAVE_MEMORY.parameters
    assert specs["team__remove_memory"].parameters == docmem.provider.tools.REMOVE_MEMORY.parameters
    assert counting.reads == 0


def test_tool_specs_match_the_tools_a_turn_gets(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    turn = runtime.turn_started(docmem.TurnContext(operation_id="t", scope_context=ALICE))
    specs = runtime.tool_specs()
    assert {
        name: (tool.description, dict(tool.parameters)) for name, tool in turn.tools.items()
    } == {name: (spec.description, dict(spec.parameters)) for name, spec in specs.items()}


def test_a_spec_is_a_copy_a_host_may_edit(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    first = runtime.tool_specs()["user__save_memory"]
    first.parameters["properties"]["text"]["type"] = "integer"
    assert runtime.tool_specs()["user__save_memory"].parameters == (
        docmem.provider.tools.SAVE_MEMORY.parameters
    )


def test_slots_without_tools_or_without_declared_specs_list_none(
    counting: CountingBackend,
) -> None:
    class RecallOnly:
        def recall(self, context: RecallContext) -> None:
            return None

    memory = docmem.FileMemory(counting)
    runtime = docmem.MemoryRuntime(
        [
            docmem.MemorySlot("quiet", memory, scope="s", namespace=NS, tools=False),
            docmem.MemorySlot("plain", RecallOnly(), scope="s", namespace=NS),
        ]
    )
    assert runtime.tool_specs() == {}


# -- dispatch -----------------------------------------------------------------------------


def test_dispatch_saves_in_the_trusted_scope_only(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    result = runtime.dispatch(
        ALICE, "user__save_memory", '{"text": "Likes tea."}', call_id="c1", session_id="s/r1"
    )
    assert result == docmem.ToolResult("Saved as memory 0.")
    assert bound(counting, ALICE).read().entries == {0: "Likes tea."}
    assert bound(counting, BOB).read() is None
    assert bound(counting, ALICE).inspect("s%2Fr1/c1") is not None


def test_an_extra_scope_argument_is_refused_and_changes_nothing(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    result = runtime.dispatch(ALICE, "user__save_memory", {"text": "x", "user_id": "bob"})
    assert result == docmem.ToolResult(
        "Invalid call to user__save_memory: unexpected argument 'user_id'; expected only text.",
        is_error=True,
    )
    assert bound(counting, ALICE).read() is None
    assert bound(counting, BOB).read() is None


def test_the_same_call_in_one_run_is_one_mutation_and_a_new_run_is_another(
    counting: CountingBackend,
) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    first = runtime.dispatch(
        ALICE, "user__save_memory", {"text": "A"}, call_id="call_1", session_id="t/r1"
    )
    again = runtime.dispatch(
        ALICE, "user__save_memory", {"text": "A"}, call_id="call_1", session_id="t/r1"
    )
    other = runtime.dispatch(
        ALICE, "user__save_memory", {"text": "B"}, call_id="call_1", session_id="t/r2"
    )
    assert (first.text, again.text, other.text) == (
        "Saved as memory 0.",
        "Saved as memory 0.",
        "Saved as memory 1.",
    )
    assert bound(counting, ALICE).read().entries == {0: "A", 1: "B"}


def test_an_unresolvable_namespace_is_an_error_result(
    counting: CountingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCMEM_ENVIRONMENT", raising=False)
    monkeypatch.delenv("DOCMEM_DEV", raising=False)
    memory = docmem.FileMemory(counting)
    runtime = docmem.MemoryRuntime([docmem.MemorySlot("user", memory, scope=docmem.by_principal)])
    result = runtime.dispatch(ALICE, "user__save_memory", {"text": "x"})
    assert result.is_error
    assert result.text.startswith("DOCMEM_ENVIRONMENT is not set: name this deployment")
    assert counting.reads == 0


def test_a_resolver_that_raises_is_an_error_result(counting: CountingBackend) -> None:
    def broken(context: docmem.ScopeContext) -> str:
        raise RuntimeError("the resolver's own bug")

    runtime = docmem.MemoryRuntime(
        [docmem.MemorySlot("user", docmem.FileMemory(counting), scope=broken, namespace=NS)]
    )
    result = runtime.dispatch(ALICE, "user__save_memory", {"text": "x"})
    assert result == docmem.ToolResult(
        "Memory is unavailable: its scope could not be resolved.", is_error=True
    )


def test_no_context_or_a_disabled_slot_has_no_tools(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting, "team", "user"))
    nobody = runtime.dispatch(None, "user__save_memory", {"text": "x"})
    assert nobody == docmem.ToolResult(
        "Unknown tool 'user__save_memory'; available: none.", is_error=True
    )
    anonymous = docmem.ScopeContext(principal=docmem.Principal("anonymous", "test", "x"))
    assert runtime.dispatch(anonymous, "user__save_memory", {"text": "x"}).is_error
    assert counting.reads == 0


def test_an_unknown_name_lists_this_contexts_tools(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting, "team", "user"))
    for name in ("user__forget_all", ["not", "hashable"], None):
        result = runtime.dispatch(ALICE, name, {})
        assert result.is_error
        assert result.text.endswith(
            "available: team__remove_memory, team__save_memory, "
            "user__remove_memory, user__save_memory."
        )


def test_a_store_bug_is_an_error_result_not_an_exception() -> None:
    class Broken(MemoryBackend):
        def read(self, key: str) -> docmem.Stored | None:
            raise OSError("disk on fire")

        read_recent = read

    store = Broken()
    runtime = docmem.MemoryRuntime(slots(store))
    result = runtime.dispatch(ALICE, "user__save_memory", {"text": "x"})
    assert result == docmem.ToolResult(
        "Memory failed unexpectedly (OSError); the change may or may not have been made.",
        is_error=True,
    )


def test_a_cancelled_context_dispatches_nothing(counting: CountingBackend) -> None:
    cancel = threading.Event()
    cancel.set()
    context = docmem.ScopeContext(principal=ALICE.principal, cancel=cancel)
    runtime = docmem.MemoryRuntime(slots(counting))
    assert runtime.dispatch(context, "user__save_memory", {"text": "x"}).is_error
    assert counting.reads == 0


def test_adispatch_and_turn_adispatch(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))

    async def main() -> tuple[docmem.ToolResult, docmem.ToolResult]:
        first = await runtime.adispatch(ALICE, "user__save_memory", {"text": "One."})
        turn = await runtime.aturn_started(
            docmem.TurnContext(operation_id="t", scope_context=ALICE)
        )
        second = await turn.adispatch("user__save_memory", {"text": "Two."}, call_id="c")
        return first, second

    first, second = asyncio.run(main())
    assert (first.text, second.text) == ("Saved as memory 0.", "Saved as memory 1.")


# -- per-call recall ------------------------------------------------------------------------


def test_recall_reads_every_slot_concurrently() -> None:
    barrier = threading.Barrier(3, timeout=10)

    class Waiting:
        def __init__(self, name: str) -> None:
            self.name = name

        def recall(self, context: RecallContext) -> list[docmem.Recalled]:
            barrier.wait()  # only returns once all three reads are in flight together
            return [docmem.Recalled(f"{self.name} memory", "doc")]

    runtime = docmem.MemoryRuntime(
        [docmem.MemorySlot(name, Waiting(name), scope="s", namespace=NS) for name in "cab"]
    )
    recalls = runtime.recall(ALICE)
    assert [(copy.slot, copy.content) for copy in recalls] == [
        (name, f"{name} memory <!-- docmem:recall {name} -->") for name in "abc"
    ]


def test_one_failing_slot_fails_the_whole_recall(counting: CountingBackend) -> None:
    class Failing:
        def recall(self, context: RecallContext) -> None:
            raise docmem.StoreUnavailable("the store is down")

    memory = docmem.FileMemory(counting)
    bound(counting, ALICE).save("Kept.")
    runtime = docmem.MemoryRuntime(
        [
            docmem.MemorySlot("user", memory, scope=docmem.by_principal, namespace=f"{NS}:user"),
            docmem.MemorySlot("zzz", Failing(), scope="s", namespace=NS),
        ]
    )
    with pytest.raises(docmem.StoreUnavailable):
        runtime.recall(ALICE)


def test_recall_of_no_context_reads_nothing(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    assert runtime.recall(None) == []
    assert runtime.prepare_model_call([{"role": "user", "content": "hi"}], None) == [
        {"role": "user", "content": "hi"}
    ]
    assert counting.reads == 0


def test_an_invalid_recall_item_refuses_the_whole_call() -> None:
    class Blank:
        def recall(self, context: RecallContext) -> list[docmem.Recalled]:
            return [docmem.Recalled("   ")]

    runtime = docmem.MemoryRuntime([docmem.MemorySlot("user", Blank(), scope="s", namespace=NS)])
    with pytest.raises(docmem.RecallBatchInvalid):
        runtime.recall(ALICE)


def test_providers_see_the_model_call_boundary_and_the_conversation() -> None:
    seen: list[RecallContext] = []

    class Watching:
        def recall(self, context: RecallContext) -> None:
            seen.append(context)

    runtime = docmem.MemoryRuntime([docmem.MemorySlot("user", Watching(), scope="s", namespace=NS)])
    runtime.prepare_model_call(["q1"], ALICE)
    runtime.prepare_model_call(["q1"], ALICE)
    assert [(c.boundary, list(c.messages)) for c in seen] == [("model_call", ["q1"])] * 2
    assert seen[0].operation_id != seen[1].operation_id


SYSTEM = {"role": "system", "content": "Be brief."}


def test_prepare_model_call_keeps_exactly_one_current_copy(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting, "user", "channel"))
    mem = bound(counting, ALICE)
    mem.save("Likes tea.")
    history: list[Any] = [SYSTEM, {"role": "user", "content": "Hello"}]
    first = runtime.prepare_model_call(history, ALICE)
    assert first[0] == SYSTEM
    assert isinstance(first[1], ProjectedRecall)
    assert first[2:] == history[1:]
    old = first[1].content
    mem.save("Lives in Lisbon.")
    # The copy as a framework would persist it: a plain dict, no docmem object left.
    persisted = [first[0], {"role": "user", "content": old}, *first[2:]]
    second = runtime.prepare_model_call(persisted, ALICE)
    copies = [m for m in second if isinstance(m, ProjectedRecall)]
    assert len(copies) == 1
    assert copies[0].content != old
    assert copies[0].content == runtime.recall(ALICE)[0].content
    assert [docmem.message_text(m) for m in second].count(old) == 0
    assert second[0] == SYSTEM
    assert second[2:] == history[1:]


def test_copies_of_several_slots_go_together_in_slot_order(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting, "user", "channel"))
    bound(counting, ALICE, "user").save("U.")
    bound(counting, ALICE, "channel").save("C.")
    prepared = runtime.prepare_model_call([{"role": "user", "content": "q"}], ALICE)
    assert [m.slot for m in prepared if isinstance(m, ProjectedRecall)] == ["channel", "user"]


def test_before_last_user_placement(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    bound(counting, ALICE).save("Likes tea.")
    history = [
        SYSTEM,
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
        {"role": "tool", "content": "result"},
    ]
    prepared = runtime.prepare_model_call(history, ALICE, position="before_last_user")
    assert isinstance(prepared[3], ProjectedRecall)
    assert [m for m in prepared if not isinstance(m, ProjectedRecall)] == history
    with pytest.raises(docmem.InvalidArgument):
        runtime.prepare_model_call(history, ALICE, position="middle")  # type: ignore[arg-type]


def test_aprepare_model_call_matches_the_sync_form(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    bound(counting, ALICE).save("Likes tea.")
    history = [{"role": "user", "content": "q"}]
    assert asyncio.run(runtime.aprepare_model_call(history, ALICE)) == (
        runtime.prepare_model_call(history, ALICE)
    )


# -- the marker -------------------------------------------------------------------------------


def test_the_marker_ends_the_first_line_of_the_rendering(counting: CountingBackend) -> None:
    bound(counting, ALICE).save("Likes tea.")
    [copy] = docmem.MemoryRuntime(slots(counting)).recall(ALICE)
    first, _, rest = copy.content.partition("\n")
    assert first == "# Memory: user <!-- docmem:recall user -->"
    assert "\n" + rest == bound(counting, ALICE).recall()[0].content.partition("\n")[1] + rest
    assert docmem.is_recalled(copy.content)
    assert docmem.recalled_slot(copy.content) == "user"
    assert docmem.is_recalled("  \n" + copy.content)  # a framework that pads text


@pytest.mark.parametrize(
    "text",
    [
        "# Memory: user",
        "Hello <!-- docmem:recall user --> world",
        "Hello\n# Memory: user <!-- docmem:recall user -->",
        "<!-- docmem:recall us er -->",
        None,
        42,
    ],
)
def test_only_a_first_line_ending_in_the_marker_is_a_copy(text: object) -> None:
    assert not docmem.is_recalled(text)
    assert docmem.recalled_slot(text) is None


def test_message_text_and_role_read_common_shapes() -> None:
    class Obj:
        role = "user"
        content = ({"type": "input_text", "text": "one"}, {"type": "image"}, "two")

    class LangChainLike:
        type = "human"
        content = "hi"

    assert docmem.message_text({"role": "user", "content": "x"}) == "x"
    assert docmem.message_text(Obj()) == "one\ntwo"
    assert docmem.message_text({"content": [{"type": "image"}]}) is None
    assert docmem.message_text("plain") == "plain"
    assert docmem.message_text(object()) is None
    assert docmem.message_role(Obj()) == "user"
    assert docmem.message_role(LangChainLike()) == "user"
    assert docmem.message_role({"type": "ai"}) == "assistant"
    assert docmem.message_role(object()) is None


def test_split_recalls_by_text_finds_converted_copies() -> None:
    copy = {"role": "user", "content": "# Memory: user <!-- docmem:recall user -->\n\n0: x"}
    projected = ProjectedRecall("p", "user", None)
    conversation, copies = docmem.split_recalls(
        ["a", copy, projected, "b"], text_of=docmem.message_text
    )
    assert conversation == ["a", "b"]
    assert copies == [copy, projected]
    assert docmem.split_recalls(["a", copy, projected])[0] == ["a", copy]


# -- ledgers per conversation ----------------------------------------------------------------


def test_a_ledger_cache_stays_bounded() -> None:
    cache = docmem.LedgerCache(max_sessions=2)
    a, b = cache.get("a"), cache.get("b")
    assert cache.get("a") is a  # a is now the most recent
    cache.get("c")
    assert len(cache) == 2
    assert cache.get("a") is a
    assert cache.get("b") is not b
    cache.discard("a")
    assert len(cache) == 1  # the new b; c went when it was the least recently used
    with pytest.raises(docmem.InvalidArgument):
        docmem.LedgerCache(max_sessions=0)


def test_an_app_wide_runtime_keeps_one_ledger_per_session(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting), sessions=docmem.LedgerCache(8))
    bound(counting, ALICE).save("Likes tea.")
    one = docmem.TurnContext(operation_id="t1", scope_context=ALICE, session_id="s1")
    two = docmem.TurnContext(operation_id="t1", scope_context=BOB, session_id="s2")
    assert len(runtime.turn_started(one).messages) == 1
    assert runtime.turn_started(two).messages == []  # bob has no memory, alice's stays hers
    assert runtime.sessions is not None
    assert len(runtime.sessions.get("s1")) == 1
    assert len(runtime.ledger) == 0
    own = docmem.RecallLedger()
    runtime.turn_started(docmem.TurnContext(operation_id="t9", scope_context=ALICE), ledger=own)
    assert len(own) == 1
    runtime.context_cleared(session_id="s1")
    assert len(runtime.sessions.get("s1")) == 0


# -- scripts and notebooks --------------------------------------------------------------------


def test_mutations_without_an_id_get_a_fresh_one(tmp_path: Path) -> None:
    store = docmem.open_store(f"file://{tmp_path}?create=true")
    mem = bound(store, ALICE)
    assert mem.save("One.").index == 0
    assert mem.save("Two.").index == 1
    assert mem.remove(0).status == "removed"
    assert mem.erase().status == "erased"
    with pytest.raises(docmem.InvalidArgument):
        mem.save("Three.", mutation_id="")  # an empty id is still refused, not replaced
    store.close()


def test_save_without_an_id_is_still_exactly_once_per_call() -> None:
    store = ScriptedBackend()
    store.script = ["lost"]  # the first write lands, its answer is lost, the journal settles it
    mem = bound(store, ALICE)
    assert mem.save("Once.").index == 0
    assert mem.read().entries == {0: "Once."}


def test_tool_specs_for_a_context_leave_disabled_slots_out(
    counting: CountingBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = docmem.FileMemory(counting)
    monkeypatch.delenv("DOCMEM_ENVIRONMENT", raising=False)
    monkeypatch.delenv("DOCMEM_DEV", raising=False)
    runtime = docmem.MemoryRuntime(
        [
            docmem.MemorySlot("user", memory, scope=docmem.by_principal, namespace=NS),
            docmem.MemorySlot("team", memory, scope=lambda c: None, namespace=NS),
            docmem.MemorySlot("env", memory, scope="s"),  # default_namespace cannot resolve
        ]
    )
    assert list(runtime.tool_specs_for(ALICE)) == [
        "env__save_memory",
        "env__remove_memory",
        "user__save_memory",
        "user__remove_memory",
    ]
    assert runtime.tool_specs_for(None) == {}
    env = runtime.dispatch(ALICE, "env__save_memory", {"text": "x"})
    assert env.is_error
    assert env.text.startswith("DOCMEM_ENVIRONMENT is not set")
    assert counting.reads == 0


def test_a_marker_echoed_by_the_model_or_a_tool_is_not_a_copy(counting: CountingBackend) -> None:
    runtime = docmem.MemoryRuntime(slots(counting))
    bound(counting, ALICE).save("Likes tea.")
    echo = "# Memory: user <!-- docmem:recall user -->\n\n0: Likes tea."
    history = [
        {"role": "user", "content": "What do you remember?"},
        {"role": "assistant", "content": echo, "tool_calls": [{"id": "call_1"}]},
        {"role": "tool", "content": echo, "tool_call_id": "call_1"},
    ]
    prepared = runtime.prepare_model_call(history, ALICE)
    assert [m for m in prepared if not isinstance(m, ProjectedRecall)] == history
    assert docmem.user_text(history[1]) is None
    assert docmem.user_text({"role": "user", "content": echo}) == echo


def test_every_slot_read_finishes_before_a_failure_is_raised() -> None:
    finished = threading.Event()
    release = threading.Event()

    class Failing:
        def recall(self, context: RecallContext) -> None:
            release.set()  # the other read is in flight
            raise docmem.StoreUnavailable("the store is down")

    class Slow:
        def recall(self, context: RecallContext) -> None:
            release.wait(10)
            time.sleep(0.05)
            finished.set()

    runtime = docmem.MemoryRuntime(
        [
            docmem.MemorySlot("a", Failing(), scope="s", namespace=NS),
            docmem.MemorySlot("b", Slow(), scope="s", namespace=NS),
        ]
    )
    with pytest.raises(docmem.StoreUnavailable):
        runtime.recall(ALICE)
    assert finished.is_set(), "recall raised while another slot's read was still running"


def test_a_provider_that_recalls_from_a_pool_thread_does_not_deadlock() -> None:
    class Nested:
        def __init__(self, inner: docmem.MemoryRuntime | None) -> None:
            self.inner = inner

        def recall(self, context: RecallContext) -> list[docmem.Recalled]:
            if self.inner is not None:
                self.inner.recall(ALICE)  # from one of the pool's own threads
            return [docmem.Recalled("ok")]

    inner = docmem.MemoryRuntime(
        [docmem.MemorySlot(n, Nested(None), scope="s", namespace=NS) for n in "xy"]
    )
    names = [f"s{number}" for number in range(40)]  # more slots than the pool has threads
    outer = docmem.MemoryRuntime(
        [docmem.MemorySlot(n, Nested(inner), scope="s", namespace=NS) for n in names]
    )
    assert len(outer.recall(ALICE)) == 40


def test_slot_reads_carry_the_callers_context_variables() -> None:
    current: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="none")
    seen: list[str] = []

    class Reading:
        def recall(self, context: RecallContext) -> None:
            seen.append(current.get())

    runtime = docmem.MemoryRuntime(
        [docmem.MemorySlot(n, Reading(), scope="s", namespace=NS) for n in "abc"]
    )
    current.set("turn-7")
    runtime.recall(ALICE)
    assert seen == ["turn-7"] * 3


def test_a_forked_child_recalls_with_a_pool_of_its_own() -> None:
    class Plain:
        def recall(self, context: RecallContext) -> list[docmem.Recalled]:
            return [docmem.Recalled("ok")]

    runtime = docmem.MemoryRuntime(
        [docmem.MemorySlot(n, Plain(), scope="s", namespace=NS) for n in "ab"]
    )
    runtime.recall(ALICE)  # the parent's pool now has threads the child will not have
    context = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads, on purpose
        child = context.Process(target=_recall_twice_then_exit, args=(runtime,))
        child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung on the parent's pool")
    assert child.exitcode == 0


def _recall_twice_then_exit(runtime: docmem.MemoryRuntime) -> None:
    assert len(runtime.recall(ALICE)) == 2
    assert len(runtime.recall(ALICE)) == 2
