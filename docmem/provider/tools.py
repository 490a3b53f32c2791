"""Model-facing tools: names, JSON schemas, argument checks and safe results.

A :class:`Tool` never raises for the model's mistakes: wrong or extra
arguments and refused requests come back as a :class:`ToolResult` with
``is_error=True`` and a short, content-free sentence the model can act on.
The memory tools' schemas, descriptions and result sentences are here too
(:data:`SAVE_MEMORY`, :data:`REMOVE_MEMORY`), next to the checks that read
them; a provider only binds them to its slot and its actions.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from ..errors import DocmemError, InvalidArgument
from .document import MAX_INDEX
from .journal import fresh_mutation_id
from .threads import in_thread

__all__ = [
    "REMOVE_MEMORY",
    "SAVE_MEMORY",
    "MemoryTool",
    "Tool",
    "ToolResult",
    "ToolSpec",
    "check_slot_name",
    "dispatch_call",
    "mutation_id_for",
    "qualify",
    "qualify_tools",
    "session_of",
]

_SLOT_NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: An argument name the model may see echoed back: short and plain, never arbitrary text.
_PLAIN_ARGUMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")

logger = logging.getLogger("docmem")

#: ``(arguments, mutation_id) -> result sentence``; raises DocmemError when refused.
Handler = Callable[[Mapping[str, Any], str], str]


def check_slot_name(slot: str) -> str:
    """A slot name: 1-48 of ``[A-Za-z0-9-]`` with single ``_`` between them, never ``__``."""
    if not isinstance(slot, str) or len(slot) > 48 or not _SLOT_NAME.fullmatch(slot):
        raise InvalidArgument(
            "a slot name is 1-48 characters of [A-Za-z0-9-], with single '_' allowed inside"
        )
    return slot


def qualify(slot: str, tool: str) -> str:
    """The qualified tool name ``<slot>__<tool>``."""
    name = f"{check_slot_name(slot)}__{tool}"
    if not _TOOL_NAME.fullmatch(name):
        raise InvalidArgument("a qualified tool name must match ^[a-zA-Z0-9_-]{1,64}$")
    return name


@dataclass(frozen=True)
class ToolSpec:
    """What a model is told of a tool before any scope exists: name, description, schema.

    A host builds its framework's tool objects from these once, at start-up,
    and runs the calls later through :meth:`docmem.MemoryRuntime.dispatch`.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]

    def json_schema(self) -> dict[str, Any]:
        """``parameters`` as fresh plain dicts and lists, for a framework that edits its copy."""
        plain: dict[str, Any] = _plain(self.parameters)
        return plain


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


_Described = TypeVar("_Described", "Tool", ToolSpec)


def qualify_tools(
    slot: str, tools: Mapping[str, _Described], description: str | None = None
) -> dict[str, _Described]:
    """Copies of a provider's tools (or tool specs) named ``<slot>__<name>``.

    A slot ``description`` is prepended to every tool description with two
    newlines. The provider's own objects are never changed.
    """
    qualified: dict[str, _Described] = {}
    for name, tool in tools.items():
        full = qualify(slot, name)
        text = f"{description}\n\n{tool.description}" if description else tool.description
        qualified[full] = dataclasses.replace(tool, name=full, description=text)
    return qualified


def mutation_id_for(call_id: str | None, session_id: str | None) -> str:
    """The mutation id of a tool call: ``session_id/call_id`` when the host gives both.

    Some hosts number tool calls per conversation (``call_0``, ``call_1``...),
    so a call id alone could replay another conversation's mutation; without
    both, every call gets a fresh uuid. ``%`` and ``/`` in the session id are
    escaped so that no two (session, call) pairs give the same id.
    """
    if not call_id or not session_id:
        return fresh_mutation_id()
    return f"{session_id.replace('%', '%25').replace('/', '%2F')}/{call_id}"


def session_of(mutation_id: str) -> str | None:
    """The session id :func:`mutation_id_for` put into ``mutation_id``, or ``None`` (a fresh id).

    Its inverse on the session: the escaped session id has no ``/``, so it is
    everything before the first one (a call id may hold ``/`` itself).
    """
    session, slash, _ = mutation_id.partition("/")
    if not slash:
        return None
    return _ESCAPED.sub(lambda found: "/" if found.group() == "%2F" else "%", session)


