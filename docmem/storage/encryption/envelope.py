"""The envelope, format 1: what an encrypted store keeps instead of a document (docs/encryption.md).

::

    offset   size   field
    0        10     magic, b"docmem.enc"
    10       1      format version, 1
    11       1      n, the length of the key id (1-255)
    12       n      key id, ASCII [A-Za-z0-9._:/-]: the key-encryption key that wrapped the data key
    12+n     2      m, the length of the wrapped data key, big-endian (1-4096)
    14+n     m      the wrapped data key
    14+n+m   12     nonce, fresh and random for every write
    26+n+m   rest   AES-256-GCM ciphertext of the document, its 16-byte tag last

The ciphertext is sealed under the associated data ``b"docmem.enc.v1\\0"``,
``S(storage key)``, then the header (every byte before the ciphertext), so a
ciphertext moved under another scope's key, or given another key id,
wrapped key, nonce or format version, fails to open. Pure: no I/O, no crypto.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from ...errors import DocumentCorrupt

__all__ = [
    "KEY_ID",
    "MAGIC",
    "MAX_WRAPPED_BYTES",
    "NONCE_BYTES",
    "TAG_BYTES",
    "VERSION",
    "Envelope",
    "associated_data",
    "decode",
    "encode",
    "encode_str",
    "header",
    "is_envelope",
]

MAGIC = b"docmem.enc"
VERSION = 1
NONCE_BYTES = 12
TAG_BYTES = 16
MAX_WRAPPED_BYTES = 4096
#: A key id: a local name or an AWS KMS key id, ARN or alias (never secret, stored in clear).
KEY_ID = re.compile(r"[A-Za-z0-9._:/-]{1,255}")

_AAD_TAG = b"docmem.enc.v1\0"
_FIXED = len(MAGIC) + 1 + 1  # magic, version, key id length


@dataclass(frozen=True)
class Envelope:
    """One stored envelope, taken apart; nothing in it is secret."""

    key_id: str
    wrapped_key: bytes
    nonce: bytes
    ciphertext: bytes
    #: Every byte before the ciphertext, as stored: part of the associated data.
    header: bytes

    def __repr__(self) -> str:
        return (
            f"Envelope(key_id={self.key_id!r}, wrapped_key={len(self.wrapped_key)} bytes, "
            f"ciphertext={len(self.ciphertext)} bytes)"
        )


def encode_str(data: bytes) -> bytes:
    """``S(x)`` as docs/design.md, section 2 defines it: ``S``, the length as u32, the bytes."""
    return b"S" + struct.pack(">I", len(data)) + data


def is_envelope(data: bytes) -> bool:
    """Whether ``data`` claims to be an envelope (a docmem document never starts so)."""
    return data[: len(MAGIC)] == MAGIC


def header(key_id: str, wrapped_key: bytes, nonce: bytes) -> bytes:
    """The bytes before the ciphertext; refuses what format 1 cannot hold."""
    if not KEY_ID.fullmatch(key_id):
        raise ValueError("a key id is 1-255 characters of [A-Za-z0-9._:/-]")
    if not 1 <= len(wrapped_key) <= MAX_WRAPPED_BYTES:
        raise ValueError(f"a wrapped data key is 1-{MAX_WRAPPED_BYTES} bytes")
    if len(nonce) != NONCE_BYTES:
        raise ValueError(f"a nonce is {NONCE_BYTES} bytes")
    kid = key_id.encode("ascii")
    return b"".join(
        (
            MAGIC,
            bytes((VERSION, len(kid))),
            kid,
            struct.pack(">H", len(wrapped_key)),
            wrapped_key,
            nonce,
        )
    )


def encode(header_bytes: bytes, ciphertext: bytes) -> bytes:
    """The stored envelope: the header, then the ciphertext with its tag."""
    return header_bytes + ciphertext


def associated_data(storage_key: str, header_bytes: bytes) -> bytes:
    """What the ciphertext is bound to: the format, the scope's storage key, the header."""
    return _AAD_TAG + encode_str(storage_key.encode("ascii")) + header_bytes


def decode(data: bytes) -> Envelope:
    """The envelope ``data`` holds; DocumentCorrupt for anything off (never says what it held)."""
    if not is_envelope(data) or len(data) < _FIXED:
        raise _corrupt("it does not start with an envelope header")
    version = data[len(MAGIC)]
    if version != VERSION:
        raise DocumentCorrupt(
            f"the encrypted document has envelope format {version}, and this docmem reads "
            f"format {VERSION} only: upgrade docmem"
        )
    kid_length = data[len(MAGIC) + 1]
    at = _FIXED
    kid_bytes = data[at : at + kid_length]
    at += kid_length
    if len(kid_bytes) != kid_length or len(data) < at + 2:
        raise _corrupt("it is truncated in its header")
    key_id = kid_bytes.decode("ascii", errors="replace")
    if not KEY_ID.fullmatch(key_id):
        raise _corrupt("its key id is not 1-255 characters of [A-Za-z0-9._:/-]")
    (wrapped_length,) = struct.unpack_from(">H", data, at)
    at += 2
    if not 1 <= wrapped_length <= MAX_WRAPPED_BYTES:
        raise _corrupt("its wrapped data key has an impossible length")
    wrapped_key = data[at : at + wrapped_length]
    at += wrapped_length
    nonce = data[at : at + NONCE_BYTES]
    at += NONCE_BYTES
    ciphertext = data[at:]
    if len(wrapped_key) != wrapped_length or len(nonce) != NONCE_BYTES:
        raise _corrupt("it is truncated in its header")
    if len(ciphertext) < TAG_BYTES:
        raise _corrupt("it is truncated: the ciphertext is shorter than its tag")
    return Envelope(key_id, wrapped_key, nonce, ciphertext, data[:at])


def _corrupt(reason: str) -> DocumentCorrupt:
    return DocumentCorrupt(f"the encrypted document is not a valid envelope: {reason}")
