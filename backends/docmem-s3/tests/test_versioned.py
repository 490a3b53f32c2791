"""A versioned bucket: an erase deletes the older versions, an operator lists and reads them.

On a bucket with versioning enabled, every PUT keeps the object it replaced;
an erase that left them would leave the erased text readable by version id,
and ``history``/``read_version`` show them to an operator (``docmem history``).
Each test makes its own buckets on LocalStack and SeaweedFS and looks at
them with a plain boto3 client. Refusals come from ``faultproxy`` (neither
server enforces IAM): a ``403 AccessDenied`` for the history calls only,
the same in front of either server, so those tests run on LocalStack alone.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from s3_servers import REGION, bucket, raw_client

import docmem
from docmem.errors import HistoryNotKept
from docmem.testing.faultproxy import FaultPlan, FaultProxy
from docmem_s3 import HistoryKept, S3Backend, probe
from docmem_s3.__main__ import main
from docmem_s3.errors import ProtocolViolation

pytestmark = pytest.mark.integration

SCOPE = docmem.lock_scope(namespace="tests:s3-versioned", scope=("user", "u_1"))
FIRST = "Prefers tea over coffee, canary 7f3a."
SECOND = "Lives in Lisbon, canary 91bc."
ERASED = (FIRST, SECOND)

#: A bucket maker: (endpoint, versioning status or None) -> a new bucket's name.
MakeBucket = Callable[[str, str | None], str]


def url(endpoint: str, name: str, prefix: str) -> str:
    return f"s3://{name}/{prefix}?endpoint_url={endpoint}&region={REGION}"


def bind(store: docmem.Backend) -> docmem.BoundMemory:
    return docmem.FileMemory(store).bind(SCOPE, slot="user")


@pytest.fixture
def new_bucket() -> Iterator[MakeBucket]:
    """Makes buckets (versioning Enabled, Suspended after Enabled, or never set); removes them."""
    made: list[tuple[Any, str]] = []

    def make(endpoint: str, status: str | None) -> str:
        client = raw_client(endpoint)
        name = f"docmem-v-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=name)
        made.append((client, name))
        if status is not None:
            set_versioning(client, name, "Enabled")
        if status == "Suspended":
            set_versioning(client, name, "Suspended")
        return name

    yield make
    for client, name in made:
        _remove(client, name)


def set_versioning(client: Any, name: str, status: str) -> None:
    client.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})


def _remove(client: Any, name: str) -> None:
    """Best effort: the servers are thrown away after the run anyway."""
    with contextlib.suppress(Exception):
        listed = client.list_object_versions(Bucket=name)
        for entry in [*listed.get("Versions", ()), *listed.get("DeleteMarkers", ())]:
            client.delete_object(Bucket=name, Key=entry["Key"], VersionId=entry["VersionId"])
        client.delete_bucket(Bucket=name)


def versions(client: Any, name: str, object_key: str) -> list[dict[str, Any]]:
    """Every version and delete marker of exactly ``object_key``, each marked as which it is."""
    listed = client.list_object_versions(Bucket=name, Prefix=object_key)
    found = [{**v, "marker": False} for v in listed.get("Versions", ())]
    found += [{**m, "marker": True} for m in listed.get("DeleteMarkers", ())]
    return [entry for entry in found if entry["Key"] == object_key]


def bodies(client: Any, name: str, object_key: str) -> list[str]:
    """The text of every version of ``object_key`` the bucket still holds."""
    return [
        client.get_object(Bucket=name, Key=object_key, VersionId=entry["VersionId"])["Body"]
        .read()
        .decode()
        for entry in versions(client, name, object_key)
        if not entry["marker"]
    ]


def saved_twice(endpoint: str, name: str) -> tuple[S3Backend, docmem.BoundMemory, str]:
    """A store on bucket ``name`` under a new prefix, ERASED saved in it: (store, memory, key)."""
    store = docmem.open_store(url(endpoint, name, f"t-{uuid.uuid4().hex[:12]}"))
    assert isinstance(store, S3Backend)
    memory = bind(store)
    memory.save(FIRST, mutation_id="s1")
    memory.save(SECOND, mutation_id="s2")
    return store, memory, store.object_key(SCOPE.storage_key)


# -- the purge -------------------------------------------------------------------------


@pytest.mark.parametrize("suspend", [False, True], ids=["enabled", "suspended-later"])
def test_erase_leaves_no_older_version_holding_the_erased_text(
    endpoint: str, new_bucket: MakeBucket, suspend: bool, request: pytest.FixtureRequest
) -> None:
    if suspend and request.node.callspec.params["endpoint"] == "seaweedfs":
        pytest.skip(
            "SeaweedFS 4.48 refuses every If-Match update of an object whose current version "
            "was written before versioning was suspended (412), so no update gets through"
        )
    name = new_bucket(endpoint, "Enabled")
    client = raw_client(endpoint)
    store, memory, object_key = saved_twice(endpoint, name)
    if suspend:  # what versioning kept while enabled is still there when suspended
        set_versioning(client, name, "Suspended")
        memory.save("A third note.", mutation_id="s3")
    assert len(versions(client, name, object_key)) >= 2  # the bucket kept them: worth purging
    assert memory.erase(mutation_id="e1").status == "erased"
    left = versions(client, name, object_key)
    assert [(entry["IsLatest"], entry["marker"]) for entry in left] == [(True, False)]
    assert not any(text in body for body in bodies(client, name, object_key) for text in ERASED)
    document = memory.read()
    assert document is not None
    assert (dict(document.entries), document.revision) == ({}, 4 if suspend else 3)
    # Saved and erased again: the bucket is known versioned now, and is purged again.
    memory.save(FIRST, mutation_id="s4")
    assert memory.erase(mutation_id="e2").status == "erased"
    assert [entry["IsLatest"] for entry in versions(client, name, object_key)] == [True]
    assert not any(FIRST in body for body in bodies(client, name, object_key))
    store.close()


def test_erase_on_an_unversioned_bucket_lists_nothing(
    endpoint: str, new_bucket: MakeBucket
) -> None:
    """GetBucketVersioning says it never kept versions: no listing, which might be refused."""
    name = new_bucket(endpoint, None)
    store, memory, object_key = saved_twice(endpoint, name)
    calls: list[str] = []
    reader, _ = store.clients()
    reader.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    assert memory.erase(mutation_id="e").status == "erased"
    assert "GetBucketVersioning" in calls
    assert "ListObjectVersions" not in calls
    assert [entry["IsLatest"] for entry in versions(raw_client(endpoint), name, object_key)] == [
        True
    ]
    store.close()


# -- a purge refused: the erase is committed, and says what is left and what it needs --------


def refusing(*calls: tuple[str, str]) -> Callable[[str, str], str]:
    """A faultproxy classifier: requests of these (method, query parameter) get the fault."""

    def classify(method: str, path: str) -> str:
        _, _, query = path.partition("?")
        names = {part.partition("=")[0] for part in query.split("&") if part}
        return "campaign" if any(method == m and q in names for m, q in calls) else "other"

    return classify


DENIED = FaultPlan(0, {"403": 1}, methods=frozenset({"GET", "DELETE"}))
#: The refusals are the proxy's, the same in front of either server: one server is enough.
ONE_SERVER = pytest.mark.parametrize("endpoint", ["localstack"], indirect=True)


@contextlib.contextmanager
def refused_store(
    endpoint: str, name: str, prefix: str, *calls: tuple[str, str]
) -> Iterator[S3Backend]:
    """A store on the same prefix, through a proxy answering AccessDenied to ``calls``."""
    with FaultProxy(endpoint, DENIED, refusing(*calls), with_query=True) as proxy:
        store = docmem.open_store(url(proxy.url, name, prefix))
        assert isinstance(store, S3Backend)
        try:
            yield store
        finally:
            store.close()


@contextlib.contextmanager
def refused(endpoint: str, name: str, prefix: str, *calls: tuple[str, str]) -> Iterator[Any]:
    """A bound memory on the same prefix, through a proxy answering AccessDenied to ``calls``."""
    with refused_store(endpoint, name, prefix, *calls) as store:
        yield bind(store)


@ONE_SERVER
@pytest.mark.parametrize(
    "calls",
    [
        (("GET", "versions"),),
        (("GET", "versions"), ("GET", "versioning")),
    ],
    ids=["listing", "listing-and-versioning"],
)
def test_a_refused_listing_reports_the_erase_committed_naming_the_permissions(
    endpoint: str, new_bucket: MakeBucket, calls: tuple[tuple[str, str], ...]
) -> None:
    name = new_bucket(endpoint, "Enabled")
    client = raw_client(endpoint)
    store, memory, object_key = saved_twice(endpoint, name)
    with (
        refused(endpoint, name, store.prefix, *calls) as denied,
        pytest.raises(HistoryKept) as caught,
    ):
        denied.erase(mutation_id="e")
    error = caught.value
    assert isinstance(error, docmem.StoreUnavailable)
    assert error.outcome == "committed"
    assert error.code == "history_kept"
    assert "s3:ListBucketVersions" in error.message
    assert "s3:DeleteObjectVersion" in error.message
    assert ("s3:GetBucketVersioning" in error.message) == (("GET", "versioning") in calls)
    assert error.versions == ()
    assert not any(text in str(error) for text in ERASED)
    # Truthful: the erase is stored, and the older versions are still there.
    assert memory.inspect("e") == docmem.MutationRecord("erase", "erased", None, 3)
    assert sum(FIRST in body for body in bodies(client, name, object_key)) == 2
    # Erasing again with the permissions purges them.
    assert memory.erase(mutation_id="e").status == "erased"
    assert not any(FIRST in body for body in bodies(client, name, object_key))
    store.close()


@ONE_SERVER
def test_refused_version_deletes_are_named_and_left(endpoint: str, new_bucket: MakeBucket) -> None:
    name = new_bucket(endpoint, "Enabled")
    client = raw_client(endpoint)
    store, _, object_key = saved_twice(endpoint, name)
    with (
        refused(endpoint, name, store.prefix, ("DELETE", "versionId")) as denied,
        pytest.raises(HistoryKept) as caught,
    ):
        denied.erase(mutation_id="e")
    error = caught.value
    assert error.outcome == "committed"
    older = {v["VersionId"] for v in versions(client, name, object_key) if not v["IsLatest"]}
    assert len(older) == 2
    assert set(error.versions) == older
    assert (error.bucket, error.object_key) == (name, object_key)
    assert "2 older versions" in error.message
    assert all(version_id in error.message for version_id in older)
    assert "s3:DeleteObjectVersion" in error.message
    assert not any(text in str(error) for text in ERASED)
    store.close()


def test_a_listing_without_current_flags_deletes_nothing(
    endpoint: str, new_bucket: MakeBucket
) -> None:
    """Which version is current is the server's word: without it, nothing is deleted."""
    name = new_bucket(endpoint, "Enabled")
    client = raw_client(endpoint)
    store, memory, object_key = saved_twice(endpoint, name)
    reader, _ = store.clients()

    def unflagged(operation_model: Any, response_dict: dict[str, Any], **_: Any) -> None:
        if operation_model.name == "ListObjectVersions" and response_dict["status_code"] < 300:
            response_dict["body"] = re.sub(rb"<IsLatest>\w+</IsLatest>", b"", response_dict["body"])

    reader.meta.events.register_first("before-parse.s3.*", unflagged)
    with pytest.raises(HistoryKept) as caught:
        memory.erase(mutation_id="e")
    assert caught.value.outcome == "committed"
    assert len(versions(client, name, object_key)) == 3  # nothing deleted, the current one least
    store.close()


