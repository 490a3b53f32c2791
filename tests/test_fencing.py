"""Fences: the store-level marker and every document's, against FileMemory; migrate and rollback."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import docmem
from docmem.backend import Backend, Stored
from docmem.cli.checks import probe_destination
from docmem.provider.document import MAX_DOCUMENT_BYTES, MemoryDocument, parse, serialize
from docmem.provider.fencing import FENCE_KEY, fence_document, listed, store_fence
from docmem.provider.journal import JournalRecord
from docmem.provider.transfer import migrate, rollback
from docmem.storage.builtin.inmemory import MemoryBackend

NAMESPACE = "tests:fence"


def bound(store: Backend, name: str) -> docmem.BoundMemory:
    scope = docmem.lock_scope(namespace=NAMESPACE, scope=name)
    return docmem.FileMemory(store).bind(scope, slot="user")


def populated(store: Backend, scopes: int = 5) -> Backend:
    for number in range(scopes):
        bound(store, f"u{number}").save(f"Note {number}.", mutation_id=f"s{number}")
    return store


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    url = "memory://" if request.param == "memory" else f"file://{tmp_path}/s?create=true"
    opened = populated(docmem.open_store(url))
    yield opened
    opened.close()


# -- the library calls -------------------------------------------------------------------------


def test_a_fenced_store_refuses_every_change_and_keeps_recalling(store: Backend) -> None:
    before = {key: store.read(key) for key in listed(store)}
    report = docmem.fence(store, "mig-1", workers=3)
    assert (report.documents, report.changed, report.unchanged) == (5, 5, 0)
    assert report.marker_changed
    assert store_fence(store) == "mig-1"
    existing, new = bound(store, "u1"), bound(store, "someone-new")
    for call in (
        lambda: existing.save("More.", mutation_id="a"),
        lambda: existing.remove(0, mutation_id="b"),
        lambda: existing.erase(mutation_id="c"),
        lambda: new.save("First note.", mutation_id="d"),
    ):
        with pytest.raises(docmem.ScopeFenced) as refused:
            call()
        assert refused.value.outcome == "not_committed"
    assert existing.recall()[0].content.endswith("0: Note 1.")
    assert new.recall() == []
    assert len(listed(store)) == 5  # no new scope
    for key, stored in before.items():
        assert parse(store.read(key).data).fence == "mig-1"  # type: ignore[union-attr]
        assert parse(store.read(key).data).revision == parse(stored.data).revision  # type: ignore[union-attr]
    lifted = docmem.unfence(store, "mig-1")
    assert (lifted.changed, store_fence(store)) == (5, None)
    assert existing.save("More.", mutation_id="a").status == "saved"
    assert new.save("First note.", mutation_id="d").status == "saved"
    unchanged = key_of("u2")
    assert store.read(unchanged).data == before[unchanged].data  # type: ignore[union-attr]


def key_of(name: str) -> str:
    return docmem.lock_scope(namespace=NAMESPACE, scope=name).storage_key


def test_fencing_again_finishes_an_interrupted_run(store: Backend) -> None:
    fence_document(store, key_of("u0"), "mig-1")  # as if a run stopped after one document
    report = docmem.fence(store, "mig-1")
    assert (report.changed, report.unchanged, report.marker_changed) == (4, 1, True)
    again = docmem.fence(store, "mig-1")
    assert (again.changed, again.unchanged, again.marker_changed) == (0, 5, False)


def test_another_migration_s_fence_is_refused(store: Backend) -> None:
    docmem.fence(store, "mig-1")
    with pytest.raises(docmem.ScopeFenced, match="mig-1"):
        docmem.fence(store, "mig-2")
    with pytest.raises(docmem.ScopeFenced, match="mig-1"):
        docmem.unfence(store, "mig-2")
    with pytest.raises(docmem.InvalidArgument):
        docmem.fence(store, "has a space")


def test_unfence_leaves_another_id_s_documents_fenced() -> None:
    store = populated(docmem.open_store("memory://"), 3)
    fence_document(store, key_of("u0"), "old-1")
    report = docmem.unfence(store, "mig-1")
    assert (report.other, report.changed) == (1, 0)
    assert parse(store.read(key_of("u0")).data).fence == "old-1"  # type: ignore[union-attr]


def test_a_corrupt_marker_refuses_new_scopes() -> None:
    store = populated(docmem.open_store("memory://"), 1)
    store.write(FENCE_KEY, b"not a document", expected=None)
    with pytest.raises(docmem.DocumentCorrupt, match=FENCE_KEY):
        bound(store, "new").save("A note.", mutation_id="n")
    assert bound(store, "u0").save("Existing scopes go on.", mutation_id="e").status == "saved"


def test_a_document_that_cannot_be_parsed_cannot_be_fenced() -> None:
    store = populated(docmem.open_store("memory://"), 1)
    store.write("memkey1_" + "B" * 43, b"\x00 ciphertext", expected=None)
    with pytest.raises(docmem.DocumentCorrupt, match="cannot be fenced"):
        docmem.fence(store, "mig-1")


def _near_the_cap() -> MemoryDocument:
    """A valid document 5 bytes under the cap, with a journal of three records."""
    journal = tuple(
        JournalRecord(f"{i:022d}", f"{i:022d}", i + 1, "save", "saved", i) for i in range(3)
    )
    entries: dict[int, str] = {}

    def document() -> MemoryDocument:
        return MemoryDocument(entries, last=max(len(entries) - 1, 2), revision=3, journal=journal)

    while len(serialize(document())) + 2010 < MAX_DOCUMENT_BYTES:
        entries[len(entries)] = "z" * 2000
    line = len(f"{len(entries)}: \n")
    entries[len(entries)] = "p" * (MAX_DOCUMENT_BYTES - len(serialize(document())) - line - 5)
    assert len(serialize(document())) == MAX_DOCUMENT_BYTES - 5
    return document()


def test_a_fence_at_the_byte_cap_drops_the_oldest_journal_records() -> None:
    store = docmem.open_store("memory://")
    key = key_of("full")
    document = _near_the_cap()
    store.write(key, serialize(document), expected=None)
    assert fence_document(store, key, "mig-1")
    stored = store.read(key)
    assert stored is not None
    assert len(stored.data) <= MAX_DOCUMENT_BYTES
    fenced = parse(stored.data)
    assert fenced.fence == "mig-1"
    assert fenced.entries == document.entries
    assert fenced.journal == document.journal[1:]


# -- racing the fence --------------------------------------------------------------------------


class Interleaved(MemoryBackend):
    """A memory:// store that runs ``before_write`` once, just before the next write of ``key``.

    It stands for another process acting between a mutation's read and its write.
    """

    def __init__(self) -> None:
        super().__init__()
        self.before_write: tuple[str, Callable[[], Any]] | None = None

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        hook, self.before_write = self.before_write, None
        if hook is not None and hook[0] == key:
            hook[1]()
        elif hook is not None:
            self.before_write = hook
        return super().write(key, data, expected=expected)


def test_a_mutation_that_loses_the_race_to_the_fence_is_refused_never_lost() -> None:
    store = Interleaved()
    populated(store, 2)
    mem = bound(store, "u0")
    before = store.read(key_of("u0"))
    store.before_write = (key_of("u0"), lambda: fence_document(store, key_of("u0"), "mig-1"))
    with pytest.raises(docmem.ScopeFenced) as refused:
        mem.save("Written as the fence went up.", mutation_id="late")
    assert refused.value.outcome == "not_committed"
    after = parse(store.read(key_of("u0")).data)  # type: ignore[union-attr]
    assert after.fence == "mig-1"
    assert after.revision == parse(before.data).revision
    assert mem.inspect("late") is None


def test_a_scope_created_as_the_marker_went_up_is_fenced_and_reported_unknown() -> None:
    store = Interleaved()
    populated(store, 1)
    new = bound(store, "brand-new")
    # The marker goes up after the save's first look at it and before its create lands.
    store.before_write = (new.scope.storage_key, lambda: docmem.fence(store, "mig-1"))
    with pytest.raises(docmem.ScopeFenced) as refused:
        new.save("Saved as the migration started.", mutation_id="n1")
    assert refused.value.outcome == "unknown"  # kept here; perhaps not carried over
    created = parse(store.read(new.scope.storage_key).data)  # type: ignore[union-attr]
    assert created.fence == "mig-1"  # nothing more lands on it
    assert new.inspect("n1") is not None


# -- migrate and rollback (library) ------------------------------------------------------------


class Unconditional(MemoryBackend):
    """A store that ignores the write condition: it must fail the preflight probe."""

    def write(self, key: str, data: bytes, *, expected: str | None) -> str:
        current = self.read(key)
        return super().write(key, data, expected=current.version if current else None)


def test_migrate_moves_everything_and_rollback_brings_the_source_back() -> None:
    source = populated(docmem.open_store("memory://"), 6)
    destination = docmem.open_store("memory://")
    report = migrate(source, destination, "mig-1", probe=probe_destination, workers=2)
    assert (report.rounds, report.resumed, report.verified.ok) == (1, False, True)
    assert report.imported.created == 6
    assert report.destination == destination.url
    assert store_fence(source) == "mig-1"
    assert store_fence(destination) is None
    for key in listed(source):
        assert parse(destination.read(key).data).fence is None  # type: ignore[union-attr]
    again = migrate(source, destination, "mig-1", probe=probe_destination)
    assert (again.resumed, again.imported.skipped) == (True, 6)
    lifted = rollback(source, destination, "mig-1")
    assert (lifted.copies, lifted.unfenced.changed) == (6, 6)
    assert bound(source, "u0").save("Back on the source.", mutation_id="b").status == "saved"


def test_migrate_refuses_a_non_empty_destination_and_one_failing_its_probe() -> None:
    source = populated(docmem.open_store("memory://"), 2)
    occupied = populated(docmem.open_store("memory://"), 1)
    with pytest.raises(docmem.TransferRefused, match="never merges"):
        migrate(source, occupied, "mig-1", probe=probe_destination)
    with pytest.raises(docmem.StoreUnavailable, match="conditional writes"):
        migrate(source, Unconditional(), "mig-1", probe=probe_destination)
    assert store_fence(source) is None  # refused before the fence
    assert bound(source, "u0").save("Still writable.", mutation_id="w").status == "saved"


def test_rollback_refuses_once_the_destination_took_writes() -> None:
    source = populated(docmem.open_store("memory://"), 3)
    destination = docmem.open_store("memory://")
    migrate(source, destination, "mig-1", probe=probe_destination)
    bound(destination, "u1").save("Written after the switch.", mutation_id="x")
    with pytest.raises(docmem.TransferRefused, match="revision 1 became 2"):
        rollback(source, destination, "mig-1")
    assert store_fence(source) == "mig-1"
    other = docmem.open_store("memory://")
    migrate(populated(docmem.open_store("memory://"), 1), other, "mig-2", probe=probe_destination)
    bound(other, "a-new-scope").save("New there.", mutation_id="y")
    with pytest.raises(docmem.TransferRefused, match="scopes the source does not"):
        rollback(populated(docmem.open_store("memory://"), 1), other, "mig-2")


class CreatesDuringExport(MemoryBackend):
    """A store where, on the first export read, another process creates a scope (fenced by it)."""

    def __init__(self) -> None:
        super().__init__()
        self.late: Callable[[], None] | None = None

    def read(self, key: str) -> Stored | None:
        late, self.late = self.late, None
        if late is not None and key != FENCE_KEY:
            late()
        return super().read(key)


def test_a_scope_that_appears_during_the_migration_is_carried_by_another_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = CreatesDuringExport()
    populated(source, 3)
    destination = docmem.open_store("memory://")

    def create_late() -> None:
        data = serialize(MemoryDocument({0: "Late."}, last=0, revision=1, fence="mig-1"))
        MemoryBackend.write(source, key_of("late"), data, expected=None)

    original = docmem.fence

    def fence_then_arm(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        source.late = create_late
        return result

    monkeypatch.setattr(sys.modules["docmem.provider.transfer.migration"], "fence", fence_then_arm)
    report = migrate(source, destination, "mig-1", probe=probe_destination)
    assert report.rounds == 2
    assert key_of("late") in listed(destination)
    assert report.verified.store_documents == 4


class ListsVersions(MemoryBackend):
    """A memory:// store that lists its versions, as an S3 listing carries ETags."""

    def listed_versions(self) -> Iterator[tuple[str, str]]:
        return iter([(key, self.read(key).version) for key in list(self.keys())])  # type: ignore[union-attr]


