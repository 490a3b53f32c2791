"""LocalKey: a key-encryption key whose 32 bytes this process holds (from a file or a variable).

A data key is wrapped with AES-256-GCM under the local key: 12 random nonce
bytes, then the sealed data key and its tag (60 bytes in all), bound to the
key id and the scope's storage key as associated data. For tests and single
machines; where a key service is available, :class:`~.kms.KmsKey` keeps the
key out of the process.
"""

from __future__ import annotations

import hmac
from typing import Any

from ...errors import DocumentCorrupt, StoreNotConfigured
from .aead import KEY_BYTES, NONCE_BYTES, Sealer, new_key, new_nonce
from .envelope import encode_str
from .kek import KeyEncryptionKey

__all__ = ["WRAPPED_BYTES", "LocalKey"]

#: A wrapped data key: nonce, sealed key, tag.
WRAPPED_BYTES = NONCE_BYTES + KEY_BYTES + 16
_WRAP_TAG = b"docmem.dek.v1\0"


class LocalKey(KeyEncryptionKey):
    """A local key-encryption key: an id and 32 secret bytes (repr: the id only).

    It pickles with its bytes, so a pickle of it is as secret as the key.
    """

    def __init__(self, key_id: str, secret: bytes) -> None:
        super().__init__(key_id)
        if not isinstance(secret, bytes) or len(secret) != KEY_BYTES:
            raise StoreNotConfigured(f"local key {key_id!r} must be exactly {KEY_BYTES} bytes")
        self._secret = secret
        self._sealer = Sealer(secret)

    @classmethod
    def generate(cls, key_id: str) -> LocalKey:
        """A new local key with fresh random bytes."""
        return cls(key_id, new_key())

    @property
    def secret(self) -> bytes:
        """The key bytes (for writing a keyring file; never log them)."""
        return self._secret

    def new_data_key(self, storage_key: str) -> tuple[bytes, bytes]:
        data_key = new_key()
        return data_key, self.wrap(data_key, storage_key, new_nonce())

    def wrap(self, data_key: bytes, storage_key: str, nonce: bytes) -> bytes:
        """``data_key`` wrapped for ``storage_key`` with ``nonce`` (fixed only in test vectors)."""
        return nonce + self._sealer.seal(nonce, data_key, self._associated(storage_key))

    def open_data_key(self, wrapped: bytes, storage_key: str) -> bytes:
        if len(wrapped) != WRAPPED_BYTES:
            raise DocumentCorrupt(
                f"the wrapped data key is {len(wrapped)} bytes, not the {WRAPPED_BYTES} "
                f"a local key makes"
            )
        nonce, sealed = wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:]
        return self._sealer.open(
            nonce, sealed, self._associated(storage_key), what="the wrapped data key"
        )

    def _associated(self, storage_key: str) -> bytes:
        kid = self.key_id.encode("ascii")
        return _WRAP_TAG + encode_str(kid) + encode_str(storage_key.encode("ascii"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LocalKey):
            return NotImplemented
        return self.key_id == other.key_id and hmac.compare_digest(self._secret, other._secret)

    def __hash__(self) -> int:
        return hash(self.key_id)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LocalKey, (self.key_id, self._secret))
