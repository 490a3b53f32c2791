"""docmem as an MCP server, driven offline by the MCP SDK's own client, in-process.

A scripted host plays what any MCP host does with docmem: before every
model call it asks for the ``docmem_recall`` prompt and puts the copy in
place of the one it added last time, then runs the model's tool calls
through the server. The "model" saves a note, tries to write Bob's memory
with an extra ``user_id`` (refused), and a retried call carrying the same
``docmem/call_id`` is recognised and has no second effect. The next model
call already sees the note, once.

    python examples/with_mcp.py        # needs: pip install "agent-docmem[mcp]"
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from typing import Any

from mcp import Client
from mcp_types import TextContent, TextResourceContents

import docmem
from docmem.integrations.mcp import RECALL_PROMPT, call_meta, docmem_mcp_server, fixed_principal


@dataclass
class Host:
    """What an MCP host keeps: its own transcript; memory copies are replaced, never piled up."""

    client: Client
    transcript: list[dict[str, str]] = field(default_factory=list)

    async def model_input(self) -> list[dict[str, str]]:
        prompt = await self.client.get_prompt(RECALL_PROMPT)
        copies = [
            {"role": message.role, "content": message.content.text}
            for message in prompt.messages
            if isinstance(message.content, TextContent)
        ]
        conversation = [m for m in self.transcript if not docmem.is_recalled(m["content"])]
        self.transcript = copies + conversation  # this host even stores what it sent
        return self.transcript

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> str:
        result = await self.client.call_tool(name, arguments, meta=call_meta(call_id))
        [content] = result.content
        assert isinstance(content, TextContent)
        flag = "error" if result.is_error else "ok"
        print(f"  {name}({arguments}) -> {flag}: {content.text}")
        self.transcript.append({"role": "tool", "content": content.text})
        return content.text


def show(number: int, request: list[dict[str, str]]) -> None:
    copies = [m["content"] for m in request if docmem.is_recalled(m["content"])]
    print(f"model call {number}: {len(request)} messages, memory copies: {len(copies)}")
    for copy in copies:
        print(f"  {copy.splitlines()[0]}")
        for line in copy.splitlines()[4:]:
            print(f"    {line}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        store = docmem.open_store(f"file://{root}/memory?create=true")
        slots = [
            docmem.MemorySlot(
                "user",
                docmem.FileMemory(store),
                scope=docmem.by_principal,
                namespace="example:dev:user",  # always explicit: stdio hosts drop the environment
                description="What this user asked you to remember.",
            )
        ]
        alice = docmem.Principal("user", "example-idp", "alice")
        server = docmem_mcp_server(slots, scope_context=fixed_principal(alice))
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            for tool in tools:
                hints = tool.annotations
                assert hints is not None
                print(
                    f"tool {tool.name}: idempotent={hints.idempotent_hint} "
                    f"destructive={hints.destructive_hint}"
                )
            host = Host(client)
            host.transcript.append({"role": "user", "content": "Please use metric units."})
            show(1, await host.model_input())
            await host.call("user__save_memory", {"text": "Prefers metric units."}, "turn-1/call-1")
            await host.call(
                "user__save_memory", {"text": "Is an admin.", "user_id": "bob"}, "turn-1/call-2"
            )
            # The answer to call-1 was lost, say: the host sends it again, with the same id.
            await host.call("user__save_memory", {"text": "Prefers metric units."}, "turn-1/call-1")
            show(2, await host.model_input())
            show(3, await host.model_input())

            [resource] = (await client.read_resource("docmem://user")).contents
            assert isinstance(resource, TextResourceContents)
            last = resource.text.splitlines()[-1]
            print(f"resource docmem://user ({resource.mime_type}) ends with {last!r}")
        scope = docmem.by_principal(docmem.ScopeContext(principal=alice))
        assert scope is not None
        locked = docmem.lock_scope(namespace="example:dev:user", scope=scope)
        assert locked is not None
        document = docmem.FileMemory(store).bind(locked, slot="user").read()
        assert document is not None
        print(f"stored: {dict(document.entries)} (one entry: the retry had no second effect)")
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
