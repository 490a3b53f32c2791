"""Key encoding (docs/design.md, section 2): golden vectors, limits, collision freedom."""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import re
import struct
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docmem.errors import DocmemError, InvalidScope
from docmem.provider.keys import (
    LockedScope,
    item_key,
    lock_scope,
    namespace_key,
    scope_key,
    storage_key,
)

VECTORS = json.loads((Path(__file__).parent / "vectors" / "keys.json").read_text("utf-8"))

B64URL_43 = r"[A-Za-z0-9_-]{43}"
NS_KEY = re.compile(rf"memns1_{B64URL_43}")
SCOPE_KEY = re.compile(rf"memscope1_{B64URL_43}")
ITEM_KEY = re.compile(rf"memitem1_{B64URL_43}")
STORAGE_KEY = re.compile(rf"memkey1_{B64URL_43}")


def _scope(value: Any) -> Any:
    """Vectors spell tuple scopes as JSON lists; a list counts as a tuple."""
    return tuple(value) if isinstance(value, list) else value


# --- an independent reference encoder, written from docs/design.md, section 2 -----------


def _s(text: str) -> bytes:
    data = text.encode("utf-8")
    return b"S" + struct.pack(">I", len(data)) + data


def _t(count: int) -> bytes:
    return b"T" + struct.pack(">I", count)


def _b64(tag: bytes, body: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(tag + body).digest()).rstrip(b"=").decode()


def ref_scope_body(value: str | tuple[str, ...] | list[str]) -> bytes:
    if isinstance(value, str):
        return _s(value)
    return _t(len(value)) + b"".join(_s(c) for c in value)


def ref_namespace_key(ns: str) -> str:
    return "memns1_" + _b64(b"docmem.ns.v1\0", _s(ns))


def ref_scope_key(value: str | tuple[str, ...] | list[str]) -> str:
    return "memscope1_" + _b64(b"docmem.scope.v1\0", ref_scope_body(value))


def ref_item_key(item_id: str) -> str:
    return "memitem1_" + _b64(b"docmem.item.v1\0", _s(item_id))


def ref_storage_key(ns_key: str, sc_key: str) -> str:
    return "memkey1_" + _b64(b"docmem.key.v1\0", _t(2) + _s(ns_key) + _s(sc_key))


# --- golden vectors ---------------------------------------------------------------------


def _vector_id(entry: dict[str, Any]) -> str:
    return entry.get("why") or repr(entry.get("scope", entry.get("id")))[:40]


@pytest.mark.parametrize("vector", VECTORS["keys"], ids=_vector_id)
def test_key_vectors(vector: dict[str, Any]) -> None:
    scope = _scope(vector["scope"])
    assert namespace_key(vector["namespace"]) == vector["namespace_key"]
    assert scope_key(scope) == vector["scope_key"]
    assert storage_key(vector["namespace_key"], vector["scope_key"]) == vector["storage_key"]
    locked = lock_scope(namespace=vector["namespace"], scope=scope)
    assert locked == LockedScope(
        namespace_key=vector["namespace_key"],
        scope_key=vector["scope_key"],
        storage_key=vector["storage_key"],
    )
    # A list scope is the same as the tuple scope the JSON list stands for.
    if isinstance(vector["scope"], list):
        assert scope_key(list(vector["scope"])) == vector["scope_key"]


@pytest.mark.parametrize("vector", VECTORS["keys"], ids=_vector_id)
def test_reference_encoder_agrees_with_vectors(vector: dict[str, Any]) -> None:
    """Guards the test's own reference encoder, used by the property tests below."""
    assert ref_namespace_key(vector["namespace"]) == vector["namespace_key"]
    assert ref_scope_key(_scope(vector["scope"])) == vector["scope_key"]
    assert ref_storage_key(vector["namespace_key"], vector["scope_key"]) == vector["storage_key"]


@pytest.mark.parametrize("vector", VECTORS["items"], ids=_vector_id)
def test_item_vectors(vector: dict[str, Any]) -> None:
    assert item_key(vector["id"]) == vector["item_key"]
    assert ref_item_key(vector["id"]) == vector["item_key"]


