"""docmem-s3 against real servers: outcomes, 304 reads, the probe, bad configuration."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from s3_servers import REGION, bucket, endpoint_of, free_port, raw_client, store_url

import docmem
from docmem_s3 import ConditionsNotHonoured, S3Backend, probe

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:s3", scope=("user", "u_1"))


def bind(store: docmem.Backend) -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(SCOPE, slot="user")


# -- a FileMemory race across processes and threads -----------------------------


def _save_worker(url: str, worker: int, threads: int, saves: int, errors: Any) -> None:
    memory = bind(docmem.open_store(url))

    def run(thread: int) -> None:
        try:
            for i in range(saves):
                memory.save(f"p{worker} t{thread} note {i}", mutation_id=f"{worker}-{thread}-{i}")
        except BaseException as exc:
            errors.put(f"{type(exc).__name__}: {exc}")

    pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()


@pytest.mark.slow
def test_processes_and_threads_saving_lose_nothing(endpoint: str) -> None:
    url = store_url(endpoint)
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    workers = [context.Process(target=_save_worker, args=(url, w, 2, 25, errors)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert all(worker.exitcode == 0 for worker in workers)
    assert errors.empty(), errors.get()
    document = bind(docmem.open_store(url)).read()
    assert document is not None
    assert len(document.entries) == 200
    assert sorted(document.entries) == list(range(200))


# -- ambiguous outcomes ------------------------------------------------------------


def test_lost_response_after_the_put_landed_is_committed_once(
    open_s3: Callable[..., S3Backend],
) -> None:
    store = open_s3()
    memory = bind(store)
    memory.save("before", mutation_id="m0")
    _, writer = store.clients()
    lost = {"count": 0}

    def lose_the_answer(http_response: Any, **_: Any) -> None:
        if lost["count"] == 0 and http_response.status_code == 200:
            lost["count"] += 1  # the server applied the PUT; the client never hears of it
            raise ReadTimeoutError(endpoint_url="injected")

    writer.meta.events.register("after-call.s3.PutObject", lose_the_answer)
    result = memory.save("exactly once", mutation_id="m1")
    assert lost["count"] == 1
    assert result == docmem.SaveResult("saved", 1, 2)
    document = memory.read()
    assert document is not None
    assert list(document.entries.values()).count("exactly once") == 1
    assert memory.inspect("m1") == docmem.MutationRecord("save", "saved", 1, 2)


def test_a_stopped_server_is_an_error_never_an_empty_memory() -> None:
    port = free_port()
    dead = docmem.open_store(
        store_url(f"http://127.0.0.1:{port}"), connect_timeout=0.5, max_attempts=1
    )
    memory = bind(dead)
    with pytest.raises(docmem.StoreUnavailable):
        memory.recall()
    with pytest.raises(docmem.StoreUnavailable) as caught:
        memory.save("never lands", mutation_id="m")
    assert caught.value.outcome == "not_committed"
    # Nothing sent is waiting to land: a server coming up on that port finds no request.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", port))
        listener.listen()
        listener.settimeout(0.5)
        with pytest.raises(TimeoutError):
            listener.accept()


# -- 304 reads ---------------------------------------------------------------------


def test_an_unchanged_document_costs_a_304_without_body(
    open_s3: Callable[..., S3Backend], endpoint: str
) -> None:
    store = open_s3()
    memory = bind(store)
    memory.save("cached", mutation_id="m")
    reader, _ = store.clients()
    answers: list[tuple[int, int]] = []

    def count(http_response: Any, **_: Any) -> None:
        # the header, not the body: reading the body here would consume the stream
        length = int(http_response.headers.get("content-length", 0))
        answers.append((http_response.status_code, length))

    reader.meta.events.register("after-call.s3.GetObject", count)
    first = memory.recall()
    second = memory.recall()
    assert first == second
    assert answers == [(304, 0), (304, 0)]
    # Another client's write is seen by the next recall, in full.
    other = bind(docmem.open_store(store_url(endpoint, store.prefix)))
    other.save("from elsewhere", mutation_id="other")
    third = memory.recall()
    assert "from elsewhere" in third[0].content
    assert answers[-1][0] == 200
    assert answers[-1][1] > 0


def test_a_save_starts_from_the_cached_version(
    open_s3: Callable[..., S3Backend], endpoint: str
) -> None:
    store = open_s3()
    memory = bind(store)
    memory.save("one", mutation_id="m1")
    reader, writer = store.clients()
    calls: list[str] = []
    reader.meta.events.register("before-call.s3.GetObject", lambda **_: calls.append("get"))
    writer.meta.events.register("before-call.s3.PutObject", lambda **_: calls.append("put"))
    memory.save("two", mutation_id="m2")
    assert calls == ["put"]  # one round trip when nobody else wrote
    # A no-op decided on the cached copy is confirmed on a fresh (304) read.
    calls.clear()
    assert memory.save("two", mutation_id="m3").status == "duplicate"
    assert calls == ["get"]
    # Another client writes: the next save loses one race, re-reads and lands...
    other = bind(docmem.open_store(store_url(endpoint, store.prefix)))
    other.save("three", mutation_id="o3")
    calls.clear()
    assert memory.save("four", mutation_id="m4").index == 3
    assert calls == ["put", "get", "put"]
    # ...and while the key is contended, a save asks the server first: no doomed PUT.
    other.save("five", mutation_id="o5")
    calls.clear()
    assert memory.save("six", mutation_id="m6").index == 5
    assert calls == ["get", "put"]
    document = memory.read()
    assert document is not None
    assert list(document.entries.values()) == ["one", "two", "three", "four", "five", "six"]


# -- the probe ---------------------------------------------------------------------


def test_probe_passes_on_a_real_server(open_s3: Callable[..., S3Backend]) -> None:
    # Once, on a loaded CI run, SeaweedFS took past the default 5 s read timeout to answer
    # one of the 8 racing creates (the whole probe takes 1-3 s here otherwise). This test
    # is about the answers a server gives, not about how fast it gives them.
    report = probe(open_s3(read_timeout=30.0), writers=8)
    assert report.ok
    assert [name for name, _ in report.checks] == [
        "create of a new object succeeds",
        "a second create of the same object is refused",
        "If-Match with a made-up ETag is refused",
        "every answer carries a well-formed ETag (a quoted, non-empty string)",
        "If-Match with the ETag a read returned is accepted",
        "If-Match with the ETag a write returned is accepted",
        "If-Match with a replaced ETag is refused",
        "8 concurrent creates have exactly one winner",
    ]


class _HeaderStrippingProxy:
    """A tiny HTTP proxy on 127.0.0.1 that drops If-Match and If-None-Match.

    It stands for an "S3-compatible" server that ignores conditional headers.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(32)
        self.port = int(self.server.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target_port))
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()
        buffer = b""
        with client:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                buffer += chunk
                while b"\r\n\r\n" in buffer:
                    head, _, rest = buffer.partition(b"\r\n\r\n")
                    lines = head.split(b"\r\n")
                    kept = [
                        line
                        for line in lines
                        if not line.lower().startswith((b"if-match:", b"if-none-match:"))
                    ]
                    length = 0
                    for line in kept:
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    while len(rest) < length:
                        more = client.recv(65536)
                        if not more:
                            break
                        rest += more
                    upstream.sendall(b"\r\n".join(kept) + b"\r\n\r\n" + rest[:length])
                    buffer = rest[length:]
        upstream.close()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def stripping_proxy() -> Iterator[_HeaderStrippingProxy]:
    endpoint = endpoint_of("localstack")
    proxy = _HeaderStrippingProxy(int(endpoint.rsplit(":", 1)[1].strip("/")))
    yield proxy
    proxy.close()


