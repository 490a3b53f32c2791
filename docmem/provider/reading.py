"""Reading one scope's document: the store's answer checked, then parsed through a cache.

A recall, a read and an inspect only read, so they take this module and not
the conflict loop (:mod:`docmem.provider.commit`), which reads through the same
:class:`KeyReader` and adds the conditional write. Both share the provider's
parse cache: a document that did not change since the last read or write of
it is never parsed again.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import telemetry
from ..backend import Backend, LruCache, Stored
from ..errors import StoreUnavailable
from .document import MemoryDocument, parse

__all__ = ["KeyReader", "Observed", "Read", "checked_stored"]

#: What a provider operation reports to (docmem.telemetry; a no-op without OpenTelemetry).
Observed = telemetry.Observer


@dataclass(frozen=True)
class Read:
    """One read of a key: what the store answered, parsed, and whether from its cache."""

    stored: Stored | None
    document: MemoryDocument | None
    from_cache: bool = False

    @property
    def version(self) -> str | None:
        """The version a write over this read expects (``None``: create)."""
        return self.stored.version if self.stored is not None else None


class KeyReader:
    """One key of one store, read and parsed through the provider's parse cache."""

    def __init__(self, store: Backend, key: str, parsed: LruCache[MemoryDocument]) -> None:
        self.store = store
        self.key = key
        self._parsed = parsed

    def parse(self, data: bytes) -> MemoryDocument:
        """The document ``data`` holds, from the parse cache when these bytes were seen."""
        document = self._parsed.get(data)
        if document is None:
            document = parse(data)  # a corrupt document raises and is not remembered
            self._parsed.put(data, document)
        return document

    def load(self, observation: Observed, *, recent: bool = False) -> Read:
        """Read the key (``recent``: the store may answer from its cache) and parse it."""
        store = self.store
        with observation.request("read"):
            found = store.read_recent(self.key) if recent else store.read(self.key)
        stored = checked_stored(found)
        if stored is None:
            return Read(None, None, from_cache=recent)
        document = self.parse(stored.data)
        observation.document(
            len(stored.data), len(document.entries), document.revision, written=False
        )
        return Read(stored, document, from_cache=recent)


def checked_stored(stored: object) -> Stored | None:
    """What a backend's read returned, checked at the provider boundary.

    A backend that answers with something else than bytes and a version token
    is broken, not the document: StoreUnavailable (the store cannot be used
    safely, and a save must not treat it as empty), never DocumentCorrupt, which
    tells an operator to repair stored data. Bytes-like data is accepted as
    bytes (the parse cache keys on hashable bytes).
    """
    if stored is None:
        return None
    if not isinstance(stored, Stored):
        raise StoreUnavailable(
            f"the store's read returned {type(stored).__name__}, not docmem.Stored; "
            "the backend is broken"
        )
    data, version = stored.data, stored.version
    if not isinstance(version, str) or not version:
        raise StoreUnavailable(
            "the store's read returned an empty or non-string version; it cannot be written safely"
        )
    if isinstance(data, bytes):
        return stored
    if isinstance(data, (bytearray, memoryview)):
        return Stored(bytes(data), version)
    raise StoreUnavailable(
        f"the store's read returned {type(data).__name__} data, not bytes; the backend is broken"
    )
