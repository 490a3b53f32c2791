"""Attacks on the host boundary: the model's tool arguments and the host's scope values.

Whatever the model sends, a tool call answers with a :class:`docmem.ToolResult`
(never an exception), and whatever a host passes as a scope, locking it either
succeeds or raises :class:`docmem.InvalidScope` whose chain holds no raw value.
The campaigns are seeded and bounded for the ordinary run; set
``DOCMEM_LONG_CAMPAIGN=1`` for a longer, randomized one (nightly).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import docmem
from docmem.host.slot import ScopeContext

LONG = os.environ.get("DOCMEM_LONG_CAMPAIGN") == "1"
CAMPAIGN = settings(
    max_examples=2000 if LONG else 60,
    deadline=None,
    derandomize=not LONG,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NS = "tests:attacks"

#: Any code point, lone surrogates included: a model's JSON may carry "\ud800".
any_text = st.text(st.characters(exclude_categories=()), max_size=40)
numbers = st.one_of(
    st.integers(),
    st.integers(min_value=2**53 - 2, max_value=2**53 + 2),
    st.sampled_from([2**64, -(2**64), 10**400, -(10**400)]),
    st.floats(allow_nan=True, allow_infinity=True),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, any_text)
any_key = st.one_of(any_text, st.integers(), st.floats(), st.none(), st.booleans(), st.binary())
json_ish = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(any_text, children, max_size=4),
        st.tuples(children, children),
    ),
    max_leaves=12,
)


def nested(depth: int, kind: str) -> Any:
    """A value ``depth`` levels deep, built without recursion."""
    value: Any = "leaf"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


deep = st.builds(nested, st.integers(0, 5000), st.sampled_from(["list", "dict"]))
#: What a model may put where an argument goes (and beside it).
argument_values = st.one_of(json_ish, deep)
arguments = st.one_of(
    st.dictionaries(any_key, argument_values, max_size=5),  # keys of mixed types
    st.builds(
        lambda text, extra: {"text": text, **extra},
        argument_values,
        st.dictionaries(any_key, argument_values, max_size=3),
    ),
    st.builds(
        lambda index, extra: {"index": index, **extra},
        argument_values,
        st.dictionaries(any_key, argument_values, max_size=2),
    ),
    argument_values,  # not a mapping at all
)


def json_text(value: Any) -> str | None:
    """``value`` as JSON text when the standard encoder can write it, else ``None``."""
    try:
        return json.dumps(value, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return None


deep_json = st.builds(
    lambda depth, opener, prefix: prefix + opener * depth,
    st.integers(500, 200_000),
    st.sampled_from(["[", '{"a":', "[{}, "]),
    st.sampled_from(["", '{"text": ', '{"text": "x", "extra": ']),
)
raw_json = st.one_of(
    deep_json,
    any_text,
    st.binary(max_size=40),
    st.builds(lambda digits: '{"index": ' + "9" * digits + "}", st.integers(1, 10_000)),
    st.sampled_from(['{"text": NaN}', '{"index": Infinity}', '{"index": -0.0}', "null", "[]"]),
)


def fresh_memory() -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace=NS, scope=("user", "u_1"))
    return docmem.FileMemory(docmem.open_store("memory://")).bind(scope, slot="user")


def fresh_turn() -> docmem.TurnMemory:
    slot = docmem.MemorySlot(
        "user", docmem.FileMemory(docmem.open_store("memory://")), scope="u_1", namespace=NS
    )
    return docmem.MemoryRuntime([slot]).turn_started(docmem.TurnContext(operation_id="t1"))


def check(result: object) -> None:
    assert isinstance(result, docmem.ToolResult)
    assert isinstance(result.text, str)
    assert result.text
    if result.is_error:
        assert len(result.text) < 400  # a short sentence, never an echo of the arguments


# -- tool arguments -------------------------------------------------------------------------------


@pytest.mark.slow
@CAMPAIGN
@given(arguments, st.sampled_from(["user__save_memory", "user__remove_memory"]))
def test_tool_call_answers_any_arguments_with_a_result(value: Any, name: str) -> None:
    tool = fresh_memory().tools()[name]
    check(tool.call(value, call_id="c", session_id="s"))


@pytest.mark.slow
@CAMPAIGN
@given(arguments, st.sampled_from(["user__save_memory", "user__remove_memory"]))
def test_turn_dispatch_answers_any_arguments_as_objects_or_json(value: Any, name: str) -> None:
    turn = fresh_turn()
    check(turn.dispatch(name, value, call_id="c1"))
    text = json_text(value)
    if text is not None:
        check(turn.dispatch(name, text, call_id="c2"))
        check(turn.dispatch(name, text.encode("utf-8", "surrogatepass"), call_id="c3"))


@CAMPAIGN
@given(raw_json, st.sampled_from(["user__save_memory", "user__remove_memory"]))
def test_turn_dispatch_answers_any_json_text(text: str | bytes, name: str) -> None:
    check(fresh_turn().dispatch(name, text, call_id="c"))


@pytest.mark.slow
@CAMPAIGN
@given(st.one_of(any_key, json_ish), argument_values)
def test_turn_dispatch_answers_any_tool_name(name: Any, value: Any) -> None:
    result = fresh_turn().dispatch(name, value, call_id="c")
    check(result)


@CAMPAIGN
@given(numbers)
def test_remove_with_any_number_is_a_result_and_never_removes_by_accident(index: Any) -> None:
    memory = fresh_memory()
    memory.save("Kept.", mutation_id="seed")
    result = memory.tools()["user__remove_memory"].call({"index": index}, call_id="c")
    check(result)
    valid = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < 2**53
    if not valid:
        assert result.is_error
    document = memory.read()
    assert document is not None
    kept = index == 0 and valid
    assert (dict(document.entries) == {}) is kept
    if isinstance(index, float) and math.isnan(index):
        assert "must be an integer" in result.text


# -- scope values ---------------------------------------------------------------------------------

scope_part = st.one_of(any_text, st.integers(), st.none(), st.binary(max_size=8), st.floats())
scope_values = st.one_of(
    any_text,
    st.lists(any_text, max_size=18).map(tuple),
    st.lists(any_text, max_size=18),
    st.lists(scope_part, max_size=4).map(tuple),
    scope_part,
    st.dictionaries(any_text, any_text, max_size=2),
)


def links(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is not None and not any(current is seen for seen in found):
            found.append(current)
            pending.extend([current.__cause__, current.__context__])
    return found


@CAMPAIGN
@given(st.one_of(any_text, scope_part), scope_values)
def test_lock_scope_either_locks_or_raises_invalid_scope(namespace: Any, scope: Any) -> None:
    refused: docmem.InvalidScope | None = None
    try:
        locked = docmem.lock_scope(namespace=namespace, scope=scope)
    except docmem.InvalidScope as error:
        refused = error
    if refused is not None:
        assert links(refused) == [refused]  # no exception holding the raw value rides along
        return
    if scope is None:  # the slot is disabled for the turn, whatever the namespace
        assert locked is None
    else:
        assert isinstance(locked, docmem.LockedScope)


@CAMPAIGN
@given(any_text, any_text, st.one_of(st.none(), any_text), any_text)
def test_a_principal_of_any_text_locks_or_disables_or_is_invalid_scope(
    kind: str, authenticator: str, issuer: str | None, person: str
) -> None:
    principal = docmem.Principal(kind, authenticator, person, issuer=issuer)
    context = ScopeContext(principal=principal)
    scope = docmem.by_principal(context)
    if not person.strip():
        assert scope is None
    memory = docmem.FileMemory(docmem.open_store("memory://"))
    slot = docmem.MemorySlot("user", memory, scope=docmem.by_principal, namespace=NS)
    refused: docmem.InvalidScope | None = None
    try:
        lock = slot.lock(context, app_root="/srv/app", node="agent")
    except docmem.InvalidScope as error:
        refused = error
    if refused is not None:
        assert links(refused) == [refused]
        return
    assert (lock is None) is (scope is None)
