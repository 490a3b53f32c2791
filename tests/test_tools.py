"""The model-facing tools: names, schemas, argument checks and safe results."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import docmem
from docmem.provider.tools import (
    SAVE_MEMORY,
    check_slot_name,
    dispatch_call,
    mutation_id_for,
    qualify,
)


def stored(mem: docmem.BoundMemory) -> bytes | None:
    found = mem._store.read(mem.scope.storage_key)
    return found.data if found else None


def test_tool_names_schemas_and_descriptions(mem: docmem.BoundMemory) -> None:
    tools = mem.tools()
    assert sorted(tools) == ["user__remove_memory", "user__save_memory"]
    save, remove = tools["user__save_memory"], tools["user__remove_memory"]
    assert save.name == "user__save_memory"
    assert save.parameters["required"] == ["text"]
    assert save.parameters["properties"]["text"]["type"] == "string"
    assert save.parameters["additionalProperties"] is False
    assert remove.parameters["properties"]["index"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 2**53 - 1,
        "description": "The index shown before the note.",
    }
    assert "`user` memory" in save.description
    assert callable(save.handler)


def test_save_and_remove_sentences(mem: docmem.BoundMemory) -> None:
    tools = mem.tools()
    save, remove = tools["user__save_memory"], tools["user__remove_memory"]
    assert save.call({"text": "Prefers metric units."}) == docmem.ToolResult("Saved as memory 0.")
    assert save({"text": "Prefers metric units."}) == docmem.ToolResult(
        "Already saved as memory 0."
    )
    assert remove.call({"index": 0}) == docmem.ToolResult("Removed memory 0.")
    assert remove.call({"index": 7}) == docmem.ToolResult(
        "Memory 7 does not exist; nothing removed."
    )


BAD_CALLS: list[tuple[str, Any, str]] = [
    ("user__save_memory", {"text": 5}, "must be a string"),
    ("user__save_memory", {"text": ""}, "must not be empty"),
    ("user__save_memory", {"text": "   "}, "empty"),
    ("user__save_memory", {"text": "x" * 1_000_000}, "over 64 KiB"),
    ("user__save_memory", {"text": "y" * 3000}, "at most 2,048"),
    ("user__save_memory", {}, "missing required argument 'text'"),
    ("user__save_memory", {"text": "a", "scope": "other-user"}, "unexpected argument 'scope'"),
    ("user__save_memory", ["a"], "must be a JSON object"),
    ("user__save_memory", None, "must be a JSON object"),
    ("user__save_memory", {"text": "key AKIAIOSFODNN7EXAMPLE"}, "looks like a credential"),
    ("user__save_memory", {"text": "bell\u0007"}, "forbidden character"),
    ("user__remove_memory", {"index": -1}, "at least 0"),
    ("user__remove_memory", {"index": "1"}, "must be an integer"),
    ("user__remove_memory", {"index": 1.0}, "must be an integer"),
    ("user__remove_memory", {"index": True}, "must be an integer"),
    ("user__remove_memory", {"index": 2**53}, "at most"),
    ("user__remove_memory", {}, "missing required argument 'index'"),
]


@pytest.mark.parametrize(("tool", "arguments", "fragment"), BAD_CALLS)
def test_bad_calls_return_an_error_result_and_change_nothing(
    mem: docmem.BoundMemory, tool: str, arguments: Any, fragment: str
) -> None:
    mem.save("existing", mutation_id="seed")
    before = stored(mem)
    result = mem.tools()[tool].call(arguments, call_id="c1", session_id="s")
    assert result.is_error
    assert fragment in result.text
    assert len(result.text) < 300
    assert "Traceback" not in result.text
    assert stored(mem) == before


def test_call_ids_make_tool_calls_idempotent(mem: docmem.BoundMemory) -> None:
    save = mem.tools()["user__save_memory"]
    first = save.call({"text": "Once."}, call_id="call_1", session_id="sess")
    mem.save("In between.", mutation_id="other")
    again = save.call({"text": "Once."}, call_id="call_1", session_id="sess")
    assert first == again == docmem.ToolResult("Saved as memory 0.")
    assert mem.inspect("sess/call_1") == docmem.MutationRecord("save", "saved", 0, 1)
    document = mem.read()
    assert document is not None
    assert document.revision == 2


def test_reused_call_id_with_other_arguments_is_an_error_result(mem: docmem.BoundMemory) -> None:
    save = mem.tools()["user__save_memory"]
    save.call({"text": "A."}, call_id="call_1", session_id="sess")
    result = save.call({"text": "B."}, call_id="call_1", session_id="sess")
    assert result.is_error
    assert "already used" in result.text


def test_same_call_id_in_another_session_is_a_new_mutation(mem: docmem.BoundMemory) -> None:
    save = mem.tools()["user__save_memory"]
    save.call({"text": "A."}, call_id="call_1", session_id="s1")
    assert save.call({"text": "B."}, call_id="call_1", session_id="s2").text == (
        "Saved as memory 1."
    )


def test_calls_without_call_id_get_fresh_ids(mem: docmem.BoundMemory) -> None:
    save = mem.tools()["user__save_memory"]
    save.call({"text": "A."})
    save.call({"text": "B."})
    document = mem.read()
    assert document is not None
    assert len({record.id_digest for record in document.journal}) == 2


def test_acall(mem: docmem.BoundMemory) -> None:
    save = mem.tools()["user__save_memory"]
    result = asyncio.run(save.acall({"text": "async"}, call_id="c", session_id="s"))
    assert result == docmem.ToolResult("Saved as memory 0.")
    bad = asyncio.run(save.acall({"text": 1}))
    assert bad.is_error


def test_mutation_id_for() -> None:
    assert mutation_id_for("call_1", "sess") == "sess/call_1"
    assert mutation_id_for(None, "sess") != mutation_id_for(None, "sess")
    # a call id alone may repeat across conversations: it is not trusted alone
    assert mutation_id_for("call_1", None) != mutation_id_for("call_1", None)
    # no two (session, call) pairs share an id
    assert mutation_id_for("c", "a/b") != mutation_id_for("b/c", "a")
    assert mutation_id_for("c", "a%2Fb") != mutation_id_for("c", "a/b")


def test_call_id_without_session_never_replays_another_conversation(
    mem: docmem.BoundMemory,
) -> None:
    save = mem.tools()["user__save_memory"]
    remove = mem.tools()["user__remove_memory"]
    assert save.call({"text": "Once."}, call_id="call_0").text == "Saved as memory 0."
    remove.call({"index": 0}, call_id="call_1")
    # the next conversation numbers its calls from call_0 again
    assert save.call({"text": "Once."}, call_id="call_0").text == "Saved as memory 1."


@pytest.mark.parametrize("name", ["user", "a", "team-channel", "a_b", "A9-x_y-z", "x" * 48])
def test_valid_slot_names(name: str) -> None:
    assert check_slot_name(name) == name
    assert qualify(name, "save_memory") == f"{name}__save_memory"


@pytest.mark.parametrize("name", ["", "a__b", "_a", "a_", "a b", "a.b", "x" * 49, "é"])
def test_invalid_slot_names(name: str) -> None:
    with pytest.raises(docmem.InvalidArgument):
        check_slot_name(name)


def test_bind_checks_slot_name(store: docmem.Backend, scope: docmem.LockedScope) -> None:
    with pytest.raises(docmem.InvalidArgument):
        docmem.FileMemory(store).bind(scope, slot="bad__slot")
    with pytest.raises(docmem.InvalidArgument):
        docmem.FileMemory(store).bind("not a scope", slot="user")  # type: ignore[arg-type]


# -- arguments the model (or a host) should never be able to crash a call with ----------------


class Unreadable(dict):  # type: ignore[type-arg]
    """A mapping whose keys cannot even be listed."""

    def __iter__(self) -> Any:
        raise RuntimeError("a hostile mapping")


MIXED_KEYS: list[tuple[Any, str]] = [
    ({"text": "x", 1: "a", "b": 2}, "unexpected argument 'b'"),
    (
        {"text": "x", 1: "a", (2, 3): "b"},
        "unexpected argument whose name is not a plain identifier",
    ),
    ({"text": "x", None: 1, 2.5: 2, b"k": 3}, "not a plain identifier"),
    ({"text": "x", "z" * 10_000: 1}, "not a plain identifier"),
    ({"text": "x", "two words": 1}, "not a plain identifier"),
    (Unreadable(text="x"), "could not be read"),
]


@pytest.mark.parametrize(("arguments", "fragment"), MIXED_KEYS)
def test_extra_keys_of_any_type_are_an_error_result(
    mem: docmem.BoundMemory, arguments: Any, fragment: str
) -> None:
    result = mem.tools()["user__save_memory"].call(arguments, call_id="c", session_id="s")
    assert result.is_error
    assert fragment in result.text
    assert len(result.text) < 300
    assert stored(mem) is None


DEEP = 100_000


@pytest.mark.parametrize(
    "text",
    [
        "[" * DEEP + "]" * DEEP,
        '{"text": ' + "[" * DEEP + "]" * DEEP + "}",
        '{"text": "x", "extra": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}",
        ("[" * DEEP).encode(),
    ],
    ids=["array", "in text", "in an extra", "bytes, unclosed"],
)
def test_json_nested_past_the_parser_limit_is_an_error_result(
    mem: docmem.BoundMemory, text: str | bytes
) -> None:
    result = dispatch_call(mem.tools(), "user__save_memory", text, call_id="c", session_id="s")
    assert result.is_error
    assert result.text.startswith("Invalid call to user__save_memory: ")
    assert len(result.text) < 300
    assert stored(mem) is None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "arguments are not JSON"),
        (b"\xff\xfe", "arguments are not JSON"),
        ('{"index": ' + "9" * 5000 + "}", "arguments are not JSON"),
        ('"a string"', "must be a JSON object"),
        ("", "missing required argument"),
    ],
)
def test_dispatch_call_answers_bad_json_text(
    mem: docmem.BoundMemory, text: str | bytes, fragment: str
) -> None:
    result = dispatch_call(mem.tools(), "user__remove_memory", text)
    assert result.is_error
    assert fragment in result.text


@pytest.mark.parametrize("name", [None, 3, ["user__save_memory"], "x" * 500, "no such tool"])
def test_dispatch_call_answers_an_unknown_or_unhashable_name(
    mem: docmem.BoundMemory, name: Any
) -> None:
    result = dispatch_call(mem.tools(), name, {"text": "x"})
    assert result.is_error
    assert result.text.startswith("Unknown tool")
    assert "user__remove_memory, user__save_memory" in result.text
    assert len(result.text) < 300
    assert stored(mem) is None


def test_dispatch_call_runs_a_good_call(mem: docmem.BoundMemory) -> None:
    tools = mem.tools()
    assert dispatch_call(
        tools, "user__save_memory", '{"text": "Tea."}', call_id="c", session_id="s"
    )
    assert dispatch_call(tools, "user__save_memory", {"text": "Tea."}) == docmem.ToolResult(
        "Already saved as memory 0."
    )
    assert mem.inspect("s/c") == docmem.MutationRecord("save", "saved", 0, 1)


def test_a_tool_built_for_one_call_shares_a_read_only_schema(
    mem: docmem.BoundMemory,
) -> None:
    tool = mem.unqualified_tool("save_memory")
    assert tool is not None
    assert mem.unqualified_tool("recall_memory") is None
    assert tool.parameters is SAVE_MEMORY.shared_parameters
    with pytest.raises(TypeError):
        tool.parameters["properties"]["text"]["minLength"] = 0  # type: ignore[index]
    assert docmem.ToolSpec("", "", tool.parameters).json_schema() == SAVE_MEMORY.parameters
    assert tool.call({"text": ""}) == mem.unqualified_tools()["save_memory"].call({"text": ""})
    assert tool.call({"text": "Likes tea."}, call_id="c1", session_id="s") == docmem.ToolResult(
        "Saved as memory 0."
    )
    removal = mem.unqualified_tool("remove_memory")
    assert removal is not None
    assert removal.call({"index": 0}).text == "Removed memory 0."
