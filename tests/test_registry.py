"""open_store, URL forms, the scheme registry and entry points (docs/design.md, section 4)."""

from __future__ import annotations

import os
import pickle
import re
import sys
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

import pytest

import docmem
import docmem.backend
import docmem.storage.registry as registry_module
from docmem import StoreNotConfigured, open_store, register_backend
from docmem.backend import ENTRY_POINT_GROUP, Backend, Stored
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.storage.builtin.local import LocalBackend


class FakeEntryPoint:
    """Just enough of importlib.metadata.EntryPoint: a name and load()."""

    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.group = ENTRY_POINT_GROUP
        self._target = target
        self.loads = 0

    def load(self) -> Any:
        self.loads += 1
        return self._target


class RecordingBackend(MemoryBackend):
    """A memory store that remembers the URL and options it was opened with."""

    opened: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RecordingBackend:
        cls.opened.append((url, options))
        return cls()


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """A private registry and no installed plug-ins, whatever this venv holds."""
    monkeypatch.setattr(registry_module, "_registered", {})
    calls: list[dict[str, Any]] = []

    def no_entry_points(**selection: Any) -> list[FakeEntryPoint]:
        calls.append(selection)
        return []

    monkeypatch.setattr(registry_module, "entry_points", no_entry_points)
    RecordingBackend.opened = []
    return calls


def install_entry_points(monkeypatch: pytest.MonkeyPatch, *points: FakeEntryPoint) -> list[Any]:
    calls: list[dict[str, Any]] = []

    def fake_entry_points(**selection: Any) -> list[FakeEntryPoint]:
        calls.append(selection)
        return [
            point
            for point in points
            if selection.get("group") == point.group and selection.get("name") == point.name
        ]

    monkeypatch.setattr(registry_module, "entry_points", fake_entry_points)
    return calls


# -- no store, unknown schemes ------------------------------------------------------------


@pytest.mark.parametrize("url", [None, "", "   "])
def test_no_url_is_an_error_not_a_default(url: str | None) -> None:
    with pytest.raises(StoreNotConfigured) as caught:
        open_store(url)
    message = str(caught.value)
    assert "file:///" in message
    assert "memory://" in message
    assert caught.value.code == "store_not_configured"


def test_url_without_scheme_says_what_to_write() -> None:
    with pytest.raises(StoreNotConfigured, match=r"file:///path"):
        open_store("var/lib/memory")


def test_unknown_scheme_says_to_install_a_backend(isolated_registry: list[Any]) -> None:
    with pytest.raises(StoreNotConfigured) as caught:
        open_store("nope://x")
    message = str(caught.value)
    assert "'nope'" in message
    assert "install" in message
    assert "file:///" in message
    assert isolated_registry == [{"group": "docmem.backends", "name": "nope"}]


@pytest.mark.parametrize(
    ("url", "distribution"),
    [
        ("s3://bucket", "agent-docmem-s3"),
        ("s3://bucket/prefix?region=eu-west-1", "agent-docmem-s3"),
        ("fsspec+gs://bucket/p", "agent-docmem-fsspec"),
        ("gs://bucket", "agent-docmem-gcs"),
        ("gcs://bucket", "agent-docmem-gcs"),
        ("az://container", "agent-docmem-azure"),
        ("azblob://container", "agent-docmem-azure"),
        ("abfss://container/p", "agent-docmem-fsspec"),
    ],
)
def test_known_plugin_scheme_names_the_distribution(url: str, distribution: str) -> None:
    with pytest.raises(StoreNotConfigured) as caught:
        open_store(url)
    assert f"pip install {distribution}" in str(caught.value)


# -- open_store does no I/O -----------------------------------------------------------------


def test_open_store_does_no_io(tmp_path: Path) -> None:
    open_store("file:///nonexistent/docmem/conformance/dir")
    root = tmp_path / "a" / "b"
    store = open_store(root.as_uri() + "?create=true")
    assert not (tmp_path / "a").exists()
    assert store.read("k") is None
    assert list(store.keys()) == []
    assert not (tmp_path / "a").exists(), "a read or a listing created the root"
    store.write("k", b"x", expected=None)
    assert root.is_dir()


