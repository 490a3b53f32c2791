"""The docmem MCP server through the real MCP SDK: its in-process client, stdio and HTTP.

In-process tests use ``mcp.Client(server)``; the stdio tests start the real
``docmem mcp`` as an MCP host does (``python -B``, PATH and HOME only); the
HTTP tests serve on a free loopback port and mint their own tokens. Every
store is a real one (``file://``, or an in-process store that counts reads).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import hashlib
import hmac
import json
import logging
import re
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import jwt
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_servers import (
    AUDIENCE,
    DEADLINE,
    DOCMEM,
    ISSUER,
    SigningKey,
    free_port,
    host_environment,
    http_client,
    post,
    serving_http,
    serving_jwks,
    stopped,
    wait_for_port,
)
from mcp_types import CallToolResult, TextContent, TextResourceContents

import docmem
from docmem.cli import main as docmem_main
from docmem.integrations.mcp import (
    CALL_ID_META_KEY,
    RECALL_PROMPT,
    JwtVerifier,
    access_token_principal,
    add_cli_arguments,
    call_meta,
    docmem_mcp_server,
    fixed_principal,
    load_public_key,
    run_cli,
)
from docmem.testing.adapters import CountingStore

_T = TypeVar("_T")

NAMESPACE = "tests:mcp"
ALICE = docmem.Principal("user", "local", "alice")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMUGGLED = "Invalid call to user__save_memory: unexpected argument 'user_id'; expected only text."
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "tests", "version": "1"},
    },
}


def run(body: Callable[[], Awaitable[_T]]) -> _T:
    """Run an async test body with a deadline, so a hung server fails the test instead."""

    async def bounded() -> _T:
        with anyio.fail_after(DEADLINE * 2):
            return await body()

    return asyncio.run(bounded())


def wire(meta: dict[str, object]) -> Any:
    """A request ``_meta`` as a client puts it on the wire (the SDK types only its own keys)."""
    return meta


def text(result: CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


def slots_on(store: docmem.Backend, *names: str) -> list[docmem.MemorySlot]:
    memory = docmem.FileMemory(store)
    return [
        docmem.MemorySlot(name, memory, scope=docmem.by_principal, namespace=f"{NAMESPACE}:{name}")
        for name in names or ("user",)
    ]


def entries(store: docmem.Backend, principal: docmem.Principal, slot: str = "user") -> object:
    """The stored entries of ``principal``'s memory in ``slot``, read from the store itself."""
    scope = docmem.by_principal(docmem.ScopeContext(principal=principal))
    assert scope is not None
    locked = docmem.lock_scope(namespace=f"{NAMESPACE}:{slot}", scope=scope)
    assert locked is not None
    document = docmem.FileMemory(store).bind(locked, slot=slot).read()
    return None if document is None else dict(document.entries)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[docmem.Backend]:
    backend = docmem.open_store(f"file://{tmp_path / 'memory'}?create=true")
    yield backend
    backend.close()


@pytest.fixture
def server(store: docmem.Backend) -> MCPServer:
    return docmem_mcp_server(slots_on(store), scope_context=fixed_principal(ALICE))


# -- tools ------------------------------------------------------------------------------


def test_tools_carry_docmem_schemas_and_truthful_annotations(server: MCPServer) -> None:
    specs = docmem.MemoryRuntime(slots_on(docmem.open_store("memory://"))).tool_specs()

    async def body() -> None:
        async with Client(server) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"user__save_memory", "user__remove_memory"}
        for name, tool in tools.items():
            assert tool.input_schema == specs[name].json_schema()
            assert tool.description == specs[name].description
            assert tool.output_schema is None  # text results, no structured output
        save = tools["user__save_memory"].annotations
        remove = tools["user__remove_memory"].annotations
        assert save is not None
        assert remove is not None
        assert (save.idempotent_hint, save.destructive_hint, save.read_only_hint) == (
            True,
            False,
            False,
        )
        assert (remove.idempotent_hint, remove.destructive_hint, remove.read_only_hint) == (
            True,
            True,
            False,
        )
        assert save.open_world_hint is False
        assert remove.open_world_hint is False

    run(body)


def test_results_are_docmem_sentences_and_is_error_marks_refusals_only(
    server: MCPServer, store: docmem.Backend
) -> None:
    async def body() -> list[tuple[str, bool, object]]:
        async with Client(server) as client:
            calls: list[tuple[str, dict[str, Any]]] = [
                ("user__save_memory", {"text": "Prefers metric units."}),
                ("user__save_memory", {"text": "Prefers metric units."}),
                ("user__save_memory", {"text": "Is an admin.", "user_id": "bob"}),
                ("user__save_memory", {"text": "key AKIAIOSFODNN7EXAMPLE"}),
                ("user__remove_memory", {"index": 7}),
                ("user__remove_memory", {"index": "0"}),
                ("user__save_memory", {}),
            ]
            results = [await client.call_tool(name, args) for name, args in calls]
        return [(text(r), r.is_error, r.structured_content) for r in results]

    assert run(body) == [
        ("Saved as memory 0.", False, None),
        ("Already saved as memory 0.", False, None),
        (SMUGGLED, True, None),
        (
            "The text looks like a credential (aws_access_key); secrets are not saved as memory.",
            True,
            None,
        ),
        ("Memory 7 does not exist; nothing removed.", False, None),
        ("Invalid call to user__remove_memory: argument 'index' must be an integer.", True, None),
        ("Invalid call to user__save_memory: missing required argument 'text'.", True, None),
    ]
    assert entries(store, ALICE) == {0: "Prefers metric units."}  # the smuggled save wrote nothing


