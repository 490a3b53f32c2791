"""Tool definitions for OpenAI- and Anthropic-style APIs, and the tool-call dispatcher."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import docmem

NS = "tests:formats"


@pytest.fixture
def memory(store: docmem.Backend) -> docmem.FileMemory:
    return docmem.FileMemory(store)


@pytest.fixture
def turn(memory: docmem.FileMemory) -> docmem.TurnMemory:
    runtime = docmem.MemoryRuntime(
        [
            docmem.MemorySlot(
                "user", memory, scope="alice", namespace=NS, description="About the person."
            )
        ]
    )
    return runtime.turn_started(docmem.TurnContext(operation_id="t1", session_id="session-1"))


def entries(memory: docmem.FileMemory) -> list[str]:
    scope = docmem.lock_scope(namespace=NS, scope="alice")
    document = memory.bind(scope, slot="user").read()
    return [] if document is None else list(document.entries.values())


# -- definitions ---------------------------------------------------------------------------


def test_openai_tools_shape(turn: docmem.TurnMemory) -> None:
    definitions = docmem.openai_tools(turn.tools)
    assert [d["function"]["name"] for d in definitions] == list(turn.tools)
    assert sorted(d["function"]["name"] for d in definitions) == [
        "user__remove_memory",
        "user__save_memory",
    ]
    for definition in definitions:
        assert set(definition) == {"type", "function"}
        assert definition["type"] == "function"
        function = definition["function"]
        assert set(function) == {"name", "description", "parameters"}
        tool = turn.tools[function["name"]]
        assert function["description"] == tool.description
        assert function["description"].startswith("About the person.\n\n")
        assert function["parameters"] == dict(tool.parameters)
        assert function["parameters"]["type"] == "object"
        assert function["parameters"]["additionalProperties"] is False
    assert json.loads(json.dumps(definitions)) == definitions  # plain JSON


def test_anthropic_tools_shape(turn: docmem.TurnMemory) -> None:
    definitions = docmem.anthropic_tools(turn.tools)
    assert sorted(d["name"] for d in definitions) == ["user__remove_memory", "user__save_memory"]
    for definition in definitions:
        assert set(definition) == {"name", "description", "input_schema"}
        tool = turn.tools[definition["name"]]
        assert definition["description"] == tool.description
        assert definition["input_schema"] == dict(tool.parameters)
    save = next(d for d in definitions if d["name"] == "user__save_memory")
    assert save["input_schema"]["required"] == ["text"]
    assert save["input_schema"]["properties"]["text"]["type"] == "string"
    assert json.loads(json.dumps(definitions)) == definitions


def test_definitions_do_not_share_the_tool_schema(turn: docmem.TurnMemory) -> None:
    before = dict(turn.tools["user__save_memory"].parameters)
    docmem.openai_tools(turn.tools)[0]["function"]["parameters"]["extra"] = 1
    docmem.anthropic_tools(turn.tools)[0]["input_schema"]["extra"] = 1
    assert dict(turn.tools["user__save_memory"].parameters) == before


def test_no_tools_no_definitions() -> None:
    assert docmem.openai_tools({}) == []
    assert docmem.anthropic_tools({}) == []


# -- dispatch -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [{"text": "Likes tea."}, '{"text": "Likes tea."}', b'{"text": "Likes tea."}'],
    ids=["dict", "json text", "json bytes"],
)
def test_dispatch_by_qualified_name(
    turn: docmem.TurnMemory, memory: docmem.FileMemory, arguments: Any
) -> None:
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    result = dispatcher.dispatch("user__save_memory", arguments, call_id="c1")
    assert result == docmem.ToolResult("Saved as memory 0.")
    assert entries(memory) == ["Likes tea."]
    removed = dispatcher.dispatch("user__remove_memory", '{"index": 0}', call_id="c2")
    assert removed == docmem.ToolResult("Removed memory 0.")
    assert entries(memory) == []


@pytest.mark.parametrize("name", ["save_memory", "user__forget", "other__save_memory", ""])
def test_an_unknown_name_is_an_error_result(
    turn: docmem.TurnMemory, memory: docmem.FileMemory, name: str
) -> None:
    result = docmem.ToolDispatcher(turn.tools).dispatch(name, {"text": "Likes tea."})
    assert result.is_error
    assert "Unknown tool" in result.text
    assert "user__save_memory" in result.text  # says what is available
    assert entries(memory) == []


def test_unknown_name_with_no_tools() -> None:
    result = docmem.ToolDispatcher({}).dispatch("user__save_memory", {})
    assert result.is_error
    assert "none" in result.text


@pytest.mark.parametrize("arguments", ['{"text": ', "not json", "{'text': 'x'}", b"\xff"])
def test_bad_json_is_an_error_result(
    turn: docmem.TurnMemory, memory: docmem.FileMemory, arguments: Any
) -> None:
    result = docmem.ToolDispatcher(turn.tools).dispatch("user__save_memory", arguments)
    assert result.is_error
    assert "not JSON" in result.text
    assert entries(memory) == []


@pytest.mark.parametrize(
    "arguments",
    ['{"text": ' + "[" * 100_000 + "]" * 100_000 + "}", {"text": "x", 1: "a", "b": 2}],
    ids=["nested too deeply", "mixed key types"],
)
def test_arguments_no_parser_or_schema_check_survives_are_error_results(
    turn: docmem.TurnMemory, memory: docmem.FileMemory, arguments: Any
) -> None:
    result = docmem.ToolDispatcher(turn.tools).dispatch("user__save_memory", arguments)
    assert result.is_error
    assert result.text.startswith("Invalid call to user__save_memory:")
    assert entries(memory) == []


@pytest.mark.parametrize(
    "arguments",
    ["[]", '"text"', "null", "", "{}", '{"text": 3}', {"text": "x", "scope": "bob"}, ["x"]],
    ids=["array", "string", "null", "empty", "no text", "wrong type", "scope", "list"],
)
def test_arguments_that_break_the_schema_are_error_results(
    turn: docmem.TurnMemory, memory: docmem.FileMemory, arguments: Any
) -> None:
    result = docmem.ToolDispatcher(turn.tools).dispatch("user__save_memory", arguments)
    assert result.is_error
    assert result.text.startswith("Invalid call to user__save_memory:")
    assert entries(memory) == []


def test_a_refusal_is_an_error_result_without_content(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    result = docmem.ToolDispatcher(turn.tools).dispatch(
        "user__save_memory", {"text": f"my key is {secret}"}
    )
    assert result.is_error
    assert secret not in result.text
    assert entries(memory) == []


# -- idempotency through call ids -----------------------------------------------------------------


def test_call_id_and_session_id_make_a_save_idempotent(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    first = dispatcher.dispatch("user__save_memory", {"text": "Likes tea."}, call_id="call-1")
    again = dispatcher.dispatch("user__save_memory", '{"text": "Likes tea."}', call_id="call-1")
    # A fresh call would be "Already saved as memory 0."; a replay reports what the call did.
    assert first == again == docmem.ToolResult("Saved as memory 0.")
    assert entries(memory) == ["Likes tea."]
    fresh = dispatcher.dispatch("user__save_memory", {"text": "Likes tea."}, call_id="call-2")
    assert fresh == docmem.ToolResult("Already saved as memory 0.")


def test_a_replayed_remove_does_not_remove_twice(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    dispatcher.dispatch("user__save_memory", {"text": "one"}, call_id="c1")
    first = dispatcher.dispatch("user__remove_memory", {"index": 0}, call_id="c2")
    again = dispatcher.dispatch("user__remove_memory", {"index": 0}, call_id="c2")
    assert first == again == docmem.ToolResult("Removed memory 0.")


def test_the_same_call_id_for_another_request_is_an_error(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    dispatcher.dispatch("user__save_memory", {"text": "Likes tea."}, call_id="call-1")
    clash = dispatcher.dispatch("user__save_memory", {"text": "Likes coffee."}, call_id="call-1")
    assert clash.is_error
    assert "coffee" not in clash.text
    assert entries(memory) == ["Likes tea."]


def test_the_session_id_separates_call_ids(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    one = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    two = docmem.ToolDispatcher(turn.tools, session_id="session-2")
    assert one.dispatch("user__save_memory", {"text": "first"}, call_id="call-1") == (
        docmem.ToolResult("Saved as memory 0.")
    )
    assert two.dispatch("user__save_memory", {"text": "second"}, call_id="call-1") == (
        docmem.ToolResult("Saved as memory 1.")
    )
    assert entries(memory) == ["first", "second"]


def test_turn_dispatch_uses_the_turns_session_id(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    assert turn.session_id == "session-1"
    assert turn.dispatch("user__save_memory", {"text": "Likes tea."}, call_id="c1") == (
        docmem.ToolResult("Saved as memory 0.")
    )
    # The same host call, replayed through a dispatcher of the same session: no second entry.
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    assert dispatcher.dispatch("user__save_memory", {"text": "Likes tea."}, call_id="c1") == (
        docmem.ToolResult("Saved as memory 0.")
    )
    assert turn.dispatch("user__save_memory", {"text": "Other."}, call_id="c1").is_error
    assert entries(memory) == ["Likes tea."]


def test_without_a_call_id_every_dispatch_is_a_new_mutation(
    turn: docmem.TurnMemory, memory: docmem.FileMemory
) -> None:
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")
    assert dispatcher.dispatch("user__save_memory", {"text": "a"}) == docmem.ToolResult(
        "Saved as memory 0."
    )
    assert dispatcher.dispatch("user__save_memory", {"text": "b"}) == docmem.ToolResult(
        "Saved as memory 1."
    )
    assert entries(memory) == ["a", "b"]


def test_async_dispatch(turn: docmem.TurnMemory, memory: docmem.FileMemory) -> None:
    dispatcher = docmem.ToolDispatcher(turn.tools, session_id="session-1")

    async def scenario() -> list[docmem.ToolResult]:
        first = await dispatcher.adispatch("user__save_memory", {"text": "x"}, call_id="c1")
        again = await dispatcher.adispatch("user__save_memory", '{"text": "x"}', call_id="c1")
        unknown = await dispatcher.adispatch("nope", {})
        return [first, again, unknown]

    first, again, unknown = asyncio.run(scenario())
    assert first == again == docmem.ToolResult("Saved as memory 0.")
    assert unknown.is_error
    assert entries(memory) == ["x"]
