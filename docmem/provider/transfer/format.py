"""The ``docmem-export/1`` file: JSON Lines of a header, one record per document, a trailer.

docs/export-format.md defines it byte for byte; this module is that
definition in code. Every line is the compact JSON msgspec writes for one
of the three structs below, fields in their declared order, ``type`` first,
then ``\\n``. Nothing here does I/O but write to the stream it is given.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
from dataclasses import replace
from typing import BinaryIO, Literal

import msgspec

from ...errors import DocumentCorrupt
from ..document import parse, serialize
from ..fencing import unfenced

__all__ = [
    "FORMAT",
    "LOGICAL_DIGEST_PREFIX",
    "MAX_LINE_BYTES",
    "ExportWriter",
    "Header",
    "LogicalDigest",
    "Record",
    "Trailer",
    "decoder",
    "encode_line",
    "now",
    "record_of",
    "sha256_hex",
]

FORMAT = "docmem-export/1"
#: The bytes the logical digest starts from (docs/export-format.md, "The logical digest").
LOGICAL_DIGEST_PREFIX = b"docmem-export/1 logical digest\n"
#: No line is longer, newline included: a document's base64 with room to spare.
MAX_LINE_BYTES = 1 << 20


class Header(msgspec.Struct, tag_field="type", tag="header", forbid_unknown_fields=True):
    """Line 1: the format, when (UTC), from which store, and under which fence, if any."""

    format: str
    created: str
    source: str
    fenced: bool
    fence: str | None


class Record(msgspec.Struct, tag_field="type", tag="document", forbid_unknown_fields=True):
    """One document: its key, revision, the SHA-256 of its exact bytes, and the bytes."""

    key: str
    #: The document's ``rev``; ``None`` for bytes that are no plaintext docmem document.
    revision: int | None
    sha256: str
    #: ``text`` for a plaintext docmem document (``data`` is its UTF-8 text), else ``base64``.
    encoding: Literal["text", "base64"]
    data: str


class Trailer(msgspec.Struct, tag_field="type", tag="trailer", forbid_unknown_fields=True):
    """The last line: how many documents, their bytes, the logical digest, the lines' digest."""

    documents: int
    bytes: int
    logical_digest: str
    #: SHA-256 of every byte of the file before this line (the header and the records).
    sha256: str


_encoder = msgspec.json.Encoder()
#: Decodes any line; which one it may be is the reader's business.
decoder: msgspec.json.Decoder[Header | Record | Trailer] = msgspec.json.Decoder(
    Header | Record | Trailer
)


def encode_line(line: Header | Record | Trailer) -> bytes:
    """The exact bytes of one line, its newline included."""
    return _encoder.encode(line) + b"\n"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def now() -> str:
    """The current UTC time as the header writes it: ``2026-01-31T12:00:00Z``."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def record_of(key: str, data: bytes) -> tuple[Record, bytes]:
    """The record of ``data`` stored under ``key`` (text if it is a docmem document, else
    base64), and its unfenced bytes (:func:`docmem.fencing.unfenced`), from one parse."""
    try:
        document = parse(data)
    except DocumentCorrupt:
        encoded = base64.b64encode(data).decode("ascii")
        return Record(key, None, sha256_hex(data), "base64", encoded), data
    record = Record(key, document.revision, sha256_hex(data), "text", data.decode("utf-8"))
    plain = data if document.fence is None else serialize(replace(document, fence=None))
    return record, plain


class LogicalDigest:
    """SHA-256 of the prefix, then ``<key> <hex SHA-256 of the unfenced bytes>\\n`` per document.

    Documents must be added in ascending key order; a fenced document and
    its unfenced copy contribute the same line.
    """

    def __init__(self) -> None:
        self._hash = hashlib.sha256(LOGICAL_DIGEST_PREFIX)

    def add(self, key: str, data: bytes) -> str:
        """Add one document; returns its line's hash (of its unfenced bytes)."""
        return self.add_unfenced(key, unfenced(data))

    def add_unfenced(self, key: str, plain: bytes) -> str:
        """Add one document whose bytes are already unfenced."""
        digest = sha256_hex(plain)
        self._hash.update(f"{key} {digest}\n".encode("ascii"))
        return digest

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


class ExportWriter:
    """Writes one export to a binary stream: the header now, records in key order, the trailer."""

    def __init__(self, out: BinaryIO, header: Header) -> None:
        self._out = out
        self._lines = hashlib.sha256()
        self._logical = LogicalDigest()
        self._previous: str | None = None
        self.documents = 0
        self.bytes = 0
        self._write(encode_line(header))

    def _write(self, line: bytes) -> None:
        self._out.write(line)
        self._lines.update(line)

    def add(self, key: str, data: bytes) -> None:
        """One document; keys must come strictly ascending (a bug in the caller otherwise)."""
        if self._previous is not None and key <= self._previous:
            raise AssertionError("export records must come in strictly ascending key order")
        self._previous = key
        record, plain = record_of(key, data)
        self._write(encode_line(record))
        self._logical.add_unfenced(key, plain)
        self.documents += 1
        self.bytes += len(data)

    def finish(self) -> Trailer:
        """Write the trailer and return it; the stream is left open."""
        trailer = Trailer(
            documents=self.documents,
            bytes=self.bytes,
            logical_digest=self._logical.hexdigest(),
            sha256=self._lines.hexdigest(),
        )
        self._out.write(encode_line(trailer))
        return trailer