@pytest.mark.parametrize("vector", VECTORS["valid_edges"], ids=_vector_id)
def test_valid_edge_vectors(vector: dict[str, Any]) -> None:
    scope = _scope(vector["scope"])
    assert len(ref_scope_body(scope)) == vector["scope_body_bytes"]
    assert scope_key(scope) == vector["scope_key"]
    assert scope_key(list(scope) if isinstance(scope, tuple) else scope) == vector["scope_key"]
    namespace_key(vector["namespace"])  # at its limit, still valid
    locked = lock_scope(namespace=vector["namespace"], scope=scope)
    assert locked is not None
    assert locked.scope_key == vector["scope_key"]


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=_vector_id)
def test_invalid_vectors(vector: dict[str, Any]) -> None:
    with pytest.raises(InvalidScope):
        lock_scope(namespace=vector["namespace"], scope=_scope(vector["scope"]))
    # And the failing part alone fails on its own.
    ns_ok = 1 <= len(vector["namespace"].encode("utf-8")) <= 1024
    part = scope_key if ns_ok else namespace_key
    with pytest.raises(InvalidScope):
        part(_scope(vector["scope"]) if ns_ok else vector["namespace"])


@pytest.mark.parametrize("vector", VECTORS["invalid_items"], ids=_vector_id)
def test_invalid_item_vectors(vector: dict[str, Any]) -> None:
    with pytest.raises(InvalidScope):
        item_key(vector["id"])


def test_vectors_cover_every_section() -> None:
    assert len(VECTORS["keys"]) >= 10
    assert VECTORS["items"]
    assert VECTORS["valid_edges"]
    assert VECTORS["invalid"]
    assert VECTORS["invalid_items"]


# --- distinctness, by hand ----------------------------------------------------------------


def test_documented_lookalikes_all_differ() -> None:
    values: list[Any] = [
        "a:b:c",
        ("a:b", "c"),
        ("a", "b:c"),
        ("a", "b", "c"),
        ("a:b:c",),
        "a",
        ("a",),
        ("a", ""),
        ("", "a"),
        ("a", "", ""),
        ("",),
        ("", ""),
        "a\x00b",
        ("a", "b"),
        ("a\x00b",),
        ("ab",),
        "ab",
    ]
    keys = [scope_key(v) for v in values]
    assert len(set(keys)) == len(values)


def test_length_prefix_cannot_be_forged_inside_a_component() -> None:
    # A component that contains the encoding of another component boundary.
    forged = "a" + "S" + "\x00\x00\x00\x01" + "b"
    assert scope_key(("a", "b")) != scope_key((forged,))
    assert scope_key(("a", "b")) != scope_key(forged)
    assert scope_key(("a", "b")) != scope_key(
        "T\x00\x00\x00\x02S\x00\x00\x00\x01aS\x00\x00\x00\x01b"
    )


def test_namespace_scope_boundary_cannot_shift() -> None:
    pairs = [
        ("a\x00b", "c"),
        ("a", "b\x00c"),
        ("a", "\x00b\x00c"),
        ("a\x00", "b\x00c"),
        ("a\x00b\x00", "c"),
        ("a:b", "c"),
        ("a", "b:c"),
        ("a", ("b", "c")),
        ("a\x00b", ("c",)),
        ("ab", "c"),
        ("a", "bc"),
    ]
    locked = [lock_scope(namespace=ns, scope=sc) for ns, sc in pairs]
    assert len({lk.storage_key for lk in locked if lk is not None}) == len(pairs)


def test_domain_tags_separate_namespace_scope_and_item() -> None:
    digests = {
        namespace_key("x").removeprefix("memns1_"),
        scope_key("x").removeprefix("memscope1_"),
        item_key("x").removeprefix("memitem1_"),
    }
    assert len(digests) == 3


def test_tuple_and_list_are_the_same_scope() -> None:
    assert scope_key(("u", "", "1")) == scope_key(["u", "", "1"])
    assert lock_scope(namespace="n", scope=("u", "1")) == lock_scope(
        namespace="n", scope=["u", "1"]
    )


