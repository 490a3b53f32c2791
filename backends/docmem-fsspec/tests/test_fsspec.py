"""docmem-fsspec's own promises, on local disk, s3fs on LocalStack and adlfs on Azurite.

Atomicity is checked rather than assumed; retention and garbage collection
keep the newest versions and never fail a reader; a stale writer that aims at
a freed revision name is never reported committed when markers say a purge or
delete ran; delete and purge remove what they promise; history shows older
versions. (Clock steps are in test_chain.py.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
from botocore.exceptions import ClientError
from fsspec_stores import Raw, store_url

import docmem
from docmem.backend import ContendedKeys, KeptVersion
from docmem.errors import (
    DocmemError,
    MutationAmbiguous,
    StoreNotConfigured,
    StoreUnavailable,
    VersionConflict,
    WriteOutcomeUnknown,
)
from docmem_fsspec import FsspecBackend, Revision
from docmem_fsspec.commitlog import Kind, object_name, unwrap
from docmem_fsspec.dialects import (
    AdlfsDialect,
    AssumedDialect,
    LocalDialect,
    S3fsDialect,
    dialect_for,
)

Opener = Callable[..., FsspecBackend]
SCOPE = docmem.lock_scope(namespace="tests:fsspec", scope=("user", "u_1"))


def names(store: FsspecBackend, kind: str, key: str) -> list[str]:
    return Raw(store, kind).names(key)


# -- atomic create is checked, not assumed ---------------------------------------------


def test_a_filesystem_without_atomic_create_is_refused() -> None:
    with pytest.raises(StoreNotConfigured, match="assume_atomic_create"):
        docmem.open_store("fsspec+memory://refused")


def test_asserting_atomic_create_is_accepted() -> None:
    fsspec.filesystem("memory").mkdir("/asserted")  # the root must exist, as anywhere
    store = docmem.open_store("fsspec+memory://asserted?assume_atomic_create=true")
    assert isinstance(store, FsspecBackend)
    first = store.write("k", b"one", expected=None)
    second = store.write("k", b"two", expected=first)
    assert store.read("k") == docmem.Stored(data=b"two", version=second)
    with pytest.raises(VersionConflict):
        store.write("k", b"stale", expected=first)


@pytest.mark.parametrize(
    ("module", "name", "dialect"),
    [
        ("fsspec.implementations.local", "LocalFileSystem", LocalDialect),
        ("s3fs.core", "S3FileSystem", S3fsDialect),
        ("adlfs.spec", "AzureBlobFileSystem", AdlfsDialect),
    ],
)
def test_known_implementations_get_their_own_dialect(module: str, name: str, dialect: type) -> None:
    fs_class = getattr(__import__(module, fromlist=[name]), name)
    assert type(dialect_for(fs_class, assume_atomic_create=False)) is dialect
    # The assertion never replaces a checked create with the generic one.
    assert type(dialect_for(fs_class, assume_atomic_create=True)) is dialect


def test_an_unknown_implementation_with_the_assertion_uses_pipe_file() -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    assert type(dialect_for(MemoryFileSystem, assume_atomic_create=True)) is AssumedDialect


def test_an_implementation_too_old_for_exclusive_create_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import s3fs

    monkeypatch.setattr("docmem_fsspec.dialects._version", lambda distribution: (2024, 6, 1))
    with pytest.raises(StoreNotConfigured, match=r"s3fs>=2024\.12\.0"):
        dialect_for(s3fs.S3FileSystem, assume_atomic_create=False)


def _client_error(code: str, status: int, **details: str) -> ClientError:
    response: Any = {
        "Error": {"Code": code, **details},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, "PutObject")


class _FailingCreate:
    """A filesystem whose create raises ``error``, as s3fs's ``pipe_file`` would."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def pipe_file(self, path: str, data: bytes, mode: str) -> None:
        raise self.error


def _s3fs_create_error(raised: BaseException) -> DocmemError:
    """What the s3fs dialect's create raises when s3fs raises ``raised``."""
    with pytest.raises(DocmemError) as caught:
        S3fsDialect().create(_FailingCreate(raised), f"bucket/root/k/{object_name(1)}", b"x")
    return caught.value


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("PreconditionFailed", 412, VersionConflict),
        ("ConditionalRequestConflict", 409, VersionConflict),
        ("InternalError", 500, WriteOutcomeUnknown),
        ("ServiceUnavailable", 503, WriteOutcomeUnknown),
        ("AccessDenied", 403, StoreUnavailable),
        ("NoSuchBucket", 404, StoreUnavailable),
    ],
)
def test_s3fs_create_answers_map_by_code_and_status(
    code: str, status: int, expected: type[Exception]
) -> None:
    from s3fs.errors import translate_boto_error

    error = _s3fs_create_error(translate_boto_error(_client_error(code, status)))
    assert type(error) is expected
    assert code not in {"PreconditionFailed"} or "created it first" in str(error)


