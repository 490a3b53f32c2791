"""Reading an export: every check of docs/export-format.md, line by line, content-free.

:func:`check_export` reads the whole file and raises
:class:`~docmem.errors.ExportInvalid` at the first fault, before anything is
written anywhere; :func:`checked_records` reads it again, checking each
record as it hands it out (and the trailer at the end), for the import
itself. Both start from the beginning of the (seekable) stream.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import msgspec

from ...backend import check_key
from ...errors import DocumentCorrupt, ExportInvalid, InvalidArgument
from ...storage.progress import NO_PROGRESS, Progress
from ..document import parse
from ..fencing import FENCE_KEY, check_fence_id, unfenced
from .format import (
    FORMAT,
    MAX_LINE_BYTES,
    Header,
    LogicalDigest,
    Record,
    Trailer,
    decoder,
    encode_line,
    sha256_hex,
)
from .words import counted

__all__ = ["CheckedRecord", "ExportSummary", "check_export", "checked_records", "rewind"]

_HEX = re.compile(r"[0-9a-f]{64}")
_CREATED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


class _FormatOnly(msgspec.Struct):
    """Just enough of line 1 to name a format this reader does not know."""

    format: str | None = None


@dataclass(frozen=True)
class ExportSummary:
    """What an export file holds, once every check passed: its header and trailer."""

    created: str
    #: The source store's secret-free URL.
    source: str
    fenced: bool
    fence: str | None
    documents: int
    bytes: int
    logical_digest: str
    #: SHA-256 of the file's bytes before the trailer.
    sha256: str


@dataclass(frozen=True)
class CheckedRecord:
    """One record that passed its checks: the exact bytes, and the bytes an import writes."""

    key: str
    revision: int | None
    data: bytes
    #: ``data`` without a fence (docmem.fencing.unfenced): what an import stores.
    unfenced: bytes
    #: Hex SHA-256 of ``unfenced``: this record's part of the logical digest.
    logical: str


def _invalid(number: int, reason: str) -> ExportInvalid:
    return ExportInvalid(
        f"the export file is refused: line {number} {reason}; nothing was imported"
    )


def rewind(source: BinaryIO) -> None:
    """Go back to the start of ``source``; an export is read more than once."""
    if not source.seekable():
        raise InvalidArgument("an export is read twice: pass a file, not a pipe")
    source.seek(0)


def _lines(source: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` with its newline; a last line without one is a truncation."""
    number = 0
    while True:
        line = source.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if not line.endswith(b"\n"):
            if len(line) > MAX_LINE_BYTES:
                raise _invalid(number, f"is longer than {MAX_LINE_BYTES:,} bytes")
            raise _invalid(number, "does not end in a newline: the file is truncated")
        yield number, line


def _decoded(number: int, line: bytes) -> Header | Record | Trailer:
    try:
        value: Header | Record | Trailer | None = decoder.decode(line)
    except msgspec.DecodeError:
        value = None  # msgspec's message may quote the line: raised below, without it
    if value is None:
        raise _invalid(number, f"is not a {FORMAT} line (malformed JSON, a missing field or type)")
    if encode_line(value) != line:
        raise _invalid(number, "is not in canonical form (compact JSON, fields in their order)")
    return value


def _header(number: int, line: bytes) -> Header:
    try:
        named = msgspec.json.decode(line, type=_FormatOnly).format
    except msgspec.DecodeError:
        named = None
    if named is not None and named != FORMAT:
        raise ExportInvalid(
            f"the export file's format is not {FORMAT} (this docmem reads {FORMAT} only); "
            "nothing was imported"
        )
    header = _decoded(number, line)
    if not isinstance(header, Header) or header.format != FORMAT:
        raise _invalid(number, f"is not a {FORMAT} header")
    if not _CREATED.fullmatch(header.created):
        raise _invalid(number, "has a 'created' time that is not YYYY-MM-DDThh:mm:ssZ")
    if header.fenced != (header.fence is not None):
        raise _invalid(number, "has 'fenced' and 'fence' that disagree")
    if header.fence is not None:
        try:
            check_fence_id(header.fence)
        except InvalidArgument:
            raise _invalid(number, "names a fence id that is not valid") from None
    return header