# --- properties ---------------------------------------------------------------------------

_tricky_chars = st.sampled_from([":", "\x00", "a", "b", "S", "T", "\x01", "\u00e9", "\U0001f44b"])
_component = st.text(alphabet=_tricky_chars | st.characters(codec="utf-8"), max_size=6)
_scalar = _component.filter(bool)
#: A namespace is refused when it is only whitespace; scope components are not.
_namespace = _scalar.filter(str.strip)
_tuple = st.lists(_component, min_size=1, max_size=5).map(tuple)
_list = st.lists(_component, min_size=1, max_size=5)
_scope_value = st.one_of(_scalar, _tuple, _list)


def _canonical(value: Any) -> tuple[str, Any]:
    return ("S", value) if isinstance(value, str) else ("T", tuple(value))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(_scope_value, min_size=2, max_size=12, unique_by=_canonical))
def test_distinct_scope_values_never_collide(values: list[Any]) -> None:
    keys = [scope_key(v) for v in values]
    assert len(set(keys)) == len(values)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_scope_value, _scope_value)
def test_keys_equal_exactly_when_values_equal(first: Any, second: Any) -> None:
    same = _canonical(first) == _canonical(second)
    assert (scope_key(first) == scope_key(second)) is same


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(_component, min_size=1, max_size=16))
def test_tuple_and_list_with_equal_components_give_equal_keys(components: list[str]) -> None:
    assert scope_key(tuple(components)) == scope_key(list(components))
    assert scope_key(tuple(components)) == ref_scope_key(tuple(components))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_scope_value)
def test_scope_key_matches_reference_encoder(value: Any) -> None:
    key = scope_key(value)
    assert key == ref_scope_key(value)
    assert SCOPE_KEY.fullmatch(key)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_namespace, _scope_value),
        min_size=2,
        max_size=10,
        unique_by=lambda pair: (pair[0], _canonical(pair[1])),
    )
)
def test_distinct_namespace_scope_pairs_never_share_a_storage_key(pairs: list[Any]) -> None:
    keys = []
    for ns, sc in pairs:
        locked = lock_scope(namespace=ns, scope=sc)
        assert locked is not None
        assert locked.storage_key == ref_storage_key(ref_namespace_key(ns), ref_scope_key(sc))
        keys.append(locked.storage_key)
    assert len(set(keys)) == len(pairs)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_namespace, _scalar, _scalar)
def test_moving_text_across_the_namespace_scope_boundary_changes_the_key(
    left: str, middle: str, right: str
) -> None:
    a = lock_scope(namespace=left + middle, scope=right)
    b = lock_scope(namespace=left, scope=middle + right)
    assert a is not None
    assert b is not None
    assert a.storage_key != b.storage_key


# --- limits ---------------------------------------------------------------------------------


