"""One scope's document as a ``docmem-export/1`` file: header, one record, trailer.

The same writer ``docmem export`` uses for a whole store
(:class:`~docmem.provider.transfer.format.ExportWriter`), given one key, so
``docmem import`` and ``docmem verify`` read the file like any other export.
"""

from __future__ import annotations

import io

from docmem.backend import Backend
from docmem.provider.transfer.format import FORMAT, ExportWriter, Header, now

__all__ = ["export_scope"]


def export_scope(store: Backend, key: str) -> bytes | None:
    """The export file of ``key``'s document as it is now, or ``None`` when none is stored."""
    stored = store.read(key)
    if stored is None:
        return None
    out = io.BytesIO()
    header = Header(format=FORMAT, created=now(), source=store.url, fenced=False, fence=None)
    writer = ExportWriter(out, header)
    writer.add(key, bytes(stored.data))
    writer.finish()
    return out.getvalue()
