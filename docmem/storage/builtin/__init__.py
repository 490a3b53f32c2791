"""The stores that ship with docmem: ``memory://`` (:mod:`.inmemory`), ``file://`` (:mod:`.local`).

Plug-in stores are separate distributions, under ``backends/`` in the
repository, found through the entry-point group ``docmem.backends``.
"""
