"""Key-encryption keys by id, one of them primary: what an encrypted store asks for data keys.

Envelope encryption: every scope's document is sealed under a data key of its
own, and the data key is stored beside it wrapped by a key-encryption key
(KEK), named in the envelope by its id. A :class:`Keyring` holds the KEKs a
store may meet; new writes use the primary, older keys only open what they
wrapped, until ``docmem rekey`` has moved every document to the primary and
the old key can go. Two kinds of KEK ship: :class:`~.local.LocalKey` (key
bytes in this process, from a file or an environment variable) and
:class:`~.kms.KmsKey` (AWS KMS, through boto3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import StoreNotConfigured, UnknownKey
from .kek import KeyEncryptionKey

if TYPE_CHECKING:
    from .kms import KmsClient

__all__ = ["Keyring"]

_SPEC_KINDS = "file:PATH, env:VARIABLE or kms:KEY_ID[,KEY_ID...]"


class Keyring:
    """Key-encryption keys by id; the primary wraps every new data key.

    ``primary`` defaults to the first key. Build one from keys in code, or
    with :meth:`from_spec` (``file:PATH``, ``env:VARIABLE``, ``kms:ID,...``),
    :meth:`from_file`, :meth:`from_env` or :meth:`kms`. A keyring from a
    spec pickles as the spec (the child process loads it again); one built
    from key objects pickles with them, local key bytes included.
    """

    def __init__(self, keys: Iterable[KeyEncryptionKey], *, primary: str | None = None) -> None:
        by_id: dict[str, KeyEncryptionKey] = {}
        for key in keys:
            if not isinstance(key, KeyEncryptionKey):
                raise StoreNotConfigured("a keyring holds KeyEncryptionKey objects")
            if key.key_id in by_id:
                raise StoreNotConfigured(f"the keyring holds key id {key.key_id!r} twice")
            by_id[key.key_id] = key
        if not by_id:
            raise StoreNotConfigured("a keyring needs at least one key")
        chosen = next(iter(by_id)) if primary is None else primary
        if chosen not in by_id:
            raise UnknownKey(f"the keyring's primary key id {chosen!r} is not one of its keys")
        self._keys = by_id
        self._primary = by_id[chosen]
        self._spec: tuple[str, tuple[tuple[str, Any], ...]] | None = None

    # -- what a store asks -----------------------------------------------------------------

    @property
    def primary(self) -> KeyEncryptionKey:
        """The key that wraps every new data key."""
        return self._primary

    @property
    def key_ids(self) -> tuple[str, ...]:
        """Every key id, in the order given."""
        return tuple(self._keys)

    def get(self, key_id: str) -> KeyEncryptionKey:
        """The key named ``key_id``; UnknownKey when this keyring does not hold it."""
        found = self._keys.get(key_id)
        if found is None:
            raise UnknownKey(
                f"the document is encrypted under key id {key_id!r}, which the keyring does "
                "not hold: add that key to the keyring (keys are only removed after "
                "`docmem rekey` moved every document off them)"
            )
        return found

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    @property
    def spec(self) -> str | None:
        """The spec this keyring was loaded from (``file:...``), or ``None`` when built in code."""
        return self._spec[0] if self._spec is not None else None

    def __repr__(self) -> str:
        return f"Keyring(primary={self._primary.key_id!r}, key_ids={self.key_ids!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Keyring):
            return NotImplemented
        if self._spec is not None or other._spec is not None:
            return self._spec == other._spec
        return self._primary.key_id == other._primary.key_id and self._keys == other._keys

    def __hash__(self) -> int:
        return hash(self._spec) if self._spec is not None else hash(self.key_ids)

    def __reduce__(self) -> tuple[Any, ...]:
        if self._spec is not None:
            spec, options = self._spec
            return (_from_spec, (spec, dict(options)))
        return (_rebuild, (list(self._keys.values()), self._primary.key_id))

    # -- where keyrings come from ------------------------------------------------------------

    @classmethod
    def from_spec(
        cls,
        spec: str,
        *,
        kms_endpoint_url: str | None = None,
        kms_region: str | None = None,
    ) -> Keyring:
        """The keyring a spec names: ``file:PATH``, ``env:VARIABLE`` or ``kms:ID[,ID...]``.

        A file or a variable holds a local keyring in JSON (docs/encryption.md);
        ``kms:`` lists AWS KMS key ids, ARNs or aliases, the first the primary.
        The ``kms_`` options say where KMS is (default: boto3's own chain).
        """
        kind, _, rest = spec.partition(":") if isinstance(spec, str) else ("", "", "")
        if kind == "file" and rest:
            keyring = cls.from_file(rest)
        elif kind == "env" and rest:
            keyring = cls.from_env(rest)
        elif kind == "kms" and rest:
            keyring = cls.kms(rest.split(","), endpoint_url=kms_endpoint_url, region=kms_region)
        else:
            raise StoreNotConfigured(f"a keyring is named {_SPEC_KINDS}")
        options = (("kms_endpoint_url", kms_endpoint_url), ("kms_region", kms_region))
        keyring._spec = (spec, tuple((name, value) for name, value in options if value))
        return keyring

    @classmethod
    def from_file(cls, path: str) -> Keyring:
        """A local keyring from a JSON file (docs/encryption.md); keep it mode 0600."""
        from .keyfile import read_keyring_file

        keys, primary = read_keyring_file(path)
        return cls.local(keys, primary=primary)

    @classmethod
    def from_env(cls, variable: str = "DOCMEM_KEYRING") -> Keyring:
        """A local keyring from the JSON text in an environment variable."""
        from .keyfile import read_keyring_variable

        keys, primary = read_keyring_variable(variable)
        return cls.local(keys, primary=primary)

    @classmethod
    def local(cls, keys: Mapping[str, bytes], *, primary: str | None = None) -> Keyring:
        """A keyring of local keys: id -> 32 key bytes."""
        from .local import LocalKey

        return cls([LocalKey(key_id, secret) for key_id, secret in keys.items()], primary=primary)

    @classmethod
    def kms(
        cls,
        key_ids: Sequence[str],
        *,
        primary: str | None = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        client: KmsClient | None = None,
    ) -> Keyring:
        """AWS KMS keys (ids, ARNs or aliases) sharing one boto3 client per process.

        ``client`` (a :class:`~.kms.KmsClient`, for its timeouts and retries)
        replaces ``endpoint_url`` and ``region``.
        """
        from .kms import KmsClient, KmsKey

        if client is None:
            client = KmsClient(endpoint_url=endpoint_url, region=region)
        return cls([KmsKey(key_id.strip(), client) for key_id in key_ids], primary=primary)


def _from_spec(spec: str, options: dict[str, Any]) -> Keyring:
    return Keyring.from_spec(spec, **options)


def _rebuild(keys: list[KeyEncryptionKey], primary: str) -> Keyring:
    return Keyring(keys, primary=primary)
