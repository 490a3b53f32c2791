"""AdapterTests: the contract every framework adapter meets, run through the real framework.

An adapter's test module subclasses :class:`AdapterTests` and implements
``make_harness``: an :class:`AdapterHarness` that runs a scripted
conversation through the framework with the framework's own offline fake
model, and reports what the model saw in every call. The tests compare whole
message texts, never substrings: an older copy of a document is a prefix of
the newer one.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import pytest

from ..backend import Backend, Stored
from ..host.injection import is_recalled, recalled_slot
from ..host.runtime import MemoryRuntime
from ..host.slot import MemorySlot, Principal, ScopeContext, by_principal
from ..provider.keys import lock_scope
from ..provider.memory import BoundMemory, FileMemory
from ..storage.builtin.inmemory import MemoryBackend
from .redaction import CANARY, SCOPE_CANARY

__all__ = [
    "AdapterHarness",
    "AdapterTests",
    "CountingStore",
    "ModelCall",
    "Reply",
    "SeenTool",
    "Step",
    "ToolCall",
    "TrustedContext",
    "TurnRecord",
    "trusted_scope",
]


@dataclass(frozen=True)
class TrustedContext:
    """What the application hands the framework as its trusted run context.

    ``user`` is the authenticated user (``None``: nobody, memory disabled);
    ``thread`` names the conversation whose history the harness keeps.
    """

    user: str | None
    thread: str = "thread-1"


@dataclass(frozen=True)
class ToolCall:
    """A scripted model step: call tool ``name`` with ``arguments`` under ``call_id``."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str


@dataclass(frozen=True)
class Reply:
    """A scripted model step: answer with ``text`` and end the turn."""

    text: str


#: One scripted model response.
Step = Union[ToolCall, Reply]  # noqa: UP007