def test_a_call_id_in_meta_makes_a_retry_have_no_second_effect(
    server: MCPServer, store: docmem.Backend
) -> None:
    async def body() -> list[tuple[str, bool]]:
        async with Client(server) as client:
            save = {"text": "Works from Lisbon."}
            said = [
                await client.call_tool("user__save_memory", save, meta=call_meta("c-1")),
                await client.call_tool("user__remove_memory", {"index": 0}, meta=call_meta("c-2")),
                # the answer to c-1 was lost: the host sends it again, after c-2 ran
                await client.call_tool(
                    "user__save_memory", save, meta=wire({CALL_ID_META_KEY: "c-1"})
                ),
                await client.call_tool(
                    "user__save_memory", {"text": "Other."}, meta=call_meta("c-1")
                ),
                await client.call_tool("user__save_memory", save, meta=wire({CALL_ID_META_KEY: 7})),
                await client.call_tool("user__save_memory", save),  # no id: a new mutation
            ]
        return [(text(result), result.is_error) for result in said]

    said = run(body)
    assert said[0] == ("Saved as memory 0.", False)
    assert said[1] == ("Removed memory 0.", False)
    assert said[2] == ("Saved as memory 0.", False)  # the recorded answer, nothing saved again
    assert said[3] == ("This mutation id was already used for a different request.", True)
    assert said[4] == (
        "Invalid call to user__save_memory: _meta 'docmem/call_id' must be a non-empty string.",
        True,
    )
    assert said[5] == ("Saved as memory 1.", False)
    assert entries(store, ALICE) == {1: "Works from Lisbon."}


