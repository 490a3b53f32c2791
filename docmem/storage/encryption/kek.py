"""The key-encryption key contract, apart from the keyring so that each kind of key
(:mod:`.local`, :mod:`.kms`) and the keyring that builds them import it, not each other."""

from __future__ import annotations

import abc
from typing import ClassVar

from ...errors import StoreNotConfigured
from .envelope import KEY_ID

__all__ = ["KeyEncryptionKey"]


class KeyEncryptionKey(abc.ABC):
    """One key-encryption key: makes and opens the data key of one scope's document.

    ``storage_key`` binds the wrapped data key to its scope (associated data,
    or a KMS encryption context), so a wrapped key copied to another scope
    does not open. Implementations raise DocumentCorrupt when a wrapped key
    fails authentication and StoreUnavailable when the key service cannot be
    reached; their repr names the key id only.
    """

    #: Whether each call is a round trip to a key service (what the data-key cache saves).
    remote: ClassVar[bool] = False

    def __init__(self, key_id: str) -> None:
        if not isinstance(key_id, str) or not KEY_ID.fullmatch(key_id):
            raise StoreNotConfigured("a key id is 1-255 characters of [A-Za-z0-9._:/-]")
        self.key_id = key_id

    @abc.abstractmethod
    def new_data_key(self, storage_key: str) -> tuple[bytes, bytes]:
        """A fresh 32-byte data key for ``storage_key`` and its wrapped form."""

    @abc.abstractmethod
    def open_data_key(self, wrapped: bytes, storage_key: str) -> bytes:
        """The data key ``wrapped`` holds, if it was wrapped for ``storage_key`` by this key."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key_id!r})"
