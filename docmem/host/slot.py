"""Memory slots: which provider a turn talks to, under which trusted scope.

A slot's scope comes from trusted context only (the authenticated principal,
channel metadata, application data), never from the model's messages, and is
resolved before its namespace: ``None`` from either disables the slot for the
turn (no provider call, no tools, no recall). The two values are locked into
opaque keys (:func:`docmem.lock_scope`) that serve every call of the turn.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Union

from ..errors import InvalidArgument, InvalidScope
from ..provider.keys import LockedScope, ScopeValue, lock_scope

# The provider protocol and its contexts live in docmem.provider; these names are
# re-exported here, where they were first defined.
from ..provider.protocol import CaptureContext as CaptureContext
from ..provider.protocol import MemoryProvider as MemoryProvider
from ..provider.protocol import RecallContext as RecallContext
from ..provider.protocol import RecalledItem as RecalledItem
from ..provider.protocol import ToolsContext as ToolsContext
from ..provider.tools import Tool, ToolSpec, check_slot_name, qualify_tools

__all__ = [
    "MemorySlot",
    "NamespaceContext",
    "Principal",
    "ScopeContext",
    "SlotLock",
    "Visibility",
    "by_principal",
    "default_namespace",
]

logger = logging.getLogger("docmem")

Visibility = Literal["scope", "session"]


@dataclass(frozen=True)
class Principal:
    """Who the host authenticated: ``kind`` is e.g. ``"user"``, ``"service"``,
    ``"anonymous"`` or ``"runtime"``; ``authenticator`` names the identity
    provider, ``issuer`` its issuer URL when it has one."""

    kind: str
    authenticator: str
    id: str
    issuer: str | None = None

    @classmethod
    def parse(cls, text: str) -> Principal:
        """``KIND:AUTHENTICATOR:ID`` (as a command line gives it); the id may hold colons.

        Raises :class:`~docmem.InvalidArgument`, quoting nothing of ``text``
        (it names a person), when a part is missing or blank.
        """
        kind, _, rest = text.partition(":")
        authenticator, _, identity = rest.partition(":")
        if not (kind.strip() and authenticator.strip() and identity.strip()):
            raise InvalidArgument(
                "a principal is KIND:AUTHENTICATOR:ID, e.g. user:auth0:u_123, with no part blank"
            )
        return cls(kind, authenticator, identity)


@dataclass(frozen=True)
class ScopeContext:
    """The trusted inputs a scope resolver may use; never messages or turn input.

    ``channel`` is the channel kind (``"slack"``, ``"web"``, ...) and
    ``channel_metadata`` what the host knows of it (team, channel, thread ids).
    ``cancel`` is set when the turn is abandoned.
    """

    principal: Principal | None = None
    channel: str | None = None
    channel_metadata: Mapping[str, str] = field(default_factory=dict)
    cancel: threading.Event | None = None


@dataclass(frozen=True)
class NamespaceContext:
    """What a namespace resolver may use: the application's root, node and the slot."""

    app_root: str
    node: str
    slot: str


#: A scope: a value, ``None`` (disabled), or a resolver of the trusted context.
ScopeSpec = Union[ScopeValue, None, Callable[[ScopeContext], Union[ScopeValue, None]]]  # noqa: UP007
#: A namespace: a string, ``None`` (disabled), or a resolver.
NamespaceSpec = Union[str, None, Callable[[NamespaceContext], Union[str, None]]]  # noqa: UP007


def by_principal(context: ScopeContext) -> tuple[str, str, str, str] | None:
    """The principal as ``(kind, authenticator, issuer or "", id)``.

    ``None`` (slot disabled) for no principal, an anonymous or a runtime one,
    or an empty or whitespace-only id: memory that follows a person needs a
    person, and a blank id is an authenticator that named nobody (every such
    turn would otherwise share one memory).
    """
    principal = context.principal
    if principal is None or principal.kind in ("anonymous", "runtime") or not principal.id:
        return None
    if isinstance(principal.id, str) and not principal.id.strip():
        return None
    return (principal.kind, principal.authenticator, principal.issuer or "", principal.id)


def default_namespace(context: NamespaceContext) -> str:
    """``<DOCMEM_ENVIRONMENT>:<node>:<slot>``, so deployments never share memory.

    Without ``DOCMEM_ENVIRONMENT`` this fails closed, unless ``DOCMEM_DEV=1``
    (local development), where a digest of the application root stands in
    for the environment (the raw path never becomes part of a key).
    """
    environment = os.environ.get("DOCMEM_ENVIRONMENT", "").strip()
    if environment:
        return f"{environment}:{context.node}:{context.slot}"
    if os.environ.get("DOCMEM_DEV") == "1":
        root = hashlib.sha256(os.path.abspath(context.app_root).encode("utf-8")).hexdigest()
        return f"dev-{root[:16]}:{context.node}:{context.slot}"
    raise InvalidScope(
        "DOCMEM_ENVIRONMENT is not set: name this deployment (e.g. 'acme-prod'), "
        "pass namespace= to the slot, or set DOCMEM_DEV=1 for local development"
    )