def test_a_missing_root_is_unavailable_not_empty(tmp_path: Path) -> None:
    store = open_store((tmp_path / "typo").as_uri())
    for call in (
        lambda: store.read("k"),
        lambda: list(store.keys()),
        lambda: store.delete("k"),
        lambda: store.write("k", b"x", expected=None),
    ):
        with pytest.raises(docmem.StoreUnavailable, match="root directory does not exist"):
            call()
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize("value", ["maybe", "2"])
def test_create_option_must_be_a_flag(tmp_path: Path, value: str) -> None:
    with pytest.raises(StoreNotConfigured, match="create must be true or false"):
        open_store(f"{tmp_path.as_uri()}?create={value}")


def test_open_store_memory_does_no_io() -> None:
    store = open_store("memory://")
    assert isinstance(store, MemoryBackend)
    assert list(store.keys()) == []


# -- file URL forms -------------------------------------------------------------------------


def test_file_url_absolute(tmp_path: Path) -> None:
    store = open_store("file://" + str(tmp_path / "abs"))
    assert isinstance(store, LocalBackend)
    assert store.root == str(tmp_path / "abs")


def test_file_url_localhost_is_local(tmp_path: Path) -> None:
    store = open_store("file://localhost" + str(tmp_path / "abs"))
    assert isinstance(store, LocalBackend)
    assert store.root == str(tmp_path / "abs")


def test_file_url_percent_escapes(tmp_path: Path) -> None:
    root = tmp_path / "with space%"
    store = open_store(root.as_uri() + "?create=1")
    assert isinstance(store, LocalBackend)
    assert store.root == str(root)
    store.write("k", b"x", expected=None)
    assert (root).is_dir()


@pytest.mark.parametrize("url", ["file://./rel/store", "file:rel/store", "file:./rel/store"])
def test_file_url_relative_to_cwd(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store(url, create=True)
    assert isinstance(store, LocalBackend)
    assert store.root == str(tmp_path / "rel" / "store")
    # The root is fixed when the store is opened, not on every call.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    store.write("k", b"x", expected=None)
    assert (tmp_path / "rel" / "store").is_dir()
    assert not (elsewhere / "rel").exists()
    # ...and the URL it pickles as is absolute, so a copy finds the same files.
    copy = pickle.loads(pickle.dumps(store))
    assert copy.read("k") == store.read("k")


def test_file_url_parent_relative(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    store = open_store("file://../sibling")
    assert isinstance(store, LocalBackend)
    assert store.root == str(tmp_path / "sibling")


@pytest.mark.parametrize(
    "url", ["file://otherhost/x", "file://server.example.com/share/x", "file://10.0.0.1/x"]
)
def test_file_url_with_remote_host_is_refused(url: str) -> None:
    with pytest.raises(StoreNotConfigured, match="local path"):
        open_store(url)


@pytest.mark.parametrize("url", ["file://", "file:"])
def test_file_url_without_path_is_refused(url: str) -> None:
    with pytest.raises(StoreNotConfigured):
        open_store(url)


def test_file_scheme_is_case_insensitive(tmp_path: Path) -> None:
    store = open_store("FILE://" + str(tmp_path / "s"))
    assert isinstance(store, LocalBackend)


# -- options --------------------------------------------------------------------------------


def test_file_options_from_query_and_keywords(tmp_path: Path) -> None:
    url = (tmp_path / "s").as_uri()
    assert open_store(url).options == {"lock_timeout": 10.0, "create": False}
    assert open_store(url + "?lock_timeout=2.5&create=true").options == {
        "lock_timeout": 2.5,
        "create": True,
    }
    # Keyword arguments win over the query.
    assert open_store(url + "?lock_timeout=2.5", lock_timeout=7).options == {
        "lock_timeout": 7.0,
        "create": False,
    }


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("file:///tmp/docmem-x?bogus=1", {}),
        ("file:///tmp/docmem-x", {"bogus": 1}),
        ("file:///tmp/docmem-x?lock_timeout=soon", {}),
        ("memory://?x=1", {}),
        ("memory://named?x=1", {}),
        ("memory://", {"x": 1}),
    ],
)
def test_unknown_or_bad_options_are_refused(url: str, options: dict[str, Any]) -> None:
    with pytest.raises(StoreNotConfigured):
        open_store(url, **options)


def test_unknown_file_option_names_the_known_ones() -> None:
    with pytest.raises(StoreNotConfigured, match=r"bogus.*lock_timeout"):
        open_store("file:///tmp/docmem-x?bogus=1")