def test_a_store_that_lists_versions_is_verified_without_reading_back() -> None:
    source = populated(docmem.open_store("memory://"), 4)
    destination = ListsVersions()
    report = migrate(source, destination, "mig-1", probe=probe_destination)
    assert report.verified.ok
    assert report.verified.method == "versions"
    forced = migrate(source, destination, "mig-1", probe=probe_destination, read_back=True)
    assert forced.verified.method == "read"
    assert forced.verified.store_digest == report.verified.store_digest


def test_a_version_that_changed_after_the_import_is_looked_at_by_reading() -> None:
    from docmem.provider.transfer.importer import import_checked
    from docmem.provider.transfer.reader import check_export
    from docmem.provider.transfer.verify import verify_versions

    source = populated(docmem.open_store("memory://"), 3)
    file = io.BytesIO()
    docmem.export_store(source, file)
    summary = check_export(file)
    destination = ListsVersions()
    versions: dict[str, str] = {}
    import_checked(destination, file, summary, versions=versions)
    bound(destination, "u1").save("Written after the import.", mutation_id="late")
    report = verify_versions(destination, file, summary, versions)
    assert report is not None
    assert (report.method, report.different, report.ok) == ("read", 1, False)
    assert verify_versions(docmem.open_store("memory://"), file, summary, versions) is None


