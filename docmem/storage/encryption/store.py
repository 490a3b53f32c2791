"""EncryptedStore: any docmem store, with every document sealed on the client (docs/encryption.md).

It is a :class:`~docmem.backend.Backend` around another one, so providers,
adapters, the command line and the transfer commands work on it unchanged:
``read`` opens what the wrapped store returns, ``write`` seals and hands the
envelope to the wrapped store's own conditional write, and version tokens
pass through untouched, so conditional-write semantics (and a replayed old
ciphertext's conflict) are the wrapped store's. Only bytes change: keys,
listing, ``delete``, ``purge_history`` and ``history`` are the wrapped
store's (a kept version's size is its envelope's), and ``read_version``
opens a kept envelope as ``read`` opens the current one.

URL form: ``encrypted+<the store's URL>``, with the options below in its
query or as keywords (``encrypted+s3://bucket/prefix?keyring=kms:alias/docmem``);
every other option goes to the wrapped store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec

from ...backend import Backend, DelegatingBackend, PerProcess, Stored, check_key
from ...errors import (
    InvalidArgument,
    PlaintextDocument,
    StoreBusy,
    StoreNotConfigured,
    VersionConflict,
    WriteOutcomeUnknown,
)
from ...options import check_options, query_options
from ..registry import open_store
from .aead import new_nonce
from .cache import DataKeys, Documents
from .envelope import associated_data, decode, header, is_envelope
from .keyring import Keyring

__all__ = ["PREFIX", "EncryptedStore", "EncryptionOptions", "RekeyOutcome", "encrypted"]

PREFIX = "encrypted+"
#: What :meth:`EncryptedStore.rekey` did to one document.
RekeyOutcome = Literal["rekeyed", "encrypted", "current", "absent"]
_KINDS = ("file", "env", "kms")
_NO_KEYRING = (
    "an encrypted store needs a keyring: add keyring=file:PATH, env:VARIABLE or kms:KEY_ID "
    "to its URL, or pass keyring=docmem.Keyring(...)"
)


class EncryptionOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options of ``encrypted+`` URLs (and of :func:`encrypted`)."""

    #: ``file:PATH``, ``env:VARIABLE`` or ``kms:KEY_ID[,KEY_ID...]`` (docs/encryption.md).
    keyring: str | None = None
    #: Read documents stored unencrypted (a migration in place); they are encrypted when written.
    allow_plaintext: bool = False
    #: How long one scope keeps writing with one data key; 0: a new data key every write.
    data_key_seconds: Annotated[
        float,
        msgspec.Meta(ge=0, le=31_536_000, description="a number of seconds from 0 to 31536000"),
    ] = 300.0
    #: Data keys kept open per store, and scopes whose writing key is kept (each).
    key_cache_size: Annotated[
        int, msgspec.Meta(ge=0, le=1_000_000, description="a whole number from 0 to 1000000")
    ] = 1024
    #: Where AWS KMS is, for a ``kms:`` keyring (default: boto3's configuration).
    kms_endpoint_url: str | None = None
    kms_region: str | None = None


_FIELDS = tuple(field.name for field in msgspec.structs.fields(EncryptionOptions))
_DEFAULTS = EncryptionOptions()
#: Scopes whose last envelope and plaintext are kept: at worst 64 x 2 x 64 KiB.
_DOCUMENTS_KEPT = 64