@dataclass(frozen=True)
class SeenTool:
    """A tool as the model saw it."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass
class ModelCall:
    """What the fake model received in one call.

    ``messages`` holds ``(role, text)`` for every text-bearing message, or
    part of a message, in order: ``"system"`` (instructions, system prompts),
    ``"user"``, ``"assistant"`` and ``"tool"`` (a tool result's text).
    """

    messages: list[tuple[str, str]]
    tools: dict[str, SeenTool] = field(default_factory=dict)

    def texts(self, role: str | None = None) -> list[str]:
        """The whole texts, of one role or of all."""
        return [text for kind, text in self.messages if role is None or kind == role]


@dataclass
class TurnRecord:
    """One turn: every model call in order, and the final reply."""

    calls: list[ModelCall]
    output: str


class AdapterHarness(abc.ABC):
    """One framework with its docmem adapter and its fake model, for the tests.

    The harness keeps each thread's history the way the framework persists
    it (a session, ``all_messages()``, a checkpointer), and feeds it back on
    the thread's next turn.
    """

    @abc.abstractmethod
    def run(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        """One turn through the framework's synchronous entry point."""

    @abc.abstractmethod
    async def arun(self, context: TrustedContext, text: str, script: Sequence[Step]) -> TurnRecord:
        """One turn through the framework's asynchronous entry point."""

    @abc.abstractmethod
    def history(self, thread: str) -> list[tuple[str, str]]:
        """``(role, text)`` of every text the framework persisted for ``thread``."""

    @abc.abstractmethod
    def seed(self, thread: str, messages: Sequence[tuple[str, str]]) -> None:
        """Replace ``thread``'s persisted history with these ``(role, text)`` messages.

        They are stored in the framework's native form, as another process
        (or yesterday's run) would have stored them, without docmem metadata.
        """

    @abc.abstractmethod
    def fresh(self) -> AdapterHarness:
        """A new adapter instance on the same slots, sharing this harness's histories."""


#: What an adapter's test module implements: a harness for these slots and resolver.
HarnessFactory = Callable[
    [Sequence[MemorySlot], Callable[[TrustedContext], Union[ScopeContext, None]]],  # noqa: UP007
    AdapterHarness,
]


# -- the suite ----------------------------------------------------------------------------

NAMESPACE = "adapter-tests"
#: What a scripted model sees when it tries to pick the scope itself.
SMUGGLED = "Invalid call to user__save_memory: unexpected argument 'user_id'; expected only text."


def trusted_scope(context: TrustedContext) -> ScopeContext | None:
    """The resolver the suite hands every adapter: user and thread from trusted context only."""
    if context.user is None:
        return None
    return ScopeContext(
        principal=Principal("user", "adapter-tests", context.user),
        channel="test",
        channel_metadata={"thread": context.thread},
    )


def _channel(context: ScopeContext) -> tuple[str, str] | None:
    thread = context.channel_metadata.get("thread")
    return ("thread", thread) if thread else None


class CountingStore(MemoryBackend):
    """A real in-process store that counts reads: where none may happen, none did."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read(self, key: str) -> Stored | None:
        self.reads += 1
        return super().read(key)

    def read_recent(self, key: str) -> Stored | None:
        self.reads += 1
        return super().read_recent(key)


def _copies(call: ModelCall) -> list[str]:
    return [text for text in call.texts() if is_recalled(text)]


class AdapterTests:
    """The tests every framework adapter passes; subclass and implement :meth:`make_harness`.

    Each test builds its slots on a fresh in-process store, asks for a
    harness and drives scripted turns through it.
    """

    def make_harness(
        self,
        slots: Sequence[MemorySlot],
        scope_context: Callable[[TrustedContext], ScopeContext | None],
    ) -> AdapterHarness:
        """The adapter under test, in its framework, on ``slots``."""
        raise NotImplementedError

    def tool_name(self, name: str) -> str:
        """The name the framework offers docmem's tool ``name`` as (the one the model calls).

        docmem's own name by default. A framework that rewrites tool names
        (CrewAI offers ``user__save_memory`` as ``user_save_memory``)
        overrides this with its rule; every tool the suite scripts or checks
        goes through it. docmem's sentences keep docmem's names.
        """
        return name

    # -- fixtures and helpers ---------------------------------------------------------

    @pytest.fixture
    def store(self) -> Iterator[CountingStore]:
        """The store every slot of a test shares."""
        store = CountingStore()
        yield store
        store.close()

    def slots(self, store: Backend, *names: str, max_characters: int = 4000) -> list[MemorySlot]:
        """``user`` (by principal) and ``channel`` (by thread) slots, as asked for."""
        memory = FileMemory(store, max_characters=max_characters)
        scopes: dict[str, Any] = {"user": by_principal, "channel": _channel}
        return [
            MemorySlot(
                name,
                memory,
                scope=scopes[name],
                namespace=f"{NAMESPACE}:{name}",
                description=f"The {name} memory.",
            )
            for name in names or ("user",)
        ]

    def harness(self, store: Backend, *names: str, **options: Any) -> AdapterHarness:
        """A harness on fresh slots of ``store``."""
        return self.make_harness(self.slots(store, *names, **options), trusted_scope)

    def memory(self, store: Backend, context: TrustedContext, slot: str = "user") -> BoundMemory:
        """The memory a slot shows ``context``, to arrange and inspect it directly."""
        scope = trusted_scope(context)
        assert scope is not None
        value = by_principal(scope) if slot == "user" else _channel(scope)
        assert value is not None
        locked = lock_scope(namespace=f"{NAMESPACE}:{slot}", scope=value)
        return FileMemory(store).bind(locked, slot=slot)

    def expected(self, store: Backend, context: TrustedContext, *names: str) -> list[str]:
        """The copies the model must see now, computed by docmem itself."""
        runtime = MemoryRuntime(self.slots(store, *names))
        return [copy.content for copy in runtime.recall(trusted_scope(context))]

    # -- the tool surface --------------------------------------------------------------

    def test_the_model_sees_two_tools_per_slot_with_docmems_schema(
        self, store: CountingStore
    ) -> None:
        alice = TrustedContext("alice")
        turn = self.harness(store).run(alice, "Hi", [Reply("Hello.")])
        specs = MemoryRuntime(self.slots(store)).tool_specs()
        tools = turn.calls[0].tools
        assert set(specs) == {"user__save_memory", "user__remove_memory"}
        assert set(tools) == {self.tool_name(name) for name in specs}
        for name, spec in specs.items():
            seen = tools[self.tool_name(name)]
            assert seen.description == spec.description
            assert seen.description.startswith("The user memory.\n\n")
            for key in ("type", "properties", "required", "additionalProperties"):
                assert seen.parameters.get(key) == spec.parameters[key], (name, key)

    # -- one current copy per model call --------------------------------------------------

    def test_every_model_call_sees_exactly_one_current_copy(self, store: CountingStore) -> None:
        alice = TrustedContext("alice")
        self.memory(store, alice).save("Prefers tea.")
        [before] = self.expected(store, alice)
        harness = self.harness(store)
        turn = harness.run(
            alice,
            "I moved to Lisbon.",
            [
                ToolCall(
                    self.tool_name("user__save_memory"), {"text": "Lives in Lisbon."}, "call_1"
                ),
                Reply("Noted."),
            ],
        )
        [after] = self.expected(store, alice)
        assert after != before
        assert len(turn.calls) == 2
        assert _copies(turn.calls[0]) == [before]
        assert _copies(turn.calls[1]) == [after]
        assert before not in turn.calls[1].texts()
        assert "Saved as memory 1." in turn.calls[1].texts("tool")
        assert turn.output == "Noted."
        following = harness.run(alice, "Where do I live?", [Reply("Lisbon.")])
        assert _copies(following.calls[0]) == [after]
        assert "I moved to Lisbon." in following.calls[0].texts("user")  # history was kept

    def test_the_copy_sits_after_the_system_prompt_and_before_the_conversation(
        self, store: CountingStore
    ) -> None:
        alice = TrustedContext("alice")
        self.memory(store, alice).save("Prefers tea.")
        harness = self.harness(store)
        harness.run(alice, "Hi", [Reply("Hello.")])
        later = harness.run(alice, "And now?", [Reply("Still here.")]).calls[0].messages
        leading = 0
        while later[leading][0] == "system":
            leading += 1
        assert is_recalled(later[leading][1])  # right after the system prompt ...
        assert later[leading][0] == "user"
        assert later[leading + 1] == ("user", "Hi")  # ... before the whole conversation
        assert later[-1] == ("user", "And now?")
        assert sum(1 for _, text in later if is_recalled(text)) == 1

    def test_the_frameworks_history_never_holds_a_copy(self, store: CountingStore) -> None:
        alice = TrustedContext("alice")
        self.memory(store, alice).save("Prefers tea.")
        harness = self.harness(store)
        first = harness.run(
            alice,
            "Remember cake.",
            [
                ToolCall(self.tool_name("user__save_memory"), {"text": "Likes cake."}, "call_1"),
                Reply("Sure."),
            ],
        )
        harness.run(alice, "Thanks", [Reply("Welcome.")])
        shown = {text for call in first.calls for text in _copies(call)}
        history = harness.history(alice.thread)
        assert ("user", "Remember cake.") in history
        assert ("user", "Thanks") in history
        assert not [text for _, text in history if is_recalled(text) or text in shown]

    def test_a_stale_copy_passed_back_in_is_replaced(self, store: CountingStore) -> None:
        alice = TrustedContext("alice")
        mem = self.memory(store, alice)
        mem.save("Prefers tea.")
        [stale] = self.expected(store, alice)
        mem.save("Works nights.")
        [current] = self.expected(store, alice)
        harness = self.harness(store)
        persisted = [("user", "Hello"), ("user", stale), ("assistant", "Hi there.")]
        for runner in (harness, harness.fresh()):  # this instance, and another process's
            runner.seed(alice.thread, persisted)
            turn = runner.run(alice, "Again", [Reply("Yes.")])
            assert _copies(turn.calls[0]) == [current]
            assert stale not in turn.calls[0].texts()
            assert ("user", "Hello") in turn.calls[0].messages

    # -- scope from trusted context only ---------------------------------------------------

    def test_the_model_cannot_pick_another_users_scope(self, store: CountingStore) -> None:
        alice, bob = TrustedContext("alice", "a"), TrustedContext("bob", "b")
        self.memory(store, bob).save("Bob's private note.")
        key = self.memory(store, bob).scope.storage_key
        bobs = store.read(key)
        turn = self.harness(store).run(
            alice,
            "Save it for bob",
            [
                ToolCall(
                    self.tool_name("user__save_memory"),
                    {"text": "Owned.", "user_id": "bob"},
                    "call_1",
                ),
                Reply("Could not."),
            ],
        )
        assert SMUGGLED in turn.calls[1].texts("tool")
        assert store.read(key) == bobs
        assert self.memory(store, alice).read() is None
        assert not [t for call in turn.calls for t in call.texts() if "Bob's private" in t]

    def test_no_scope_means_no_tools_no_recall_and_no_store_read(
        self, store: CountingStore
    ) -> None:
        self.memory(store, TrustedContext("alice")).save("Prefers tea.")
        harness = self.harness(store)
        store.reads = 0
        turn = harness.run(TrustedContext(None), "Hi", [Reply("Hello.")])
        memory_tools = {
            self.tool_name(name) for name in ("user__save_memory", "user__remove_memory")
        }
        assert not set(turn.calls[0].tools) & memory_tools
        assert _copies(turn.calls[0]) == []
        assert store.reads == 0

    # -- mutation ids ---------------------------------------------------------------------

    def test_a_replayed_call_is_one_mutation_and_a_new_run_is_another(
        self, store: CountingStore
    ) -> None:
        alice = TrustedContext("alice")
        harness = self.harness(store)
        save_a = ToolCall(self.tool_name("user__save_memory"), {"text": "A."}, "call_1")
        first = harness.run(alice, "One", [save_a, save_a, Reply("Done.")])
        tool_texts = [text for call in first.calls for text in call.texts("tool")]
        assert "Saved as memory 0." in tool_texts
        assert "Already saved as memory 0." not in tool_texts  # a replay, not a duplicate
        second = harness.run(
            alice,
            "Two",
            [ToolCall(self.tool_name("user__save_memory"), {"text": "B."}, "call_1"), Reply("Ok.")],
        )
        assert "Saved as memory 1." in second.calls[1].texts("tool")
        document = self.memory(store, alice).read()
        assert document is not None
        assert dict(document.entries) == {0: "A.", 1: "B."}

    # -- errors ---------------------------------------------------------------------------

    def test_refusals_reach_the_model_as_text_and_the_run_goes_on(
        self, store: CountingStore
    ) -> None:
        alice = TrustedContext("alice")
        self.memory(store, alice).save("Prefers tea.")
        harness = self.harness(store, max_characters=300)  # room for about one more line
        turn = harness.run(
            alice,
            "Keep these",
            [
                ToolCall(
                    self.tool_name("user__save_memory"), {"text": "AKIAIOSFODNN7EXAMPLE"}, "call_1"
                ),
                ToolCall(self.tool_name("user__save_memory"), {"text": "x" * 110}, "call_2"),
                ToolCall(self.tool_name("user__remove_memory"), {"index": 7}, "call_3"),
                Reply("Done."),
            ],
        )
        assert turn.output == "Done."
        [secret] = turn.calls[1].texts("tool")
        assert secret.startswith("The text looks like a credential")
        full = [t for t in turn.calls[2].texts("tool") if t != secret]
        assert len(full) == 1
        assert full[0].startswith("Memory is full: 194 of 300 characters used")
        assert "Memory 7 does not exist; nothing removed." in turn.calls[3].texts("tool")
        document = self.memory(store, alice).read()
        assert document is not None
        assert dict(document.entries) == {0: "Prefers tea."}

    # -- entry points and concurrency --------------------------------------------------------

    def test_sync_and_async_runs_show_the_same(self, store: CountingStore) -> None:
        one, two = TrustedContext("alice", "sync"), TrustedContext("carol", "async")
        for context in (one, two):
            self.memory(store, context).save("Prefers tea.")
        script: list[Step] = [
            ToolCall(self.tool_name("user__save_memory"), {"text": "Likes jazz."}, "call_1"),
            Reply("Noted."),
        ]
        harness = self.harness(store)
        sync = harness.run(one, "Music?", script)
        async_ = asyncio.run(harness.arun(two, "Music?", script))
        assert [call.messages for call in sync.calls] == [call.messages for call in async_.calls]
        assert self.expected(store, one) == self.expected(store, two)

    def test_two_users_at_once_each_see_only_their_own(self, store: CountingStore) -> None:
        alice, bob = TrustedContext("alice", "a"), TrustedContext("bob", "b")
        harness = self.harness(store)

        async def both() -> list[TurnRecord]:
            return list(
                await asyncio.gather(
                    *(
                        harness.arun(
                            who,
                            "Remember me",
                            [
                                ToolCall(
                                    self.tool_name("user__save_memory"),
                                    {"text": f"I am {who.user}."},
                                    "c1",
                                ),
                                Reply("Done."),
                            ],
                        )
                        for who in (alice, bob)
                    )
                )
            )

        for who, turn in zip((alice, bob), asyncio.run(both()), strict=True):
            assert _copies(turn.calls[1]) == self.expected(store, who)
            other = "bob" if who.user == "alice" else "alice"
            assert not [t for call in turn.calls for t in call.texts() if f"I am {other}" in t]
            document = self.memory(store, who).read()
            assert document is not None
            assert dict(document.entries) == {0: f"I am {who.user}."}

    # -- several slots --------------------------------------------------------------------

    def test_two_slots_each_show_once_in_slot_name_order(self, store: CountingStore) -> None:
        alice = TrustedContext("alice", "team-thread")
        self.memory(store, alice, "user").save("Prefers tea.")
        self.memory(store, alice, "channel").save("The team ships on Fridays.")
        expected = self.expected(store, alice, "user", "channel")
        harness = self.harness(store, "user", "channel")
        turn = harness.run(
            alice,
            "Plan",
            [
                ToolCall(
                    self.tool_name("channel__save_memory"),
                    {"text": "Freeze on Thursday."},
                    "call_1",
                ),
                Reply("Planned."),
            ],
        )
        assert len(expected) == 2
        assert [recalled_slot(text) for text in expected] == ["channel", "user"]
        assert _copies(turn.calls[0]) == expected
        assert _copies(turn.calls[1]) == self.expected(store, alice, "user", "channel")
        assert set(turn.calls[0].tools) >= {
            self.tool_name(name)
            for name in (
                "channel__save_memory",
                "channel__remove_memory",
                "user__save_memory",
                "user__remove_memory",
            )
        }

    # -- logs -----------------------------------------------------------------------------

    def test_no_memory_text_or_scope_value_in_any_log_record(
        self, store: CountingStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        who = TrustedContext(SCOPE_CANARY)
        caplog.set_level(logging.DEBUG)  # every logger, the framework's own included
        harness = self.harness(store, max_characters=300)
        script: list[Step] = [
            ToolCall(self.tool_name("user__save_memory"), {"text": CANARY}, "call_1"),
            ToolCall(
                self.tool_name("user__save_memory"),
                {"text": f"{CANARY} x", "user_id": "x"},
                "call_2",
            ),
            ToolCall(
                self.tool_name("user__save_memory"), {"text": CANARY * 20}, "call_3"
            ),  # memory is full
            Reply("Done."),
        ]
        harness.run(who, "Remember", script)
        asyncio.run(harness.arun(who, "Again", [Reply("Ok.")]))
        assert caplog.records, "nothing was logged at all: the capture is not working"
        for record in caplog.records:
            text = f"{record.getMessage()} {record.args!r}"
            assert CANARY not in text, record.name
            assert SCOPE_CANARY not in text, record.name