_ESCAPED = re.compile("%2F|%25")


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns to the model: one short sentence, maybe an error."""

    text: str
    is_error: bool = False


def _unexpected(extra: list[object]) -> str:
    """The extra argument to name: the first plain name, else a description of it.

    Keys come from the model and may be of any type (a host may pass a Python
    mapping) or any length, so only a short plain name is echoed; ordering by
    the plain names alone never compares keys of different types.
    """
    plain = sorted(key for key in extra if isinstance(key, str) and _PLAIN_ARGUMENT.fullmatch(key))
    if plain:
        return repr(plain[0])
    return "whose name is not a plain identifier"


def _schema_error(schema: Mapping[str, Any], args: object) -> str | None:
    """The first way ``args`` breaks ``schema`` (the small subset docmem's tools use)."""
    if not isinstance(args, Mapping):
        return "arguments must be a JSON object"
    properties: Mapping[str, Mapping[str, Any]] = schema.get("properties", {})
    extra = [key for key in args if key not in properties]
    if extra and schema.get("additionalProperties") is False:
        expected = ", ".join(sorted(properties))
        return f"unexpected argument {_unexpected(extra)}; expected only {expected}"
    for name in schema.get("required", ()):
        if name not in args:
            return f"missing required argument {name!r}"
    for name, rule in properties.items():
        if name not in args:
            continue
        value = args[name]
        kind = rule.get("type")
        if kind == "string":
            if not isinstance(value, str):
                return f"argument {name!r} must be a string"
            if len(value) < rule.get("minLength", 0):
                return f"argument {name!r} must not be empty"
            if "maxLength" in rule and len(value) > rule["maxLength"]:
                return f"argument {name!r} is longer than {rule['maxLength']:,} characters"
        elif kind == "integer":
            if not isinstance(value, int) or isinstance(value, bool):
                return f"argument {name!r} must be an integer"
            if "minimum" in rule and value < rule["minimum"]:
                return f"argument {name!r} must be at least {rule['minimum']}"
            if "maximum" in rule and value > rule["maximum"]:
                return f"argument {name!r} must be at most {rule['maximum']}"
    return None


#: What the model is told after the error's own sentence, by the error's ``outcome``.
#: ``unknown`` must not read as a plain failure: a model told only "the read failed"
#: retries under a new call id (a second note) or tells the user nothing was saved.
OUTCOME_SENTENCES: Mapping[str, str] = {
    "unknown": (
        "The change may have been made: check the memory shown on the next turn "
        "before trying it again."
    ),
    "committed": "The change itself was made.",
}


def error_result(error: DocmemError) -> ToolResult:
    """A refused call as the model sees it: the error's content-free sentence, then its outcome.

    A mutation that may have landed (``outcome="unknown"``) or did land
    (``"committed"``) says so in words the model can act on.
    """
    text = error.message[:1].upper() + error.message[1:] + "."
    after = OUTCOME_SENTENCES.get(error.outcome or "")
    return ToolResult(f"{text} {after}" if after else text, is_error=True)


def decode_arguments(name: str, arguments: str | bytes) -> object | ToolResult:
    """The value JSON argument text encodes, or the error result the model should get.

    The text is the model's: besides malformed JSON it may nest deeper than
    the parser's recursion limit (``RecursionError``), which is the model's
    mistake like any other and so an error result, never an exception.
    """
    try:
        decoded: object = json.loads(arguments or "{}")
    except RecursionError:
        problem = "arguments are nested too deeply"
    except ValueError:  # malformed JSON, undecodable bytes, an integer too long to parse
        problem = "arguments are not JSON"
    else:
        return decoded
    return ToolResult(f"Invalid call to {name}: {problem}.", is_error=True)


def dispatch_call(
    tools: Mapping[str, Tool],
    name: object,
    arguments: object,
    *,
    call_id: str | None = None,
    session_id: str | None = None,
) -> ToolResult:
    """Run a model's tool call by name: an unknown name or bad arguments is an error result.

    Both the name and the arguments come from the model, so neither may
    raise: a name that is not a string (or not a tool) and JSON text that
    cannot be decoded are answered like any other bad call.
    """
    if not isinstance(name, str) or (tool := tools.get(name)) is None:
        known = ", ".join(sorted(tools)) or "none"
        shown = f" {name!r}" if isinstance(name, str) and _TOOL_NAME.fullmatch(name) else ""
        return ToolResult(f"Unknown tool{shown}; available: {known}.", is_error=True)
    if isinstance(arguments, (str, bytes)):
        arguments = decode_arguments(name, arguments)
        if isinstance(arguments, ToolResult):
            return arguments
    try:
        return tool.call(arguments, call_id=call_id, session_id=session_id)
    except Exception as error:  # a provider or store bug, not the model's mistake
        logger.error("docmem: tool %s failed with %s", name, type(error).__name__)
        return ToolResult(
            f"Memory failed unexpectedly ({type(error).__name__}); "
            "the change may or may not have been made.",
            is_error=True,
        )


@dataclass(frozen=True)
class Tool:
    """A model-callable tool: name, description, JSON schema and its handler."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Handler = field(repr=False)

    def call(
        self,
        arguments: object,
        *,
        call_id: str | None = None,
        session_id: str | None = None,
    ) -> ToolResult:
        """Run the tool; ``session_id/call_id`` is its mutation id (else a fresh uuid).

        ``call_id`` must be unique within the session: a repeated one replays
        the recorded outcome instead of acting twice.
        """
        try:
            problem = _schema_error(self.parameters, arguments)
        except Exception:  # a mapping that cannot be read (hostile keys, runaway nesting)
            problem = "the arguments could not be read as a JSON object"
        if problem is not None:
            return ToolResult(f"Invalid call to {self.name}: {problem}.", is_error=True)
        assert isinstance(arguments, Mapping)
        try:
            return ToolResult(self.handler(arguments, mutation_id_for(call_id, session_id)))
        except DocmemError as exc:
            return error_result(exc)

    async def acall(
        self,
        arguments: object,
        *,
        call_id: str | None = None,
        session_id: str | None = None,
    ) -> ToolResult:
        """:meth:`call` in a worker thread (a write already sent is not cancelled)."""
        return await in_thread(self.call, arguments, call_id=call_id, session_id=session_id)

    def __call__(self, arguments: object, **kwargs: Any) -> ToolResult:
        return self.call(arguments, **kwargs)


class _Indexed(Protocol):
    """What a memory tool's action returns: a status and the entry's index."""

    @property
    def status(self) -> str: ...

    @property
    def index(self) -> int | None: ...


@dataclass(frozen=True)
class MemoryTool:
    """The static half of a memory tool: name, description, schema and result sentences.

    ``description`` names the slot as ``{slot}``; ``sentences`` holds, by the
    action's result status, what the model is told, with ``{index}``.
    ``argument`` is the one argument the action gets.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    argument: str
    sentences: Mapping[str, str]
    #: ``parameters`` read-only all the way down, shared by every tool built for one call.
    shared_parameters: Mapping[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "shared_parameters", _read_only(self.parameters))

    def spec(self, slot: str) -> ToolSpec:
        """The tool as the model sees it, for ``slot``, before any scope is bound."""
        return ToolSpec(
            self.name, self.description.format(slot=slot), copy.deepcopy(dict(self.parameters))
        )

    def bind(self, slot: str, action: Callable[[Any, str], _Indexed]) -> Tool:
        """A :class:`Tool` running ``action(argument, mutation_id)`` once its schema is met.

        Every tool gets its own copy of the schema: a host that edits one
        cannot change another's.
        """
        spec = self.spec(slot)
        return Tool(spec.name, spec.description, spec.parameters, self._handler(action))

    def bind_for_call(self, slot: str, action: Callable[[Any, str], _Indexed]) -> Tool:
        """:meth:`bind`, for a tool that runs one call and is dropped: no schema copied.

        Its schema is :attr:`shared_parameters`: nobody can edit it, so no
        tool needs a copy of its own.
        """
        description = self.description.format(slot=slot)
        return Tool(self.name, description, self.shared_parameters, self._handler(action))

    def _handler(self, action: Callable[[Any, str], _Indexed]) -> Handler:
        def handler(arguments: Mapping[str, Any], mutation_id: str) -> str:
            result = action(arguments[self.argument], mutation_id)
            return self.sentences[result.status].format(index=result.index)

        return handler


def _read_only(value: Any) -> Any:
    """``value`` with every mapping a read-only view and every list a tuple."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _read_only(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_read_only(item) for item in value)
    return value


#: A call whose mutation id was applied long ago (its journal record aged out).
_REPLAYED = "This call was already carried out earlier; nothing was changed now."

SAVE_MEMORY = MemoryTool(
    name="save_memory",
    description=(
        "Save one short, self-contained note to the `{slot}` memory, which "
        "persists across conversations. Save durable facts and preferences worth "
        "remembering; never secrets. Returns the note's index."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {
                "type": "string",
                "minLength": 1,
                "description": "The note, one line of plain text.",
            }
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    argument="text",
    sentences={
        "saved": "Saved as memory {index}.",
        "duplicate": "Already saved as memory {index}.",
        "replayed": _REPLAYED,
    },
)

REMOVE_MEMORY = MemoryTool(
    name="remove_memory",
    description=(
        "Remove the note with this index from the `{slot}` memory, when it is "
        "wrong or no longer true. Indexes are shown in the memory message."
    ),
    parameters={
        "type": "object",
        "properties": {
            "index": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_INDEX,
                "description": "The index shown before the note.",
            }
        },
        "required": ["index"],
        "additionalProperties": False,
    },
    argument="index",
    sentences={
        "removed": "Removed memory {index}.",
        "absent": "Memory {index} does not exist; nothing removed.",
        "replayed": _REPLAYED,
    },
)