# -- register_backend -----------------------------------------------------------------------


def test_register_backend_class() -> None:
    register_backend("rec", RecordingBackend)
    store = open_store("rec://somewhere?a=1", b=2)
    assert isinstance(store, RecordingBackend)
    assert RecordingBackend.opened == [("rec://somewhere?a=1", {"b": 2})]


def test_register_backend_by_import_path() -> None:
    register_backend("lazy", "docmem.storage.builtin.inmemory:MemoryBackend")
    assert type(open_store("lazy://")) is MemoryBackend


def test_register_backend_needs_clobber_to_replace() -> None:
    register_backend("rec", RecordingBackend)
    with pytest.raises(ValueError, match="clobber"):
        register_backend("rec", MemoryBackend)
    assert isinstance(open_store("rec://"), RecordingBackend)
    register_backend("rec", MemoryBackend, clobber=True)
    assert type(open_store("rec://")) is MemoryBackend


def test_builtin_schemes_need_clobber_to_replace() -> None:
    for scheme in ("memory", "file"):
        with pytest.raises(ValueError, match="clobber"):
            register_backend(scheme, RecordingBackend)
    assert type(open_store("memory://")) is MemoryBackend
    register_backend("memory", RecordingBackend, clobber=True)
    assert isinstance(open_store("memory://"), RecordingBackend)


def test_a_refused_registration_is_invalid_argument_from_the_tree() -> None:
    register_backend("rec", RecordingBackend)
    with pytest.raises(docmem.InvalidArgument) as raised:
        register_backend("rec", MemoryBackend)
    assert raised.value.code == "invalid_argument"
    with pytest.raises(docmem.InvalidArgument):
        register_backend("memory", RecordingBackend)


@pytest.mark.parametrize(
    "scheme",
    ["", " ", "1abc", "-x", "a b", "a:b", "a/b", "a+b", "s3://", "é", None, 7, b"rec"],
)
def test_a_scheme_that_is_no_url_scheme_is_refused(scheme: Any) -> None:
    with pytest.raises(docmem.InvalidArgument, match="URL scheme"):
        register_backend(scheme, RecordingBackend)
    assert registry_module._registered == {}


def test_a_registered_scheme_matches_urls_case_insensitively() -> None:
    register_backend("Rec.V2-x", RecordingBackend)
    assert isinstance(open_store("REC.v2-X://x"), RecordingBackend)
    with pytest.raises(docmem.InvalidArgument, match="clobber"):
        register_backend("rec.v2-x", MemoryBackend)


def test_registered_scheme_with_plus_resolves_its_first_part() -> None:
    register_backend("rec", RecordingBackend)
    assert isinstance(open_store("rec+inner://x"), RecordingBackend)
    assert RecordingBackend.opened[-1][0] == "rec+inner://x"


@pytest.mark.parametrize("target", [dict, "collections:OrderedDict", object()])
def test_registered_non_backend_is_refused(target: Any) -> None:
    register_backend("odd", target)
    with pytest.raises(StoreNotConfigured, match="not a docmem Backend"):
        open_store("odd://")


# -- entry points ---------------------------------------------------------------------------


def test_entry_point_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    point = FakeEntryPoint("plug", RecordingBackend)
    calls = install_entry_points(monkeypatch, point)
    store = open_store("plug://bucket/prefix?x=1")
    assert isinstance(store, RecordingBackend)
    assert calls == [{"group": "docmem.backends", "name": "plug"}]
    assert point.loads == 1
    assert RecordingBackend.opened == [("plug://bucket/prefix?x=1", {})]


