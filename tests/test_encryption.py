"""Client-side encryption (docmem.storage.encryption, docs/encryption.md) on memory:// and file://.

The format against a golden vector and an independent reference, the raw
bytes of a store holding a canary, tampering, plaintext and unknown keys,
the data-key cache, rotation with rekey, the URL form and the keyring file.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import pickle
import shlex
import stat
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import docmem
from docmem.errors import (
    DocmemError,
    DocumentCorrupt,
    PlaintextDocument,
    StoreNotConfigured,
    StoreUnavailable,
    UnknownKey,
    VersionConflict,
)
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.storage.encryption import EncryptedStore, Keyring, LocalKey, encrypted
from docmem.storage.encryption.keyfile import (
    parse_keyring,
    read_keyring_file,
    render_keyring,
    update_keyring_file,
)
from docmem.testing.redaction import CANARY, SCOPE_CANARY, all_text

VECTORS = Path(__file__).parent / "vectors" / "encryption.json"
NAMESPACE = "tests:encryption"


def keyring_file(path: Path, keys: dict[str, bytes], primary: str, *, mode: int = 0o600) -> Path:
    """A keyring file as an operator makes one: its JSON at ``path``, then ``chmod``."""
    path.write_text(render_keyring(keys, primary))
    path.chmod(mode)
    return path


class CountingKey(LocalKey):
    """A local key that counts what a key service would be asked: each call a round trip."""

    remote = True

    def __init__(self, key_id: str, secret: bytes) -> None:
        super().__init__(key_id, secret)
        self.generated = 0
        self.opened = 0
        self.failing = False

    def new_data_key(self, storage_key: str) -> tuple[bytes, bytes]:
        self.generated += 1
        if self.failing:
            raise StoreUnavailable("the key service cannot be reached (test)")
        return super().new_data_key(storage_key)

    def open_data_key(self, wrapped: bytes, storage_key: str) -> bytes:
        self.opened += 1
        if self.failing:
            raise StoreUnavailable("the key service cannot be reached (test)")
        return super().open_data_key(wrapped, storage_key)

    def __reduce__(self) -> tuple[object, ...]:
        return (CountingKey, (self.key_id, self.secret))


def scope(value: str = "u_123") -> docmem.LockedScope:
    return docmem.lock_scope(namespace=NAMESPACE, scope=("user", value))


def bound(store: docmem.Backend, value: str = "u_123") -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(scope(value), slot="user")


@pytest.fixture(params=["memory", "file"])
def inner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[docmem.Backend]:
    url = "memory://" if request.param == "memory" else f"file://{tmp_path}/store?create=true"
    store = docmem.open_store(url)
    yield store
    store.close()


@pytest.fixture
def k1() -> CountingKey:
    return CountingKey("k1", b"\x11" * 32)


@pytest.fixture
def k2() -> CountingKey:
    return CountingKey("k2", b"\x22" * 32)


@pytest.fixture
def store(inner: docmem.Backend, k1: CountingKey) -> EncryptedStore:
    return encrypted(inner, Keyring([k1]))


def raw_bytes(store: EncryptedStore, key: str) -> bytes:
    stored = store.store.read(key)
    assert stored is not None
    return stored.data


def put_raw(store: EncryptedStore, key: str, data: bytes) -> None:
    """Replace the envelope as someone with write access to the bucket would (a new version)."""
    current = store.store.read(key)
    store.store.write(key, data, expected=None if current is None else current.version)


# -- the format ----------------------------------------------------------------------------


def _vector() -> dict[str, str]:
    loaded: dict[str, str] = json.loads(VECTORS.read_text(encoding="utf-8"))
    return loaded


def _b(name: str) -> bytes:
    return base64.b64decode(_vector()[name])


def _reference_envelope(vector: dict[str, str]) -> bytes:
    """Format 1 built from docs/encryption.md alone, with cryptography's AESGCM directly."""

    def s(data: bytes) -> bytes:
        return b"S" + struct.pack(">I", len(data)) + data

    kid = vector["key_id"].encode()
    key = vector["storage_key"].encode()
    wrap_nonce, nonce = _b("wrap_nonce"), _b("nonce")
    wrap_aad = b"docmem.dek.v1\0" + s(kid) + s(key)
    wrapped = wrap_nonce + AESGCM(_b("key_encryption_key")).encrypt(
        wrap_nonce, _b("data_key"), wrap_aad
    )
    head = b"docmem.enc" + bytes([1, len(kid)]) + kid + struct.pack(">H", len(wrapped))
    head += wrapped + nonce
    aad = b"docmem.enc.v1\0" + s(key) + head
    return head + AESGCM(_b("data_key")).encrypt(nonce, _b("plaintext"), aad)