def test_a_store_is_never_migrated_into_itself(tmp_path: Path) -> None:
    source = populated(docmem.open_store(f"file://{tmp_path}/s?create=true"), 1)
    itself = docmem.open_store(f"file://{tmp_path}/s")
    with pytest.raises(docmem.InvalidArgument, match="same store"):
        migrate(source, itself, "mig-1", probe=probe_destination)
    assert store_fence(source) is None


class MarkerReadFails(MemoryBackend):
    """A memory:// store whose fence marker cannot be read after the first look at it."""

    def __init__(self) -> None:
        super().__init__()
        self.marker_reads = 0

    def read(self, key: str) -> Stored | None:
        if key == FENCE_KEY:
            self.marker_reads += 1
            if self.marker_reads > 1:
                raise docmem.StoreUnavailable("the store could not be reached")
        return super().read(key)


def test_a_failed_look_at_the_marker_after_a_create_is_an_unknown_outcome() -> None:
    store = MarkerReadFails()
    mem = bound(store, "new")
    with pytest.raises(docmem.StoreUnavailable) as failed:
        mem.save("A first note.", mutation_id="c1")
    assert failed.value.outcome == "unknown"  # created; whether a fence went up is not known
    assert mem.inspect("c1") is not None
    assert mem.save("A first note.", mutation_id="c1").status == "saved"  # settled by the journal