def _s3fs_failures() -> list[Any]:
    from botocore.exceptions import (
        ConnectionClosedError,
        EndpointConnectionError,
        NoCredentialsError,
    )
    from s3fs.errors import translate_boto_error

    lost = _client_error("PreconditionFailed", 412, Condition="If-None-Match")
    return [
        pytest.param(translate_boto_error(lost), VersionConflict, id="FileExistsError"),
        pytest.param(lost, VersionConflict, id="untranslated"),
        pytest.param(
            translate_boto_error(_client_error("NotImplemented", 501)),
            StoreUnavailable,
            id="not-implemented",
        ),
        pytest.param(
            EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
            StoreUnavailable,
            id="never-sent",
        ),
        pytest.param(NoCredentialsError(), StoreNotConfigured, id="no-credentials"),
        pytest.param(
            ConnectionClosedError(endpoint_url="http://x"), WriteOutcomeUnknown, id="answer-lost"
        ),
        pytest.param(TimeoutError(), WriteOutcomeUnknown, id="timeout"),
    ]


@pytest.mark.parametrize(("raised", "expected"), _s3fs_failures())
def test_s3fs_create_failures_map_through_the_one_s3_table(
    raised: BaseException, expected: type[Exception]
) -> None:
    """s3fs's translations and botocore's own exceptions: docmem-s3's rows decide."""
    assert type(_s3fs_create_error(raised)) is expected


class _Folder:
    """Just enough of adlfs for a listing from a name: its paths, and its ``ls``."""

    def __init__(self) -> None:
        self.loop = None
        self.listed = 0

    def split_path(self, path: str) -> tuple[str, str, None]:
        container, _, rest = path.partition("/")
        return container, rest, None

    def ls(self, folder: str, detail: bool) -> list[dict[str, Any]]:
        self.listed += 1
        return [{"name": f"{folder}/{object_name(1)}", "type": "file", "size": 1}]


def test_an_azure_service_without_listings_from_a_name_gets_the_folder_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from azure.core.exceptions import HttpResponseError

    asked: list[str] = []

    def refused(*args: Any, **kwargs: Any) -> None:
        asked.append("startFrom")
        error = HttpResponseError(message="unknown query parameter startFrom")
        error.status_code = 400
        raise error

    monkeypatch.setattr("docmem_fsspec.dialects.sync", refused)
    dialect, fs = AdlfsDialect(), _Folder()
    for _ in range(2):  # refused once: the folder from then on, without asking again
        found = dialect.list_after(fs, "container/root/k", object_name(1))
        assert found == fs.ls("container/root/k", detail=True)
    assert (asked, fs.listed) == (["startFrom"], 4)


# -- URLs and options ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("fsspec://x", "fsspec\\+<protocol>"),
        ("fsspec+nosuchprotocol://x", "no usable implementation"),
        ("fsspec+file:///tmp/x?retain=0", "retain"),
        ("fsspec+file:///tmp/x?grace=10&max_staleness=10", "max_staleness"),
        ("fsspec+file:///tmp/x?max_staleness=0", "max_staleness"),
        ("fsspec+file:///tmp/x?assume_atomic_create=maybe", "true or false"),
        ("fsspec+file:///tmp/x?retain=many", "retain must be a whole number"),
        ("fsspec+s3://", "names no bucket"),
    ],
)
def test_bad_urls_are_refused_without_io(url: str, message: str) -> None:
    with pytest.raises(StoreNotConfigured, match=message):
        docmem.open_store(url)


def test_a_missing_implementation_names_the_extra_that_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def not_installed(protocol: str) -> type:
        raise ImportError(f"no module for {protocol}")  # as fsspec says when gcsfs is missing

    monkeypatch.setattr("docmem_fsspec.filesystems.fsspec.get_filesystem_class", not_installed)
    with pytest.raises(StoreNotConfigured, match=r"docmem-fsspec\[gcs\]"):
        docmem.open_store("fsspec+gs://bucket/prefix")