def test_golden_vector_matches_an_independent_reference() -> None:
    vector = _vector()
    assert _reference_envelope(vector) == _b("envelope")
    from docmem.storage.encryption.aead import Sealer
    from docmem.storage.encryption.envelope import associated_data, header

    local = LocalKey(vector["key_id"], _b("key_encryption_key"))
    key = vector["storage_key"]
    wrapped = local.wrap(_b("data_key"), key, _b("wrap_nonce"))
    assert wrapped == _b("wrapped_data_key")
    head = header(vector["key_id"], wrapped, _b("nonce"))
    sealed = Sealer(_b("data_key")).seal(_b("nonce"), _b("plaintext"), associated_data(key, head))
    assert head + sealed == _b("envelope")


def test_golden_vector_opens_through_the_store() -> None:
    vector = _vector()
    keyring = Keyring([LocalKey(vector["key_id"], _b("key_encryption_key"))])
    store = encrypted(MemoryBackend(), keyring)
    store.store.write(vector["storage_key"], _b("envelope"), expected=None)
    stored = store.read(vector["storage_key"])
    assert stored is not None
    assert stored.data == _b("plaintext")
    assert store.stored_key_id(vector["storage_key"]) == vector["key_id"]
    # The same envelope under any other storage key fails authentication.
    other = scope("someone-else").storage_key
    with pytest.raises(DocumentCorrupt):
        store.decrypt(other, _b("envelope"))


def test_every_write_has_a_fresh_nonce_and_the_version_passes_through(
    store: EncryptedStore,
) -> None:
    from docmem.storage.encryption.envelope import decode

    version = store.write("k", b"same", expected=None)
    first = decode(raw_bytes(store, "k"))
    again = store.write("k", b"same", expected=version)
    second = decode(raw_bytes(store, "k"))
    assert (first.key_id, first.wrapped_key) == (second.key_id, second.wrapped_key)
    assert first.nonce != second.nonce
    assert first.ciphertext != second.ciphertext
    assert store.read("k") == docmem.Stored(b"same", again)
    inner = store.store.read("k")
    assert inner is not None
    assert inner.version == again


def test_envelope_overhead_is_small(store: EncryptedStore) -> None:
    store.write("k", b"x" * 1000, expected=None)
    overhead = len(raw_bytes(store, "k")) - 1000
    assert overhead == 10 + 1 + 1 + 2 + 2 + 60 + 12 + 16  # magic, version, lengths, id, key, nonce


# -- nothing in the clear ------------------------------------------------------------------