def test_a_server_ignoring_conditions_is_refused(stripping_proxy: _HeaderStrippingProxy) -> None:
    url = store_url(f"http://127.0.0.1:{stripping_proxy.port}")
    store = docmem.open_store(url)
    assert isinstance(store, S3Backend)
    with pytest.raises(ConditionsNotHonoured) as caught:
        probe(store)
    assert "second create" in str(caught.value)
    assert isinstance(caught.value, docmem.ConditionsNotHonoured)  # one class for every store
    # The first write through such a store is refused too, before anything is written.
    with pytest.raises(ConditionsNotHonoured):
        bind(docmem.open_store(url)).save("would be lost", mutation_id="m")
    assert list(store.keys()) == []


# -- bad configuration -----------------------------------------------------------


def test_missing_bucket(endpoint: str) -> None:
    name = f"no-such-bucket-{uuid.uuid4().hex[:8]}"
    store = docmem.open_store(f"s3://{name}/p?endpoint_url={endpoint}&region={REGION}")
    with pytest.raises(docmem.StoreUnavailable, match="does not exist"):
        bind(store).recall()
    with pytest.raises(docmem.StoreUnavailable):
        bind(store).save("x", mutation_id="m")


def test_bad_endpoint() -> None:
    store = docmem.open_store(
        store_url(f"http://127.0.0.1:{free_port()}"), connect_timeout=0.3, max_attempts=1
    )
    with pytest.raises(docmem.StoreUnavailable, match="could not reach"):
        bind(store).recall()


def test_bad_region(endpoint: str) -> None:
    store = docmem.open_store(f"s3://{bucket()}/p?endpoint_url={endpoint}&region=not a region!")
    with pytest.raises(docmem.StoreNotConfigured, match="region"):
        bind(store).recall()


def test_no_credentials_is_a_clear_secret_free_error(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "test")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    store = docmem.open_store(store_url(endpoint))
    with pytest.raises(docmem.StoreNotConfigured, match="credentials") as caught:
        bind(store).save("x", mutation_id="m")
    assert secret not in str(caught.value)


def test_store_pickles_without_credentials(open_s3: Callable[..., S3Backend]) -> None:
    store = open_s3()
    data = pickle.dumps(store)
    assert b"AWS_SECRET" not in data
    assert os.environ.get("AWS_SECRET_ACCESS_KEY", "test").encode() not in data or (
        os.environ.get("AWS_SECRET_ACCESS_KEY", "test") == "test"
    )
    copy = pickle.loads(data)
    assert copy.url == store.url
    assert copy.options == store.options


def test_objects_are_named_by_digest_with_markdown_type(
    open_s3: Callable[..., S3Backend], endpoint: str
) -> None:
    store = open_s3()
    bind(store).save("hello", mutation_id="m")
    client = raw_client(endpoint)
    listed = client.list_objects_v2(Bucket=store.bucket, Prefix=store.prefix + "/")
    [item] = listed["Contents"]
    assert item["Key"] == f"{store.prefix}/{SCOPE.storage_key}.md"
    head = client.head_object(Bucket=store.bucket, Key=item["Key"])
    assert head["ContentType"] == "text/markdown; charset=utf-8"
