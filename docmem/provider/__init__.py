"""The document and the provider: what is stored, and how a save or a recall gets there.

Keys, the stored document and its journal, mutations, the conflict loop and
group commit, :class:`~docmem.provider.memory.FileMemory` and the tools it
hands out, fences, and export/import (``transfer/``). Imports the storage
layer and below, never the host layer; see docs/design.md, section 1.
"""