def _record(number: int, record: Record, previous: str | None) -> CheckedRecord:
    """The record's bytes, once its key, order, encoding, digest and revision hold."""
    key = record.key
    try:
        check_key(key)
    except InvalidArgument:
        raise _invalid(number, "has a key that is not 1-200 characters of [A-Za-z0-9_-]") from None
    if key == FENCE_KEY:
        raise _invalid(number, f"holds the reserved key {FENCE_KEY}")
    if previous is not None and key <= previous:
        raise _invalid(number, "is out of order: keys must be strictly ascending")
    data = _bytes(number, record)
    if not _HEX.fullmatch(record.sha256) or sha256_hex(data) != record.sha256:
        raise _invalid(number, f"(key {key}) does not match its SHA-256: the document was altered")
    try:
        document = parse(data)
    except DocumentCorrupt:
        document = None
    if (document is not None) != (record.encoding == "text"):
        raise _invalid(number, f"(key {key}) uses the wrong encoding for its bytes")
    revision = document.revision if document is not None else None
    if record.revision != revision:
        raise _invalid(number, f"(key {key}) names a revision its document does not have")
    plain = unfenced(data)
    return CheckedRecord(key, revision, data, plain, sha256_hex(plain))


def _bytes(number: int, record: Record) -> bytes:
    if record.encoding == "text":
        try:
            return record.data.encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate escaped in the JSON
        raise _invalid(number, f"(key {record.key}) holds text that is not valid UTF-8")
    try:
        return base64.b64decode(record.data, validate=True)
    except binascii.Error:
        pass
    raise _invalid(number, f"(key {record.key}) holds base64 that does not decode")


class _Scan:
    """One pass over an export: checked records, then the trailer checked against them."""

    def __init__(self, source: BinaryIO) -> None:
        self._source = source
        self.summary: ExportSummary | None = None

    def records(self) -> Iterator[CheckedRecord]:
        rewind(self._source)
        lines = _lines(self._source)
        first = next(lines, None)
        if first is None:
            raise ExportInvalid("the export file is empty; nothing was imported")
        header = _header(*first)
        digest = hashlib.sha256(first[1])
        logical = LogicalDigest()
        previous: str | None = None
        count = total = 0
        for number, line in lines:
            value = _decoded(number, line)
            if isinstance(value, Trailer):
                self._finish(number, header, value, count, total, logical, digest)
                if next(lines, None) is not None:
                    raise _invalid(number + 1, "follows the trailer")
                return
            if not isinstance(value, Record):
                raise _invalid(number, "is a second header")
            checked = _record(number, value, previous)
            digest.update(line)
            logical.add_unfenced(checked.key, checked.unfenced)
            previous = checked.key
            count = number - 1  # the header is line 1
            total += len(checked.data)
            yield checked
        raise ExportInvalid(
            "the export file ends before its trailer: it is truncated; nothing was imported"
        )

    def _finish(
        self,
        number: int,
        header: Header,
        trailer: Trailer,
        count: int,
        total: int,
        logical: LogicalDigest,
        digest: hashlib._Hash,
    ) -> None:
        if trailer.documents != count:
            raise _invalid(
                number,
                f"counts {counted(trailer.documents, 'document')}; the file holds {count:,}",
            )
        if trailer.bytes != total:
            raise _invalid(
                number,
                f"counts {counted(trailer.bytes, 'byte')}; the documents hold {total:,}",
            )
        if trailer.logical_digest != logical.hexdigest():
            raise _invalid(number, "has a logical digest the documents do not give")
        if trailer.sha256 != digest.hexdigest():
            raise _invalid(number, "has a SHA-256 the lines before it do not give")
        self.summary = ExportSummary(
            created=header.created,
            source=header.source,
            fenced=header.fenced,
            fence=header.fence,
            documents=count,
            bytes=total,
            logical_digest=trailer.logical_digest,
            sha256=trailer.sha256,
        )


def check_export(source: BinaryIO, *, progress: Progress = NO_PROGRESS) -> ExportSummary:
    """Read the whole export and check everything; ExportInvalid at the first fault."""
    scan = _Scan(source)
    progress.begin("checking", None)
    try:
        for checked in scan.records():
            progress.advance(1, len(checked.data))
    finally:
        progress.end()
    assert scan.summary is not None
    return scan.summary


def checked_records(source: BinaryIO, expected: ExportSummary) -> Iterator[CheckedRecord]:
    """The records again, each checked as it comes; ExportInvalid if the file changed meanwhile."""
    scan = _Scan(source)
    yield from scan.records()
    if scan.summary != expected:
        raise ExportInvalid("the export file changed while it was read; import it again")
