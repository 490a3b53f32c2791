"""The storage layer: versioned blobs behind the :class:`~docmem.backend.Backend` contract.

The registry of URL schemes, the built-in stores (``builtin/``), client-side
encryption (``encryption/``), and the parallel walks and progress reports of
operator work over a whole store. Imports only ``docmem.errors``,
``docmem.backend``, ``docmem.options``, ``docmem.localfs`` and the layer-free
modules; see docs/design.md, section 1.
"""