class EncryptedStore(DelegatingBackend):
    """``store`` with every document sealed under its scope's data key (see the module docstring).

    ``keyring`` is a :class:`Keyring`, or a spec that is loaded on first use
    (``open_store`` does no I/O). Failures: a document under a key id the
    keyring lacks is UnknownKey; one that fails authentication DocumentCorrupt
    (never overwritten: a save reads first); one not encrypted at all
    PlaintextDocument, unless ``allow_plaintext``; KMS out of reach
    StoreUnavailable, before anything is written.
    """

    def __init__(
        self,
        store: Backend,
        keyring: Keyring | str | None,
        *,
        allow_plaintext: bool = False,
        data_key_seconds: float = _DEFAULTS.data_key_seconds,
        key_cache_size: int = _DEFAULTS.key_cache_size,
        kms_endpoint_url: str | None = None,
        kms_region: str | None = None,
    ) -> None:
        if not isinstance(store, Backend):
            raise InvalidArgument("encrypted() wraps a store from docmem.open_store()")
        spec = keyring if isinstance(keyring, str) else None
        checked = check_options(
            EncryptionOptions,
            {
                "keyring": spec,
                "allow_plaintext": allow_plaintext,
                "data_key_seconds": data_key_seconds,
                "key_cache_size": key_cache_size,
                "kms_endpoint_url": kms_endpoint_url,
                "kms_region": kms_region,
            },
            scheme="encrypted",
        )
        if not isinstance(keyring, Keyring) and not (spec is not None and _valid_spec(spec)):
            raise StoreNotConfigured(_NO_KEYRING)
        # A spec is loaded on first use, once per process (a forked child loads its own).
        given = keyring
        self._keyring: PerProcess[Keyring] = PerProcess(
            lambda: given if isinstance(given, Keyring) else _load_keyring(checked)
        )
        super().__init__(store)
        self._settings = checked
        self._given = keyring
        self._keys = DataKeys(size=checked.key_cache_size, lifetime=checked.data_key_seconds)
        self._documents = Documents(min(checked.key_cache_size, _DOCUMENTS_KEPT))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> EncryptedStore:
        scheme, _, inner_url = url.partition("+")
        if scheme.lower() != PREFIX[:-1] or not inner_url:
            raise StoreNotConfigured(
                "an encrypted store's URL is encrypted+ and the URL of the store to encrypt, "
                "e.g. encrypted+file:///var/lib/agent/memory?keyring=file:/etc/docmem/keyring.json"
            )
        given = dict(options)
        keyring: Keyring | str | None = None
        if isinstance(given.get("keyring"), Keyring):
            keyring = given.pop("keyring")
        query = query_options(inner_url)
        mine = {name: query[name] for name in _FIELDS if name in query}
        mine.update({name: given.pop(name) for name in _FIELDS if name in given})
        checked = check_options(EncryptionOptions, mine, scheme="encrypted")
        inner = open_store(_without(inner_url, _FIELDS), **given)
        return cls(
            inner,
            keyring if keyring is not None else checked.keyring,
            allow_plaintext=checked.allow_plaintext,
            data_key_seconds=checked.data_key_seconds,
            key_cache_size=checked.key_cache_size,
            kms_endpoint_url=checked.kms_endpoint_url,
            kms_region=checked.kms_region,
        )

    # -- what it is ------------------------------------------------------------------

    @property
    def url(self) -> str:
        return PREFIX + self._inner.url

    @property
    def options(self) -> dict[str, Any]:
        own: dict[str, Any] = {"keyring": self._given}
        for name in _FIELDS[1:]:
            value = getattr(self._settings, name)
            if value != getattr(_DEFAULTS, name):
                own[name] = value
        return {**self._inner.options, **own}

    @property
    def keyring(self) -> Keyring:
        """The keyring, loaded from its spec on first use."""
        return self._keyring.get()

    def __repr__(self) -> str:
        return f"EncryptedStore({self.url!r})"

    # -- the Backend contract ----------------------------------------------------------

    def read(self, key: str) -> Stored | None:
        stored = self._inner.read(key)
        return None if stored is None else Stored(self.decrypt(key, stored.data), stored.version)

    def read_recent(self, key: str) -> Stored | None:
        stored = self._inner.read_recent(key)
        return None if stored is None else Stored(self.decrypt(key, stored.data), stored.version)

    def read_version(self, key: str, version: str) -> Stored | None:
        """A kept version, opened like the current one: its envelope names the same key.

        It is not remembered as the scope's last document, and its data key
        is not taken for writing: an older version is read, never built on.
        """
        stored = self._inner.read_version(key, version)
        if stored is None:
            return None
        return Stored(self._open(key, stored.data, remember=False), stored.version)

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        check_key(key)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidArgument("a store writes bytes")
        return self._inner.write(key, self.encrypt(key, bytes(data)), expected=expected)

    def listed_versions(self) -> Iterator[tuple[str, str]] | None:
        # Not offered: a migration then reads its copies back, which decrypts and
        # authenticates each, rather than trusting the wrapped store's listing.
        return None

    # -- encryption --------------------------------------------------------------------

    def encrypt(self, key: str, plaintext: bytes) -> bytes:
        """The envelope of ``plaintext`` for ``key``: its scope's data key, a fresh nonce.

        What :meth:`write` stores; for tools that write around the store.
        """
        check_key(key)
        data_key = self._keys.for_writing(self.keyring.primary, key)
        nonce = new_nonce()
        head = header(data_key.key_id, data_key.wrapped, nonce)
        sealed = head + data_key.sealer.seal(nonce, plaintext, associated_data(key, head))
        self._documents.put(key, sealed, plaintext)
        return sealed

    def decrypt(self, key: str, data: bytes) -> bytes:
        """The document the stored bytes ``data`` of ``key`` hold; see the class docstring."""
        return self._open(key, data, remember=True)

    def _open(self, key: str, data: bytes, *, remember: bool) -> bytes:
        """:meth:`decrypt`; unless ``remember``, the caches of what is current stay as they were."""
        known = self._documents.get(key, data)
        if known is not None:
            return known
        check_key(key)
        if not is_envelope(data):
            if self._settings.allow_plaintext:
                return bytes(data)
            raise PlaintextDocument(
                "the encrypted store holds a document that is not encrypted, and refuses it "
                "(anyone who can write the store could have put it there): to encrypt a "
                "plaintext store, export it and import it into an encrypted one, or open this "
                "store with allow_plaintext=true to migrate it in place"
            )
        envelope = decode(bytes(data))
        keyring = self.keyring
        kek = keyring.get(envelope.key_id)
        data_key = self._keys.opened(envelope.key_id, key, envelope.wrapped_key)
        fresh = data_key is None
        if data_key is None:
            data_key = self._keys.open(kek, key, envelope.wrapped_key)
        plaintext = data_key.sealer.open(
            envelope.nonce,
            envelope.ciphertext,
            associated_data(key, envelope.header),
            what="the encrypted document",
        )
        if remember:
            if fresh:
                self._keys.remember(key, data_key, primary=keyring.primary.key_id)
            self._documents.put(key, bytes(data), plaintext)
        return plaintext

    def stored_key_id(self, key: str) -> str | None:
        """The key id ``key``'s stored document is encrypted under, without opening it.

        ``None`` when there is no document; PlaintextDocument when it is not
        encrypted; DocumentCorrupt when its header is not an envelope's.
        """
        stored = self._inner.read(key)
        if stored is None:
            return None
        if not is_envelope(stored.data):
            raise PlaintextDocument("the document stored under this key is not encrypted")
        return decode(bytes(stored.data)).key_id

    def rekey(self, key: str, *, attempts: int = 16) -> RekeyOutcome:
        """Re-encrypt ``key``'s document under the primary key, with a conditional write.

        ``"current"``: already under the primary, nothing written (so a rerun
        resumes where an interrupted one stopped); ``"rekeyed"``: moved from
        an older key; ``"encrypted"``: it was plaintext (``allow_plaintext``);
        ``"absent"``: no document. The bytes it writes hold the same document,
        over the version it read: a save in between wins, and the document is
        read again. StoreBusy after ``attempts`` lost races.
        """
        check_key(key)
        primary = self.keyring.primary.key_id
        pending: RekeyOutcome | None = None
        for _ in range(attempts):
            stored = self._inner.read(key)
            if stored is None:
                return "absent"
            plain = not is_envelope(stored.data)
            if not plain and decode(bytes(stored.data)).key_id == primary:
                return pending or "current"
            document = self.decrypt(key, stored.data)
            try:
                self._inner.write(key, self.encrypt(key, document), expected=stored.version)
            except VersionConflict:
                continue
            except WriteOutcomeUnknown:
                pending = "encrypted" if plain else "rekeyed"
                continue  # the next read tells whether it landed
            return "encrypted" if plain else "rekeyed"
        raise StoreBusy(
            "the document kept changing while it was re-encrypted; run docmem rekey again"
        )