@pytest.mark.parametrize(
    ("scheme", "distribution"),
    [("gs", "agent-docmem-gcs"), ("gcs", "agent-docmem-gcs"), ("az", "agent-docmem-azure")],
)
def test_a_scheme_of_a_native_plugin_names_it_and_the_fsspec_url(
    scheme: str, distribution: str
) -> None:
    with pytest.raises(StoreNotConfigured) as caught:
        FsspecBackend.from_url(f"{scheme}://bucket/prefix")
    assert distribution in caught.value.message
    assert f"fsspec+{scheme}://" in caught.value.message


NOT_A_SETTING = [
    None,
    True,
    False,
    float("nan"),
    float("inf"),
    float("-inf"),
    -1,
    -0.5,
    0,
    "many",
    "",
    "nan",
    "inf",
    "1e999",
    "-3",
    [],
    {},
    b"8",
]


@pytest.mark.parametrize("option", ["retain", "grace", "max_staleness", "cache_size"])
@pytest.mark.parametrize("value", NOT_A_SETTING, ids=repr)
def test_an_option_that_is_no_setting_is_refused_by_name(option: str, value: Any) -> None:
    if option == "cache_size" and value == 0:
        value = -2  # zero keys is a setting: remember the least
    with pytest.raises(StoreNotConfigured, match=option):
        docmem.open_store("fsspec+file:///tmp/x", **{option: value})
    with pytest.raises(StoreNotConfigured, match=option):
        FsspecBackend("file", "/tmp/x", **{option: value})


@pytest.mark.parametrize("option", ["retain", "cache_size"])
@pytest.mark.parametrize("value", [2.5, "2.5", "3.0", "1e3"], ids=repr)
def test_a_count_must_be_whole(option: str, value: Any) -> None:
    with pytest.raises(StoreNotConfigured, match=f"{option} must be a whole number"):
        docmem.open_store("fsspec+file:///tmp/x", **{option: value})


@pytest.mark.parametrize("option", ["retain", "grace", "max_staleness", "cache_size"])
@pytest.mark.parametrize("text", ["nan", "inf", "-1", "1.5e400", "x", "", "0x10"])
def test_an_option_in_the_url_that_is_no_setting_is_refused_by_name(option: str, text: str) -> None:
    with pytest.raises(StoreNotConfigured, match=option):
        docmem.open_store(f"fsspec+file:///tmp/x?{option}={text}")


@pytest.mark.parametrize("option", ["assume_atomic_create", "create"])
@pytest.mark.parametrize("value", [None, 2, "maybe", float("nan")], ids=repr)
def test_a_flag_that_is_no_setting_is_refused_by_name(option: str, value: Any) -> None:
    with pytest.raises(StoreNotConfigured, match=option):
        docmem.open_store("fsspec+file:///tmp/x", **{option: value})


def test_settings_arrive_as_numbers_or_strings() -> None:
    store = docmem.open_store(
        "fsspec+file:///tmp/x?retain=3&grace=90.5", max_staleness=" 5 ", cache_size=0.0
    )
    assert isinstance(store, FsspecBackend)
    assert (store.retain, store.grace, store.max_staleness, store.cache_size) == (3, 90.5, 5.0, 0)
    assert FsspecBackend("file", "/tmp/x", retain=2.0, grace=100).retain == 2


def test_azure_schemes_resolve_to_this_backend() -> None:
    for scheme in ("fsspec+az", "abfs", "abfss"):
        store = docmem.open_store(f"{scheme}://container/prefix", account_name="devstoreaccount1")
        assert isinstance(store, FsspecBackend)
        assert store.url == f"{scheme}://container/prefix"
        assert store.options["account_name"] == "devstoreaccount1"


def test_options_split_between_docmem_and_the_filesystem(tmp_path: Path) -> None:
    store = docmem.open_store(f"fsspec+file://{tmp_path}?retain=3&grace=90", auto_mkdir=False)
    assert isinstance(store, FsspecBackend)
    assert (store.retain, store.grace, store.max_staleness) == (3, 90.0, 60.0)
    assert store.storage_options == {"auto_mkdir": False}
    assert store.url == f"fsspec+file://{tmp_path}"