def test_every_failure_is_an_error_result_with_docmem_sentence(
    store: docmem.Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCMEM_ENVIRONMENT", raising=False)
    monkeypatch.delenv("DOCMEM_DEV", raising=False)
    memory = docmem.FileMemory(store)
    no_namespace = docmem.MemorySlot("user", memory, scope=docmem.by_principal)

    def broken(request: ServerRequestContext[Any, Any]) -> docmem.ScopeContext:
        raise RuntimeError("u_123 is the scope")  # a resolver bug: its text must not leak

    def refused(request: ServerRequestContext[Any, Any]) -> docmem.ScopeContext:
        raise docmem.InvalidScope("this caller has no tenant")

    root = tmp_path / "unmounted"
    root.mkdir()
    (root / ".docmem-store").touch()
    unmounted = docmem.open_store(f"file://{root}")
    (root / ".docmem-store").unlink()
    root.rmdir()  # the volume went away under a running server
    cases = [
        (docmem_mcp_server([no_namespace], scope_context=fixed_principal(ALICE)), "DOCMEM_ENV"),
        (docmem_mcp_server(slots_on(store), scope_context=broken), "Memory is unavailable: its"),
        (docmem_mcp_server(slots_on(store), scope_context=refused), "This caller has no tenant."),
        (docmem_mcp_server(slots_on(unmounted), scope_context=fixed_principal(ALICE)), "The file"),
        # stdio has no bearer token: a server wired for HTTP refuses rather than share a memory
        (docmem_mcp_server(slots_on(store), scope_context=access_token_principal()), "No verif"),
    ]

    async def body(server: MCPServer) -> tuple[CallToolResult, str, str]:
        async with Client(server) as client:
            result = await client.call_tool("user__save_memory", {"text": "Likes tea."})
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt(RECALL_PROMPT)
            with pytest.raises(MCPError) as resource:
                await client.read_resource("docmem://user")
        return result, prompt.value.error.message, resource.value.error.message

    for server, start in cases:
        result, prompt, resource = run(functools.partial(body, server))
        assert result.is_error, start
        assert text(result).startswith(start), text(result)
        assert "Error executing tool" not in text(result)
        assert "u_123" not in text(result)
        assert prompt == resource == text(result)


# -- the prompt and the resources ------------------------------------------------------


def test_the_prompt_has_one_user_message_per_active_slot_and_each_slot_a_resource(
    store: docmem.Backend,
) -> None:
    slots = [
        *slots_on(store, "notes", "user"),
        docmem.MemorySlot("off", docmem.FileMemory(store), scope=None, namespace="tests:off"),
    ]
    server = docmem_mcp_server(slots, scope_context=fixed_principal(ALICE))

    async def body() -> None:
        async with Client(server) as client:
            assert (await client.get_prompt(RECALL_PROMPT)).messages == []  # nothing saved yet
            empty = (await client.read_resource("docmem://user")).contents
            await client.call_tool("user__save_memory", {"text": "Prefers metric units."})
            await client.call_tool("notes__save_memory", {"text": "Ships on Fridays."})
            prompt = await client.get_prompt(RECALL_PROMPT)
            listed = {r.uri: r.mime_type for r in (await client.list_resources()).resources}
            user = (await client.read_resource("docmem://user")).contents
            with pytest.raises(MCPError, match=r"Memory slot 'off' is off for this caller\."):
                await client.read_resource("docmem://off")
        assert [m.role for m in prompt.messages] == ["user", "user"]
        texts = [m.content.text for m in prompt.messages if isinstance(m.content, TextContent)]
        assert [docmem.recalled_slot(t) for t in texts] == ["notes", "user"]
        assert texts[1].splitlines()[0] == "# Memory: user <!-- docmem:recall user -->"
        assert texts[1].endswith("\n0: Prefers metric units.")
        assert listed == {
            "docmem://notes": "text/markdown",
            "docmem://off": "text/markdown",
            "docmem://user": "text/markdown",
        }
        [content] = user
        assert isinstance(content, TextResourceContents)
        assert (content.text, content.mime_type) == (texts[1], "text/markdown")
        [nothing] = [c.text for c in empty if isinstance(c, TextResourceContents)]
        assert nothing.splitlines()[0] == "# Memory: user <!-- docmem:recall user -->"
        assert nothing.endswith("with its index.\n\nNo memories are saved.")

    run(body)


def test_a_memory_never_saved_and_one_emptied_show_the_same_resource(
    store: docmem.Backend,
) -> None:
    """One empty state: what every adapter renders for a memory with no entries."""
    server = docmem_mcp_server(slots_on(store), scope_context=fixed_principal(ALICE))

    async def resource(client: Client) -> str:
        [content] = (await client.read_resource("docmem://user")).contents
        assert isinstance(content, TextResourceContents)
        return content.text

    async def body() -> tuple[str, str, str]:
        async with Client(server) as client:
            never = await resource(client)
            await client.call_tool("user__save_memory", {"text": "Likes tea."})
            await client.call_tool("user__remove_memory", {"index": 0})
            emptied = await resource(client)
            [copy] = (await client.get_prompt(RECALL_PROMPT)).messages
            assert isinstance(copy.content, TextContent)
            return never, emptied, copy.content.text

    never, emptied, prompt = run(body)
    assert never == emptied == prompt
    assert never.endswith("\n\nNo memories are saved.")
    runtime = docmem.MemoryRuntime(slots_on(store))  # what the adapters inject, per model call
    [copy] = runtime.recall(docmem.ScopeContext(principal=ALICE))
    assert copy.content == never


def test_reads_are_never_cached_with_a_ttl(server: MCPServer) -> None:
    async def body() -> None:
        async with Client(server) as client:  # the SDK client caches what a TTL allows
            first = await client.read_resource("docmem://user")
            await client.call_tool("user__save_memory", {"text": "Likes tea."})
            second = await client.read_resource("docmem://user")
        assert first.ttl_ms == second.ttl_ms == 0
        assert first.cache_scope == "private"
        [content] = second.contents
        assert isinstance(content, TextResourceContents)
        assert content.text.endswith("0: Likes tea.")

    run(body)


def test_every_write_notifies_its_resource_and_a_refusal_nothing(store: docmem.Backend) -> None:
    server = docmem_mcp_server(
        slots_on(store, "notes", "user"), scope_context=fixed_principal(ALICE)
    )
    uris = ["docmem://user", "docmem://notes"]

    async def body() -> list[object]:
        async with Client(server) as client, client.listen(resource_subscriptions=uris) as events:
            seen: list[object] = []
            for arguments in ({"text": "Likes tea."}, {"text": "Likes tea."}):  # the 2nd: a no-op
                await client.call_tool("user__save_memory", arguments)
                seen.append(await anext(aiter(events)))
            refused = await client.call_tool("user__save_memory", {"text": "x", "user_id": "b"})
            assert refused.is_error
            await client.call_tool("notes__save_memory", {"text": "Ships on Fridays."})
            seen.append(await anext(aiter(events)))  # had the refusal published, user came first
            await client.call_tool("user__remove_memory", {"index": 0})
            seen.append(await anext(aiter(events)))
        return seen

    user, notes = ResourceUpdated("docmem://user"), ResourceUpdated("docmem://notes")
    assert run(body) == [user, user, notes, user]


# -- a host's loop ------------------------------------------------------------------------


@dataclass
class ScriptedHost:
    """What an MCP host does with docmem, scripted: the prompt before every model call.

    The host stores everything it sent (as some hosts do), so its transcript
    holds last call's copies: it replaces them, found by docmem's marker.
    """

    client: Client
    transcript: list[tuple[str, str]] = field(default_factory=list)
    model_calls: list[list[tuple[str, str]]] = field(default_factory=list)

    async def model_call(self) -> list[tuple[str, str]]:
        prompt = await self.client.get_prompt(RECALL_PROMPT)
        copies = [
            ("user", m.content.text) for m in prompt.messages if isinstance(m.content, TextContent)
        ]
        conversation = [m for m in self.transcript if not docmem.is_recalled(m[1])]
        system = [m for m in conversation if m[0] == "system"]
        rest = [m for m in conversation if m[0] != "system"]
        self.transcript = [*system, *copies, *rest]  # after the system prompt: a stable prefix
        self.model_calls.append(list(self.transcript))
        return self.transcript

    async def turn(self, said: str, steps: list[tuple[str, dict[str, Any]] | str]) -> None:
        self.transcript.append(("user", said))
        for step in steps:
            await self.model_call()
            if isinstance(step, str):
                self.transcript.append(("assistant", step))
                continue
            result = await self.client.call_tool(*step)
            self.transcript.append(("tool", text(result)))


def test_a_host_shows_the_document_exactly_once_per_model_call(store: docmem.Backend) -> None:
    server = docmem_mcp_server(slots_on(store, "user"), scope_context=fixed_principal(ALICE))

    async def body() -> ScriptedHost:
        async with Client(server) as client:
            host = ScriptedHost(client)
            host.transcript.append(("system", "You are the support agent."))
            await host.turn(
                "Please use metric units.",
                [("user__save_memory", {"text": "Prefers metric units."}), "Noted."],
            )
            await host.turn("How warm is it?", ["21 degrees Celsius."])
            await host.turn(
                "I moved to Lisbon.",
                [("user__save_memory", {"text": "Lives in Lisbon."}), "Noted."],
            )
        return host

    host = run(body)
    copies = [[t for _, t in call if docmem.is_recalled(t)] for call in host.model_calls]
    assert [len(found) for found in copies] == [0, 1, 1, 1, 1]  # none before the first save
    assert copies[1][0].endswith("\n0: Prefers metric units.")  # the next call saw the save
    assert copies[2] == copies[3] == copies[1]
    assert copies[4][0].endswith("\n0: Prefers metric units.\n1: Lives in Lisbon.")
    last = host.model_calls[4]
    assert [role for role, _ in last[:2]] == ["system", "user"]
    assert last[1][1] == copies[4][0]
    assert [t for role, t in last if role == "user" and not docmem.is_recalled(t)] == [
        "Please use metric units.",
        "How warm is it?",
        "I moved to Lisbon.",
    ]


# -- stdio: the real `docmem mcp`, started as a host starts it ----------------------------


@pytest.mark.process
@pytest.mark.parametrize("launcher", ["python -B -m docmem", "docmem console script"])
def test_stdio_with_a_hosts_minimal_environment(
    launcher: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCMEM_ENVIRONMENT", "must-not-be-needed")  # the host will not pass it
    url = f"file://{tmp_path / 'memory'}?create=true"
    flags = ["mcp", "--store", url, "--namespace", NAMESPACE, "--principal", "user:local:alice"]
    env = host_environment(tmp_path)
    command, args = sys.executable, ["-B", "-m", "docmem", *flags]
    if launcher == "docmem console script":
        command, args = str(DOCMEM), flags
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    params = StdioServerParameters(command=command, args=args, env=env, cwd=tmp_path)

    async def body() -> tuple[str, str, list[str]]:
        async with Client(params) as client:
            tools = sorted(tool.name for tool in (await client.list_tools()).tools)
            saved = text(await client.call_tool("user__save_memory", {"text": "Likes tea."}))
            smuggled = await client.call_tool("user__save_memory", {"text": "x", "user_id": "b"})
            assert smuggled.is_error
            prompt = await client.get_prompt(RECALL_PROMPT)
        [message] = prompt.messages
        assert isinstance(message.content, TextContent)
        return saved, message.content.text, tools

    saved, copy, tools = run(body)
    assert saved == "Saved as memory 0."
    assert copy.endswith("\n0: Likes tea.")
    assert docmem.recalled_slot(copy) == "user"
    assert tools == ["user__remove_memory", "user__save_memory"]
    store = docmem.open_store(f"file://{tmp_path / 'memory'}")
    [key] = store.keys()  # one document: Alice's, under NS:user
    assert entries(store, ALICE) == {0: "Likes tea."}
    locked = docmem.lock_scope(namespace=f"{NAMESPACE}:user", scope=("user", "local", "", "alice"))
    assert locked is not None
    assert key == locked.storage_key
    assert not list(tmp_path.rglob("__pycache__"))


@pytest.mark.process
def test_docmem_mcp_refuses_flags_that_do_not_go_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pem = tmp_path / "key.pem"
    pem.write_bytes(SigningKey.generate("k").public_pem())
    not_a_key = tmp_path / "notes.txt"
    not_a_key.write_text("-----BEGIN NOTHING-----\n")
    base = ["--store", "memory://", "--namespace", NAMESPACE]
    cases = {
        "one of the arguments --principal --http is required": [],
        "argument --principal: a principal is KIND:AUTHENTICATOR:ID": ["--principal", "alice"],
        "--http needs --jwks-url or --jwt-key-file": ["--http", "8765"],
        "--http needs --issuer": ["--http", "8765", "--jwt-key-file", str(pem)],
        "argument --jwt-key-file: only with --http": [
            "--principal",
            "user:local:alice",
            "--jwt-key-file",
            str(pem),
        ],
        "argument --jwt-key-file: the key file holds no PEM public key": [
            "--http",
            "1",
            "--jwt-key-file",
            str(not_a_key),
        ],
        "argument --jwt-key-file: the key file cannot be read (FileNotFoundError)": [
            "--http",
            "1",
            "--jwt-key-file",
            str(tmp_path / "missing.pem"),
        ],
        "argument --description: give it after the --slot it describes": [
            "--principal",
            "user:local:alice",
            "--description",
            "Notes.",
        ],
        "argument --http: expected PORT, HOST:PORT or [IPV6]:PORT": ["--http", "::1:80"],
        "argument --jwks-url: the JWKS URL must be https": [
            "--http",
            "1",
            "--jwks-url",
            "http://id.example.test/jwks.json",
        ],
        "argument --issuer: expected an http(s) URL": ["--http", "1", "--issuer", "acme"],
        "argument --slot: a slot name is 1-48 characters": [
            "--principal",
            "u:l:a",
            "--slot",
            "a__b",
        ],
    }
    for expected, flags in cases.items():  # through the command line's own entry point
        assert docmem_main(["mcp", *base, *flags]) == 2, expected
        stderr = capsys.readouterr().err
        assert f"docmem mcp: error: {expected}" in stderr, stderr
        assert "Traceback" not in stderr
    done = subprocess.run(  # and once as a host would run it
        [str(DOCMEM), "mcp", *base, *cases["--http needs --issuer"]],
        env={**host_environment(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "docmem mcp: error: --http needs --issuer\n"


def test_run_cli_reports_a_docmem_error_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="docmem mcp")
    add_cli_arguments(parser)
    # The namespace fits with the default slot's name, not with this long one appended.
    flags = ["--namespace", "n" * 1000, "--principal", "user:local:alice", "--slot", "s" * 40]
    assert run_cli(parser.parse_args(flags), docmem.open_store("memory://")) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("invalid_scope: ")


# -- streamable HTTP: the scope comes from the verified bearer token ---------------------


@pytest.fixture(scope="module")
def issuer_key() -> SigningKey:
    return SigningKey.generate("issuer-1")


@pytest.fixture(scope="module")
def stranger_key() -> SigningKey:
    return SigningKey.generate("issuer-1")  # same kid, another key: a forged signature


def forged_hs256(key: SigningKey, claims: dict[str, Any]) -> str:
    """A token "signed" with HMAC-SHA256 keyed by the issuer's public PEM (algorithm confusion)."""

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": key.kid}).encode())
    body = b64(json.dumps(claims).encode())
    mac = hmac.new(key.public_pem(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


def token_user(subject: str) -> docmem.Principal:
    """Who the test issuer's token for ``subject`` names (``--principal user:oauth:SUB``)."""
    return docmem.Principal("user", "oauth", subject, issuer=ISSUER)


def http_server(store: docmem.Backend, verifier: JwtVerifier, *slots: str) -> MCPServer:
    return docmem_mcp_server(
        slots_on(store, *slots), scope_context=access_token_principal(), token_verifier=verifier
    )


def test_http_refuses_every_bad_token_with_401_before_any_store_access(
    issuer_key: SigningKey, stranger_key: SigningKey
) -> None:
    store = CountingStore()
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": 2**31}
    refused = {
        "no token": None,
        "a bad signature": stranger_key.token("alice"),
        "an expired token": issuer_key.token("alice", lifetime=-60),
        "a wrong audience": issuer_key.token("alice", audience="another-service"),
        "a wrong issuer": issuer_key.token("alice", issuer="https://evil.example.test"),
        "a blank subject": issuer_key.token(" "),
        "alg none": jwt.encode(claims, "", algorithm="none"),
        "HS256 keyed by the public key": forged_hs256(issuer_key, claims),
        "not a JWT": "not-a-token",
        "no expiry": jwt.encode(
            {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice"},
            issuer_key.private,
            algorithm="RS256",
            headers={"kid": issuer_key.kid},
        ),
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "user__save_memory", "arguments": {"text": "Is an admin."}},
    }
    with serving_http(http_server(store, verifier)) as url:
        for why, token in refused.items():
            for message in (INITIALIZE, call):
                answer = post(url, token, message)
                assert answer.status_code == 401, why
                assert answer.headers["www-authenticate"].startswith("Bearer ")
        assert post(url, issuer_key.token("alice"), INITIALIZE).status_code == 200
    assert store.reads == 0
    assert list(store.keys()) == []


def test_one_users_token_never_reads_or_changes_another_users_memory(
    issuer_key: SigningKey, tmp_path: Path
) -> None:
    store = docmem.open_store(f"file://{tmp_path / 'memory'}?create=true")
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    alice, bob = issuer_key.token("alice"), issuer_key.token("bob")

    async def body(url: str, mode: str) -> dict[str, Any]:
        async with http_client(url, alice, mode=mode) as a, http_client(url, bob, mode=mode) as b:
            await a.call_tool("user__save_memory", {"text": f"Alice, {mode}."})
            await b.call_tool("user__save_memory", {"text": f"Bob, {mode}."})
            removed = text(await b.call_tool("user__remove_memory", {"index": 0}))
            attack = await b.call_tool("user__save_memory", {"text": "x", "user_id": "alice"})
            a_copy = (await a.get_prompt(RECALL_PROMPT)).messages
            b_copy = (await b.get_prompt(RECALL_PROMPT)).messages
            resource = (await b.read_resource("docmem://user")).contents
            return {
                "protocol": a.protocol_version,
                "removed": removed,
                "attack": (text(attack), attack.is_error),
                "alice": [m.content.text for m in a_copy if isinstance(m.content, TextContent)],
                "bob": [m.content.text for m in b_copy if isinstance(m.content, TextContent)],
                "resource": [c.text for c in resource if isinstance(c, TextResourceContents)],
            }

    with serving_http(http_server(store, verifier)) as url:
        modern = run(lambda: body(url, "auto"))
        legacy = run(lambda: body(url, "legacy"))  # stateful sessions, opened per token
        opened = post(url, alice, INITIALIZE)  # a legacy session, opened with Alice's token
        stolen = httpx2.post(
            url,
            json={"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}},
            headers={
                "Authorization": f"Bearer {bob}",
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": opened.headers["mcp-session-id"],
            },
            timeout=DEADLINE,
        )
    assert modern["protocol"] == "2026-07-28"
    assert legacy["protocol"] == "2025-11-25"
    for mode, seen in (("auto", modern), ("legacy", legacy)):
        assert seen["attack"] == (SMUGGLED, True)
        assert all(f"Alice, {mode}." in t and "Bob" not in t for t in seen["alice"]), seen
        assert all("Alice" not in t for t in seen["bob"] + seen["resource"]), seen
    assert modern["removed"] == "Removed memory 0."  # Bob's own entry 0, not Alice's
    assert entries(store, token_user("alice")) == {
        0: "Alice, auto.",
        1: "Alice, legacy.",
    }
    assert entries(store, token_user("bob")) == {
        1: "Bob, legacy."
    }  # legacy's remove of index 0 was a no-op: Bob's entry 0 was already gone
    assert stolen.status_code == 404  # a session answers only the token that opened it
    store.close()


def test_an_update_reaches_only_listeners_with_the_writers_memory(issuer_key: SigningKey) -> None:
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    server = http_server(CountingStore(), verifier, "notes", "user")
    alice, bob = issuer_key.token("alice"), issuer_key.token("bob")

    async def body(url: str) -> list[object]:
        async with (
            http_client(url, alice) as a,
            http_client(url, bob) as b,
            b.listen(resource_subscriptions=["docmem://user", "docmem://notes"]) as events,
        ):
            await a.call_tool("user__save_memory", {"text": "Alice's."})  # first, in order
            await b.call_tool("notes__save_memory", {"text": "Bob's."})
            return [await anext(aiter(events))]

    with serving_http(server) as url:
        # Had Alice's update reached Bob, it would be his first event: events arrive in order.
        assert run(lambda: body(url)) == [ResourceUpdated("docmem://notes")]


def test_http_with_a_jwks_url(issuer_key: SigningKey, stranger_key: SigningKey) -> None:
    store = CountingStore()
    rotated = SigningKey.generate("issuer-2")

    async def body(url: str, token: str) -> str:
        async with http_client(url, token) as client:
            return text(await client.call_tool("user__save_memory", {"text": "Likes tea."}))

    with serving_jwks([issuer_key, rotated]) as (jwks, fetches):
        verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=jwks)
        with serving_http(http_server(store, verifier)) as url:
            assert run(lambda: body(url, issuer_key.token("alice"))) == "Saved as memory 0."
            assert run(lambda: body(url, rotated.token("bob"))) == "Saved as memory 0."
            reads = store.reads
            assert post(url, stranger_key.token("alice"), INITIALIZE).status_code == 401
            unknown = SigningKey.generate("issuer-9").token("alice")
            assert post(url, unknown, INITIALIZE).status_code == 401
            assert store.reads == reads
    assert (
        len(fetches) == 1
    )  # the JWKS is cached; an unknown kid within the cooldown refetches nothing


def test_a_flood_of_unknown_kids_logs_one_info_line(
    issuer_key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    """Anyone can send a token naming a kid the JWKS lacks: a refusal, not a warning per request."""
    caplog.set_level(logging.DEBUG, logger="docmem")
    with serving_jwks([issuer_key]) as (jwks, _):
        verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=jwks)
        with serving_http(http_server(CountingStore(), verifier)) as url:
            for number in range(5):
                unknown = SigningKey(issuer_key.private, f"kid-{number}").token("alice")
                assert post(url, unknown, INITIALIZE).status_code == 401
    refusals = [r for r in caplog.records if r.name == "docmem"]
    assert [(r.levelname, r.getMessage()) for r in refusals] == [
        ("INFO", "docmem mcp: bearer token refused (PyJWKClientError)")
    ]


class SteppedClock:
    """A clock a test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_repeated_refusals_log_once_then_one_count_per_interval(
    issuer_key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    from docmem.integrations import mcp_auth

    caplog.set_level(logging.DEBUG, logger="docmem")
    clock = SteppedClock()
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    verifier._refusals = mcp_auth._RefusalLog(mcp_auth.logger, interval=60, clock=clock)
    expired = issuer_key.token("alice", lifetime=-60)

    def refuse(token: str, times: int = 1) -> None:
        for _ in range(times):
            assert asyncio.run(verifier.verify_token(token)) is None

    refuse("not-a-token", 3)  # the first is logged, the two others counted
    refuse(expired)  # another kind: logged at once
    clock.now += 59
    refuse("not-a-token", 10)  # still within the interval: counted
    clock.now += 1
    refuse("not-a-token")  # the interval is over: one line with the count
    refuse("not-a-token", 100)
    clock.now += 600
    refuse("not-a-token")
    assert asyncio.run(verifier.verify_token(issuer_key.token("alice"))) is not None
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "docmem"]
    assert lines == [
        ("INFO", "docmem mcp: bearer token refused (DecodeError)"),
        ("INFO", "docmem mcp: bearer token refused (ExpiredSignatureError)"),
        ("INFO", "docmem mcp: bearer token refused (DecodeError) 13 more times in 60 s"),
        ("INFO", "docmem mcp: bearer token refused (DecodeError) 101 more times in 600 s"),
    ]


def test_a_jwks_out_of_reach_is_a_warning_rate_limited_too(
    issuer_key: SigningKey, caplog: pytest.LogCaptureFixture
) -> None:
    """Not the client's doing, so a WARNING; every request may hit it, so counted as well."""
    from docmem.integrations import mcp_auth

    caplog.set_level(logging.DEBUG, logger="docmem")
    jwks = f"http://127.0.0.1:{free_port()}/jwks.json"  # nothing listens there
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url=jwks)
    verifier._refusals = mcp_auth._RefusalLog(mcp_auth.logger, clock=SteppedClock())
    for _ in range(3):
        assert asyncio.run(verifier.verify_token(issuer_key.token("alice"))) is None
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "docmem"]
    assert lines == [
        ("WARNING", "docmem mcp: bearer token not verified (PyJWKClientConnectionError)")
    ]


def _stderr_of_refusals(tmp_path: Path, flags: list[str], tokens: list[str]) -> str:
    """The stderr of ``docmem mcp --http`` with ``flags``, once it refused each of ``tokens``."""
    port = free_port()
    url = f"file://{tmp_path / 'memory'}?create=true"
    command = [str(DOCMEM), "mcp", *flags, "--store", url, "--namespace", NAMESPACE]
    process = subprocess.Popen(
        [*command, "--http", f"127.0.0.1:{port}", "--issuer", ISSUER, "--audience", AUDIENCE],
        env={**host_environment(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    endpoint = f"http://127.0.0.1:{port}/mcp"
    with stopped(process):
        wait_for_port(port, process)
        for token in tokens:
            assert post(endpoint, token, INITIALIZE).status_code == 401
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=DEADLINE)
    return err


@pytest.mark.process
def test_docmem_mcp_debug_logs_each_line_once(issuer_key: SigningKey, tmp_path: Path) -> None:
    """--debug: docmem's handler prints a line; the root handler the SDK installs does not again."""
    pem = tmp_path / "issuer.pem"
    pem.write_bytes(issuer_key.public_pem())
    err = _stderr_of_refusals(
        tmp_path,
        ["--debug", "--jwt-key-file", str(pem)],
        ["not-a-token", "not-a-token", issuer_key.token("a", lifetime=-60)],
    )
    assert [line for line in err.splitlines() if "refused" in line] == [
        "docmem INFO docmem mcp: bearer token refused (DecodeError)",
        "docmem INFO docmem mcp: bearer token refused (ExpiredSignatureError)",
    ]
    assert "not-a-token" not in err


@pytest.mark.process
def test_docmem_mcp_logs_warnings_without_debug_but_no_refusals(
    issuer_key: SigningKey, tmp_path: Path
) -> None:
    """A server's operator hears of a JWKS out of reach, once; an anonymous refusal is quiet."""
    jwks = f"http://127.0.0.1:{free_port()}/jwks"  # nothing listens there
    tokens = ["not-a-token"] + [issuer_key.token("a") for _ in range(3)]  # the first is INFO
    err = _stderr_of_refusals(tmp_path, ["--jwks-url", jwks], tokens)
    logged = re.compile(r"docmem\S* (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
    assert [line for line in err.splitlines() if logged.match(line)] == [
        "docmem WARNING docmem mcp: bearer token not verified (PyJWKClientConnectionError)",
    ]


def test_jwks_urls_must_be_https_off_loopback() -> None:
    with pytest.raises(docmem.InvalidArgument, match="must be https"):
        JwtVerifier(issuer=ISSUER, audience=AUDIENCE, jwks_url="http://id.example.test/jwks")
    with pytest.raises(docmem.InvalidArgument, match="exactly one of key and jwks_url"):
        JwtVerifier(issuer=ISSUER, audience=AUDIENCE)


PUBLIC = "https://memory.example.test/mcp"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job starts


@pytest.mark.process
@pytest.mark.parametrize("sigint", ["default", "inherited ignored"])
def test_docmem_mcp_over_http_in_a_subprocess(
    issuer_key: SigningKey, tmp_path: Path, sigint: str
) -> None:
    """The real command, behind a (pretend) reverse proxy that passes the public Host.

    Ctrl-C ends it with 130 also when it inherited SIGINT ignored (uvicorn still
    stops on it, but its re-raise of the signal then does nothing).
    """
    pem = tmp_path / "issuer.pem"
    pem.write_bytes(issuer_key.public_pem())
    assert load_public_key(pem) == issuer_key.public
    port = free_port()
    url = f"file://{tmp_path / 'memory'}?create=true"
    flags = ["--store", url, "--namespace", NAMESPACE, "--http", f"127.0.0.1:{port}"]
    flags += ["--jwt-key-file", str(pem), "--issuer", ISSUER, "--audience", AUDIENCE]
    process = subprocess.Popen(
        [str(DOCMEM), "mcp", *flags, "--resource-url", PUBLIC],
        env={**host_environment(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ignore_sigint if sigint == "inherited ignored" else None,
    )
    endpoint = f"http://127.0.0.1:{port}/mcp"

    async def body() -> str:
        async with http_client(endpoint, issuer_key.token("alice")) as client:
            return text(await client.call_tool("user__save_memory", {"text": "Likes tea."}))

    with stopped(process):
        wait_for_port(port, process)
        refused = post(endpoint, None, INITIALIZE)
        assert refused.status_code == 401
        metadata = "https://memory.example.test/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{metadata}"' in refused.headers["www-authenticate"]
        alice = issuer_key.token("alice")
        proxied = {"Host": "memory.example.test"}
        assert post(endpoint, alice, INITIALIZE, headers=proxied).status_code == 200
        assert post(endpoint, alice, INITIALIZE, headers={"Host": "evil.test"}).status_code == 421
        found = httpx2.get(
            f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp", timeout=DEADLINE
        ).json()
        assert (found["resource"], found["authorization_servers"]) == (PUBLIC, [ISSUER])
        assert run(body) == "Saved as memory 0."
        process.send_signal(signal.SIGINT)  # an operator's Ctrl-C: a graceful stop
        out, err = process.communicate(timeout=DEADLINE)
    assert process.returncode == 130, err
    assert out == ""  # nothing on stdout, ever
    assert err.splitlines()[0] == f"docmem mcp: serving streamable HTTP on {endpoint}"
    assert "Likes tea" not in err
    assert "Bearer" not in err
    store = docmem.open_store(f"file://{tmp_path / 'memory'}")
    assert entries(store, token_user("alice")) == {0: "Likes tea."}


# -- the example --------------------------------------------------------------------------


@pytest.mark.process
def test_the_mcp_example(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-B", str(EXAMPLES / "with_mcp.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=DEADLINE * 3,
    )
    out = done.stdout
    assert "tool user__remove_memory: idempotent=True destructive=True" in out
    assert f"-> error: {SMUGGLED}" in out
    assert "model call 2: 5 messages, memory copies: 1" in out
    assert "stored: {0: 'Prefers metric units.'} (one entry" in out


def test_only_asymmetric_algorithms_of_the_keys_type_are_accepted() -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    from docmem.integrations import mcp_auth

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    ec_key = ec.generate_private_key(ec.SECP256R1()).public_key()
    ed_key = ed25519.Ed25519PrivateKey.generate().public_key()
    for key, family in ((rsa_key, ("RS", "PS")), (ec_key, ("ES",)), (ed_key, ("EdDSA",))):
        allowed = mcp_auth._algorithms(key)
        assert allowed
        assert all(name.startswith(family) for name in allowed), allowed
    assert mcp_auth._algorithms(b"a shared secret") == ()


def test_a_bare_port_binds_loopback_only() -> None:
    from docmem.integrations import mcp_cli

    assert mcp_cli._address("8765") == mcp_cli._Address("127.0.0.1", 8765)
    assert mcp_cli._address("0.0.0.0:8765").host == "0.0.0.0"  # only when asked for


# -- serving many clients -------------------------------------------------------------


def counting_decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every token PyJWT is asked to verify from now on, in order."""
    decoded: list[str] = []
    decode = jwt.decode

    def counted(token: str, *args: Any, **kwargs: Any) -> Any:
        decoded.append(token)
        return decode(token, *args, **kwargs)

    monkeypatch.setattr(jwt, "decode", counted)
    return decoded


def verified(verifier: JwtVerifier, token: str) -> str | None:
    """The subject ``verifier`` accepts ``token`` for, or ``None``."""
    accepted = run(functools.partial(verifier.verify_token, token))
    return None if accepted is None else accepted.subject


def test_an_accepted_token_is_verified_once_and_never_trusted_past_its_exp(
    issuer_key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docmem.integrations import mcp_auth

    decoded = counting_decodes(monkeypatch)
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    alice, bob = issuer_key.token("alice", lifetime=30), issuer_key.token("bob", lifetime=300)
    subjects = [verified(verifier, token) for token in (alice, alice, bob)]
    assert subjects == ["alice", "alice", "bob"]
    assert decoded == [alice, bob]  # the client's next request skipped PyJWT
    now = mcp_auth._now()
    monkeypatch.setattr(mcp_auth, "_now", lambda: now + 31)  # past alice's exp, within a minute
    verified(verifier, alice)
    verified(verifier, bob)
    assert decoded == [alice, bob, alice]  # alice's verified afresh, bob's still remembered


def test_an_accepted_token_is_verified_again_after_a_minute(
    issuer_key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    from docmem.integrations import mcp_auth

    decoded = counting_decodes(monkeypatch)
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    token = issuer_key.token("alice", lifetime=3600)
    assert verified(verifier, token) == "alice"
    now = mcp_auth._now()
    monkeypatch.setattr(mcp_auth, "_now", lambda: now + 61)  # a JWKS key may have rotated
    assert verified(verifier, token) == "alice"
    assert decoded == [token, token]


def test_a_refused_token_is_never_remembered(
    issuer_key: SigningKey, stranger_key: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded = counting_decodes(monkeypatch)
    verifier = JwtVerifier(issuer=ISSUER, audience=AUDIENCE, key=issuer_key.public)
    refused = (stranger_key.token("alice"), issuer_key.token("alice", audience="another"))
    for token in (*refused, *refused):
        assert verified(verifier, token) is None
    assert decoded == [*refused, *refused]


def test_remembered_tokens_are_bounded_by_the_least_recently_used() -> None:
    from mcp.server.auth.provider import AccessToken

    from docmem.integrations import mcp_auth

    remembered = mcp_auth._Accepted(size=2, seconds=60)
    tokens = {
        name: AccessToken(token=name, client_id="", scopes=[], subject=name)
        for name in ("a", "b", "c")
    }
    far = mcp_auth._now() + 3600
    remembered.add(tokens["a"], far)
    remembered.add(tokens["b"], far)
    assert remembered.get("a") is tokens["a"]  # a is now the one used last
    remembered.add(tokens["c"], far)
    assert [remembered.get(name) for name in "abc"] == [tokens["a"], None, tokens["c"]]


def test_http_connections_send_each_write_at_once() -> None:
    """Nagle's algorithm is off on every accepted connection (no 40 ms delayed-ACK stall).

    The listener of ``docmem mcp --http`` and ``docmem console`` alike.
    """
    import socket

    from docmem.cli.listener import listen

    listener = listen("127.0.0.1", 0)
    nodelay: list[int] = []

    async def accept_one() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            sock = writer.get_extra_info("socket")
            nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=listener)  # as uvicorn serves it
        async with server:
            reader, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            await reader.read()
            writer.close()

    run(accept_one)
    assert len(nodelay) == 1
    assert nodelay[0] != 0


def test_namespaces_resolve_from_the_directory_the_server_was_built_in(
    store: docmem.Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every request of a server sees one app root, read once (no getcwd on the event loop)."""
    roots: list[str] = []

    def namespace(context: docmem.NamespaceContext) -> str:
        roots.append(context.app_root)
        return f"{NAMESPACE}:user"

    built_in, later = tmp_path / "built", tmp_path / "later"
    built_in.mkdir()
    later.mkdir()
    monkeypatch.chdir(built_in)
    slot = docmem.MemorySlot(
        "user", docmem.FileMemory(store), scope=docmem.by_principal, namespace=namespace
    )
    server = docmem_mcp_server([slot], scope_context=fixed_principal(ALICE))
    monkeypatch.chdir(later)

    async def body() -> None:
        async with Client(server) as client:
            await client.call_tool("user__save_memory", {"text": "Prefers metric units."})
            await client.get_prompt(RECALL_PROMPT)
            await client.read_resource("docmem://user")

    run(body)
    assert roots
    assert set(roots) == {str(built_in)}
    assert entries(store, ALICE) == {0: "Prefers metric units."}
