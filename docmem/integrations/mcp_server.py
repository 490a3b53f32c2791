"""The docmem MCP server: memory tools, a recall prompt and one resource per slot.

The public names are re-exported by :mod:`docmem.integrations.mcp`, which
documents the whole server; this module builds it on :class:`docmem.MemoryRuntime`.

MCP hands a tool the request, never a trusted run context, so the scope is
resolved from what the transport verified (a principal fixed when the
process was started, or the bearer token of this HTTP request), per request,
by the host's ``scope_context``. Nothing of the request body names a scope.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

try:
    import anyio
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.provider import TokenVerifier
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.caching import CacheHint
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import Context, MCPServer, UserMessage
    from mcp.server.mcpserver.prompts.base import Prompt
    from mcp.server.mcpserver.resources import FunctionResource
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.subscriptions import ResourceUpdated, ServerEvent
    from mcp.shared.exceptions import MCPError
    from mcp_types import (
        INTERNAL_ERROR,
        INVALID_PARAMS,
        CallToolResult,
        RequestParamsMeta,
        TextContent,
        ToolAnnotations,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.mcp needs the MCP Python SDK: pip install "agent-docmem[mcp]"'
    ) from error

from docmem._version import __version__
from docmem.errors import DocmemError, InvalidArgument, InvalidScope
from docmem.host.injection import ProjectedRecall, mark_recalled
from docmem.host.runtime import MemoryRuntime
from docmem.host.slot import MemorySlot, Principal, ScopeContext
from docmem.provider.document import new_document, render_recall
from docmem.provider.tools import ToolResult, ToolSpec, error_result

from .mcp_auth import JwtVerifier

__all__ = [
    "CALL_ID_META_KEY",
    "RECALL_PROMPT",
    "TOKEN_AUTHENTICATOR",
    "ScopeResolver",
    "access_token_principal",
    "call_meta",
    "docmem_mcp_server",
    "fixed_principal",
    "resource_uri",
]

logger = logging.getLogger("docmem")

#: The request ``_meta`` key under which a client may pass its own id for a tool call.
CALL_ID_META_KEY = "docmem/call_id"
#: The authenticator of a principal read from a bearer token (its issuer is the token's).
TOKEN_AUTHENTICATOR = "oauth"
#: The name of the prompt that returns every active slot's memory.
RECALL_PROMPT = "docmem_recall"
#: What a client's call id is prefixed with in the mutation id (``mcp/<call id>``).
_SESSION = "mcp"
#: What the model is told when a resolver fails without a docmem error.
_UNRESOLVED = "Memory is unavailable: its scope could not be resolved."

#: Maps an MCP request to the trusted scope context of its caller (``None``: memory off).
ScopeResolver = Callable[[ServerRequestContext[Any, Any]], ScopeContext | None]

#: The request being served, for the handlers the SDK gives no context (static resources).
_REQUEST: ContextVar[ServerRequestContext[Any, Any] | None] = ContextVar(
    "docmem_mcp_request", default=None
)

_ANNOTATIONS = {
    # A duplicate save is a no-op; removing an index twice removes it once (indexes never repeat).
    "save_memory": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
    "remove_memory": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
}
_TITLES = {"save_memory": "Save to {slot} memory", "remove_memory": "Remove from {slot} memory"}

_PROMPT_DESCRIPTION = (
    "What this user's memory holds now: one user message per memory slot. Call it before "
    "every model call and replace the copy you added last time; each copy's first line ends "
    "with <!-- docmem:recall SLOT -->."
)


def resource_uri(slot: str) -> str:
    """The URI of a slot's resource: ``docmem://<slot>``."""
    return f"docmem://{slot}"


def call_meta(call_id: str) -> RequestParamsMeta:
    """The request ``_meta`` of a tool call the client identifies: ``{"docmem/call_id": id}``.

    ``client.call_tool(name, arguments, meta=call_meta(id))``: a retry with the
    same id is answered from docmem's journal, with no second effect.
    """
    return cast(RequestParamsMeta, {CALL_ID_META_KEY: call_id})


def fixed_principal(principal: Principal) -> ScopeResolver:
    """A resolver giving every request the same principal: a stdio server started for one user.

    The host that starts the process knows who it runs for; MCP carries no
    identity over stdio, so the principal is part of how the server is started.
    """
    if not isinstance(principal, Principal):
        raise InvalidArgument("fixed_principal needs a Principal")
    context = ScopeContext(principal=principal)

    def resolve(request: ServerRequestContext[Any, Any]) -> ScopeContext:
        return context

    return resolve