def test_filesystem_options_pass_through_unconverted(tmp_path: Path) -> None:
    store = docmem.open_store(
        f"fsspec+file://{tmp_path}?retain=4&auto_mkdir=false",
        storage_options={"a": 1},
        b=[2],
    )
    assert isinstance(store, FsspecBackend)
    assert store.retain == 4
    assert store.storage_options == {"a": 1, "auto_mkdir": "false", "b": [2]}


def test_flags_arrive_as_words_or_bools() -> None:
    for words in ("true", "YES", "on", "1"):
        store = docmem.open_store(f"fsspec+memory://x?assume_atomic_create={words}")
        assert isinstance(store, FsspecBackend)
        assert store.assume_atomic_create is True
    assert FsspecBackend("memory", "x", assume_atomic_create=True).assume_atomic_create is True
    with pytest.raises(StoreNotConfigured, match="assume_atomic_create must be true or false"):
        FsspecBackend("memory", "x", assume_atomic_create=1)  # type: ignore[arg-type]


def test_a_bad_option_names_the_scheme_and_never_the_value() -> None:
    with pytest.raises(StoreNotConfigured, match=r"^fsspec\+gs:// option grace ") as caught:
        docmem.open_store("fsspec+gs://bucket/prefix?grace=hunter2")
    assert "hunter2" not in str(caught.value)
    assert caught.value.__context__ is None
    with pytest.raises(StoreNotConfigured, match="max_staleness must be less than grace"):
        FsspecBackend("file", "/tmp/x", grace=5, max_staleness=5)


def test_a_missing_bucket_or_container_is_unavailable_not_empty(kind: str, tmp_path: Path) -> None:
    url = store_url(kind, tmp_path)
    scheme, rest = url.split("://", 1)
    if kind == "local":
        missing = f"{scheme}://{tmp_path / 'no-such-root'}"
    else:
        missing = f"{scheme}://no-such-bucket-for-docmem/{rest.split('/', 1)[1]}"
    store = docmem.open_store(missing)
    with pytest.raises(StoreUnavailable):
        store.read("k")
    with pytest.raises(StoreUnavailable):
        store.write("k", b"x", expected=None)
    with pytest.raises(StoreUnavailable):
        list(store.keys())
    with pytest.raises(StoreUnavailable):
        store.history("k")
    with pytest.raises(StoreUnavailable):  # never None, as if the version were gone
        store.read_version("k", object_name(1))


def test_a_key_that_prefixes_another_sees_only_its_own_versions(open_fsspec: Opener) -> None:
    store = open_fsspec()
    version = None
    for n in range(3):
        version = store.write("key-10", f"write {n}".encode(), expected=version)
    assert store.read("key-1") is None
    assert store.write("key-1", b"mine", expected=None) == object_name(1)
    assert store.read("key-1") == docmem.Stored(data=b"mine", version=object_name(1))
    assert store.read("key-10") == docmem.Stored(data=b"write 2", version=object_name(3))
    assert [entry.version for entry in store.history("key-1")] == [object_name(1)]
    assert sorted(store.keys()) == ["key-1", "key-10"]


# -- retention and garbage collection ---------------------------------------------------------

# Short enough to see collection within a test. max_staleness must stay below grace.
QUICK_GC = {"grace": 3.0, "max_staleness": 1.0}
#: Longer than grace, plus the second docmem allows for stores with whole-second
#: timestamps, plus the second such a timestamp may lose.
PAST_GRACE = 5.5


def test_after_50_writes_only_the_newest_versions_remain(open_fsspec: Opener, kind: str) -> None:
    store = open_fsspec(retain=3, **QUICK_GC)
    version = None
    for n in range(1, 50):
        version = store.write("k", f"write {n}".encode(), expected=version)
    time.sleep(PAST_GRACE)  # the versions are now older than grace by the store's clock
    version = store.write("k", b"write 50", expected=version)
    versions = [name for name in names(store, kind, "k") if name.endswith(".md")]
    assert versions == [object_name(n) for n in (48, 49, 50)]
    assert store.read("k") == docmem.Stored(data=b"write 50", version=version)
    assert unwrap(Raw(store, kind).read("k", object_name(50)))[1] == b"write 50"


def test_versions_younger_than_grace_are_kept(open_fsspec: Opener, kind: str) -> None:
    store = open_fsspec(retain=2)  # default grace: 600 s
    version = None
    for n in range(6):
        version = store.write("k", f"write {n}".encode(), expected=version)
    assert len([name for name in names(store, kind, "k") if name.endswith(".md")]) == 6


