"""Client-side encryption over docmem-s3 with AWS KMS, both on LocalStack (S3 and KMS).

The whole conformance suite on ``encrypted+s3://...?keyring=kms:...``, the
raw objects of a store holding a canary, tampering refused by KMS's
encryption context, the data-key cache counted in KMS requests, rotation
between two KMS keys with rekey, and an unreachable KMS endpoint.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import quote

import boto3
import pytest
from hypothesis import HealthCheck, settings
from s3_servers import REGION, S3Raw, endpoint_of, free_port, store_url

import docmem
from docmem.errors import DocmemError, DocumentCorrupt, StoreUnavailable, UnknownKey
from docmem.storage.encryption import EncryptedStore, Keyring, KmsClient, KmsKey, encrypted
from docmem.storage.encryption.envelope import decode, header
from docmem.testing import BackendFactory, BackendTests, EncryptedRawAccess, RawAccess
from docmem.testing.redaction import CANARY, SCOPE_CANARY, all_text
from docmem_s3 import S3Backend

pytestmark = pytest.mark.integration

NAMESPACE = "tests:encryption:s3"


@pytest.fixture(scope="module")
def localstack() -> str:
    return endpoint_of("localstack")


@pytest.fixture(scope="module")
def kms_keys(localstack: str) -> tuple[str, str]:
    """Two symmetric KMS keys: the first by its ARN, the second by an alias."""
    client = boto3.client("kms", endpoint_url=localstack, region_name=REGION)
    first = client.create_key(Description="docmem test, first")["KeyMetadata"]["Arn"]
    second = client.create_key(Description="docmem test, second")["KeyMetadata"]["KeyId"]
    alias = f"alias/docmem-test-{uuid.uuid4().hex[:8]}"
    client.create_alias(AliasName=alias, TargetKeyId=second)
    return first, alias


def encrypted_url(endpoint: str, keyring: str, *, kms: str | None = None, prefix: str = "") -> str:
    """``encrypted+`` the test store's URL, with a ``kms:`` keyring at ``kms`` (or ``endpoint``)."""
    url = store_url(endpoint, prefix or f"enc-{uuid.uuid4().hex[:12]}")
    return (
        f"encrypted+{url}&keyring={quote(keyring, safe='')}"
        f"&kms_endpoint_url={quote(kms or endpoint, safe='')}&kms_region={REGION}"
    )


class TestEncryptedLocalStack(BackendTests):
    """The conformance suite on ``encrypted+s3://`` with a KMS keyring, from its URL."""

    shared_between_processes: ClassVar[bool | None] = True
    # Half the default examples: each one opens a store (an S3 probe, a KMS data key), and
    # the wrapped store's own suite (test_conformance_s3.py) runs the full count.
    state_machine_settings: ClassVar[settings] = settings(
        max_examples=15,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )

    @pytest.fixture
    def make_backend(self, localstack: str, kms_keys: tuple[str, str]) -> BackendFactory:
        return lambda: docmem.open_store(encrypted_url(localstack, f"kms:{kms_keys[0]}"))

    @pytest.fixture
    def raw(self, backend: docmem.Backend, localstack: str) -> RawAccess:
        assert isinstance(backend, EncryptedStore)
        assert isinstance(backend.store, S3Backend)
        return EncryptedRawAccess(backend, S3Raw(backend.store, localstack))

    @pytest.fixture
    def unavailable_backend(self, kms_keys: tuple[str, str], localstack: str) -> Any:
        dead = f"http://127.0.0.1:{free_port()}"
        store = docmem.open_store(store_url(dead), connect_timeout=0.5, max_attempts=1)
        return encrypted(store, Keyring.kms([kms_keys[0]], endpoint_url=localstack, region=REGION))


# -- KMS in use --------------------------------------------------------------------------------


class KmsCalls:
    """KMS requests a keyring's client sent, by operation (botocore's before-call event)."""

    def __init__(self, keyring: Keyring) -> None:
        self.calls: list[str] = []
        primary = keyring.primary
        assert isinstance(primary, KmsKey)
        primary.kms.client.meta.events.register("before-call.kms", self._seen)

    def _seen(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)

    def take(self) -> list[str]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture
def open_encrypted(localstack: str) -> Iterator[Any]:
    opened: list[docmem.Backend] = []

    def opener(keyring: str, *, prefix: str = "", kms: str | None = None) -> EncryptedStore:
        store = docmem.open_store(encrypted_url(localstack, keyring, kms=kms, prefix=prefix))
        assert isinstance(store, EncryptedStore)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


def bound(store: docmem.Backend, user: str = "u_123") -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace=NAMESPACE, scope=("user", user))
    return docmem.FileMemory(store).bind(scope, slot="user")


def _refused(call: Any, error: type[DocmemError]) -> DocmemError:
    with pytest.raises(error) as caught:
        call()
    assert CANARY not in all_text(caught.value)
    assert SCOPE_CANARY not in all_text(caught.value)
    return caught.value


def test_raw_objects_hold_neither_canary_nor_scope(
    open_encrypted: Any, kms_keys: tuple[str, str], localstack: str
) -> None:
    prefix = f"canary-{uuid.uuid4().hex[:8]}"
    store = open_encrypted(f"kms:{kms_keys[0]}", prefix=prefix)
    memory = bound(store, SCOPE_CANARY)
    memory.save(CANARY + " prefers metric units.", mutation_id="c1")
    stored = S3Raw(store.store, localstack).everything()
    assert stored.startswith(b"docmem.enc\x01")
    for secret in (CANARY, SCOPE_CANARY, "metric", "docmem/1"):
        assert secret.encode() not in stored, secret
    again = open_encrypted(f"kms:{kms_keys[0]}", prefix=prefix)
    assert CANARY in bound(again, SCOPE_CANARY).recall()[0].content


