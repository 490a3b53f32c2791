"""KmsKey: a key-encryption key in AWS KMS, through boto3 (``GenerateDataKey`` and ``Decrypt``).

The key never leaves KMS: a new data key comes from ``GenerateDataKey``
(AES_256), its wrapped form is KMS's ``CiphertextBlob``, and opening it is a
``Decrypt``, both under the encryption context
``{"docmem:storage_key": <storage key>}``, so a wrapped key copied to another
scope fails at KMS (and the context is in CloudTrail: a digest, no raw
scope). boto3 is imported here only, and only when the first client is
built; each process builds its own (:class:`~docmem.backend.PerProcess`).

Failures: a wrapped key KMS refuses as invalid (``InvalidCiphertextException``,
``IncorrectKeyException``) is DocumentCorrupt; an unreachable endpoint, a
timeout, missing credentials, a disabled or missing key, a denial or a
throttle is StoreUnavailable, so a recall never reads as empty memory and a
save writes nothing.
"""

from __future__ import annotations

import re
from typing import Any

from ...backend import PerProcess
from ...errors import DocmemError, DocumentCorrupt, StoreNotConfigured, StoreUnavailable
from .aead import KEY_BYTES
from .envelope import MAX_WRAPPED_BYTES
from .kek import KeyEncryptionKey

__all__ = ["CONTEXT_KEY", "KmsClient", "KmsKey"]

#: The encryption context's one entry: the scope's storage key (a digest).
CONTEXT_KEY = "docmem:storage_key"
_CORRUPT_CODES = frozenset({"InvalidCiphertextException", "IncorrectKeyException"})
_CODE = re.compile(r"[A-Za-z0-9.]{1,64}")


class KmsClient:
    """Where KMS is and how to call it; one boto3 client per process, built on first use.

    ``endpoint_url`` and ``region`` default to boto3's own configuration
    (``AWS_ENDPOINT_URL_KMS``, ``AWS_DEFAULT_REGION``, the config file);
    credentials always come from boto3's chain. KMS calls are idempotent, so
    boto3's standard retries stay on (``max_attempts`` in all).
    """

    def __init__(
        self,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        connect_timeout: float = 3.0,
        read_timeout: float = 10.0,
        max_attempts: int = 3,
    ) -> None:
        self.endpoint_url = endpoint_url
        self.region = region
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_attempts = max_attempts
        self._client: PerProcess[Any] = PerProcess(self._build)

    def _settings(self) -> tuple[Any, ...]:
        return (
            self.endpoint_url,
            self.region,
            self.connect_timeout,
            self.read_timeout,
            self.max_attempts,
        )

    def __repr__(self) -> str:
        return f"KmsClient(endpoint_url={self.endpoint_url!r}, region={self.region!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KmsClient):
            return NotImplemented
        return self._settings() == other._settings()

    def __hash__(self) -> int:
        return hash(self._settings())

    def __reduce__(self) -> tuple[Any, ...]:
        endpoint_url, region, connect_timeout, read_timeout, max_attempts = self._settings()
        return (
            _rebuild_client,
            (endpoint_url, region, connect_timeout, read_timeout, max_attempts),
        )

    @property
    def client(self) -> Any:
        """This process's boto3 KMS client (to register event hooks, say)."""
        return self._client.get()

    def _build(self) -> Any:
        try:
            import boto3
            from botocore.config import Config
            from botocore.exceptions import NoRegionError
        except ImportError:
            missing = True
        else:
            missing = False
        if missing:
            raise StoreNotConfigured(
                'AWS KMS keys need the kms extra: pip install "agent-docmem[kms]"'
            )
        config = Config(
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
        )
        session = boto3.session.Session()
        try:
            return session.client(
                "kms", endpoint_url=self.endpoint_url, region_name=self.region, config=config
            )
        except NoRegionError:
            pass
        raise StoreNotConfigured(
            "AWS KMS needs a region: pass kms_region=... or set AWS_DEFAULT_REGION"
        )

    def call(self, operation: str, **parameters: Any) -> dict[str, Any]:
        """One KMS call; every failure a docmem error, raised without the boto3 one as context."""
        from botocore.exceptions import BotoCoreError, ClientError

        client = self.client
        failure: DocmemError
        try:
            answer: dict[str, Any] = getattr(client, operation)(**parameters)
            return answer
        except ClientError as exc:
            failure = _refusal(operation, exc.response.get("Error", {}).get("Code"))
        except BotoCoreError as exc:  # not reached, timed out, no credentials
            failure = StoreUnavailable(
                f"AWS KMS could not be reached for {_name(operation)} ({type(exc).__name__}): "
                "check the KMS endpoint, the network and the credentials"
            )
        raise failure


def _name(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


def _refusal(operation: str, code: object) -> DocmemError:
    shown = code if isinstance(code, str) and _CODE.fullmatch(code) else "an unknown error"
    if shown in _CORRUPT_CODES:
        return DocumentCorrupt(
            f"the wrapped data key failed authentication at AWS KMS ({shown}): it was altered, "
            "moved from another scope, or wrapped under another key"
        )
    return StoreUnavailable(
        f"AWS KMS refused {_name(operation)} ({shown}): check that the key exists, is enabled "
        "and that these credentials may use it"
    )


def _rebuild_client(
    endpoint_url: str | None,
    region: str | None,
    connect_timeout: float,
    read_timeout: float,
    max_attempts: int,
) -> KmsClient:
    return KmsClient(
        endpoint_url=endpoint_url,
        region=region,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        max_attempts=max_attempts,
    )


class KmsKey(KeyEncryptionKey):
    """An AWS KMS symmetric key by key id, ARN or alias; ``client`` says where KMS is."""

    remote = True

    def __init__(self, key_id: str, client: KmsClient | None = None) -> None:
        super().__init__(key_id)
        self.kms = client if client is not None else KmsClient()

    def new_data_key(self, storage_key: str) -> tuple[bytes, bytes]:
        answer = self.kms.call(
            "generate_data_key",
            KeyId=self.key_id,
            KeySpec="AES_256",
            EncryptionContext={CONTEXT_KEY: storage_key},
        )
        data_key, wrapped = answer.get("Plaintext"), answer.get("CiphertextBlob")
        if not isinstance(wrapped, bytes) or not 1 <= len(wrapped) <= MAX_WRAPPED_BYTES:
            raise StoreUnavailable("AWS KMS answered GenerateDataKey without a usable wrapped key")
        return _checked_key(data_key, "GenerateDataKey"), wrapped

    def open_data_key(self, wrapped: bytes, storage_key: str) -> bytes:
        answer = self.kms.call(
            "decrypt",
            CiphertextBlob=wrapped,
            KeyId=self.key_id,
            EncryptionContext={CONTEXT_KEY: storage_key},
        )
        return _checked_key(answer.get("Plaintext"), "Decrypt")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KmsKey):
            return NotImplemented
        return self.key_id == other.key_id and self.kms == other.kms

    def __hash__(self) -> int:
        return hash(self.key_id)

    def __reduce__(self) -> tuple[Any, ...]:
        return (KmsKey, (self.key_id, self.kms))


def _checked_key(data_key: object, operation: str) -> bytes:
    if not isinstance(data_key, bytes) or len(data_key) != KEY_BYTES:
        raise StoreUnavailable(f"AWS KMS answered {operation} without a {KEY_BYTES}-byte data key")
    return data_key
