"""docmem as an MCP server (mcp 2.x ``MCPServer``), over stdio or authenticated streamable HTTP.

::

    from docmem.integrations.mcp import docmem_mcp_server, fixed_principal

    slots = [docmem.MemorySlot("user", docmem.FileMemory(store), scope=docmem.by_principal,
                               namespace="acme:prod:user")]
    server = docmem_mcp_server(slots, scope_context=fixed_principal(docmem.Principal.parse(
        "user:auth0:u_123")))
    server.run("stdio")

or, from a shell (what an MCP host's configuration starts)::

    docmem mcp --store file:///var/lib/agent/memory --namespace acme:prod \\
        --principal user:auth0:u_123

What a client gets:

- Tools ``<slot>__save_memory`` and ``<slot>__remove_memory`` with docmem's
  exact JSON schema. The raw arguments go to docmem, which refuses an extra
  argument (``user_id``) rather than ignoring it. Both are annotated
  idempotent (a duplicate save and a second removal of an index are no-ops),
  remove as destructive, save as not. A refusal is ``is_error`` with docmem's
  sentence as the text; every failure, a scope that cannot be resolved
  included, is such a result, never the SDK's "Error executing tool". The
  results are text only (no structured output).
- The prompt ``docmem_recall``: one user message per active slot, the copy
  the model should see, its first line ending with docmem's marker
  (``<!-- docmem:recall user -->``). MCP cannot put anything into a host's
  conversation, so the host calls the prompt before every model call and
  replaces the copy it added last time (:func:`docmem.is_recalled` finds it).
- A resource per slot, ``docmem://<slot>`` (``text/markdown``), the same
  text; a memory never saved shows the one empty state every adapter
  renders ("No memories are saved."), as an emptied one does. After every
  successful write the server publishes
  ``notify_resource_updated`` to ``subscriptions/listen`` streams, and only
  to the streams of callers with the same memory. Neither the prompt nor the
  resources carry a cache hint with a TTL: every read is immediately stale.
- Idempotency: MCP tool calls have no id of their own, so a client may pass
  one in the request's ``_meta`` under ``"docmem/call_id"``
  (:data:`CALL_ID_META_KEY`; ``meta=call_meta(id)`` builds it); the mutation
  id is then ``mcp/<call id>``, so a retried call has no second effect. Make
  it unique per user (e.g. the host's conversation id and its tool-call id).
  Without it each call is its own mutation.

Over streamable HTTP every request's scope comes from its verified bearer
token, never from the request body: :class:`JwtVerifier` checks signature,
expiry, issuer and audience with PyJWT, and :func:`access_token_principal`
keys the memory by the token's issuer and subject. A request without a valid
token is answered 401 by the SDK's bearer middleware before any handler, so
before any store access. Refusals are logged at INFO, each kind (the
exception's type) at once the first time, then at most once a minute with a
count, so a client sending bad tokens cannot flood the log.
"""

from __future__ import annotations

try:
    import mcp.server.mcpserver  # noqa: F401 - the SDK this module serves
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        'docmem.integrations.mcp needs the MCP Python SDK: pip install "agent-docmem[mcp]"'
    ) from error

from .mcp_auth import JwtVerifier, PublicKey, load_public_key
from .mcp_cli import add_cli_arguments, run_cli
from .mcp_server import (
    CALL_ID_META_KEY,
    RECALL_PROMPT,
    TOKEN_AUTHENTICATOR,
    ScopeResolver,
    access_token_principal,
    call_meta,
    docmem_mcp_server,
    fixed_principal,
    resource_uri,
)

__all__ = [
    "CALL_ID_META_KEY",
    "RECALL_PROMPT",
    "TOKEN_AUTHENTICATOR",
    "JwtVerifier",
    "PublicKey",
    "ScopeResolver",
    "access_token_principal",
    "add_cli_arguments",
    "call_meta",
    "docmem_mcp_server",
    "fixed_principal",
    "load_public_key",
    "resource_uri",
    "run_cli",
]
