"""Backend options as msgspec Structs, read from a URL query and keyword arguments.

A backend declares its options once, as a frozen Struct: each field's default,
its range as ``Annotated[..., msgspec.Meta(ge=..., le=...)]`` and, in the
Meta's ``description``, what a valid value is (it completes "``<option>`` must
be ..."). A check across fields goes in ``__post_init__``, raising
``ValueError`` with a message that names options, never values.
:func:`parse_options` then does what every backend's ``from_url`` needs: the
URL query merged with the keywords (keywords win), unknown names refused,
each value converted and checked, every refusal a
:class:`~docmem.errors.StoreNotConfigured` that names the option and never
its value (a URL may carry a secret).

How a value converts, the same from a URL and from a keyword:

* Text (every URL value; a keyword may be text too) is read the way Python
  reads numbers, so ``"2"``, ``" 0.5 "``, ``".5"`` and ``"1e3"`` are numbers
  of seconds but ``"3.0"`` and ``"1e3"`` are no count; a flag is ``true``,
  ``yes``, ``on``, ``1`` or ``false``, ``no``, ``off``, ``0``, blank (any
  case). Blank text for an optional text field means not given (``region=``).
  (msgspec's own lax mode reads JSON numbers only, which would refuse ``.5``.)
* Then msgspec converts the value to the field's type and checks its range:
  a bool is never a number and a number never a flag; an int is a float, and
  a whole float a count.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, Union
from urllib.parse import parse_qsl, urlsplit

import msgspec

from .errors import StoreNotConfigured

__all__ = [
    "Seconds",
    "check_options",
    "parse_options",
    "query_options",
    "split_options",
]

OptionsT = TypeVar("OptionsT", bound=msgspec.Struct)

#: A positive, finite number of seconds (NaN compares false with everything, inf never ends).
Seconds = Annotated[
    float,
    msgspec.Meta(gt=0, le=sys.float_info.max, description="a positive, finite number of seconds"),
]

_FLAGS = {
    **dict.fromkeys(("1", "true", "yes", "on"), True),
    **dict.fromkeys(("0", "false", "no", "off", ""), False),
}
#: What a field of a kind must be when its Meta has no description.
_DESCRIPTIONS = {bool: "true or false", int: "a whole number", float: "a number"}
#: Not a value: what a text that does not parse becomes, so that msgspec refuses it.
_UNPARSED = object()


def _flag(text: str) -> object:
    return _FLAGS.get(text.lower(), _UNPARSED)


#: How text becomes a value of a kind (``int`` refuses ``"3.0"``: a count has no fraction).
_PARSERS: dict[type, Callable[[str], object]] = {bool: _flag, int: int, float: float}


@dataclasses.dataclass(frozen=True)
class _Field:
    type: Any
    kind: type | None
    optional: bool
    description: str


@functools.cache
def _fields(options_type: type[msgspec.Struct]) -> dict[str, _Field]:
    """Each field's full type, the kind of value it holds, and what a valid one is."""
    fields: dict[str, _Field] = {}
    for info in msgspec.structs.fields(options_type):
        base: Any = info.type
        metas: list[Any] = []
        if typing.get_origin(base) is Annotated:
            base, *metas = typing.get_args(base)
        optional = False
        if typing.get_origin(base) in (Union, types.UnionType):
            members = [arg for arg in typing.get_args(base) if arg is not type(None)]
            optional = len(members) < len(typing.get_args(base))
            base = members[0] if len(members) == 1 else None
        kind = base if base in _PARSERS else None
        described = [m.description for m in metas if isinstance(m, msgspec.Meta) and m.description]
        fallback = _DESCRIPTIONS[kind] if kind is not None else "text"
        fields[info.name] = _Field(
            info.type, kind, optional, described[0] if described else fallback
        )
    return fields


def _converted(name: str, value: object, field: _Field, scheme: str) -> object:
    if isinstance(value, str):
        if field.optional and value == "":
            value = None
        elif field.kind is not None:
            try:
                value = _PARSERS[field.kind](value.strip())
            except (ValueError, OverflowError):
                value = _UNPARSED
    try:
        # Lax for counts only: a whole float such as 2.0 is one; text is parsed above.
        return msgspec.convert(value, field.type, strict=field.kind is not int)
    except msgspec.ValidationError:
        pass  # raised below, outside the handler: no value in the traceback's context
    raise StoreNotConfigured(f"{scheme}:// option {name} must be {field.description}")


def check_options(
    options_type: type[OptionsT], values: Mapping[str, Any], *, scheme: str
) -> OptionsT:
    """``values`` (each a field of ``options_type``) converted and checked: for ``__init__``.

    Missing fields keep their defaults; a name that is no field is a TypeError,
    as an unknown keyword argument would be.
    """
    fields = _fields(options_type)
    if unknown := sorted(set(values) - set(fields)):
        raise TypeError(f"{options_type.__name__} has no field {unknown[0]!r}")
    converted = {
        name: _converted(name, value, fields[name], scheme) for name, value in values.items()
    }
    problem = ""
    try:
        return options_type(**converted)
    except ValueError as exc:  # from __post_init__: names options, never values
        problem = str(exc)
    raise StoreNotConfigured(f"{scheme}:// options: {problem}")


def query_options(url: str) -> dict[str, str]:
    """A URL's query parameters (blank ones kept: ``region=`` says "not given")."""
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def split_options(
    options_type: type[OptionsT], url: str, options: Mapping[str, Any], *, scheme: str
) -> tuple[OptionsT, dict[str, Any]]:
    """The URL query and ``options`` (keywords win) as ``options_type``, and the rest.

    For a backend that hands the options it does not know to another library
    (docmem-fsspec's filesystem options); the rest are returned unconverted.
    """
    merged = {**query_options(url), **options}
    fields = _fields(options_type)
    ours = {name: merged.pop(name) for name in fields if name in merged}
    return check_options(options_type, ours, scheme=scheme), merged


def parse_options(
    options_type: type[OptionsT], url: str, options: Mapping[str, Any], *, scheme: str
) -> OptionsT:
    """The URL query and ``options`` (keywords win) as ``options_type``; unknown names refused."""
    parsed, unknown = split_options(options_type, url, options, scheme=scheme)
    if unknown:
        raise StoreNotConfigured(
            f"unknown {scheme}:// options: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(_fields(options_type))})"
        )
    return parsed
