"""docmem as the memory of a LlamaIndex FunctionAgent, offline on LlamaIndex's mock LLM.

Two runs of one conversation (a chat store key) for Alice, then one for Bob
on the same store, all on one agent. Each run gets its own workflow
``Context``, into which the application puts the signed-in user with
``set_trusted`` before the run: LlamaIndex never shows that value to the
model. In run 1 the model saves a note and the next model call already shows
it; a call that tries to write Bob's memory with an extra ``user_id`` is
refused. In run 2 the model numbers its call ``call_1`` again, and it is a
new save, not a replay of run 1's. Bob sees none of it. Afterwards the chat
store is searched: LlamaIndex stored the conversation, no copy of the memory.

    python examples/with_llama_index.py        # needs: pip install "agent-docmem[llama-index]"
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Sequence
from typing import Any, Union

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.workflow import Context

import docmem
from docmem.integrations.llama_index import DocmemFunctionAgent, set_trusted

#: A scripted answer: a reply, or a tool call ``(name, arguments, call id)``.
Answer = Union[str, tuple[str, dict[str, Any], str]]  # noqa: UP007


def scope(user_id: str) -> docmem.ScopeContext:
    """The user the application authenticated and passed to ``set_trusted``; never the model's."""
    return docmem.ScopeContext(principal=docmem.Principal("user", "demo-idp", user_id))


class Script:
    """A response generator for LlamaIndex's MockFunctionCallingLLM: answers in order."""

    def __init__(self, answers: Sequence[Answer]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[list[ChatMessage], list[str]]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        tools = [tool.metadata.get_name() for tool in kwargs.get("tools") or []]
        self.calls.append(([m.model_copy(deep=True) for m in messages], tools))
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            return ChatMessage(role="assistant", content=answer)
        name, arguments, call_id = answer
        call = ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=arguments)
        return ChatMessage(role="assistant", blocks=[call])

    def show(self) -> None:
        """Every model call: its tools, and one line per block it was sent."""
        for number, (messages, tools) in enumerate(self.calls, 1):
            print(f"  model call {number} (tools: {', '.join(tools) or 'none'})")
            for message in messages:
                for block in message.blocks:
                    if isinstance(block, ToolCallBlock):
                        print(f"    call      {block.tool_name}({block.tool_kwargs})")
                    elif isinstance(block, TextBlock) and message.role.value == "tool":
                        print(f"    result    {block.text}")
                    elif isinstance(block, TextBlock) and docmem.is_recalled(block.text):
                        print(f"    memory    {block.text.splitlines()[0]}")
                        for line in block.text.splitlines()[1:]:
                            if re.fullmatch(r"\d+: .*", line):
                                print(f"              {line}")
                    elif isinstance(block, TextBlock):
                        print(f"    {message.role.value:<9} {block.text}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        store = docmem.open_store(f"file://{root}/memory?create=true")
        slots = [
            docmem.MemorySlot(
                "user",
                docmem.FileMemory(store),
                scope=docmem.by_principal,
                namespace="example:dev:user",
                description="What this user asked you to remember.",
            )
        ]
        llm = MockFunctionCallingLLM()
        agent = DocmemFunctionAgent(
            slots, scope_context=scope, llm=llm, system_prompt="You are a helpful assistant."
        )
        chats = SimpleChatStore()  # what the application persists: chats.persist(path)

        async def turn(user: str, conversation: str, text: str, answers: list[Answer]) -> None:
            script = Script(answers)
            llm.response_generator = script
            ctx = Context(agent)
            await set_trusted(ctx, user)  # from your authentication, never from the model
            memory = ChatMemoryBuffer.from_defaults(chat_store=chats, chat_store_key=conversation)
            result = await agent.run(text, ctx=ctx, memory=memory)
            script.show()
            print(f"  reply: {result}")

        text = "Please use metric units."
        print(f"alice says {text!r} (run 1)")
        await turn(
            "alice",
            "conversation-1",
            text,
            [
                ("user__save_memory", {"text": "Prefers metric units."}, "call_1"),
                # The scope is not the model's to pick: docmem refuses the extra argument.
                ("user__save_memory", {"text": "Is an admin.", "user_id": "bob"}, "call_2"),
                "Noted: metric units from now on.",
            ],
        )

        text = "I moved to Berlin. How warm is it?"
        print(f"\nalice says {text!r} (run 2: call_1 again, a new run)")
        await turn(
            "alice",
            "conversation-1",
            text,
            [
                ("user__save_memory", {"text": "Lives in Berlin."}, "call_1"),
                "It is 21 degrees Celsius in Berlin.",
            ],
        )

        text = "What do you know about me?"
        print(f"\nbob says {text!r}")
        await turn("bob", "conversation-2", text, ["Nothing yet."])

        kept = chats.get_messages("conversation-1")
        copies = [
            block
            for message in kept
            for block in message.blocks
            if isinstance(block, TextBlock) and docmem.is_recalled(block.text)
        ]
        print(
            f"\nconversation-1's chat store: {len(kept)} messages, {len(copies)} copies of memory"
        )
        store.close()


if __name__ == "__main__":
    asyncio.run(main())