def _all_files(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


def test_raw_bytes_hold_neither_canary_nor_scope_and_the_keyring_recalls(tmp_path: Path) -> None:
    keys = keyring_file(tmp_path / "keys.json", {"k1": os.urandom(32)}, "k1")
    url = f"encrypted+file://{tmp_path}/store?create=true&keyring=file:{keys}"
    store = docmem.open_store(url)
    canary_scope = docmem.lock_scope(namespace=NAMESPACE, scope=("user", SCOPE_CANARY))
    memory = docmem.FileMemory(store).bind(canary_scope, slot="user")
    memory.save(CANARY + " prefers metric units.", mutation_id="m1")
    memory.save("Second note about " + CANARY, mutation_id="m2")
    stored = _all_files(tmp_path / "store")
    for secret in (CANARY, SCOPE_CANARY, "metric", "Second note", "docmem/1"):
        assert secret.encode() not in stored, secret
    reopened = docmem.FileMemory(docmem.open_store(url)).bind(canary_scope, slot="user")
    [message] = reopened.recall()
    assert CANARY + " prefers metric units." in message.content
    assert message.revision == 2


def test_nothing_secret_in_reprs(store: EncryptedStore, k1: CountingKey) -> None:
    store.write("k", b"hello", expected=None)
    opened = store._keys.opened("k1", "k", _wrapped(store, "k"))
    assert opened is not None
    shown = " ".join(
        repr(value) for value in (store, store.keyring, k1, store._keys, opened, opened.sealer)
    )
    for form in ((b"\x11" * 32).hex(), base64.b64encode(b"\x11" * 32).decode(), "\\x11"):
        assert form not in shown
    assert "k1" in repr(store.keyring)
    with pytest.raises(TypeError):
        pickle.dumps(opened.sealer)


def _wrapped(store: EncryptedStore, key: str) -> bytes:
    from docmem.storage.encryption.envelope import decode

    return decode(raw_bytes(store, key)).wrapped_key


def test_keyring_errors_never_quote_the_file(tmp_path: Path) -> None:
    for text in (
        '{"format": "docmem-keyring/1", "primary": "k1", "keys": {"k1": "' + CANARY + '"}}',
        '{"format": "docmem-keyring/1", "primary": "k1", "keys": {"k1": 7}, "x": "' + CANARY,
        '{"format": "' + CANARY + '", "primary": "k1", "keys": {}}',
        '{"format": "docmem-keyring/1", "primary": "k1", "keys": {"k1": ["' + CANARY + '"]}}',
    ):
        with pytest.raises(StoreNotConfigured) as caught:
            parse_keyring(text, source="variable TEST")
        assert CANARY not in all_text(caught.value)


# -- tampering -----------------------------------------------------------------------------


def _two_scopes(store: EncryptedStore) -> tuple[docmem.BoundMemory, docmem.BoundMemory]:
    alice, bob = bound(store, "alice"), bound(store, "bob")
    alice.save("Alice's note " + CANARY, mutation_id="a1")
    bob.save("Bob's note.", mutation_id="b1")
    return alice, bob


def _refused(call: object, error: type[DocmemError] = DocumentCorrupt) -> DocmemError:
    with pytest.raises(error) as caught:
        call()  # type: ignore[operator]
    assert CANARY not in all_text(caught.value)
    return caught.value


def test_swapped_ciphertexts_open_for_neither_scope(store: EncryptedStore) -> None:
    alice, bob = _two_scopes(store)
    a, b = alice.scope.storage_key, bob.scope.storage_key
    alices, bobs = raw_bytes(store, a), raw_bytes(store, b)
    put_raw(store, a, bobs)
    put_raw(store, b, alices)
    _refused(alice.recall)
    _refused(bob.recall)
    _refused(lambda: bob.save("Another note.", mutation_id="b2"))
    assert (
        raw_bytes(store, b) == alices
    )  # a document that fails authentication is never overwritten


def test_a_truncated_envelope_is_corrupt(store: EncryptedStore) -> None:
    alice, _ = _two_scopes(store)
    key = alice.scope.storage_key
    sealed = raw_bytes(store, key)
    for length in (len(sealed) - 1, len(sealed) - 16, 100, 40, 13, 11, 10, 5, 0):
        put_raw(store, key, sealed[:length])
        error = PlaintextDocument if length < 10 else DocumentCorrupt
        _refused(alice.recall, error)
        _refused(functools.partial(alice.save, "x", mutation_id=f"t{length}"), error)
        assert raw_bytes(store, key) == sealed[:length]


def test_every_flipped_bit_is_refused(store: EncryptedStore) -> None:
    alice, _ = _two_scopes(store)
    key = alice.scope.storage_key
    sealed = raw_bytes(store, key)
    for position in range(len(sealed)):
        for bit in (0x01, 0x80):
            flipped = bytearray(sealed)
            flipped[position] ^= bit
            with pytest.raises((DocumentCorrupt, UnknownKey)) as caught:
                store.decrypt(key, bytes(flipped))
            assert CANARY not in all_text(caught.value)


def test_a_changed_key_id_is_unknown_or_fails_to_open(
    inner: docmem.Backend, k1: CountingKey, k2: CountingKey
) -> None:
    store = encrypted(inner, Keyring([k1, k2]))
    alice = bound(store, "alice")
    alice.save("Alice's note " + CANARY, mutation_id="a1")
    key = alice.scope.storage_key
    sealed = raw_bytes(store, key)
    assert b"\x02k1" in sealed
    put_raw(store, key, sealed.replace(b"\x02k1", b"\x02k2", 1))
    _refused(alice.recall)  # k2 exists, but did not wrap this data key
    put_raw(store, key, sealed.replace(b"\x02k1", b"\x02k9", 1))
    error = _refused(alice.recall, UnknownKey)
    assert error.code == "unknown_key"
    assert "'k9'" in error.message
    _refused(lambda: alice.save("x", mutation_id="a2"), UnknownKey)


def test_a_replayed_older_ciphertext_is_not_accepted_as_newer(store: EncryptedStore) -> None:
    alice = bound(store, "alice")
    alice.save("First.", mutation_id="a1")
    key = alice.scope.storage_key
    old = store.store.read(key)
    assert old is not None
    alice.save("Second.", mutation_id="a2")
    current = store.store.read(key)
    assert current is not None
    # Sent as a write, an old ciphertext needs the old version or a create: both conflict.
    for expected in (old.version, None):
        with pytest.raises(VersionConflict):
            store.store.write(key, old.data, expected=expected)
    assert store.store.read(key) == current
    # Put back around the store, it is a new version: a writer holding the current one
    # conflicts, and a reader sees an authentic older revision of this scope, nobody else's.
    put_raw(store, key, old.data)
    with pytest.raises(VersionConflict):
        store.write(key, b"anything", expected=current.version)
    [message] = alice.recall()
    assert message.revision == 1
    assert "First." in message.content


# -- plaintext, unknown keys ----------------------------------------------------------------


def test_a_plaintext_document_is_refused_unless_migrating(inner: docmem.Backend) -> None:
    keyring = Keyring([LocalKey.generate("k1")])
    plain = bound(inner)
    plain.save("Written before encryption.", mutation_id="p1")
    key = plain.scope.storage_key
    before = inner.read(key)
    assert before is not None
    memory = bound(encrypted(inner, keyring))
    error = _refused(memory.recall, PlaintextDocument)
    assert error.code == "plaintext_document"
    assert isinstance(error, DocumentCorrupt)
    _refused(lambda: memory.save("New.", mutation_id="p2"), PlaintextDocument)
    assert inner.read(key) == before
    migrating = bound(encrypted(inner, keyring, allow_plaintext=True))
    [message] = migrating.recall()
    assert "Written before encryption." in message.content
    migrating.save("New.", mutation_id="p2")
    assert b"Written" not in raw_bytes(encrypted(inner, keyring), key)
    assert [*bound(encrypted(inner, keyring)).recall()[0].content.splitlines()[-2:]] == [
        "0: Written before encryption.",
        "1: New.",
    ]


def test_a_keyring_without_a_primary_or_keys_is_refused() -> None:
    with pytest.raises(UnknownKey):
        Keyring([LocalKey.generate("k1")], primary="k2")
    with pytest.raises(StoreNotConfigured):
        Keyring([])
    with pytest.raises(StoreNotConfigured):
        Keyring([LocalKey.generate("k1"), LocalKey.generate("k1")])
    with pytest.raises(StoreNotConfigured):
        LocalKey("bad id", b"\0" * 32)
    with pytest.raises(StoreNotConfigured):
        LocalKey("k1", b"short")


def test_an_import_through_the_backend_api_is_encrypted(store: EncryptedStore) -> None:
    """What the transfer commands do: create each key with write(expected=None)."""
    source = MemoryBackend()
    memory = bound(source)
    memory.save("Moved over.", mutation_id="i1")
    key = memory.scope.storage_key
    listing = source.keys()  # a Backend's listing, not a dict's
    for listed in listing:
        found = source.read(listed)
        assert found is not None
        store.write(listed, found.data, expected=None)
    assert b"Moved over." not in raw_bytes(store, key)
    [message] = bound(store).recall()
    assert "0: Moved over." in message.content


# -- the data-key cache ----------------------------------------------------------------------


def test_recall_of_an_unchanged_document_asks_the_key_service_nothing(
    inner: docmem.Backend, k1: CountingKey
) -> None:
    writer = bound(encrypted(inner, Keyring([k1])))
    writer.save("A note.", mutation_id="s1")
    assert (k1.generated, k1.opened) == (1, 0)
    reader = bound(encrypted(inner, Keyring([k1])))  # another process: its own cache
    for _ in range(5):
        assert reader.recall()
    assert k1.opened == 1
    assert k1.generated == 1


def test_saves_make_at_most_one_key_service_call_per_scope_per_interval(
    inner: docmem.Backend, k1: CountingKey
) -> None:
    store = encrypted(inner, Keyring([k1]), data_key_seconds=60)
    now = [1000.0]
    store._keys._clock = lambda: now[0]
    memory = bound(store)
    for count in range(10):
        memory.save(f"Note {count}.", mutation_id=f"s{count}")
    assert (k1.generated, k1.opened) == (1, 0)
    now[0] += 61
    for count in range(10, 15):
        memory.save(f"Note {count}.", mutation_id=f"s{count}")
    assert (k1.generated, k1.opened) == (2, 0)
    other = bound(store, "someone-else")
    other.save("Their note.", mutation_id="o1")
    assert k1.generated == 3  # a data key per scope
    # Another process's first save reads the document (one open), then writes with that key.
    fresh = bound(encrypted(inner, Keyring([k1]), data_key_seconds=60))
    fresh.save("From elsewhere.", mutation_id="f1")
    assert (k1.generated, k1.opened) == (3, 1)


def test_a_data_key_lifetime_of_zero_makes_a_key_per_write(
    inner: docmem.Backend, k1: CountingKey
) -> None:
    memory = bound(encrypted(inner, Keyring([k1]), data_key_seconds=0))
    for count in range(3):
        memory.save(f"Note {count}.", mutation_id=f"s{count}")
    assert k1.generated == 3
    envelopes = set()
    store = encrypted(inner, Keyring([k1]), data_key_seconds=0, key_cache_size=0)
    for _ in range(3):
        assert bound(store).recall()
        envelopes.add(_wrapped(store, scope().storage_key))
    assert k1.opened == 3  # no cache: every read opens its data key
    assert len(envelopes) == 1


def test_an_unreachable_key_service_fails_recall_and_save_and_writes_nothing(
    inner: docmem.Backend, k1: CountingKey
) -> None:
    bound(encrypted(inner, Keyring([k1]))).save("A note.", mutation_id="s1")
    key = scope().storage_key
    before = inner.read(key)
    k1.failing = True
    memory = bound(encrypted(inner, Keyring([k1])))
    _refused(memory.recall, StoreUnavailable)
    error = _refused(lambda: memory.save("More.", mutation_id="s2"), StoreUnavailable)
    assert error.outcome == "not_committed"
    assert inner.read(key) == before
    newcomer = bound(encrypted(inner, Keyring([k1])), "newcomer")
    _refused(lambda: newcomer.save("First.", mutation_id="n1"), StoreUnavailable)
    assert inner.read(newcomer.scope.storage_key) is None


# -- rotation ----------------------------------------------------------------------------------


def test_rotation_then_rekey_then_the_old_key_goes(
    inner: docmem.Backend, k1: CountingKey, k2: CountingKey
) -> None:
    old = encrypted(inner, Keyring([k1]))
    users = [f"user-{n}" for n in range(6)]
    for user in users:
        bound(old, user).save(f"Note of {user}.", mutation_id=f"{user}-1")
    rotated = encrypted(inner, Keyring([k2, k1]))  # k2 primary, k1 still opens
    assert rotated.keyring.primary.key_id == "k2"
    for user in users:
        assert f"Note of {user}." in bound(rotated, user).recall()[0].content
    bound(rotated, users[0]).save("Under the new key.", mutation_id="new-1")
    keys = [bound(rotated, user).scope.storage_key for user in users]
    assert [rotated.stored_key_id(key) for key in keys] == ["k2"] + ["k1"] * 5
    outcomes = [rotated.rekey(key) for key in sorted(rotated.keys())]
    assert sorted(outcomes) == ["current"] + ["rekeyed"] * 5
    assert [rotated.rekey(key) for key in keys] == ["current"] * 6  # a second run resumes
    assert rotated.rekey("never-written") == "absent"
    assert {rotated.stored_key_id(key) for key in keys} == {"k2"}
    only_new = encrypted(inner, Keyring([k2]))
    for user in users:
        assert f"Note of {user}." in bound(only_new, user).recall()[0].content
    with pytest.raises(UnknownKey):
        bound(encrypted(inner, Keyring([k1])), users[1]).recall()


def test_rekey_never_loses_a_save_made_meanwhile(
    inner: docmem.Backend, k1: CountingKey, k2: CountingKey
) -> None:
    bound(encrypted(inner, Keyring([k1]))).save("Before.", mutation_id="b1")
    rotated = encrypted(inner, Keyring([k2, k1]))
    other = bound(encrypted(inner, Keyring([k2, k1])))
    key = scope().storage_key
    racing = threading.Event()
    sealed = rotated.encrypt

    def encrypt_after_a_save(storage_key: str, plaintext: bytes) -> bytes:
        if not racing.is_set():
            racing.set()
            other.save("Saved during the rekey.", mutation_id="r1")
        return sealed(storage_key, plaintext)

    rotated.encrypt = encrypt_after_a_save  # type: ignore[method-assign,assignment]
    assert rotated.rekey(key) == "current"  # the save in between wrote under k2 already
    content = bound(rotated).recall()[0].content
    assert "Before." in content
    assert "Saved during the rekey." in content


def test_rekey_of_plaintext_needs_the_migration_option(inner: docmem.Backend) -> None:
    bound(inner).save("Plain.", mutation_id="p1")
    key = scope().storage_key
    keyring = Keyring([LocalKey.generate("k1")])
    with pytest.raises(PlaintextDocument):
        encrypted(inner, keyring).rekey(key)
    assert encrypted(inner, keyring, allow_plaintext=True).rekey(key) == "encrypted"
    assert encrypted(inner, keyring).stored_key_id(key) == "k1"
    assert "Plain." in bound(encrypted(inner, keyring)).recall()[0].content


# -- kept versions ----------------------------------------------------------------------------


def _three_versions(store: EncryptedStore, key: str = "k") -> list[docmem.Stored]:
    written: list[docmem.Stored] = []
    for data in (b"first", b"second", b"third"):
        expected = written[-1].version if written else None
        written.append(docmem.Stored(data, store.write(key, data, expected=expected)))
    return written


def test_kept_versions_open_like_the_current_one(store: EncryptedStore) -> None:
    written = _three_versions(store)
    listed = store.history("k")
    assert [kept.version for kept in listed] == [stored.version for stored in written]
    for kept, stored in zip(listed, written, strict=True):
        assert store.read_version("k", kept.version) == stored
        envelope = store.store.read_version("k", kept.version)
        assert envelope is not None
        assert kept.size == len(envelope.data) > len(stored.data)  # the envelope's size
        assert stored.data not in envelope.data
    assert store.read_version("k", "never-a-version") is None


def test_a_kept_envelope_opens_for_its_own_key_only(store: EncryptedStore) -> None:
    written = _three_versions(store)
    other = store.write("other", b"other", expected=None)
    moved = store.store.read_version("k", written[0].version)
    assert moved is not None
    put_raw(store, "other", moved.data)  # an old envelope of k, planted under another key
    planted = store.store.read("other")
    assert planted is not None
    _refused(lambda: store.read_version("other", planted.version))
    assert store.read_version("other", other) == docmem.Stored(b"other", other)


def test_reading_a_kept_version_never_makes_its_data_key_the_writing_one(
    inner: docmem.Backend, k1: CountingKey
) -> None:
    writer = encrypted(inner, Keyring([k1]), data_key_seconds=60)
    now = [1000.0]
    writer._keys._clock = lambda: now[0]
    first = writer.write("k", b"old", expected=None)
    old_key = _wrapped(writer, "k")
    now[0] += 61
    current = writer.write("k", b"new", expected=first)
    reader = encrypted(inner, Keyring([k1]), data_key_seconds=60)  # another process
    assert reader.read_version("k", first) == docmem.Stored(b"old", first)
    reader.write("k", b"newer", expected=current)
    assert _wrapped(reader, "k") != old_key
    assert reader.read("k") is not None


def test_kept_versions_under_a_retired_key_no_longer_open(
    inner: docmem.Backend, k1: CountingKey, k2: CountingKey
) -> None:
    first = encrypted(inner, Keyring([k1])).write("k", b"under k1", expected=None)
    rotated = encrypted(inner, Keyring([k2, k1]))
    assert rotated.rekey("k") == "rekeyed"
    assert rotated.read_version("k", first) == docmem.Stored(b"under k1", first)
    only_new = encrypted(inner, Keyring([k2]))
    assert only_new.read("k") is not None
    with pytest.raises(UnknownKey):
        only_new.read_version("k", first)  # until an erase or purge_history drops it


# -- the URL form, options, keyring sources -----------------------------------------------------


def test_the_url_form_splits_its_options_from_the_wrapped_stores(tmp_path: Path) -> None:
    keys = keyring_file(tmp_path / "keys.json", {"k1": os.urandom(32)}, "k1")
    url = (
        f"encrypted+file://{tmp_path}/store?keyring=file:{keys}&create=true"
        "&data_key_seconds=5&key_cache_size=16"
    )
    store = docmem.open_store(url)
    assert isinstance(store, EncryptedStore)
    assert store.url == f"encrypted+file://{tmp_path}/store"
    assert store.options == {
        **store.store.options,
        "keyring": f"file:{keys}",
        "data_key_seconds": 5.0,
        "key_cache_size": 16,
    }
    assert not {"keyring", "data_key_seconds", "key_cache_size"} & set(store.store.options)
    assert store.shared_between_processes is True
    bound(store).save("Via the URL.", mutation_id="u1")  # create=true reached file://
    copy = pickle.loads(pickle.dumps(store))
    assert "Via the URL." in bound(copy).recall()[0].content
    keyword = docmem.open_store(
        f"encrypted+file://{tmp_path}/store", keyring=Keyring.from_file(str(keys))
    )
    assert "Via the URL." in bound(keyword).recall()[0].content


@pytest.mark.parametrize(
    ("url", "options", "names"),
    [
        ("encrypted+memory://", {}, "keyring"),
        ("encrypted+memory://?keyring=vault:x", {}, "keyring"),
        ("encrypted+memory://?keyring=env:K&data_key_seconds=-1", {}, "data_key_seconds"),
        ("encrypted+memory://?keyring=env:K&allow_plaintext=maybe", {}, "allow_plaintext"),
        ("encrypted+memory://?keyring=env:K", {"key_cache_size": 2.5}, "key_cache_size"),
        ("encrypted+memory://?keyring=env:K&nonsense=1", {}, "nonsense"),
        ("encrypted://", {}, "encrypted+"),
    ],
)
def test_bad_options_are_refused_by_name(url: str, options: dict[str, object], names: str) -> None:
    with pytest.raises(StoreNotConfigured) as caught:
        docmem.open_store(url, **options)
    assert names in caught.value.message


def test_a_keyring_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    text = render_keyring({"old": os.urandom(32), "new": os.urandom(32)}, "new")
    monkeypatch.setenv("TEST_DOCMEM_KEYRING", text)
    store = docmem.open_store("encrypted+memory://?keyring=env:TEST_DOCMEM_KEYRING")
    assert isinstance(store, EncryptedStore)
    assert store.keyring.key_ids == ("old", "new")
    assert store.keyring.primary.key_id == "new"
    assert store.keyring == Keyring.from_spec("env:TEST_DOCMEM_KEYRING")
    monkeypatch.delenv("TEST_DOCMEM_KEYRING")
    unset = docmem.open_store("encrypted+memory://?keyring=env:TEST_DOCMEM_KEYRING")
    with pytest.raises(StoreNotConfigured, match="TEST_DOCMEM_KEYRING is not set"):
        unset.write("k", b"x", expected=None)


@pytest.mark.parametrize(
    "mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o660, 0o610], ids=lambda mode: f"{mode:04o}"
)
def test_a_keyring_file_open_to_group_or_others_is_refused_saying_how_to_fix_it(
    tmp_path: Path, mode: int
) -> None:
    """As ssh refuses a private key others can read: a docmem error, never a quiet use."""
    secret = os.urandom(32)
    path = keyring_file(tmp_path / "my keys.json", {"k1": secret}, "k1", mode=mode)
    link = tmp_path / "linked.json"
    link.symlink_to(path)  # the mode that counts is the file's, not the link's
    store = docmem.open_store(f"encrypted+file://{tmp_path}/store?create=true&keyring=file:{path}")
    refusals: list[Callable[[], object]] = [
        lambda: Keyring.from_file(str(path)),
        lambda: Keyring.from_file(str(link)),
        lambda: bound(store).save("Not under a shared key.", mutation_id="m1"),
        lambda: update_keyring_file(str(path), lambda keys, primary: (keys, "k1")),
    ]
    for refused in refusals:
        with pytest.raises(StoreNotConfigured) as caught:
            refused()
        message = caught.value.message
        assert f"(mode {mode:04o})" in message
        named = str(link) if refused is refusals[1] else str(path)
        assert message.startswith(f"the keyring file {named} is open to group or others")
        assert message.endswith(f"run chmod 600 {shlex.quote(named)}")
        assert base64.urlsafe_b64encode(secret).decode() not in all_text(caught.value)
    assert stat.S_IMODE(path.stat().st_mode) == mode  # refused, not quietly changed
    assert not (tmp_path / "store").exists()  # nothing was written under it
    path.chmod(0o600)  # the fix the message gives
    assert read_keyring_file(str(path)) == ({"k1": secret}, "k1")
    path.chmod(0o400)
    assert read_keyring_file(str(link)) == ({"k1": secret}, "k1")


def test_keyring_files_take_standard_or_url_safe_base64() -> None:
    secret = bytes(range(250, 256)) + os.urandom(26)
    for encoded in (
        base64.b64encode(secret).decode(),
        base64.urlsafe_b64encode(secret).decode().rstrip("="),
    ):
        text = json.dumps({"format": "docmem-keyring/1", "primary": "a", "keys": {"a": encoded}})
        assert parse_keyring(text, source="test") == ({"a": secret}, "a")
    text = json.dumps({"format": "docmem-keyring/1", "primary": "a", "keys": {"a": "AAAA"}})
    with pytest.raises(StoreNotConfigured, match="32 bytes"):
        parse_keyring(text, source="test")


@pytest.mark.process
def test_encryption_is_not_imported_by_docmem_and_boto3_only_for_kms() -> None:
    code = (
        "import sys, docmem\n"
        "docmem.FileMemory, docmem.open_store('memory://')\n"
        "assert not {'cryptography', 'docmem.storage.encryption'} & set(sys.modules), 'docmem'\n"
        "store = docmem.encrypted(docmem.open_store('memory://'),"
        " docmem.Keyring.kms(['alias/x'], region='us-east-1'))\n"
        "assert not any(m.startswith(('boto3', 'botocore')) for m in sys.modules), 'boto3'\n"
    )
    subprocess.run([sys.executable, "-B", "-c", code], check=True, timeout=60)


@pytest.mark.process
def test_without_cryptography_the_error_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['cryptography'] = None\n"
        "import docmem\n"
        "try:\n"
        "    docmem.open_store('encrypted+memory://?keyring=env:X')\n"
        "except docmem.StoreNotConfigured as error:\n"
        "    print(error.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-B", "-c", code], check=True, timeout=60, capture_output=True, text=True
    )
    assert 'pip install "agent-docmem[encryption]"' in done.stdout