# -- the probe -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [(None, "unversioned"), ("Enabled", "enabled"), ("Suspended", "suspended")],
)
def test_the_probe_reports_the_bucket_versioning(
    endpoint: str,
    new_bucket: MakeBucket,
    status: str | None,
    expected: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store_url = url(endpoint, new_bucket(endpoint, status), "probe")
    store = docmem.open_store(store_url)
    assert isinstance(store, S3Backend)
    report = probe(store, writers=2)
    assert report.ok
    assert report.versioning == expected
    assert report.keeps_versions == (status is not None)
    store.close()
    if status == "Enabled":  # and python -m docmem_s3 probe prints it
        assert main(["probe", store_url, "--writers", "2"]) == 0
        assert "versioning: enabled" in capsys.readouterr().out


@ONE_SERVER
def test_the_probe_says_unknown_when_versioning_is_refused(endpoint: str) -> None:
    with FaultProxy(endpoint, DENIED, refusing(("GET", "versioning")), with_query=True) as proxy:
        store = docmem.open_store(url(proxy.url, bucket(), "probe"))
        assert isinstance(store, S3Backend)
        report = probe(store, writers=2)
        store.close()
    assert report.ok
    assert report.versioning == "unknown"
    assert report.keeps_versions


# -- the history an operator lists ------------------------------------------------------------

BODIES = [b"first version", b"the second, a little longer", b"third"]


def written(
    endpoint: str, name: str, bodies: list[bytes] = BODIES
) -> tuple[S3Backend, list[docmem.Stored]]:
    """A store on bucket ``name`` under a new prefix, ``bodies`` written to key "k" in turn."""
    store = docmem.open_store(url(endpoint, name, f"h-{uuid.uuid4().hex[:12]}"))
    assert isinstance(store, S3Backend)
    made: list[docmem.Stored] = []
    for data in bodies:
        version = store.write("k", data, expected=made[-1].version if made else None)
        made.append(docmem.Stored(data, version))
    return store, made


def calls_of(store: S3Backend) -> list[str]:
    """The names of the S3 operations the store's reader sends from now on."""
    calls: list[str] = []
    reader, _ = store.clients()
    reader.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    return calls


@pytest.mark.parametrize("small_pages", [False, True], ids=["one-page", "two-per-page"])
def test_history_lists_each_version_by_the_etag_its_write_returned(
    endpoint: str, new_bucket: MakeBucket, small_pages: bool
) -> None:
    store, made = written(endpoint, new_bucket(endpoint, "Enabled"))
    if small_pages:  # the listing is followed across pages
        reader, _ = store.clients()
        reader.meta.events.register(
            "provide-client-params.s3.ListObjectVersions",
            lambda params, **_: params.update(MaxKeys=2),
        )
    calls = calls_of(store)
    kept = store.history("k")
    assert calls.count("ListObjectVersions") == (2 if small_pages else 1)
    assert [entry.version for entry in kept] == [stored.version for stored in made]
    assert [entry.size for entry in kept] == [len(data) for data in BODIES]
    stamps = [entry.modified for entry in kept]
    assert all(stamp is not None for stamp in stamps)
    assert stamps == sorted(stamps)  # type: ignore[type-var]
    calls.clear()
    assert [store.read_version("k", stored.version) for stored in made] == made
    assert "ListObjectVersions" not in calls  # the ids of the listing just made
    assert store.read_version("k", "not-an-etag") is None
    store.close()


def test_a_suspended_bucket_lists_what_it_kept(endpoint: str, new_bucket: MakeBucket) -> None:
    """Versioning suspended: a PUT replaces the "null" version, and the ones kept stay."""
    name = new_bucket(endpoint, "Enabled")
    client = raw_client(endpoint)
    store, made = written(endpoint, name, BODIES[:2])
    set_versioning(client, name, "Suspended")
    # Unconditional, by the raw client: SeaweedFS refuses If-Match here (see above).
    client.put_object(Bucket=name, Key=store.object_key("k"), Body=BODIES[2])
    kept = store.history("k")
    current = store.read("k")
    assert current == docmem.Stored(BODIES[2], kept[-1].version)
    assert [entry.version for entry in kept[:-1]] == [stored.version for stored in made]
    assert [store.read_version("k", entry.version) for entry in kept] == [*made, current]
    store.close()


def test_a_version_replaced_since_it_was_listed_is_still_read(
    endpoint: str, new_bucket: MakeBucket
) -> None:
    name = new_bucket(endpoint, "Enabled")
    store, made = written(endpoint, name)
    listed = store.history("k")[-1]
    newer = store.write("k", b"a fourth", expected=listed.version)
    assert store.read_version("k", listed.version) == made[-1]
    # Another process, which listed nothing: it looks the version up in a listing of its own.
    other = docmem.open_store(url(endpoint, name, store.prefix))
    assert other.read_version("k", made[0].version) == made[0]
    assert other.read_version("k", newer) == docmem.Stored(b"a fourth", newer)
    assert other.read_version("k", '"0123456789abcdef0123456789abcdef"') is None
    other.close()
    store.close()


def test_purge_history_leaves_only_the_current_version(
    endpoint: str, new_bucket: MakeBucket
) -> None:
    store, made = written(endpoint, new_bucket(endpoint, "Enabled"))
    assert len(store.history("k")) == len(made)
    store.purge_history("k")
    assert [(entry.version, entry.size) for entry in store.history("k")] == [
        (made[-1].version, len(BODIES[-1]))
    ]
    assert [store.read_version("k", stored.version) for stored in made] == [None, None, made[-1]]
    store.close()


def test_delete_leaves_no_version_of_the_key(endpoint: str, new_bucket: MakeBucket) -> None:
    """A delete purges the key with its history: on a versioned bucket, every version."""
    name = new_bucket(endpoint, "Enabled")
    store, made = written(endpoint, name)
    assert len(store.history("k")) == len(made)
    store.delete("k")
    left = versions(raw_client(endpoint), name, store.object_key("k"))
    assert [(entry["marker"], entry["IsLatest"]) for entry in left] == [(True, True)]
    assert store.history("k") == []
    assert [store.read_version("k", stored.version) for stored in made] == [None] * len(made)
    again = store.write("k", b"created again", expected=None)
    assert [entry.version for entry in store.history("k")] == [again]
    store.delete("never-written")
    assert store.history("never-written") == []
    store.close()


@ONE_SERVER
def test_a_delete_whose_purge_is_refused_says_what_is_left(
    endpoint: str, new_bucket: MakeBucket
) -> None:
    name = new_bucket(endpoint, "Enabled")
    store, _ = written(endpoint, name)
    with (
        refused_store(endpoint, name, store.prefix, ("DELETE", "versionId")) as denied,
        pytest.raises(HistoryKept) as caught,
    ):
        denied.delete("k")
    assert caught.value.message.startswith("the key is deleted, but the bucket still holds 3")
    assert "s3:DeleteObjectVersion" in caught.value.message
    assert store.read("k") is None  # the delete marker is down: nothing older came back
    store.delete("k")  # deleting again purges them
    left = versions(raw_client(endpoint), name, store.object_key("k"))
    assert [entry["marker"] for entry in left] == [True]
    store.close()


def test_an_unversioned_bucket_keeps_no_history(endpoint: str, new_bucket: MakeBucket) -> None:
    """HistoryNotKept, asked once: SeaweedFS would answer any version id with the current one."""
    name = new_bucket(endpoint, None)
    store, made = written(endpoint, name)
    calls = calls_of(store)
    for ask in (
        lambda: store.history("k"),
        lambda: store.read_version("k", made[0].version),
        lambda: store.read_version("k", made[-1].version),
    ):
        with pytest.raises(HistoryNotKept) as caught:
            ask()
        assert caught.value.code == "history_not_kept"
        assert caught.value.message.startswith(f"s3://{name} keeps no older versions")
        assert store.prefix not in caught.value.message
    assert set(calls) == {"GetBucketVersioning"}
    store.close()


def test_an_answer_of_another_version_is_refused(endpoint: str, new_bucket: MakeBucket) -> None:
    """A server that ignores the version id answers with the current document: never used."""
    store, made = written(endpoint, new_bucket(endpoint, "Enabled"))
    store.history("k")
    reader, _ = store.clients()

    def another(parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if parsed.get("VersionId"):
            parsed["VersionId"] = "another"

    reader.meta.events.register("after-call.s3.GetObject", another)
    with pytest.raises(ProtocolViolation):
        store.read_version("k", made[0].version)
    store.close()


@ONE_SERVER
def test_history_with_versioning_refused_asks_the_listing(
    endpoint: str, new_bucket: MakeBucket
) -> None:
    """GetBucketVersioning refused: the bucket may keep versions, and the listing tells."""
    name = new_bucket(endpoint, "Enabled")
    store, made = written(endpoint, name)
    with refused_store(endpoint, name, store.prefix, ("GET", "versioning")) as denied:
        assert denied.history("k") == store.history("k")
        assert denied.read_version("k", made[0].version) == made[0]
    store.close()


@ONE_SERVER
@pytest.mark.parametrize(
    ("call", "permission"),
    [(("GET", "versions"), "s3:ListBucketVersions"), (("GET", "versionId"), "s3:GetObjectVersion")],
    ids=["listing", "read"],
)
def test_a_refused_history_call_names_the_permission(
    endpoint: str, new_bucket: MakeBucket, call: tuple[str, str], permission: str
) -> None:
    name = new_bucket(endpoint, "Enabled")
    store, made = written(endpoint, name)
    with refused_store(endpoint, name, store.prefix, call) as denied:
        ask: Callable[[], object] = (
            (lambda: denied.history("k"))
            if call[1] == "versions"
            else (lambda: denied.read_version("k", made[0].version))
        )
        with pytest.raises(docmem.StoreUnavailable) as caught:
            ask()
    assert permission in caught.value.message
    assert not any(data.decode() in str(caught.value) for data in BODIES)
    store.close()