def access_token_principal() -> ScopeResolver:
    """A resolver reading the principal from the request's verified bearer token.

    The principal is ``Principal("user", "oauth", subject, issuer=issuer)``
    (``sub`` and ``iss`` of the token the server's token verifier accepted),
    so :func:`docmem.by_principal` keys a scope by ``("user", "oauth",
    issuer, subject)``: a subject is unique only per issuer. An operator
    names it ``docmem show --principal user:oauth:SUBJECT --issuer ISSUER``.
    A request without a verified token, or a token without both claims, is
    refused with :class:`docmem.InvalidScope` (never a shared memory).
    """

    def resolve(request: ServerRequestContext[Any, Any]) -> ScopeContext:
        token = get_access_token()
        if token is None:
            raise InvalidScope(
                "no verified access token: serve this memory over HTTP with a token verifier"
            )
        issuer = (token.claims or {}).get("iss")
        subject = token.subject
        if not isinstance(issuer, str) or not isinstance(subject, str):
            raise InvalidScope("the access token names no issuer and subject; memory needs both")
        if not issuer.strip() or not subject.strip():
            raise InvalidScope("the access token names no issuer and subject; memory needs both")
        return ScopeContext(
            principal=Principal("user", TOKEN_AUTHENTICATOR, subject, issuer=issuer)
        )

    return resolve


class _Unresolved(Exception):
    """The scope of a request could not be resolved; ``sentence`` says so for the client."""

    def __init__(self, sentence: str, code: str | None) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.code = code


def _unresolved(error: Exception) -> _Unresolved:
    """A resolver's failure as the client hears it: docmem's sentence, or a bug's type logged."""
    if isinstance(error, DocmemError):
        return _Unresolved(error_result(error).text, error.code)
    logger.warning("docmem mcp: scope could not be resolved (%s)", type(error).__name__)
    return _Unresolved(_UNRESOLVED, None)


class _Memory:
    """The slots behind one server: resolution, dispatch and recall, all content-free in logs."""

    def __init__(self, slots: Sequence[MemorySlot], resolve: ScopeResolver) -> None:
        self.slots = list(slots)
        self.runtime = MemoryRuntime(self.slots)
        #: One runtime per slot, so a resource reads its own slot only.
        self.single = {slot.name: MemoryRuntime([slot]) for slot in self.slots}
        self._resolve = resolve
        #: Where slot namespaces are resolved from: the working directory the server was
        #: built in, read once (not a ``getcwd`` system call per request on the event loop).
        self.app_root = os.getcwd()

    def scope(self, request: ServerRequestContext[Any, Any] | None) -> ScopeContext | None:
        """The caller's trusted scope context; raises :class:`_Unresolved` with the reason."""
        if request is None:
            raise _Unresolved(_UNRESOLVED, None)
        try:
            return self._resolve(request)
        except Exception as error:
            unresolved = _unresolved(error)
        raise unresolved

    def active(self, slot: str, scope: ScopeContext | None) -> bool:
        """Whether ``slot`` is on for this caller; raises :class:`_Unresolved` with the reason."""
        if scope is None:
            return False
        found = next(each for each in self.slots if each.name == slot)
        try:
            return found.lock(scope, app_root=self.app_root, node="agent") is not None
        except Exception as error:
            unresolved = _unresolved(error)
        raise unresolved

    def storage_keys(self) -> dict[str, str]:
        """Each active slot's storage key for the request being served (none when unresolved)."""
        try:
            scope = self.scope(_REQUEST.get())
        except _Unresolved:
            return {}
        if scope is None:
            return {}
        keys: dict[str, str] = {}
        for slot in self.slots:
            try:
                lock = slot.lock(scope, app_root=self.app_root, node="agent")
            except Exception:  # an unresolvable slot is notified to nobody
                continue
            if lock is not None:
                keys[slot.name] = lock.scope.storage_key
        return keys