def test_a_concurrent_reader_never_fails_because_of_collection(
    open_fsspec: Opener, kind: str
) -> None:
    writer = open_fsspec(retain=1, **QUICK_GC)
    reader = docmem.open_store(writer.url, **writer.options)
    written: list[bytes] = []
    seen: list[bytes] = []
    failures: list[str] = []
    stop = threading.Event()

    def read_continuously() -> None:
        while not stop.is_set():
            try:
                stored = reader.read("k")
            except Exception as exc:  # any failure is what this test is about
                failures.append(f"{type(exc).__name__}: {exc}")
                return
            if stored is not None:
                seen.append(stored.data)

    version = writer.write("k", b"0", expected=None)
    written.append(b"0")
    thread = threading.Thread(target=read_continuously)
    thread.start()
    try:
        deadline = time.monotonic() + PAST_GRACE + 2.0
        n = 0
        while time.monotonic() < deadline:
            n += 1
            version = writer.write("k", str(n).encode(), expected=version)
            written.append(str(n).encode())
    finally:
        stop.set()
        thread.join(30)
    reader.close()
    assert failures == []
    assert seen, "the reader never read anything"
    assert set(seen) <= set(written)
    values = [int(data) for data in seen]
    assert values == sorted(values), "a reader went back to an older version"
    remaining = [name for name in names(writer, kind, "k") if name.endswith(".md")]
    assert len(remaining) < len(written), "nothing was collected: the test proved nothing"