def _bytes(n: int, unit: str = "x") -> str:
    """A string of exactly n UTF-8 bytes, made of `unit` (padded with ASCII)."""
    size = len(unit.encode("utf-8"))
    text = unit * (n // size) + "y" * (n % size)
    assert len(text.encode("utf-8")) == n
    return text


MULTIBYTE_UNITS = ["x", "\u00e9", "\u20ac", "\U0001f600"]


@pytest.mark.parametrize("unit", MULTIBYTE_UNITS)
def test_namespace_limit_counts_utf8_bytes(unit: str) -> None:
    ok = _bytes(1024, unit)
    assert NS_KEY.fullmatch(namespace_key(ok))
    assert lock_scope(namespace=ok, scope="s") is not None
    over = _bytes(1025, unit)
    if unit != "x":
        assert len(over) < 1024  # fewer code points than bytes: bytes are what count
    with pytest.raises(InvalidScope):
        namespace_key(over)
    with pytest.raises(InvalidScope):
        lock_scope(namespace=over, scope="s")


def test_empty_namespace_is_rejected() -> None:
    with pytest.raises(InvalidScope):
        namespace_key("")
    with pytest.raises(InvalidScope):
        lock_scope(namespace="", scope="s")


@pytest.mark.parametrize("unit", MULTIBYTE_UNITS)
def test_scalar_scope_limit(unit: str) -> None:
    assert SCOPE_KEY.fullmatch(scope_key(_bytes(1024, unit)))
    with pytest.raises(InvalidScope):
        scope_key(_bytes(1025, unit))


def test_empty_scalar_scope_is_rejected() -> None:
    with pytest.raises(InvalidScope):
        scope_key("")
    with pytest.raises(InvalidScope):
        lock_scope(namespace="ns", scope="")


@pytest.mark.parametrize("unit", MULTIBYTE_UNITS)
def test_component_limit(unit: str) -> None:
    assert scope_key((_bytes(1024, unit),)) == ref_scope_key((_bytes(1024, unit),))
    assert scope_key(("a", _bytes(1024, unit))) == ref_scope_key(("a", _bytes(1024, unit)))
    with pytest.raises(InvalidScope):
        scope_key((_bytes(1025, unit),))
    with pytest.raises(InvalidScope):
        scope_key(["a", _bytes(1025, unit)])


@pytest.mark.parametrize("kind", [tuple, list])
def test_component_count_limit(kind: type) -> None:
    assert scope_key(kind(["c"] * 16)) == ref_scope_key(("c",) * 16)
    assert scope_key(kind([""] * 16)) == ref_scope_key(("",) * 16)
    with pytest.raises(InvalidScope):
        scope_key(kind(["c"] * 17))
    with pytest.raises(InvalidScope):
        scope_key(kind([""] * 17))


@pytest.mark.parametrize("kind", [tuple, list])
def test_empty_tuple_is_rejected(kind: type) -> None:
    with pytest.raises(InvalidScope):
        scope_key(kind())
    with pytest.raises(InvalidScope):
        lock_scope(namespace="ns", scope=kind())


def test_empty_components_are_allowed() -> None:
    assert scope_key(("",)) == ref_scope_key(("",))
    assert scope_key(("user", "auth0", "", "u_1")) == ref_scope_key(("user", "auth0", "", "u_1"))
    assert lock_scope(namespace="ns", scope=["", ""]) is not None


def _body_of(total: int, count: int) -> tuple[str, ...]:
    """`count` components (each <= 1,024 bytes) whose scope body is exactly `total` bytes."""
    payload = total - 5 - 5 * count
    sizes = [payload // count + (1 if i < payload % count else 0) for i in range(count)]
    assert all(0 <= s <= 1024 for s in sizes)
    components = tuple(_bytes(s) if s else "" for s in sizes)
    assert len(ref_scope_body(components)) == total
    return components


@pytest.mark.parametrize("count", [4, 5, 16])
def test_scope_body_limit(count: int) -> None:
    at_limit = _body_of(4096, count)
    assert scope_key(at_limit) == ref_scope_key(at_limit)
    assert scope_key(list(at_limit)) == ref_scope_key(at_limit)
    over = _body_of(4097, count)
    assert all(len(c.encode("utf-8")) <= 1024 for c in over)  # only the body is too big
    with pytest.raises(InvalidScope):
        scope_key(over)
    with pytest.raises(InvalidScope):
        lock_scope(namespace="ns", scope=list(over))


def test_scope_body_limit_counts_multibyte_bytes() -> None:
    # 4 components: 5 + 4 * 5 + payload; a 2-byte char tips the payload by one byte.
    base = _body_of(4096, 4)
    ok = (*base[:3], base[3][:-2] + "\u00e9")
    assert len(ref_scope_body(ok)) == 4096
    assert scope_key(ok) == ref_scope_key(ok)
    over = (*base[:3], base[3][:-1] + "\u00e9")
    assert len(ref_scope_body(over)) == 4097
    with pytest.raises(InvalidScope):
        scope_key(over)


@pytest.mark.parametrize("unit", MULTIBYTE_UNITS)
def test_item_id_limit(unit: str) -> None:
    assert ITEM_KEY.fullmatch(item_key(_bytes(1024, unit)))
    assert item_key(_bytes(1024, unit)) == ref_item_key(_bytes(1024, unit))
    with pytest.raises(InvalidScope):
        item_key(_bytes(1025, unit))
    with pytest.raises(InvalidScope):
        item_key("")


# --- invalid input types and strings ----------------------------------------------------------

LONE_SURROGATES = ["\ud800", "\udfff", "a\udc80b", "\ud83d"]  # the last: half an emoji


@pytest.mark.parametrize("bad", LONE_SURROGATES)
def test_lone_surrogates_are_rejected(bad: str) -> None:
    with pytest.raises(InvalidScope):
        namespace_key(bad)
    with pytest.raises(InvalidScope):
        scope_key(bad)
    with pytest.raises(InvalidScope):
        scope_key(("ok", bad))
    with pytest.raises(InvalidScope):
        scope_key([bad])
    with pytest.raises(InvalidScope):
        item_key(bad)
    with pytest.raises(InvalidScope):
        lock_scope(namespace=bad, scope="s")
    with pytest.raises(InvalidScope):
        lock_scope(namespace="ns", scope=bad)


NON_STR = [b"bytes", bytearray(b"x"), 1, 0, 1.5, True, object(), ["ns"], ("ns",), {"ns": 1}]


@pytest.mark.parametrize("bad", [*NON_STR, None], ids=repr)
def test_non_str_namespace_is_rejected(bad: Any) -> None:
    with pytest.raises(InvalidScope):
        namespace_key(bad)
    with pytest.raises(InvalidScope):
        lock_scope(namespace=bad, scope="s")


@pytest.mark.parametrize(
    "bad",
    [
        b"bytes",
        bytearray(b"x"),
        1,
        1.5,
        True,
        object(),
        {"a"},
        frozenset({"a"}),
        {"a": "b"},
        iter(["a"]),
        ("a", 1),
        ["a", None],
        ("a", b"b"),
        (("a",),),
        [["a"]],
    ],
    ids=repr,
)
def test_non_str_scope_is_rejected(bad: Any) -> None:
    with pytest.raises(InvalidScope):
        scope_key(bad)
    with pytest.raises(InvalidScope):
        lock_scope(namespace="ns", scope=bad)


@pytest.mark.parametrize("bad", [*NON_STR, None], ids=repr)
def test_non_str_item_id_is_rejected(bad: Any) -> None:
    with pytest.raises(InvalidScope):
        item_key(bad)


def test_invalid_scope_is_a_value_error_with_a_stable_code() -> None:
    with pytest.raises(InvalidScope) as info:
        scope_key("")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, DocmemError)
    assert info.value.code == "invalid_scope"


def test_storage_key_requires_prefixed_keys() -> None:
    ns = namespace_key("ns")
    sc = scope_key("s")
    assert STORAGE_KEY.fullmatch(storage_key(ns, sc))
    with pytest.raises(InvalidScope):
        storage_key(sc, ns)
    with pytest.raises(InvalidScope):
        storage_key("ns", sc)
    with pytest.raises(InvalidScope):
        storage_key(ns, "s")


# --- lock_scope -------------------------------------------------------------------------------


def test_lock_scope_none_is_disabled_not_an_error() -> None:
    assert lock_scope(namespace="ns", scope=None) is None
    # "never an error": even a namespace that would be refused is not looked at.
    assert lock_scope(namespace="", scope=None) is None


def test_lock_scope_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        lock_scope("ns", "s")  # type: ignore[misc]


CANARY_NS = "CANARY-namespace-41d7"
CANARY_SCOPE = "CANARY-scope-9b3e"
CANARY_PART = "CANARY-part-77aa"


def _leaks(text: str) -> bool:
    return any(c in text for c in (CANARY_NS, CANARY_SCOPE, CANARY_PART, "CANARY"))


@pytest.mark.parametrize(
    "scope", [CANARY_SCOPE, (CANARY_SCOPE, "", CANARY_PART), [CANARY_PART, CANARY_SCOPE]]
)
def test_locked_scope_holds_no_raw_value(scope: Any) -> None:
    locked = lock_scope(namespace=CANARY_NS, scope=scope)
    assert isinstance(locked, LockedScope)
    assert set(locked.__struct_fields__) == {"namespace_key", "scope_key", "storage_key"}
    for name, value in msgspec.structs.asdict(locked).items():
        assert not _leaks(value), name
    assert NS_KEY.fullmatch(locked.namespace_key)
    assert SCOPE_KEY.fullmatch(locked.scope_key)
    assert STORAGE_KEY.fullmatch(locked.storage_key)
    assert not _leaks(repr(locked))
    assert not _leaks(str(locked))
    assert not _leaks(msgspec.json.encode(locked).decode())
    assert b"CANARY" not in pickle.dumps(locked)
    assert pickle.loads(pickle.dumps(locked)) == locked
    assert not hasattr(locked, "__dict__")  # nowhere to hide a raw value


def test_locked_scope_is_frozen() -> None:
    locked = lock_scope(namespace="ns", scope="s")
    assert locked is not None
    with pytest.raises(AttributeError):
        locked.scope_key = "memscope1_other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("namespace", "scope"),
    [
        (CANARY_NS * 100, "s"),
        ("ns", CANARY_SCOPE * 100),
        ("ns", (CANARY_SCOPE * 100,)),
        ("ns", (CANARY_PART,) * 17),
        ("ns", (CANARY_PART * 60,) * 5),
        ("ns", (CANARY_PART, 7)),
        ("ns", CANARY_SCOPE + "\ud800"),
        (CANARY_NS + "\ud800", "s"),
    ],
)
def test_invalid_scope_messages_hold_no_raw_value(namespace: str, scope: Any) -> None:
    with pytest.raises(InvalidScope) as info:
        lock_scope(namespace=namespace, scope=scope)
    assert not _leaks(str(info.value))
    assert not _leaks(repr(info.value))
    assert not any(_leaks(str(arg)) for arg in info.value.args)


