"""A hostile or broken server: ETags that are no versions, answers cut short or garbled.

Answers are falsified with botocore event hooks on the store's own clients
(``before-parse`` rewrites what the real server said) or cut by
``cutproxy.CuttingProxy`` in front of the real server. Whatever happens, the
caller gets a docmem error with a truthful outcome, and no PUT is ever sent
without a usable condition.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3.exceptions
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError
from cutproxy import CuttingProxy
from s3_servers import bucket, raw_client, store_url

import docmem
from docmem_s3 import ProtocolViolation, S3Backend
from docmem_s3.errors import usable_etag

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:s3-protocol", scope=("user", "u_1"))

#: What a broken server or gateway may answer instead of an ETag (None: no header at all);
#: test_error_table.py::test_usable_etag covers the syntax in full.
BAD_ETAGS = [None, "", '""', 'W/""', '"abc']


def bind(store: docmem.Backend) -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(SCOPE, slot="user")


def rewrite_etag(client: Any, operation: str, etag: str | None) -> None:
    """Make every successful ``operation`` answer carry ``etag`` (None: no ETag header)."""

    def rewrite(response_dict: dict[str, Any], **_: Any) -> None:
        if response_dict["status_code"] < 300:
            headers = response_dict["headers"]
            headers.pop("ETag", None)
            if etag is not None:
                headers["ETag"] = etag

    client.meta.events.register(f"before-parse.s3.{operation}", rewrite)


def record_conditions(client: Any) -> list[tuple[str | None, str | None]]:
    """(If-Match, If-None-Match) of every PutObject the client sends from now on."""
    sent: list[tuple[str | None, str | None]] = []

    def text(value: Any) -> str | None:
        return value.decode() if isinstance(value, bytes) else value

    def record(request: Any, **_: Any) -> None:
        headers = request.headers
        sent.append((text(headers.get("If-Match")), text(headers.get("If-None-Match"))))

    client.meta.events.register("before-send.s3.PutObject", record)
    return sent


def every_put_is_conditional(sent: list[tuple[str | None, str | None]]) -> bool:
    return all(
        (match is None and none_match == "*") or (none_match is None and usable_etag(match))
        for match, none_match in sent
    )


# -- ETags that are no versions ----------------------------------------------------


@pytest.mark.parametrize("etag", BAD_ETAGS, ids=repr)
def test_a_read_answered_without_a_usable_etag_is_refused(
    open_s3: Callable[..., S3Backend], etag: str | None
) -> None:
    store = open_s3()
    bind(store).save("stored properly", mutation_id="m1")
    other = open_s3(store.prefix)  # nothing cached: every read asks the server
    reader, writer = other.clients()
    rewrite_etag(reader, "GetObject", etag)
    sent = record_conditions(writer)
    with pytest.raises(ProtocolViolation, match="ETag") as caught:
        other.read(SCOPE.storage_key)
    assert isinstance(caught.value, docmem.StoreUnavailable)
    with pytest.raises(docmem.StoreUnavailable):
        bind(other).recall()
    with pytest.raises(docmem.StoreUnavailable) as saving:
        bind(other).save("never lands", mutation_id="m2")
    assert saving.value.outcome == "not_committed"
    assert sent == []  # nothing to make a condition of, so nothing was written


@pytest.mark.parametrize("etag", BAD_ETAGS, ids=repr)
def test_a_write_answered_without_a_usable_etag_has_an_unknown_outcome(
    open_s3: Callable[..., S3Backend], etag: str | None
) -> None:
    store = open_s3()
    store.verify()  # before the falsified answers: the probe would refuse them
    _, writer = store.clients()
    rewrite_etag(writer, "PutObject", etag)
    with pytest.raises(docmem.WriteOutcomeUnknown, match="ETag") as caught:
        store.write("k", b"landed", expected=None)
    assert caught.value.outcome == "unknown"
    # It landed, and the version the next write is conditional on comes from a real read.
    stored = store.read_recent("k")
    assert stored is not None
    assert stored.data == b"landed"
    assert usable_etag(stored.version)


@pytest.mark.parametrize("etag", [None, "", '""'], ids=repr)
def test_a_save_answered_without_an_etag_is_settled_through_the_journal(
    open_s3: Callable[..., S3Backend], etag: str | None
) -> None:
    store = open_s3()
    memory = bind(store)
    memory.save("one", mutation_id="m1")
    _, writer = store.clients()
    rewrite_etag(writer, "PutObject", etag)
    sent = record_conditions(writer)
    assert memory.save("two", mutation_id="m2") == docmem.SaveResult("saved", 1, 2)
    assert memory.save("three", mutation_id="m3") == docmem.SaveResult("saved", 2, 3)
    assert memory.inspect("m2") == docmem.MutationRecord("save", "saved", 1, 2)
    document = memory.read()
    assert document is not None
    assert list(document.entries.values()) == ["one", "two", "three"]
    assert len(sent) == 2
    assert every_put_is_conditional(sent)


@pytest.mark.parametrize("etag", ["", '""'], ids=repr)
def test_blank_etags_lose_no_update(open_s3: Callable[..., S3Backend], etag: str) -> None:
    """The lost update: a blank version cached from a PUT answer became an If-Match."""
    first = open_s3()
    second = open_s3(first.prefix)
    first.verify()
    _, writer = first.clients()
    rewrite_etag(writer, "PutObject", etag)
    sent = record_conditions(writer)
    bind(first).save("first a", mutation_id="a1")
    bind(second).save("second b", mutation_id="b1")
    bind(first).save("first c", mutation_id="a2")
    document = bind(second).read()
    assert document is not None
    assert sorted(document.entries.values()) == ["first a", "first c", "second b"]
    assert every_put_is_conditional(sent)


@pytest.mark.parametrize("version", ["", '""', 'W/""', "abc", " "], ids=repr)
def test_a_version_that_is_no_etag_is_a_conflict_and_never_sent(
    open_s3: Callable[..., S3Backend], version: str
) -> None:
    store = open_s3()
    store.write("k", b"one", expected=None)
    _, writer = store.clients()
    sent = record_conditions(writer)
    with pytest.raises(docmem.VersionConflict):
        store.write("k", b"two", expected=version)
    assert sent == []
    stored = store.read("k")
    assert stored is not None
    assert stored.data == b"one"


# -- answers cut short -------------------------------------------------------------


def errors_only(request_line: bytes, status: int) -> bool:
    return status >= 300


def the_document(request_line: bytes, status: int) -> bool:
    return request_line.startswith(b"GET ") and SCOPE.storage_key.encode() in request_line


@pytest.fixture
def cutting(endpoint: str) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy(int(endpoint.rsplit(":", 1)[1].strip("/")))
    yield proxy
    proxy.close()


def through(proxy: CuttingProxy, prefix: str | None = None) -> S3Backend:
    store = docmem.open_store(
        store_url(proxy.endpoint, prefix), connect_timeout=1, read_timeout=2, max_attempts=1
    )
    assert isinstance(store, S3Backend)
    return store


def test_what_botocore_raises_for_a_cut_body(cutting: CuttingProxy) -> None:
    """Pinned upstream: only a streaming operation's error body is read outside botocore's try.

    ``botocore.httpsession`` reads a non-streaming body inside the ``try`` that
    turns urllib3's ProtocolError into ConnectionClosedError;
    ``botocore.endpoint.convert_to_response_dict`` reads GetObject's error body
    outside it.
    """
    client = raw_client(cutting.endpoint)
    key = f"pin-{uuid.uuid4().hex}"
    client.put_object(Bucket=bucket(), Key=key, Body=b"x")
    cutting.cut = errors_only
    with pytest.raises(urllib3.exceptions.ProtocolError) as caught:
        client.get_object(Bucket=bucket(), Key=f"missing-{uuid.uuid4().hex}")
    assert not isinstance(caught.value, (BotoCoreError, ClientError))
    with pytest.raises(ConnectionClosedError):
        client.put_object(Bucket=bucket(), Key=key, Body=b"y", IfNoneMatch="*")
    cutting.cut = lambda request_line, status: b"list-type=2" in request_line
    with pytest.raises(ConnectionClosedError):
        client.list_objects_v2(Bucket=bucket(), Prefix=key)
    # With the length kept, botocore takes the short body (enforce_content_length=False):
    # the XML does not parse, and the code it reports is the bare status.
    cutting.framing = "length"
    cutting.cut = errors_only
    with pytest.raises(ClientError) as short:
        client.get_object(Bucket=bucket(), Key=f"missing-{uuid.uuid4().hex}")
    assert short.value.response["Error"]["Code"] == "404"


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_cut_error_answer_to_a_read_is_unavailable_never_missing(
    cutting: CuttingProxy, framing: str
) -> None:
    store = through(cutting)
    cutting.framing = framing
    cutting.cut = errors_only
    with pytest.raises(docmem.StoreUnavailable):
        store.read("missing")
    with pytest.raises(docmem.StoreUnavailable):
        bind(store).recall()
    with pytest.raises(docmem.StoreUnavailable) as saving:
        bind(store).save("never lands", mutation_id="m1")
    assert saving.value.outcome == "not_committed"
    assert cutting.cuts == 3
    cutting.cut = never_cut
    assert store.read("missing") is None  # the same answer, whole, is a missing object


def never_cut(request_line: bytes, status: int) -> bool:
    return False


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_cut_object_body_is_unavailable(cutting: CuttingProxy, framing: str) -> None:
    store = through(cutting)
    bind(store).save("a note long enough to be cut in half", mutation_id="m1")
    other = through(cutting, store.prefix)  # nothing cached: the whole body comes back
    cutting.framing = framing
    cutting.cut = the_document
    with pytest.raises(docmem.StoreUnavailable):
        other.read(SCOPE.storage_key)
    with pytest.raises(docmem.StoreUnavailable):
        bind(other).recall()
    assert cutting.cuts == 2


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_cut_error_answer_to_a_conditional_put_is_settled(
    cutting: CuttingProxy, endpoint: str, framing: str
) -> None:
    store = through(cutting)
    memory = bind(store)
    memory.save("one", mutation_id="m1")
    stale = store.read_recent(SCOPE.storage_key)
    assert stale is not None
    bind(docmem.open_store(store_url(endpoint, store.prefix))).save("two", mutation_id="o1")
    cutting.framing = framing
    cutting.cut = errors_only
    # The save's PUT names the cached, now stale, version and its 412 is cut: a conflict
    # or an unknown outcome, which the save settles through the journal before landing.
    assert memory.save("three", mutation_id="m2") == docmem.SaveResult("saved", 2, 3)
    assert cutting.cuts == 1
    document = memory.read()
    assert document is not None
    assert list(document.entries.values()) == ["one", "two", "three"]
    with pytest.raises((docmem.WriteOutcomeUnknown, docmem.VersionConflict)):
        store.write(SCOPE.storage_key, b"x", expected=stale.version)


@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_a_cut_listing_or_delete_answer_is_unavailable(cutting: CuttingProxy, framing: str) -> None:
    store = through(cutting)
    bind(store).save("listed", mutation_id="m1")
    cutting.framing = framing
    cutting.cut = lambda request_line, status: b"list-type=2" in request_line
    with pytest.raises(docmem.StoreUnavailable):
        list(store.keys())
    # A missing bucket answers deletes and listings with an error body: cut it.
    missing = docmem.open_store(
        f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/p?endpoint_url={cutting.endpoint}"
        "&region=us-east-1&max_attempts=1"
    )
    cutting.cut = errors_only
    with pytest.raises(docmem.StoreUnavailable):
        missing.delete("k")
    with pytest.raises(docmem.StoreUnavailable):
        list(missing.keys())


# -- answers botocore cannot parse -------------------------------------------------

_NOT_XML = b"<ListBucketResult><Contents><Key>p/k.md</Key>"
_NO_KEY_URL_ENCODED = (
    b"<ListBucketResult><EncodingType>url</EncodingType>"
    b"<Contents><Size>1</Size></Contents></ListBucketResult>"
)
_NO_KEY = b"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>"


def _body(body: bytes) -> Callable[[dict[str, Any]], None]:
    def change(response_dict: dict[str, Any]) -> None:
        response_dict["body"] = body

    return change


def _header(name: str, value: str) -> Callable[[dict[str, Any]], None]:
    def change(response_dict: dict[str, Any]) -> None:
        response_dict["headers"][name] = value

    return change


def garble(client: Any, operation: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Change a successful answer before botocore's own handlers see it, as a server would."""

    def handler(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
        if operation_model.name == operation and response_dict["status_code"] < 300:
            change(response_dict)

    # botocore's own first handler is registered on "before-parse.s3.*": so is this one.
    client.meta.events.register_first("before-parse.s3.*", handler)


#: (operation, change, what a plain botocore client raises): pinned, none is botocore's.
GARBLED: dict[str, tuple[str, Callable[[dict[str, Any]], None], type[Exception]]] = {
    "list-item-without-key-url-encoded": ("ListObjectsV2", _body(_NO_KEY_URL_ENCODED), KeyError),
    "get-bad-last-modified": ("GetObject", _header("Last-Modified", "yesterday"), ValueError),
    "get-bad-content-length": ("GetObject", _header("Content-Length", "many"), ValueError),
    "put-bad-object-size": ("PutObject", _header("x-amz-object-size", "many"), ValueError),
}


def _call(client: Any, operation: str, key: str) -> None:
    if operation == "ListObjectsV2":
        client.list_objects_v2(Bucket=bucket(), Prefix=key)
    elif operation == "PutObject":
        client.put_object(Bucket=bucket(), Key=key, Body=b"x")
    else:
        client.get_object(Bucket=bucket(), Key=key)["Body"].read()


@pytest.mark.parametrize("case", sorted(GARBLED))
def test_what_botocore_raises_for_a_garbled_answer(endpoint: str, case: str) -> None:
    operation, change, raised = GARBLED[case]
    client = raw_client(endpoint)
    key = f"pin-{uuid.uuid4().hex}"
    client.put_object(Bucket=bucket(), Key=key, Body=b"x")
    garble(client, operation, change)
    with pytest.raises(raised) as caught:
        _call(client, operation, key)
    assert type(caught.value) is raised


@pytest.mark.parametrize("case", sorted(GARBLED))
def test_a_garbled_answer_is_a_typed_error(open_s3: Callable[..., S3Backend], case: str) -> None:
    operation, change, _ = GARBLED[case]
    store = open_s3(max_attempts=1)
    version = store.write("k", b"one", expected=None)
    other = open_s3(store.prefix, max_attempts=1)  # nothing cached: its GET is answered in full
    reader, _ = other.clients()
    _, writer = store.clients()
    garble(writer if operation == "PutObject" else reader, operation, change)
    if operation == "PutObject":
        with pytest.raises(docmem.WriteOutcomeUnknown) as caught:
            store.write("k", b"two", expected=version)
        assert caught.value.outcome == "unknown"
    elif operation == "ListObjectsV2":
        with pytest.raises(docmem.StoreUnavailable):
            list(other.keys())
    else:
        with pytest.raises(docmem.StoreUnavailable):
            other.read("k")


def test_what_botocore_raises_for_a_200_it_cannot_parse(cutting: CuttingProxy) -> None:
    """Pinned upstream: botocore.handlers._handle_200_error makes it a (retried) 500."""
    client = raw_client(cutting.endpoint)
    cutting.rewrite = lambda request_line, status, body: b"<not xml" if status == 200 else None
    with pytest.raises(ClientError) as caught:
        client.list_objects_v2(Bucket=bucket(), Prefix="pin")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_a_200_that_cannot_be_parsed_is_a_typed_error(cutting: CuttingProxy) -> None:
    store = through(cutting)
    version = store.write("k", b"one", expected=None)
    cutting.rewrite = lambda request_line, status, body: _NOT_XML if status == 200 else None
    with pytest.raises(docmem.StoreUnavailable):
        list(store.keys())
    with pytest.raises(docmem.WriteOutcomeUnknown):
        store.write("k", b"two", expected=version)


def test_a_listed_object_without_a_key_is_a_protocol_violation(
    open_s3: Callable[..., S3Backend],
) -> None:
    store = open_s3()
    reader, _ = store.clients()
    garble(reader, "ListObjectsV2", _body(_NO_KEY))
    with pytest.raises(ProtocolViolation):
        list(store.keys())
