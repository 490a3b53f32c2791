"""What fake-gcs-server and google-cloud-storage do, pinned: the facts the plug-in is built on.

- fake-gcs-server honours ``ifGenerationMatch`` on multipart uploads only; it
  ignores it on media (``uploadType=media``) and resumable uploads.
- The SDK sends up to 8 MiB as one multipart upload, more as a resumable
  one; so every write of this plug-in is a multipart upload, and a larger
  one is refused before anything is sent.
- fake-gcs-server ignores ``ifGenerationNotMatch`` on a download (200 and the
  body, where GCS answers 304), sends ``X-Goog-Generation`` with the body,
  lists noncurrent generations only for ``versions=true`` in lower case, and
  on a DELETE naming a noncurrent generation soft-deletes the live object.

If the emulator changes, a test here fails and says what to revisit.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
from gcs_servers import bucket, endpoint, raw_client, versioned_bucket
from google.cloud.storage import blob as sdk_blob

from docmem.errors import LimitExceeded
from docmem.provider.document import MAX_DOCUMENT_BYTES
from docmem_gcs import MAX_UPLOAD_BYTES, GcsBackend

pytestmark = pytest.mark.integration


def _name() -> str:
    return f"protocol/{uuid.uuid4().hex}"


def _media(name: str, data: bytes, generation: int) -> int:
    url = f"{endpoint()}/upload/storage/v1/b/{bucket()}/o"
    params: dict[str, Any] = {"uploadType": "media", "name": name, "ifGenerationMatch": generation}
    return requests.post(url, params=params, data=data, timeout=10).status_code


def _resumable(name: str, data: bytes, generation: int) -> int:
    url = f"{endpoint()}/upload/storage/v1/b/{bucket()}/o"
    params: dict[str, Any] = {"uploadType": "resumable", "ifGenerationMatch": generation}
    started = requests.post(url, params=params, json={"name": name}, timeout=10)
    if started.status_code != 200:
        return started.status_code
    return requests.put(started.headers["Location"], data=data, timeout=10).status_code


def _multipart(name: str, data: bytes, generation: int) -> int:
    blob = raw_client().bucket(bucket()).blob(name)
    try:
        blob.upload_from_string(data, if_generation_match=generation, retry=None)
    except Exception as exc:
        return int(getattr(exc, "code", 0))
    return 200


@pytest.mark.parametrize(
    ("upload", "honoured"), [(_multipart, True), (_media, False), (_resumable, False)]
)
def test_which_uploads_the_emulator_holds_to_if_generation_match(
    upload: Callable[[str, bytes, int], int], honoured: bool
) -> None:
    name = _name()
    assert upload(name, b"first", 0) == 200
    second = upload(name, b"second", 0)
    assert (second == 412) is honoured, second


def test_the_sdk_sends_up_to_max_upload_bytes_as_one_multipart_upload() -> None:
    assert sdk_blob._MAX_MULTIPART_SIZE == MAX_UPLOAD_BYTES
    assert MAX_DOCUMENT_BYTES * 2 < MAX_UPLOAD_BYTES  # a document, even encrypted, fits


def _uploads(store: GcsBackend) -> list[str]:
    """The upload kind of every request the store's client sends from now on."""
    kinds: list[str] = []

    def record(response: requests.Response, *_: Any, **__: Any) -> None:
        query = requests.utils.urlparse(response.request.url or "").query
        if "uploadType=" in query:
            kinds.append(query.split("uploadType=")[1].split("&")[0])

    store.client()._http.hooks["response"].append(record)
    return kinds


def test_the_largest_write_still_goes_as_a_multipart_upload(
    open_gcs: Callable[..., GcsBackend],
) -> None:
    store = open_gcs()
    store.verify()
    kinds = _uploads(store)
    largest = b"x" * MAX_UPLOAD_BYTES
    version = store.write("big", largest, expected=None)
    assert kinds == ["multipart"]
    with pytest.raises(LimitExceeded):
        store.write("big", largest + b"x", expected=version)
    assert kinds == ["multipart"]  # refused before anything was sent
    assert store.write("big", b"small", expected=version)
    assert kinds == ["multipart", "multipart"]


def test_the_emulator_ignores_if_generation_not_match_on_downloads() -> None:
    name = _name()
    assert _multipart(name, b"body", 0) == 200
    url = f"{endpoint()}/download/storage/v1/b/{bucket()}/o/{requests.utils.quote(name, safe='')}"
    first = requests.get(url, params={"alt": "media"}, timeout=10)
    generation = first.headers["X-Goog-Generation"]
    again = requests.get(
        url, params={"alt": "media", "ifGenerationNotMatch": generation}, timeout=10
    )
    assert (again.status_code, again.content) == (200, b"body")  # GCS: 304, no body
    assert again.headers["X-Goog-Generation"] == generation


def test_the_emulator_lists_noncurrent_generations_only_for_lower_case_true() -> None:
    name = f"{_name()}.md"
    client = raw_client()
    blob = client.bucket(versioned_bucket()).blob(name)
    blob.upload_from_string(b"one", if_generation_match=0)
    blob.upload_from_string(b"two", if_generation_match=blob.generation)
    listed = {
        flag: len(list(client.list_blobs(versioned_bucket(), prefix=name, versions=flag)))
        for flag in (True, "true")
    }
    assert listed == {True: 1, "true": 2}


def test_the_emulator_cannot_delete_one_noncurrent_generation() -> None:
    """Why purge_history deletes nothing: the DELETE hits the live object instead."""
    name = f"{_name()}.md"
    client = raw_client()
    live = client.bucket(versioned_bucket()).blob(name)
    live.upload_from_string(b"one", if_generation_match=0)
    older = live.generation
    live.upload_from_string(b"two", if_generation_match=older)
    client.bucket(versioned_bucket()).blob(name, generation=older).delete()
    listed = list(client.list_blobs(versioned_bucket(), prefix=name, versions="true"))
    assert older in {blob.generation for blob in listed}  # the generation asked for is still there
    assert all(blob.time_deleted is not None for blob in listed)  # and the live one is gone


def test_the_sdk_would_resend_an_upload_and_requests_would_not() -> None:
    """Why every upload passes ``retry=None``: the SDK's default resends one for 120 s.

    Below it, the session's adapters make one attempt (``max_retries`` 0), so
    no layer resends a write that may have landed: docmem's loop decides.
    """
    import inspect

    from google.cloud.storage import retry as sdk_retry

    default = inspect.signature(sdk_blob.Blob.upload_from_string).parameters["retry"].default
    assert default is sdk_retry.DEFAULT_RETRY
    store = GcsBackend.from_url("gs://b/p?endpoint_url=http://127.0.0.1:9")
    adapters = store.client()._http.adapters.values()
    assert adapters
    assert all(adapter.max_retries.total == 0 for adapter in adapters)