@pytest.mark.parametrize(
    ("namespace", "scope"),
    [
        ("ns", CANARY_SCOPE + "\ud800"),
        ("ns", ("user", CANARY_PART + "\udfff")),
        (CANARY_NS + "\ud800", "s"),
    ],
)
def test_an_invalid_scope_chains_no_exception_holding_the_raw_value(
    namespace: str, scope: Any
) -> None:
    # ``from None`` hid the UnicodeEncodeError from tracebacks but kept it in
    # __context__, with the whole raw value in its args, for error trackers to ship.
    with pytest.raises(InvalidScope) as info:
        lock_scope(namespace=namespace, scope=scope)
    assert info.value.__context__ is None
    assert info.value.__cause__ is None


@pytest.mark.parametrize("blank", [" ", "   ", "\t", "\n\r", "\u00a0", "\u2003\u3000", "\x1c"])
def test_a_whitespace_only_namespace_is_refused(blank: str) -> None:
    with pytest.raises(InvalidScope, match="blank"):
        namespace_key(blank)
    with pytest.raises(InvalidScope, match="blank"):
        lock_scope(namespace=blank, scope="u")


def test_a_namespace_with_surrounding_whitespace_keeps_its_own_key() -> None:
    # Only an all-blank namespace is refused; others are keyed byte for byte, as before.
    assert namespace_key(" ns") != namespace_key("ns")
    assert NS_KEY.fullmatch(namespace_key(" ns "))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_namespace, _scope_value, _scalar)
def test_keys_are_base64url_after_their_prefix(ns: str, scope: Any, item: str) -> None:
    locked = lock_scope(namespace=ns, scope=scope)
    assert locked is not None
    assert NS_KEY.fullmatch(locked.namespace_key)
    assert SCOPE_KEY.fullmatch(locked.scope_key)
    assert STORAGE_KEY.fullmatch(locked.storage_key)
    assert ITEM_KEY.fullmatch(item_key(item))
    # 43 base64url characters are exactly a SHA-256 digest, unpadded.
    raw = base64.urlsafe_b64decode(locked.storage_key.removeprefix("memkey1_") + "=")
    assert len(raw) == 32