def encrypted(
    store: Backend,
    keyring: Keyring | str,
    *,
    allow_plaintext: bool = False,
    data_key_seconds: float = _DEFAULTS.data_key_seconds,
    key_cache_size: int = _DEFAULTS.key_cache_size,
    kms_endpoint_url: str | None = None,
    kms_region: str | None = None,
) -> EncryptedStore:
    """``store`` with client-side encryption: every document sealed under its scope's data key.

    ``keyring`` is a :class:`Keyring` or a spec (``file:PATH``, ``env:VARIABLE``,
    ``kms:KEY_ID[,KEY_ID...]``); see :class:`EncryptedStore` and docs/encryption.md.
    """
    return EncryptedStore(
        store,
        keyring,
        allow_plaintext=allow_plaintext,
        data_key_seconds=data_key_seconds,
        key_cache_size=key_cache_size,
        kms_endpoint_url=kms_endpoint_url,
        kms_region=kms_region,
    )


def _load_keyring(settings: EncryptionOptions) -> Keyring:
    assert settings.keyring is not None
    return Keyring.from_spec(
        settings.keyring,
        kms_endpoint_url=settings.kms_endpoint_url,
        kms_region=settings.kms_region,
    )


def _valid_spec(spec: str) -> bool:
    kind, _, rest = spec.partition(":")
    return kind in _KINDS and bool(rest)


def _without(url: str, names: tuple[str, ...]) -> str:
    """``url`` without the query parameters ``names`` (unchanged when it has none of them)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(name, value) for name, value in pairs if name not in names]
    if len(kept) == len(pairs):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))