def test_recall_of_an_unchanged_document_makes_no_kms_call(
    open_encrypted: Any, kms_keys: tuple[str, str]
) -> None:
    prefix = f"calls-{uuid.uuid4().hex[:8]}"
    writer = open_encrypted(f"kms:{kms_keys[0]}", prefix=prefix)
    calls = KmsCalls(writer.keyring)
    memory = bound(writer)
    memory.save("First.", mutation_id="s1")
    assert calls.take() == ["GenerateDataKey"]
    for count in range(5):
        memory.save(f"Note {count}.", mutation_id=f"n{count}")
        memory.recall()
    assert calls.take() == []  # one data key per scope per interval, cached once opened
    bound(writer, "another-user").save("Theirs.", mutation_id="o1")
    assert calls.take() == ["GenerateDataKey"]
    reader = open_encrypted(f"kms:{kms_keys[0]}", prefix=prefix)  # a fresh process, say
    reader_calls = KmsCalls(reader.keyring)
    for _ in range(3):
        assert "Note 4." in bound(reader).recall()[0].content
    assert reader_calls.take() == ["Decrypt"]
    bound(reader).save("From the reader.", mutation_id="r1")
    assert reader_calls.take() == []


def test_moved_or_altered_envelopes_fail_at_kms(
    open_encrypted: Any, kms_keys: tuple[str, str], localstack: str
) -> None:
    store = open_encrypted(f"kms:{kms_keys[0]},{kms_keys[1]}")
    alice, bob = bound(store, "alice"), bound(store, "bob")
    alice.save("Alice's " + CANARY, mutation_id="a1")
    bob.save("Bob's note.", mutation_id="b1")
    raw = S3Raw(store.store, localstack)
    a, b = alice.scope.storage_key, bob.scope.storage_key
    alices, bobs = raw.get(a), raw.get(b)
    assert alices is not None
    assert bobs is not None
    raw.put(b, alices)
    fresh = open_encrypted(f"kms:{kms_keys[0]},{kms_keys[1]}", prefix=store.store.prefix)
    error = _refused(bound(fresh, "bob").recall, DocumentCorrupt)
    assert "KMS" in error.message  # the encryption context names bob's key, not alice's
    _refused(functools.partial(bound(fresh, "bob").save, "x", mutation_id="b2"), DocumentCorrupt)
    assert raw.get(b) == alices  # never overwritten
    # The envelope names the other KMS key: KMS refuses it. Or a key the keyring lacks.
    envelope = decode(alices)
    for key_id, error_type in ((kms_keys[1], DocumentCorrupt), ("alias/not-held", UnknownKey)):
        head = header(key_id, envelope.wrapped_key, envelope.nonce)
        raw.put(a, head + envelope.ciphertext)
        _refused(bound(fresh, "alice").recall, error_type)


def test_rotation_between_kms_keys_then_rekey(
    open_encrypted: Any, kms_keys: tuple[str, str]
) -> None:
    first, second = kms_keys
    prefix = f"rotate-{uuid.uuid4().hex[:8]}"
    old = open_encrypted(f"kms:{first}", prefix=prefix)
    users = [f"user-{n}" for n in range(4)]
    for user in users:
        bound(old, user).save(f"Note of {user}.", mutation_id=user)
    rotated = open_encrypted(f"kms:{second},{first}", prefix=prefix)
    keys = sorted(rotated.keys())
    assert {rotated.stored_key_id(key) for key in keys} == {first}
    assert [rotated.rekey(key) for key in keys] == ["rekeyed"] * 4
    assert [rotated.rekey(key) for key in keys] == ["current"] * 4
    assert {rotated.stored_key_id(key) for key in keys} == {second}
    only_second = open_encrypted(f"kms:{second}", prefix=prefix)
    for user in users:
        assert f"Note of {user}." in bound(only_second, user).recall()[0].content


def test_an_unreachable_kms_fails_recall_and_save_and_writes_nothing(
    open_encrypted: Any, kms_keys: tuple[str, str], localstack: str
) -> None:
    prefix = f"dead-kms-{uuid.uuid4().hex[:8]}"
    bound(open_encrypted(f"kms:{kms_keys[0]}", prefix=prefix)).save("Kept.", mutation_id="k1")
    inner = docmem.open_store(store_url(localstack, prefix))
    assert isinstance(inner, S3Backend)
    raw = S3Raw(inner, localstack)
    key = bound(inner).scope.storage_key
    before = raw.get(key)
    dead = KmsClient(
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        region=REGION,
        connect_timeout=0.5,
        max_attempts=1,
    )
    store = encrypted(inner, Keyring.kms([kms_keys[0]], client=dead))
    memory = bound(store)
    error = _refused(memory.recall, StoreUnavailable)
    assert "AWS KMS could not be reached for Decrypt" in error.message
    error = _refused(functools.partial(memory.save, "More.", mutation_id="m1"), StoreUnavailable)
    assert error.outcome == "not_committed"
    assert raw.get(key) == before
    newcomer = bound(store, "newcomer")
    _refused(functools.partial(newcomer.save, "First.", mutation_id="n1"), StoreUnavailable)
    assert raw.get(newcomer.scope.storage_key) is None
    assert sorted(inner.keys()) == [key]
