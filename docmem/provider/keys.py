"""Opaque, collision-free storage names for namespaces, scopes and items.

Storage never sees a raw namespace or scope value: each is encoded canonically
(a versioned domain tag, then type-tagged, length-prefixed UTF-8), hashed with
SHA-256 and written as base64url with a typed prefix. Type tags and length
prefixes make ``"a:b"`` vs ``("a", "b")`` vs ``("a:b",)`` distinct by
construction, so no delimiter can forge another scope's key.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Sequence
from typing import Union, overload

import msgspec

from ..errors import InvalidScope

__all__ = [
    "LockedScope",
    "ScopeValue",
    "item_key",
    "lock_scope",
    "namespace_key",
    "scope_key",
    "storage_key",
]

#: A scope value: one string, or a tuple (or list) of strings.
ScopeValue = Union[str, Sequence[str]]  # noqa: UP007 - a runtime alias on Python 3.10

MAX_NAMESPACE_BYTES = 1024
MAX_COMPONENT_BYTES = 1024
MAX_COMPONENTS = 16
MAX_SCOPE_BODY_BYTES = 4096
MAX_ITEM_ID_BYTES = 1024

_NS_TAG = b"docmem.ns.v1\0"
_SCOPE_TAG = b"docmem.scope.v1\0"
_ITEM_TAG = b"docmem.item.v1\0"
_KEY_TAG = b"docmem.key.v1\0"


def _utf8(value: object, what: str) -> bytes:
    """``value`` as UTF-8, refused with :class:`InvalidScope` when it is not a valid str.

    The refusal is raised outside the ``except`` block: ``from None`` only
    hides the ``UnicodeEncodeError`` from tracebacks, it stays in
    ``__context__`` holding the raw value, for any error tracker to ship.
    """
    if not isinstance(value, str):
        raise InvalidScope(f"{what} must be a str, not {type(value).__name__}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        pass
    raise InvalidScope(f"{what} is not valid UTF-8 (lone surrogate)")


def encode_str(data: bytes) -> bytes:
    """``S(x)``: the tag ``S``, the byte length as u32 big-endian, the bytes."""
    return b"S" + struct.pack(">I", len(data)) + data


def encode_tuple_header(count: int) -> bytes:
    """``T(n)``: the tag ``T`` and the component count as u32 big-endian."""
    return b"T" + struct.pack(">I", count)


def _digest(prefix: str, tag: bytes, body: bytes) -> str:
    raw = hashlib.sha256(tag + body).digest()
    return prefix + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _checked(data: bytes, what: str, *, lowest: int, highest: int) -> bytes:
    if not lowest <= len(data) <= highest:
        raise InvalidScope(f"{what} must be {lowest} to {highest:,} UTF-8 bytes, got {len(data):,}")
    return data


def namespace_key(namespace: str) -> str:
    """The ``memns1_`` key of a namespace (1 to 1,024 UTF-8 bytes, not all whitespace).

    A blank namespace is a resolver or configuration that produced nothing
    (an unset variable, a stray space): it would give every deployment that
    makes the same mistake one shared key, so it is refused, not keyed.
    """
    data = _checked(
        _utf8(namespace, "namespace"), "namespace", lowest=1, highest=MAX_NAMESPACE_BYTES
    )
    if not namespace.strip():
        raise InvalidScope("namespace is blank (only whitespace); name the deployment and slot")
    return _digest("memns1_", _NS_TAG, encode_str(data))


def scope_body(scope: ScopeValue) -> bytes:
    """The canonical body of a scope value, limits checked (domain tag excluded)."""
    if isinstance(scope, str):
        data = _checked(
            _utf8(scope, "scope"), "scalar scope", lowest=1, highest=MAX_COMPONENT_BYTES
        )
        return encode_str(data)
    if not isinstance(scope, (tuple, list)):
        raise InvalidScope(f"scope must be a str or a tuple of str, not {type(scope).__name__}")
    if not 1 <= len(scope) <= MAX_COMPONENTS:
        raise InvalidScope(
            f"a scope tuple must have 1 to {MAX_COMPONENTS} components, got {len(scope)}"
        )
    parts = [encode_tuple_header(len(scope))]
    for position, component in enumerate(scope):
        what = f"scope component {position}"
        parts.append(
            encode_str(
                _checked(_utf8(component, what), what, lowest=0, highest=MAX_COMPONENT_BYTES)
            )
        )
    body = b"".join(parts)
    if len(body) > MAX_SCOPE_BODY_BYTES:
        raise InvalidScope(
            f"the encoded scope is {len(body):,} bytes; at most {MAX_SCOPE_BODY_BYTES:,} allowed"
        )
    return body


def scope_key(scope: ScopeValue) -> str:
    """The ``memscope1_`` key of a scope value (a str, or a tuple/list of str)."""
    return _digest("memscope1_", _SCOPE_TAG, scope_body(scope))


def item_key(item_id: str) -> str:
    """The ``memitem1_`` key of a recalled item's id (1 to 1,024 UTF-8 bytes)."""
    data = _checked(_utf8(item_id, "item id"), "item id", lowest=1, highest=MAX_ITEM_ID_BYTES)
    return _digest("memitem1_", _ITEM_TAG, encode_str(data))


def storage_key(ns_key: str, sc_key: str) -> str:
    """The ``memkey1_`` key under which a scope's document is stored."""
    if not ns_key.startswith("memns1_") or not sc_key.startswith("memscope1_"):
        raise InvalidScope("storage_key takes a memns1_ key and a memscope1_ key")
    body = (
        encode_tuple_header(2)
        + encode_str(ns_key.encode("ascii"))
        + encode_str(sc_key.encode("ascii"))
    )
    return _digest("memkey1_", _KEY_TAG, body)


class LockedScope(msgspec.Struct, frozen=True):
    """A scope locked from trusted values: keys only, never the raw values.

    Safe to log and to pickle; it is what a bound memory works on.
    """

    namespace_key: str
    scope_key: str
    storage_key: str


@overload
def lock_scope(*, namespace: str, scope: None) -> None: ...
@overload
def lock_scope(*, namespace: str, scope: ScopeValue) -> LockedScope: ...
def lock_scope(*, namespace: str, scope: ScopeValue | None) -> LockedScope | None:
    """Lock a scope from trusted context (never from the model's messages).

    ``scope=None`` means the memory is disabled for this turn and returns
    ``None``: never an error and never a shared fallback key.
    """
    if scope is None:
        return None
    ns = namespace_key(namespace)
    sc = scope_key(scope)
    return LockedScope(namespace_key=ns, scope_key=sc, storage_key=storage_key(ns, sc))