# -- AWS KMS, without a server ------------------------------------------------------------------


def test_an_unreachable_kms_endpoint_is_store_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from docmem.storage.encryption import KmsClient

    for name, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(name, value)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = KmsClient(
        endpoint_url=f"http://127.0.0.1:{port}",
        region="us-east-1",
        connect_timeout=0.5,
        max_attempts=1,
    )
    store = encrypted(MemoryBackend(), Keyring.kms(["alias/docmem"], client=client))
    memory = bound(store)
    error = _refused(functools.partial(memory.save, "A note.", mutation_id="s1"), StoreUnavailable)
    assert "AWS KMS could not be reached for GenerateDataKey" in error.message
    assert error.outcome == "not_committed"
    assert list(store.store.keys()) == []
    assert pickle.loads(pickle.dumps(store.keyring)) == store.keyring


def test_kms_answers_are_classified_by_code() -> None:
    from docmem.storage.encryption.kms import _refusal

    for code in ("InvalidCiphertextException", "IncorrectKeyException"):
        assert type(_refusal("decrypt", code)) is DocumentCorrupt
    for code in ("AccessDeniedException", "DisabledException", "ThrottlingException", None):
        refused = _refusal("generate_data_key", code)
        assert type(refused) is StoreUnavailable
        assert refused.message.startswith("AWS KMS refused GenerateDataKey (")
    assert CANARY not in _refusal("decrypt", CANARY + " <script>").message
