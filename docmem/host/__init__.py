"""Host integration: what an agent framework drives each turn.

Tools and their schemas, slots and scope resolution, request-only injection
of recalled copies, the recall ledger and :class:`~docmem.host.runtime.MemoryRuntime`.
The framework adapters (``docmem.integrations``) sit on top; see
docs/design.md, section 1.
"""