class _ScopedBus:
    """A subscription bus that tells a listener only of changes to its own memory.

    Every user of a server sees the same URIs (``docmem://user``), so an
    update event for a slot reaches a listen stream only when the stream's
    caller has the writer's storage key for that slot: another user learns
    nothing, not even that someone saved. Other events reach every listener.
    """

    def __init__(self, memory: _Memory) -> None:
        self._memory = memory
        self._uris = {resource_uri(slot.name): slot.name for slot in memory.slots}
        self._listeners: dict[object, tuple[Callable[[ServerEvent], None], dict[str, str]]] = {}

    async def publish(self, event: ServerEvent) -> None:
        """Deliver ``event`` to every listener it concerns (listeners never block)."""
        slot = self._uris.get(event.uri) if isinstance(event, ResourceUpdated) else None
        writer = self._memory.storage_keys() if slot is not None else {}
        for listener, keys in list(self._listeners.values()):
            if slot is not None and (slot not in writer or keys.get(slot) != writer[slot]):
                continue
            try:
                listener(event)
            except Exception as error:  # one listener must not starve the others
                logger.warning("docmem mcp: a listener failed (%s)", type(error).__name__)
        await anyio.lowlevel.checkpoint()

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """Register ``listener`` with its caller's storage keys; returns the unsubscribe."""
        token = object()
        self._listeners[token] = (listener, self._memory.storage_keys())

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe


