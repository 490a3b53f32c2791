"""docmem documents on any fsspec filesystem with an atomic exclusive create.

``docmem.open_store("fsspec+s3://bucket/prefix")``, ``"fsspec+gs://bucket/prefix"``,
``"fsspec+az://container/prefix"`` or ``"fsspec+file:///var/lib/memory"`` after
``pip install agent-docmem-fsspec`` (with the extra for the store: ``[s3]``,
``[gcs]``, ``[azure]``). Each key is a commit log of immutable versions; see
:class:`FsspecBackend` for the options and :meth:`FsspecBackend.history` for
looking at older versions.
"""

from __future__ import annotations

from .backend import FsspecBackend, Revision
from .commitlog import object_name, parse_version
from .probe import ConditionsNotHonoured

__all__ = ["ConditionsNotHonoured", "FsspecBackend", "Revision", "object_name", "parse_version"]
