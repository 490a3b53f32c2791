"""Local-disk primitives for stores on a POSIX file system (stable, for plug-in authors).

:mod:`.durable` creates files and directories that survive a power cut,
:mod:`.flock` is the per-key lock across threads and processes, and
:mod:`.marker` is the file that tells a store's root from an empty mount
point. ``file://`` is built on them, and so is docmem-fsspec's local dialect.
:mod:`.kept` (the older versions ``file://`` keeps beside a document) is
``file://``'s own and not part of the stable surface.
"""