@dataclass(frozen=True)
class SlotLock:
    """One slot's locked scope for one turn (keys only) and how it shows earlier scopes."""

    slot: str
    scope: LockedScope
    visibility: Visibility = "scope"


class MemorySlot:
    """An application's declaration of one memory slot.

    ``scope`` is a value, ``None`` or a resolver of :class:`ScopeContext`;
    ``namespace`` a string, ``None`` or a resolver of :class:`NamespaceContext`
    (default: :func:`default_namespace`). ``description`` (non-blank) is
    prepended to each of the provider's tool descriptions. ``visibility``
    ``"session"`` keeps earlier scopes of the same namespace visible in the
    conversation, labelled; ``"scope"`` shows only the active scope.
    """

    def __init__(
        self,
        name: str,
        provider: MemoryProvider,
        *,
        scope: ScopeSpec,
        namespace: NamespaceSpec = default_namespace,
        description: str | None = None,
        visibility: Visibility = "scope",
        tools: bool = True,
    ) -> None:
        self.name = check_slot_name(name)
        if not callable(getattr(provider, "recall", None)):
            raise InvalidArgument(f"the provider of slot {name!r} has no recall() method")
        if description is not None and (
            not isinstance(description, str) or not description.strip()
        ):
            raise InvalidArgument(f"the description of slot {name!r} is blank; omit it instead")
        if visibility not in ("scope", "session"):
            raise InvalidArgument("visibility must be 'scope' or 'session'")
        self.provider = provider
        self.scope = scope
        self.namespace = namespace
        self.description = description
        self.visibility: Visibility = visibility
        self.tools = tools

    def __repr__(self) -> str:
        return f"MemorySlot({self.name!r}, visibility={self.visibility!r})"

    def lock(self, scope_context: ScopeContext, *, app_root: str, node: str) -> SlotLock | None:
        """Resolve scope, then namespace, and lock them; ``None`` when either is ``None``."""
        scope = self.scope(scope_context) if callable(self.scope) else self.scope
        if scope is None:
            _disabled(self.name, "scope")
            return None
        namespace_context = NamespaceContext(app_root=app_root, node=node, slot=self.name)
        namespace = (
            self.namespace(namespace_context) if callable(self.namespace) else self.namespace
        )
        if namespace is None:
            _disabled(self.name, "namespace")
            return None
        return SlotLock(self.name, lock_scope(namespace=namespace, scope=scope), self.visibility)

    def qualified_tools(self, context: ToolsContext) -> dict[str, Tool]:
        """The provider's tools, qualified ``<slot>__<tool>`` with the description prefix."""
        if not self.tools:
            return {}
        resolver = getattr(self.provider, "tools", None)
        if not callable(resolver):
            return {}
        found = resolver(context)
        if not found:
            return {}
        return qualify_tools(self.name, found, self.description)

    def qualified_tool(self, context: ToolsContext, name: str) -> Tool | None:
        """The tool :meth:`qualified_tools` would have under ``name``, or ``None``.

        A provider with ``tool_for_call(context, name)`` (optional, found by
        name, like ``tools``) builds only that tool, under its unqualified name;
        any other builds its whole set, and the one is picked from it.
        """
        slot, _, bare = name.partition("__")
        if slot != self.name or not self.tools:
            return None
        build = getattr(self.provider, "tool_for_call", None)
        if not callable(build) or not callable(getattr(self.provider, "tools", None)):
            return self.qualified_tools(context).get(name)
        found: Tool | None = build(context, bare)
        if found is None:
            return None
        return qualify_tools(self.name, {bare: found}, self.description)[name]

    def qualified_specs(self) -> dict[str, ToolSpec]:
        """The provider's declared tool specs, qualified like :meth:`qualified_tools`. No I/O.

        Empty for a slot without tools or a provider that declares none
        (``tool_specs`` is optional): such a slot's tools cannot be offered
        to a framework that builds its tool objects before any turn.
        """
        if not self.tools:
            return {}
        declare = getattr(self.provider, "tool_specs", None)
        if not callable(declare):
            return {}
        found = declare(self.name)
        if not found:
            return {}
        return qualify_tools(self.name, found, self.description)


def _disabled(slot: str, which: str) -> None:
    if os.environ.get("DOCMEM_DEV") == "1":
        logger.info(
            "docmem: slot %s is disabled this turn: its %s resolver returned None", slot, which
        )