def test_plus_scheme_resolves_entry_point_of_first_part(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = install_entry_points(monkeypatch, FakeEntryPoint("a", RecordingBackend))
    store = open_store("a+b://bucket/key")
    assert isinstance(store, RecordingBackend)
    assert calls == [{"group": "docmem.backends", "name": "a"}]
    # The backend gets the whole URL, inner scheme included.
    assert RecordingBackend.opened == [("a+b://bucket/key", {})]


def test_entry_point_may_name_an_import_path(monkeypatch: pytest.MonkeyPatch) -> None:
    install_entry_points(
        monkeypatch, FakeEntryPoint("str", "docmem.storage.builtin.inmemory:MemoryBackend")
    )
    assert type(open_store("str://")) is MemoryBackend


def test_entry_point_loading_a_non_backend_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    install_entry_points(monkeypatch, FakeEntryPoint("bad", int))
    with pytest.raises(StoreNotConfigured, match="not a docmem Backend"):
        open_store("bad://")


def test_s3_resolves_through_its_entry_point_when_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install_entry_points(monkeypatch, FakeEntryPoint("s3", RecordingBackend))
    assert isinstance(open_store("s3://bucket"), RecordingBackend)


def test_builtins_and_registrations_come_before_entry_points(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = install_entry_points(
        monkeypatch, FakeEntryPoint("memory", RecordingBackend), FakeEntryPoint("rec", dict)
    )
    assert type(open_store("memory://")) is MemoryBackend
    register_backend("rec", MemoryBackend)
    assert type(open_store("rec://")) is MemoryBackend
    assert calls == []


# -- the scheme table: one list, and the plug-ins agree with it -------------------------------

PLUGINS = Path(__file__).resolve().parents[1] / "backends"
#: (scheme, "module:Class", distribution) for every plug-in scheme the table names.
TABLE = {
    (known.scheme, known.target, known.distribution)
    for known in registry_module.SCHEMES
    if not known.builtin
}


def _canonical(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _declared() -> set[tuple[str, str, str]]:
    """The entry points each plug-in's pyproject.toml declares, as table rows."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli")
    rows = set()
    for pyproject in sorted(PLUGINS.glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        points = project.get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
        rows |= {(name, target, _canonical(project["name"])) for name, target in points.items()}
    return rows


def test_the_scheme_table_is_sorted_and_names_each_scheme_once() -> None:
    schemes = [known.scheme for known in registry_module.SCHEMES]
    assert schemes == sorted(set(schemes))
    assert all(known.scheme == known.scheme.lower() for known in registry_module.SCHEMES)
    assert {known.scheme for known in registry_module.SCHEMES if known.builtin} == {
        "encrypted",
        "file",
        "memory",
    }


def test_every_builtin_scheme_loads_its_backend() -> None:
    for known in registry_module.SCHEMES:
        if known.builtin:
            assert issubclass(registry_module._load(known.target), Backend), known


def test_the_registry_is_importable_from_docmem_backend() -> None:
    assert docmem.backend.open_store is registry_module.open_store is docmem.open_store
    assert docmem.backend.register_backend is registry_module.register_backend
    assert docmem.backend.ENTRY_POINT_GROUP == registry_module.ENTRY_POINT_GROUP


def test_plugin_pyprojects_declare_exactly_the_table() -> None:
    assert _declared() == TABLE


def test_installed_entry_points_match_the_table() -> None:
    ours = {distribution for _, _, distribution in TABLE}
    installed = set()
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        distribution = _canonical(point.dist.name) if point.dist is not None else ""
        if distribution in ours:
            installed.add((point.name, point.value, distribution))
    present = {row[2] for row in installed}
    if not present:
        pytest.skip("no docmem plug-in is installed")
    assert installed == {row for row in TABLE if row[2] in present}


def test_docmem_fsspec_serves_directly_the_table_schemes() -> None:
    fsspec_backend = pytest.importorskip("docmem_fsspec.backend")
    served = {scheme for scheme, _, distribution in TABLE if distribution == "agent-docmem-fsspec"}
    # Every scheme but "fsspec" itself ("fsspec+<protocol>://") names its protocol directly.
    assert {*fsspec_backend.DIRECT_SCHEMES, "fsspec"} == served


# -- memory:// sharing ----------------------------------------------------------------------


def test_anonymous_memory_stores_are_private() -> None:
    first, second = open_store("memory://"), open_store("memory://")
    first.write("k", b"first", expected=None)
    assert second.read("k") is None
    assert first.url != second.url


def test_named_memory_store_is_shared_within_the_process() -> None:
    name = f"shared-{uuid.uuid4().hex}"
    first, second = open_store(f"memory://{name}"), open_store(f"memory://{name}")
    version = first.write("k", b"shared", expected=None)
    assert second.read("k") == Stored(data=b"shared", version=version)
    assert first.url == second.url == f"memory://{name}"
    other = open_store(f"memory://other-{uuid.uuid4().hex}")
    assert other.read("k") is None


def test_closing_one_memory_handle_leaves_the_others_open() -> None:
    name = f"closing-{uuid.uuid4().hex}"
    first, second = open_store(f"memory://{name}"), open_store(f"memory://{name}")
    first.write("k", b"x", expected=None)
    first.close()
    with pytest.raises(docmem.StoreUnavailable):
        first.read("k")
    stored = second.read("k")
    assert stored is not None
    assert stored.data == b"x"


# -- pickling -------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["memory://", "memory://pickled-{uuid}"])
def test_memory_store_pickles_as_its_url(url: str) -> None:
    store = open_store(url.format(uuid=uuid.uuid4().hex))
    version = store.write("k", b"data", expected=None)
    copy = pickle.loads(pickle.dumps(store))
    assert type(copy) is MemoryBackend
    assert copy.url == store.url
    assert copy.read("k") == Stored(data=b"data", version=version)


def test_file_store_pickles_as_url_and_options(tmp_path: Path) -> None:
    store = open_store((tmp_path / "s").as_uri(), lock_timeout=3, create=True)
    version = store.write("k", b"data", expected=None)
    reduced = store.__reduce__()
    assert reduced[1] == (store.url, {"lock_timeout": 3.0, "create": True})
    copy = pickle.loads(pickle.dumps(store))
    assert isinstance(copy, LocalBackend)
    assert copy.root == str(tmp_path / "s")
    assert copy.options == {"lock_timeout": 3.0, "create": True}
    assert copy.read("k") == Stored(data=b"data", version=version)


def test_pickle_reopens_through_the_registry() -> None:
    # A pickled store is (URL, options), so unpickling goes through open_store.
    store = open_store("memory://")
    assert isinstance(store, Backend)
    register_backend("memory", RecordingBackend, clobber=True)
    assert isinstance(pickle.loads(pickle.dumps(store)), RecordingBackend)


def test_cwd_does_not_leak_into_absolute_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("file:rel")
    assert isinstance(store, LocalBackend)
    assert os.path.isabs(store.root)
    assert store.url.startswith("file:///")


def test_unimportable_registration_is_store_not_configured() -> None:
    register_backend("zz", "no.such.module:Backend")
    with pytest.raises(StoreNotConfigured, match="cannot load the docmem backend"):
        open_store("zz://x")


def test_entry_point_whose_dependency_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(FakeEntryPoint):
        def load(self) -> Any:
            raise ModuleNotFoundError("No module named 'boto3'", name="boto3")

    install_entry_points(monkeypatch, Broken("s3", None))
    with pytest.raises(StoreNotConfigured, match=r"installed but cannot be imported.*boto3"):
        open_store("s3://bucket")


@pytest.mark.parametrize("timeout", ["-1", "0", "nan", "inf"])
def test_lock_timeout_must_be_positive_and_finite(tmp_path: Path, timeout: str) -> None:
    with pytest.raises(StoreNotConfigured, match="lock_timeout"):
        open_store(f"file://{tmp_path}?lock_timeout={timeout}")


def test_stray_files_in_the_root_are_not_keys(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path}?create=true")  # a new store: it writes its marker
    store.write("k", b"data", expected=None)
    (tmp_path / "README.txt").write_text("not a document")
    (tmp_path / ".DS_Store").write_bytes(b"")
    [first] = [p for p in tmp_path.iterdir() if p.is_dir()]
    (first / "notes.md").write_text("stray")
    assert list(store.keys()) == ["k"]


def test_deleting_a_missing_key_creates_nothing(tmp_path: Path) -> None:
    store = open_store(f"file://{tmp_path / 'root'}?create=true")
    store.delete("never-written")
    assert not (tmp_path / "root").exists()


@pytest.mark.slow
def test_anonymous_memory_stores_are_freed_with_their_last_handle() -> None:
    import gc

    from docmem.storage.builtin import inmemory as memory_module

    gc.collect()  # garbage earlier tests left must not be freed below during the count
    before = len(memory_module._anonymous)
    stores = [open_store("memory://") for _ in range(50)]
    for store in stores:
        store.write("k", b"x" * 1000, expected=None)
    copy = pickle.loads(pickle.dumps(stores[0]))
    assert len(memory_module._anonymous) == before + 50
    del stores, store
    gc.collect()
    assert len(memory_module._anonymous) == before + 1  # the unpickled copy keeps its space
    assert copy.read("k") is not None
