"""AES-256-GCM from ``cryptography``: the one place docmem seals and opens bytes.

Nothing here is written by hand but the calls: ``cryptography``'s AESGCM does
the work, every nonce is 12 fresh random bytes from the OS, and a failed
authentication is :class:`~docmem.errors.DocumentCorrupt`, raised outside the
``except`` block so no foreign exception travels with it. Without the
``encryption`` extra, importing this module is
:class:`~docmem.errors.StoreNotConfigured` naming what to install.
"""

from __future__ import annotations

import os
from typing import NoReturn

from ...errors import DocumentCorrupt, StoreNotConfigured

try:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
except ImportError:  # pragma: no cover - the extra is installed wherever the tests run
    _missing = True
else:
    _missing = False

if _missing:  # outside the handler: the ImportError is no context of this error
    raise StoreNotConfigured(
        'client-side encryption needs the encryption extra: pip install "agent-docmem[encryption]"'
    )

__all__ = ["KEY_BYTES", "NONCE_BYTES", "Sealer", "new_key", "new_nonce"]

KEY_BYTES = 32
NONCE_BYTES = 12


def new_key() -> bytes:
    """A fresh 256-bit key from the operating system's CSPRNG."""
    return os.urandom(KEY_BYTES)


def new_nonce() -> bytes:
    """A fresh random 96-bit nonce (one per sealing, never a counter)."""
    return os.urandom(NONCE_BYTES)


class Sealer:
    """One AES-256-GCM key, ready to seal and open; its repr never shows the key."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"an AES-256 key is {KEY_BYTES} bytes")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "Sealer(<AES-256-GCM key>)"

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Sealer holds key material and is not pickled")

    def seal(self, nonce: bytes, plaintext: bytes, associated: bytes) -> bytes:
        """The ciphertext of ``plaintext`` with its 16-byte tag last."""
        return self._aead.encrypt(nonce, plaintext, associated)

    def open(self, nonce: bytes, ciphertext: bytes, associated: bytes, *, what: str) -> bytes:
        """The plaintext, or DocumentCorrupt naming ``what`` failed authentication."""
        try:
            return self._aead.decrypt(nonce, ciphertext, associated)
        except InvalidTag:
            pass
        raise DocumentCorrupt(
            f"{what} failed authentication: it was altered, truncated, moved from another "
            "scope's key, or sealed under another key"
        )
