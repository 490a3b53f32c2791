"""Recalled copies in a host's messages: the marker, finding them, stripping and placing them.

A framework converts every message into its own types and may persist them,
so a copy of a memory must be recognisable by its text alone, in another
process, a day later. The first line of every copy docmem hands a host ends
with a marker naming its slot (docs/design.md, section 6.1)::

    # Memory: user <!-- docmem:recall user -->

It is an HTML comment, so Markdown renders nothing for it. Copies are found
by that marker (or as :class:`ProjectedRecall` objects), stripped from the
host's messages before each model call, and placed afresh at one stable
position. A user message whose first line ends with the marker would be
taken for a copy and left out of the model's input; nothing else is: the
text of an assistant message or a tool result that quotes the marker is not
looked at (:func:`user_text`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

from ..errors import InvalidArgument

__all__ = [
    "Position",
    "ProjectedRecall",
    "checked_position",
    "is_recalled",
    "mark_recalled",
    "message_role",
    "message_text",
    "place_recalls",
    "recalled_slot",
    "split_recalls",
    "user_text",
]

_M = TypeVar("_M")

#: Where :func:`place_recalls` puts the copies among the messages: after the leading
#: system messages (the prompt prefix stays cache-stable while memory is unchanged), or
#: just before the newest user message (the prefix before it stays stable as memory
#: changes). Every adapter's ``position=`` takes these.
Position = Literal["after_system", "before_last_user"]


def checked_position(position: object) -> Position:
    """``position`` if it is a :data:`Position`; InvalidArgument otherwise."""
    if position == "after_system":
        return "after_system"
    if position == "before_last_user":
        return "before_last_user"
    raise InvalidArgument("position must be 'after_system' or 'before_last_user'")


_MARKER = re.compile(r"<!-- docmem:recall ([A-Za-z0-9_-]{1,48}) -->")
_SYSTEM_ROLES = frozenset({"system", "developer"})
#: LangChain-style ``type`` values, by the role they stand for.
_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


@dataclass(frozen=True)
class ProjectedRecall:
    """A recalled record placed in the prompt: user-role context, marked as docmem's.

    ``content`` is what the model sees; its first line carries the marker.
    A host sends it like any user message and recognises it (``isinstance``,
    or :func:`is_recalled` on its text once converted) to keep it out of its
    own stored history.
    """

    content: str
    slot: str
    item_key: str | None
    role: str = "user"
    docmem_recall: bool = True


def mark_recalled(content: str, slot: str) -> str:
    """``content`` with the marker for ``slot`` at the end of its first line."""
    first, newline, rest = content.partition("\n")
    return f"{first.rstrip()} <!-- docmem:recall {slot} -->{newline}{rest}"


def recalled_slot(text: object) -> str | None:
    """The slot a recalled copy's text names, or ``None`` when it is not a copy."""
    if not isinstance(text, str):
        return None
    first = text.lstrip().partition("\n")[0].rstrip()
    found = _MARKER.search(first)
    if found is None or found.end() != len(first):
        return None
    return found.group(1)


def is_recalled(text: object) -> bool:
    """Whether ``text`` is a recalled copy: its first line ends with docmem's marker."""
    return recalled_slot(text) is not None


def _text_of_content(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts = [text for part in content if (text := _part_text(part)) is not None]
        return "\n".join(texts) if texts else None
    return None


def _part_text(part: object) -> str | None:
    if isinstance(part, str):
        return part
    text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
    return text if isinstance(text, str) else None


def message_text(message: object) -> str | None:
    """The text of a host message, for the common shapes; ``None`` when it has none.

    A string; a :class:`ProjectedRecall`; a mapping or object whose
    ``content`` is a string or a list of parts with a ``text`` (OpenAI- and
    Anthropic-style content lists, the parts' texts joined by newlines).
    """
    if isinstance(message, ProjectedRecall):
        return message.content
    if isinstance(message, str):
        return message
    content = (
        message.get("content")
        if isinstance(message, Mapping)
        else getattr(message, "content", None)
    )
    return _text_of_content(content)


def user_text(message: object) -> str | None:
    """The text of a user message (or a :class:`ProjectedRecall`), ``None`` for any other role.

    What copies are looked for in: a model that echoes the marker in its own
    answer, or a tool result that quotes it, must stay in the conversation
    (dropping an assistant message would orphan its tool results).
    """
    if isinstance(message, ProjectedRecall) or message_role(message) == "user":
        return message_text(message)
    return None


def message_role(message: object) -> str | None:
    """The role of a host message: its ``role`` key or attribute, else its ``type``."""
    if isinstance(message, Mapping):
        role = message.get("role")
        kind = message.get("type")
    else:
        role = getattr(message, "role", None)
        kind = getattr(message, "type", None)
    if isinstance(role, str):
        return role
    return _ROLE_OF_TYPE.get(kind) if isinstance(kind, str) else None


@overload
def split_recalls(
    messages: Sequence[_M | ProjectedRecall], *, text_of: None = None
) -> tuple[list[_M], list[ProjectedRecall]]: ...


@overload
def split_recalls(
    messages: Sequence[_M | ProjectedRecall], *, text_of: Callable[[Any], str | None]
) -> tuple[list[_M], list[_M | ProjectedRecall]]: ...


def split_recalls(
    messages: Sequence[_M | ProjectedRecall],
    *,
    text_of: Callable[[Any], str | None] | None = None,
) -> tuple[list[_M], list[_M | ProjectedRecall]] | tuple[list[_M], list[ProjectedRecall]]:
    """Separate a prompt into the host's conversation and docmem's copies.

    The conversation half is what may go to a summarizer or into the host's
    stored history; the other half never should. Without ``text_of`` only
    :class:`ProjectedRecall` objects are copies; with it (e.g.
    :func:`user_text`), so is every message whose text :func:`is_recalled`.
    """
    conversation: list[_M] = []
    recalls: list[_M | ProjectedRecall] = []
    for message in messages:
        if isinstance(message, ProjectedRecall) or (
            text_of is not None and is_recalled(text_of(message))
        ):
            recalls.append(message)
        else:
            conversation.append(message)
    return conversation, recalls


def place_recalls(
    messages: Sequence[_M],
    recalls: Sequence[ProjectedRecall],
    *,
    position: Position = "after_system",
    role_of: Callable[[Any], str | None] = message_role,
) -> list[_M | ProjectedRecall]:
    """``messages`` (already without copies) with ``recalls`` inserted together at ``position``.

    ``"after_system"`` goes after the leading messages whose role is
    ``system`` or ``developer``; ``"before_last_user"`` just before the newest
    ``user`` message, or at the end when there is none.
    """
    if checked_position(position) == "after_system":
        at = 0
        while at < len(messages) and role_of(messages[at]) in _SYSTEM_ROLES:
            at += 1
    else:
        users = [number for number, message in enumerate(messages) if role_of(message) == "user"]
        at = users[-1] if users else len(messages)
    placed: list[_M | ProjectedRecall] = [*messages[:at], *recalls, *messages[at:]]
    return placed
