"""The S3 side: the endpoint and its bucket, fresh prefixes and their clean-up, request counting.

boto3, botocore and docmem_s3 are imported only when called, so ``local.py``
(which imports the docmem side, whose signatures name :class:`Requests`)
needs docmem alone.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import threading
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import docmem

from .timing import log

if TYPE_CHECKING:
    from docmem_s3 import S3Backend

__all__ = ["Prefixes", "Requests", "S3Endpoint", "check_bucket"]


_SHORT_NAMES = {
    "GetObject": "GET",
    "PutObject": "PUT",
    "DeleteObject": "DELETE",
    "ListObjectsV2": "LIST",
    "HeadObject": "HEAD",
}


class Requests:
    """HTTP responses the clients received while counting, by operation and status.

    Hooked on botocore's ``response-received`` event, which fires once per
    attempt (aiobotocore, under s3fs, emits it too), so retries count; a
    request that got no response counts under the exception's name.
    """

    def __init__(self) -> None:
        self._counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._lock = threading.Lock()
        self._active = False

    def attach(self, *clients: Any) -> Requests:
        for client in clients:
            client.meta.events.register("response-received.s3", self._received)
        return self

    def _received(
        self,
        event_name: str,
        response_dict: dict[str, Any] | None = None,
        exception: BaseException | None = None,
        **_: Any,
    ) -> None:
        if not self._active:
            return
        operation = event_name.rsplit(".", 1)[-1]
        if response_dict is not None:
            status = str(response_dict.get("status_code", "?"))
        else:
            status = type(exception).__name__ if exception is not None else "?"
        with self._lock:
            self._counts[(_SHORT_NAMES.get(operation, operation), status)] += 1

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        self._active = True
        try:
            yield
        finally:
            self._active = False

    def count(self, operation: str, status: str | None = None) -> int:
        with self._lock:
            return sum(
                n
                for (op, code), n in self._counts.items()
                if op == operation and (status is None or code == status)
            )

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def per_call(self, calls: int) -> str:
        """``"GET 1.00 (304), PUT 0"``-style: requests per call, statuses in parentheses."""
        with self._lock:
            counts = dict(self._counts)
        parts = []
        for operation in sorted({op for op, _ in counts} | {"GET", "PUT"}):
            statuses = {code: n for (op, code), n in counts.items() if op == operation}
            total = sum(statuses.values())
            if not total:
                parts.append(f"{operation} 0")
                continue
            if len(statuses) == 1:
                detail = next(iter(statuses))
            else:
                detail = ", ".join(
                    f"{code} {n / calls:.2f}" for code, n in sorted(statuses.items())
                )
            parts.append(f"{operation} {total / calls:.2f} ({detail})")
        return ", ".join(parts)

    def per_save(self, saves: int) -> str:
        """:meth:`per_call`, then the PUTs that lost a race (412 or 409) per save."""
        lost = self.count("PUT", "412") + self.count("PUT", "409")
        return f"{self.per_call(saves)}; lost races per save {lost / saves:.2f}"


@dataclasses.dataclass(frozen=True)
class S3Endpoint:
    """Where the benchmarks run: one S3 endpoint and bucket."""

    url: str
    bucket: str
    region: str

    def client(self, **config: Any) -> Any:
        """A plain boto3 client, for out-of-band set-up and the clean-up.

        ``config`` goes to botocore's ``Config`` (``max_pool_connections=16``
        for a client shared by 16 threads).
        """
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3", endpoint_url=self.url, region_name=self.region, config=Config(**config)
        )

    def s3_store(self, prefix: str, **options: Any) -> S3Backend:
        """A docmem-s3 store under ``prefix``, opened the public way, from its URL."""
        from docmem_s3 import S3Backend

        store = docmem.open_store(
            f"s3://{self.bucket}/{prefix}?endpoint_url={self.url}&region={self.region}",
            **options,
        )
        if not isinstance(store, S3Backend):
            raise RuntimeError(f"s3:// opened a {type(store).__name__}, not docmem_s3.S3Backend")
        return store


def check_bucket(endpoint: S3Endpoint, script: str) -> None:
    """Exit early and clearly when the endpoint, the bucket or the credentials are wrong."""
    from botocore.exceptions import BotoCoreError, ClientError

    from docmem_s3.errors import answer

    client = endpoint.client()
    try:
        client.head_bucket(Bucket=endpoint.bucket)
    except ClientError as exc:
        code, status = answer(exc)
        raise SystemExit(
            f"{script}: bucket {endpoint.bucket!r} at {endpoint.url} is not usable "
            f"(HTTP {status} {code}); create it or set DOCMEM_TEST_BUCKET"
        ) from None
    except BotoCoreError as exc:
        raise SystemExit(
            f"{script}: cannot reach {endpoint.url} ({type(exc).__name__}: {exc})"
        ) from None
    finally:
        client.close()


class Prefixes:
    """A fresh prefix per benchmark (or side), and the clean-up of every object under them."""

    def __init__(self, endpoint: S3Endpoint) -> None:
        self._endpoint = endpoint
        self._made: list[str] = []
        self.run_id = uuid.uuid4().hex[:12]

    def fresh(self, name: str) -> str:
        prefix = f"docmem-bench-{self.run_id}/{name}-{uuid.uuid4().hex[:8]}"
        self._made.append(prefix)
        return prefix

    def clean_up(self) -> None:
        """Delete every object under the prefixes made (best effort); log how many, how fast."""
        from botocore.exceptions import BotoCoreError, ClientError

        started = time.monotonic()
        client = self._endpoint.client()
        deleted = 0
        try:
            for prefix in self._made:
                with contextlib.suppress(ClientError, BotoCoreError):
                    pages = client.get_paginator("list_objects_v2").paginate(
                        Bucket=self._endpoint.bucket, Prefix=f"{prefix}/"
                    )
                    for page in pages:
                        keys = [{"Key": item["Key"]} for item in page.get("Contents", ())]
                        if keys:
                            client.delete_objects(
                                Bucket=self._endpoint.bucket, Delete={"Objects": keys}
                            )
                            deleted += len(keys)
        finally:
            client.close()
        log(f"clean-up: {deleted:,} objects deleted in {time.monotonic() - started:.1f} s")
