"""Client-side encryption with per-scope keys: ``docmem.encrypted(store, keyring)``.

Whoever can read the bucket (an administrator, a leaked read-only credential,
a backup) reads envelopes, not memory: every scope's document is sealed with
AES-256-GCM under a data key of its own, bound to its storage key, and the
data key is stored wrapped by a key-encryption key from a :class:`Keyring`
(local keys, or AWS KMS). docs/encryption.md describes the envelope, the
keyring file, the caches and rotation (``docmem rekey``).

Needs the ``encryption`` extra (``cryptography``; ``kms`` adds boto3).
``import docmem`` imports none of this; boto3 is imported only by
:mod:`docmem.encryption.kms`, when a KMS key is first used.
"""

from __future__ import annotations

from .kek import KeyEncryptionKey
from .keyring import Keyring
from .kms import KmsClient, KmsKey
from .local import LocalKey
from .store import EncryptedStore, EncryptionOptions, RekeyOutcome, encrypted

__all__ = [
    "EncryptedStore",
    "EncryptionOptions",
    "KeyEncryptionKey",
    "Keyring",
    "KmsClient",
    "KmsKey",
    "LocalKey",
    "RekeyOutcome",
    "encrypted",
]