def test_a_reader_whose_newest_version_vanishes_lists_again(
    open_fsspec: Opener, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = open_fsspec()
    reader = docmem.open_store(writer.url, **writer.options)  # nothing cached
    first = writer.write("k", b"first", expected=None)
    raw = Raw(writer, kind)
    original = FsspecBackend._list
    listings = 0

    def list_then_lose_the_race(self: FsspecBackend, key: str) -> Any:
        nonlocal listings
        listed = original(self, key)
        if self is reader:
            listings += 1
            if listings == 1:
                # Between this listing and the read, a newer version lands and the
                # one just listed is collected, as garbage collection would do.
                writer.write("k", b"second", expected=first)
                writer.filesystems()[0].rm_file(f"{writer.folder('k')}/{first}")
                assert first not in raw.names("k")
        return listed

    monkeypatch.setattr(FsspecBackend, "_list", list_then_lose_the_race)
    stored = reader.read("k")
    assert stored is not None
    assert stored.data == b"second"
    assert listings == 2


# -- markers and rule 1 against a writer aiming at a freed name ------------------------------


def test_a_stale_writer_after_a_purge_does_not_count_as_committed(
    open_fsspec: Opener, kind: str
) -> None:
    stale = open_fsspec()
    busy = docmem.open_store(stale.url, **stale.options)
    base = stale.write("k", b"one", expected=None)
    assert busy.read("k") is not None
    newer = busy.write("k", b"two", expected=base)
    newest = busy.write("k", b"three", expected=newer)
    busy.purge_history("k")  # frees the names below three, including the one stale aims at
    with pytest.raises(WriteOutcomeUnknown):
        stale.write("k", b"lost?", expected=base)
    assert stale.read("k") == docmem.Stored(data=b"three", version=newest)


def test_a_stale_writer_after_a_delete_does_not_count_as_committed(
    open_fsspec: Opener,
) -> None:
    stale = open_fsspec()
    operator = docmem.open_store(stale.url, **stale.options)
    base = stale.write("k", b"one", expected=None)
    operator.delete("k")
    with pytest.raises(WriteOutcomeUnknown):
        stale.write("k", b"after the purge", expected=base)
    assert stale.read("k") is None
    assert list(stale.keys()) == []


def test_a_stale_save_racing_an_erase_is_reported_honestly(open_fsspec: Opener) -> None:
    store = open_fsspec()
    other = docmem.open_store(store.url, **store.options)
    mine = docmem.FileMemory(store).bind(SCOPE, slot="user")
    theirs = docmem.FileMemory(other).bind(SCOPE, slot="user")
    mine.save("Prefers tea.", mutation_id="m-1")  # this store now holds a fresh cached copy
    theirs.save("Lives in Oslo.", mutation_id="t-1")
    theirs.save("Has a cat.", mutation_id="t-2")
    theirs.erase(mutation_id="t-3")  # an empty document, then every older version purged
    # The stale save re-creates a purged name: the check after the create sees the
    # purge marker above it.
    # The erase cut the journal, so nobody can tell whether the save landed before it:
    # the provider says so instead of answering "saved" for a note that is not there.
    with pytest.raises(MutationAmbiguous) as raised:
        mine.save("Speaks Norwegian.", mutation_id="m-2")
    assert raised.value.outcome == "unknown"
    document = theirs.read()
    assert document is not None
    assert dict(document.entries) == {}
    assert mine.save("Speaks Norwegian.", mutation_id="m-3").status == "saved"
    document = theirs.read()
    assert document is not None
    assert list(document.entries.values()) == ["Speaks Norwegian."]


def test_a_stale_save_racing_a_delete_is_settled_through_the_journal(
    open_fsspec: Opener,
) -> None:
    store = open_fsspec()
    operator = docmem.open_store(store.url, **store.options)
    mine = docmem.FileMemory(store).bind(SCOPE, slot="user")
    mine.save("Prefers tea.", mutation_id="m-1")
    operator.delete(SCOPE.storage_key)
    # Rule 3 makes the stale write unknown; the document is gone, so the provider
    # knows its write is not in it and saves again into a new document.
    assert mine.save("Speaks Norwegian.", mutation_id="m-2").status == "saved"
    document = mine.read()
    assert document is not None
    assert list(document.entries.values()) == ["Speaks Norwegian."]


def test_a_pause_longer_than_grace_alone_does_not_cloud_a_write(open_fsspec: Opener) -> None:
    # No clock decides a write: a writer that stalls past the grace period while
    # nobody else writes still lands on top of the newest version, and says so.
    store = open_fsspec(**QUICK_GC)
    version = store.write("k", b"one", expected=None)
    dialect = store._dialect
    real_create = dialect.create

    def paused_create(fs: Any, path: str, data: bytes) -> None:
        time.sleep(QUICK_GC["grace"])  # the process stalls between its checks and the create
        real_create(fs, path, data)

    dialect.create = paused_create  # type: ignore[method-assign]
    second = store.write("k", b"two", expected=version)
    assert second == object_name(2)
    assert store.read("k") == docmem.Stored(data=b"two", version=second)


def test_rule_1_an_old_token_is_checked_by_a_listing(open_fsspec: Opener, kind: str) -> None:
    store = open_fsspec(grace=3.0, max_staleness=0.3)
    other = docmem.open_store(store.url, **store.options)
    first = store.write("k", b"one", expected=None)
    time.sleep(0.4)
    second = other.write("k", b"two", expected=first)
    before = names(store, kind, "k")
    with pytest.raises(VersionConflict):
        store.write("k", b"stale", expected=first)
    assert names(store, kind, "k") == before, "a refused write created an object"
    assert store.read("k") == docmem.Stored(data=b"two", version=second)
    time.sleep(0.4)  # seen too long ago, but still the newest: the listing confirms it
    third = store.write("k", b"three", expected=second)
    assert other.read("k") == docmem.Stored(data=b"three", version=third)


def test_a_version_from_another_process_is_accepted_when_still_newest(open_fsspec: Opener) -> None:
    store = open_fsspec()
    version = store.write("k", b"one", expected=None)
    stranger = docmem.open_store(store.url, **store.options)  # has seen nothing
    newer = stranger.write("k", b"two", expected=version)
    assert store.read("k") == docmem.Stored(data=b"two", version=newer)


def test_a_key_another_client_writes_is_listed_before_the_next_save(
    open_fsspec: Opener,
) -> None:
    store = open_fsspec()
    other = docmem.open_store(store.url, **store.options)
    store.verify()  # the first-write check's creates are not counted
    creates: list[str] = []
    real_create = store._dialect.create

    def counted(fs: Any, path: str, data: bytes) -> None:
        creates.append(path.rsplit("/", 1)[-1])
        real_create(fs, path, data)

    store._dialect.create = counted  # type: ignore[method-assign]
    mine = docmem.FileMemory(store).bind(SCOPE, slot="user")
    theirs = docmem.FileMemory(other).bind(SCOPE, slot="user")
    mine.save("one", mutation_id="m-1")
    theirs.save("two", mutation_id="t-1")
    mine.save("three", mutation_id="m-2")  # starts from its cached copy: one create refused
    assert creates == [object_name(1), object_name(2), object_name(3)]
    theirs.save("four", mutation_id="t-2")
    creates.clear()
    mine.save("five", mutation_id="m-3")  # the key is contended: listed first, one create
    assert creates == [object_name(5)]
    creates.clear()
    mine.save("six", mutation_id="m-4")  # nobody wrote since: back to the cached copy
    assert creates == [object_name(6)]
    document = mine.read()
    assert document is not None
    assert sorted(document.entries.values()) == ["five", "four", "one", "six", "three", "two"]


def test_contended_keys_skip_the_cache_and_stay_bounded() -> None:
    """The helper both plug-ins' read_recent use (docmem.backend.ContendedKeys)."""
    cached = docmem.Stored(data=b"cached", version="v1")
    fresh = docmem.Stored(data=b"fresh", version="v2")
    reads: list[str] = []

    def read(key: str) -> docmem.Stored:
        reads.append(key)
        return fresh

    contended = ContendedKeys(2)
    assert contended.read_recent("a", cached=lambda key: cached, read=read) == cached
    assert contended.read_recent("a", cached=lambda key: None, read=read) == fresh
    contended.add("a")
    assert contended.read_recent("a", cached=lambda key: cached, read=read) == fresh
    contended.discard("a")
    assert contended.read_recent("a", cached=lambda key: cached, read=read) == cached
    assert reads == ["a", "a"]
    for key in ("a", "b", "c"):  # full at two: the third forgets the others
        contended.add(key)
    assert ("a" in contended, "b" in contended, "c" in contended) == (False, False, True)
    with pytest.raises(docmem.InvalidArgument):
        contended.read_recent("../k", cached=lambda key: cached, read=read)


# -- delete, purge_history, history ---------------------------------------------------------


def test_delete_removes_every_version_and_leaves_one_tombstone(
    open_fsspec: Opener, kind: str
) -> None:
    store = open_fsspec()
    version = None
    for n in range(5):
        version = store.write("k", f"write {n}".encode(), expected=version)
    store.purge_history("k")
    store.delete("k")
    assert names(store, kind, "k") == [object_name(6, Kind.TOMBSTONE)]
    assert store.read("k") is None
    assert store.history("k") == []
    again = store.write("k", b"new life", expected=None)
    assert again == object_name(7), "a revision name was used twice"
    store.delete("k")
    assert names(store, kind, "k") == [object_name(8, Kind.TOMBSTONE)]


def test_purge_history_keeps_only_the_current_version_and_a_marker(
    open_fsspec: Opener, kind: str
) -> None:
    store = open_fsspec(**QUICK_GC)
    version = None
    for n in range(5):
        version = store.write("k", f"write {n}".encode(), expected=version)
    store.purge_history("k")
    assert names(store, kind, "k") == [object_name(5), object_name(5, Kind.PURGE)]
    assert store.read("k") == docmem.Stored(data=b"write 4", version=object_name(5))
    time.sleep(PAST_GRACE)
    store.write("k", b"write 5", expected=version)
    assert names(store, kind, "k") == [object_name(5), object_name(6)], (
        "the purge marker outlived the grace period"
    )


def test_history_lists_retained_versions_and_reads_them(open_fsspec: Opener) -> None:
    store = open_fsspec()
    contents = [b"first", b"second, longer", b"third"]
    version = None
    for data in contents:
        version = store.write("k", data, expected=version)
    history = store.history("k")
    assert all(isinstance(entry, Revision) for entry in history)
    assert all(isinstance(entry, KeptVersion) for entry in history)  # the contract's type
    assert [entry.revision for entry in history if isinstance(entry, Revision)] == [1, 2, 3]
    current = store.read("k")
    assert current is not None
    assert history[-1].version == current.version
    assert [entry.size for entry in history] == [len(data) for data in contents]
    stamps = [entry.modified for entry in history]
    assert all(stamp is not None for stamp in stamps)
    assert stamps == sorted(stamps)  # type: ignore[type-var]
    for entry, data in zip(history, contents, strict=True):
        assert store.read_version("k", entry.version) == docmem.Stored(data, entry.version)
    assert store.read_version("k", object_name(9)) is None
    assert store.read_version("k", "not-a-version") is None
    assert store.history("never-written") == []
    store.purge_history("k")
    assert [entry.version for entry in store.history("k")] == [current.version]
    assert store.read_version("k", history[0].version) is None  # purged
    assert store.read_version("k", object_name(3, Kind.PURGE)) is None  # a marker, no version
    store.delete("k")
    assert store.history("k") == []
    assert store.read_version("k", current.version) is None