async def _remember_request(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Server middleware: the request being served, for handlers the SDK gives no context."""
    token = _REQUEST.set(ctx)
    try:
        return await call_next(ctx)
    finally:
        _REQUEST.reset(token)


def docmem_mcp_server(
    slots: Sequence[MemorySlot],
    *,
    scope_context: ScopeResolver,
    name: str = "docmem",
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
) -> MCPServer:
    """An MCP server with every slot's memory tools, the recall prompt and one resource per slot.

    ``scope_context`` maps each request to the caller's trusted
    :class:`docmem.ScopeContext`: :func:`fixed_principal` for a stdio server
    started for one user, :func:`access_token_principal` for streamable HTTP
    with ``token_verifier`` (e.g. a
    :class:`~docmem.integrations.mcp.JwtVerifier`), whose requests without a
    valid bearer token are answered 401 before any handler runs. ``auth``
    defaults to the verifier's :meth:`JwtVerifier.auth_settings`. Give every
    slot an explicit namespace: a host starts a stdio server with a
    whitelisted environment, so ``DOCMEM_ENVIRONMENT`` is missing there.
    """
    slots = list(slots)
    if not slots:
        raise InvalidArgument("an MCP server needs at least one memory slot")
    if not callable(scope_context):
        raise InvalidArgument("scope_context must be a callable of the MCP request")
    if token_verifier is not None and auth is None:
        if not isinstance(token_verifier, JwtVerifier):
            raise InvalidArgument("pass auth= (mcp AuthSettings) with a token verifier of your own")
        auth = token_verifier.auth_settings()
    memory = _Memory(slots, scope_context)
    server: MCPServer = MCPServer(
        name,
        instructions=(
            "Long-term memory of this user, kept by docmem. Read it with the prompt "
            f"{RECALL_PROMPT} (or the resources docmem://<slot>) before each model call."
        ),
        version=__version__,
        token_verifier=token_verifier,
        auth=auth,
        tools=[_tool(memory, spec) for spec in memory.runtime.tool_specs().values()],
        resources=[_resource(memory, slot.name) for slot in memory.slots],
        # Memory changes under the client's feet: every read is immediately stale, never shared.
        cache_hints={"resources/read": CacheHint(ttl_ms=0, scope="private")},
        subscriptions=_ScopedBus(memory),
        middleware=[_remember_request],
        log_level="WARNING",
    )
    server.add_prompt(_prompt(memory))
    return server


def _tool(memory: _Memory, spec: ToolSpec) -> Tool:
    """One MCP tool: docmem's schema verbatim, the raw arguments to docmem, its sentence back."""
    qualified = spec.name
    slot, _, action = qualified.partition("__")

    async def call(ctx: Context) -> CallToolResult:
        request = ctx.request_context
        result = await _dispatch(memory, request, qualified)
        if not result.is_error:
            try:
                await ctx.notify_resource_updated(resource_uri(slot))
            except Exception as error:  # a notification is a courtesy, never the call's outcome
                logger.warning("docmem mcp: update not notified (%s)", type(error).__name__)
        return CallToolResult(
            content=[TextContent(type="text", text=result.text)], is_error=result.is_error
        )

    title = _TITLES.get(action)
    tool = Tool.from_function(
        call,
        name=qualified,
        title=title.format(slot=slot) if title else None,
        description=spec.description,
        annotations=_ANNOTATIONS.get(action),
        structured_output=False,
    )
    # The SDK derives a schema from the signature (none here, so it validates nothing and
    # drops nothing): what clients see is docmem's own, and docmem checks the raw arguments.
    return tool.model_copy(update={"parameters": spec.json_schema()})


async def _dispatch(
    memory: _Memory, request: ServerRequestContext[Any, Any], name: str
) -> ToolResult:
    """Run one tool call for the caller; every failure is an error result with docmem's sentence."""
    params: Mapping[str, Any] = request.params or {}
    arguments = params.get("arguments")
    call_id = (request.meta or {}).get(CALL_ID_META_KEY)
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        return ToolResult(
            f"Invalid call to {name}: _meta {CALL_ID_META_KEY!r} must be a non-empty string.",
            is_error=True,
        )
    try:
        scope = memory.scope(request)
    except _Unresolved as unresolved:
        return ToolResult(unresolved.sentence, is_error=True)
    cancel = threading.Event()
    if scope is not None and scope.cancel is None:
        scope = dataclasses.replace(scope, cancel=cancel)
    try:
        return await memory.runtime.adispatch(
            scope,
            name,
            {} if arguments is None else arguments,
            call_id=call_id,
            session_id=_SESSION if call_id else None,
            app_root=memory.app_root,
        )
    except BaseException:  # the client cancelled: a save still retrying stops before its next try
        cancel.set()
        raise


def _prompt(memory: _Memory) -> Prompt:
    async def docmem_recall(ctx: Context) -> list[UserMessage]:
        scope = _scope_or_error(memory, ctx.request_context)
        recalls = await _read(memory.runtime, scope, memory.app_root)
        return [UserMessage(recall.content) for recall in recalls]

    return Prompt.from_function(
        docmem_recall, name=RECALL_PROMPT, title="Memory", description=_PROMPT_DESCRIPTION
    )


def _resource(memory: _Memory, slot: str) -> FunctionResource:
    async def read() -> str:
        try:
            scope = memory.scope(_REQUEST.get())
            active = memory.active(slot, scope)
        except _Unresolved as unresolved:
            raise _protocol_error(unresolved) from None
        if not active:
            raise MCPError(INVALID_PARAMS, f"Memory slot {slot!r} is off for this caller.")
        recalls = await _read(memory.single[slot], scope, memory.app_root)
        return "\n\n".join(recall.content for recall in recalls) or _nothing_saved(slot)

    return FunctionResource.from_function(
        read,
        uri=resource_uri(slot),
        name=slot,
        title=f"{slot} memory",
        description=f"The {slot} memory as the model sees it, updated after every write.",
        mime_type="text/markdown",
    )


def _nothing_saved(slot: str) -> str:
    """What the resource of a memory with no document shows: the empty state, marked.

    A resource always has a text, and ``""`` would be a second empty state
    beside the one a document whose entries were all removed renders ("No
    memories are saved."); so a missing document renders as an empty one,
    marked as the prompt's copies are.
    """
    return mark_recalled(render_recall(new_document(), slot), slot)


def _scope_or_error(
    memory: _Memory, request: ServerRequestContext[Any, Any] | None
) -> ScopeContext | None:
    try:
        return memory.scope(request)
    except _Unresolved as unresolved:
        raise _protocol_error(unresolved) from None


def _protocol_error(unresolved: _Unresolved) -> MCPError:
    data = {"code": unresolved.code} if unresolved.code else None
    return MCPError(INTERNAL_ERROR, unresolved.sentence, data)


async def _read(
    runtime: MemoryRuntime, scope: ScopeContext | None, app_root: str
) -> list[ProjectedRecall]:
    """A fresh recall; a failure is an MCP error carrying docmem's sentence and code."""
    try:
        return await runtime.arecall(scope, app_root=app_root)
    except DocmemError as error:
        failure = MCPError(INTERNAL_ERROR, error_result(error).text, {"code": error.code})
    except Exception as error:  # a provider bug: its type only, never its text
        logger.warning("docmem mcp: recall failed (%s)", type(error).__name__)
        failure = MCPError(INTERNAL_ERROR, f"Memory could not be read ({type(error).__name__}).")
    raise failure
