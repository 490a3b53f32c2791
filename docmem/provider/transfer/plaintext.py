"""Where a transfer takes documents out of client-side encryption, so it never does so unasked.

An export is read through the store, so an encrypted store's export file is
plaintext, and a migration out of an encrypted store into a plaintext one
stores every memory in the clear. :func:`encrypts` asks the store object
itself (an :class:`~docmem.encryption.EncryptedStore`, or a subclass),
never its URL: a URL names a scheme, and a store built in Python has none
to read. :func:`check_decryption` is the migration's refusal; the command
line warns where an export file is plaintext.
"""

from __future__ import annotations

from ...backend import Backend
from ...errors import StoreNotConfigured, TransferRefused

__all__ = ["check_decryption", "encrypts"]


def encrypts(store: Backend) -> bool:
    """Whether ``store`` seals its documents on the client (docs/encryption.md)."""
    try:
        from ...storage.encryption.store import EncryptedStore
    except (ImportError, StoreNotConfigured):
        # Without the encryption extra the class cannot exist, so no store is one.
        return False
    return isinstance(store, EncryptedStore)


def check_decryption(source: Backend, destination: Backend, *, decrypt: bool) -> bool:
    """Whether copying ``source`` into ``destination`` decrypts; refused unless ``decrypt``.

    TransferRefused, before anything is done, when the source is encrypted
    and the destination is not: the operator must say so (``--decrypt``).
    """
    decrypting = encrypts(source) and not encrypts(destination)
    if decrypting and not decrypt:
        raise TransferRefused(
            "the source store is encrypted and the destination is not: the copy would hold "
            "every memory in plaintext, so it is not made unless asked for; nothing was done"
        )
    return decrypting
