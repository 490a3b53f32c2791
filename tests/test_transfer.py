"""docmem-export/1: the golden vector, round trips, and every refusal of a bad file or store."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import docmem
import docmem.provider.fencing
from docmem.provider.document import MemoryDocument, parse, serialize
from docmem.provider.fencing import FENCE_KEY, listed, unfenced
from docmem.provider.transfer import (
    check_export,
    encrypts,
    export_store,
    import_store,
    migrate,
    plan_import,
    verify_store,
)
from docmem.provider.transfer.files import published
from docmem.testing.redaction import CANARY, all_text

VECTOR = json.loads((Path(__file__).parent / "vectors" / "export.json").read_text("utf-8"))


def golden_store() -> docmem.Backend:
    store = docmem.open_store(VECTOR["source"])
    for key in list(store.keys()):
        store.delete(key)
    for document in VECTOR["documents"]:
        key = docmem.lock_scope(namespace="golden:export", scope=document["scope"]).storage_key
        assert key == document["key"]
        store.write(key, _bytes(document), expected=None)
    return store


def _bytes(document: dict[str, str]) -> bytes:
    if "text" in document:
        return document["text"].encode("utf-8")
    return base64.b64decode(document["base64"])


def exported(store: docmem.Backend, **options: object) -> bytes:
    out = io.BytesIO()
    export_store(store, out, **options)  # type: ignore[arg-type]
    return out.getvalue()


def reference_logical_digest(documents: dict[str, bytes]) -> str:
    """docs/export-format.md, "The logical digest", written out independently of docmem."""
    text = b"docmem-export/1 logical digest\n"
    for key in sorted(documents):
        data = documents[key]
        if data.startswith(b"<!-- docmem/1 ") and b',"fence":"' in data.split(b"\n", 1)[0]:
            header, rest = data.split(b"\n", 1)
            start = header.index(b',"fence":"')
            end = header.index(b'"', start + len(b',"fence":"')) + 1
            data = header[:start] + header[end:] + b"\n" + rest
        text += key.encode() + b" " + hashlib.sha256(data).hexdigest().encode() + b"\n"
    return hashlib.sha256(text).hexdigest()


# -- the golden vector -------------------------------------------------------------------------


def test_the_golden_documents_export_to_the_golden_file() -> None:
    data = exported(golden_store(), created=VECTOR["created"])
    assert data.decode("utf-8") == VECTOR["file"]
    trailer = json.loads(data.splitlines()[-1])
    assert trailer["logical_digest"] == VECTOR["logical_digest"]
    assert (
        trailer["sha256"] == hashlib.sha256(data[: data.rindex(b'{"type":"trailer"')]).hexdigest()
    )
    documents = {d["key"]: _bytes(d) for d in VECTOR["documents"]}
    assert reference_logical_digest(documents) == VECTOR["logical_digest"]


def test_the_golden_file_passes_every_check() -> None:
    summary = check_export(io.BytesIO(VECTOR["file"].encode("utf-8")))
    assert (summary.documents, summary.bytes) == (
        4,
        sum(len(_bytes(d)) for d in VECTOR["documents"]),
    )
    assert summary.logical_digest == VECTOR["logical_digest"]
    assert (summary.source, summary.created, summary.fenced) == (
        VECTOR["source"],
        VECTOR["created"],
        False,
    )


def test_a_fenced_source_and_its_unfenced_copy_have_the_same_digest() -> None:
    source = golden_store()  # carol's document is fenced, by "mig-2026.11:1"
    fenced_file = exported(source, created=VECTOR["created"])
    assert json.loads(fenced_file.splitlines()[-1])["logical_digest"] == VECTOR["logical_digest"]
    copy = docmem.open_store("memory://")
    report = import_store(copy, io.BytesIO(fenced_file))
    assert (report.created, report.skipped) == (4, 0)
    assert FENCE_KEY not in list(copy.keys())
    for document in VECTOR["documents"]:
        stored = copy.read(document["key"])
        assert stored is not None
        assert stored.data == unfenced(_bytes(document))  # fences cleared on the way in
        if "text" in document:
            assert parse(stored.data).fence is None
    copied = exported(copy, created=VECTOR["created"])
    assert json.loads(copied.splitlines()[-1])["logical_digest"] == VECTOR["logical_digest"]


# -- round trips -------------------------------------------------------------------------------


def populated(store: docmem.Backend, scopes: int = 12) -> docmem.Backend:
    memory = docmem.FileMemory(store)
    for number in range(scopes):
        bound = memory.bind(docmem.lock_scope(namespace="t:x", scope=f"u{number}"), slot="user")
        bound.save(f"Note {number}.", mutation_id=f"s{number}")
        bound.save(f"Second {number}.", mutation_id=f"t{number}")
        if number % 4 == 0:
            bound.erase(mutation_id=f"e{number}")  # header only, last kept
    return store


def test_a_round_trip_is_byte_identical_and_erased_indexes_are_kept(tmp_path: Path) -> None:
    source = populated(docmem.open_store(f"file://{tmp_path}/a?create=true"))
    destination = docmem.open_store(f"file://{tmp_path}/b?create=true")
    file = io.BytesIO(exported(source, workers=3))
    report = import_store(destination, file, workers=3)
    assert (report.documents, report.created) == (12, 12)
    for key in listed(source):
        assert destination.read(key).data == source.read(key).data  # type: ignore[union-attr]
    erased = docmem.lock_scope(namespace="t:x", scope="u0")
    again = docmem.FileMemory(destination).bind(erased, slot="user")
    assert again.save("After the move.", mutation_id="n").index == 2  # indexes never reused
    assert verify_store(destination, file).different == 1


def test_running_an_import_again_skips_what_is_there(tmp_path: Path) -> None:
    source = populated(docmem.open_store("memory://"))
    file = io.BytesIO(exported(source))
    destination = docmem.open_store(f"file://{tmp_path}?create=true")
    first = import_store(destination, file)
    second = import_store(destination, file)
    assert (first.created, first.skipped, second.created, second.skipped) == (12, 0, 0, 12)
    assert verify_store(destination, file).ok


def test_a_key_with_other_bytes_stops_the_import_and_is_never_overwritten() -> None:
    source = populated(docmem.open_store("memory://"), scopes=3)
    file = io.BytesIO(exported(source))
    keys = sorted(source.keys())
    destination = docmem.open_store("memory://")
    other = serialize(MemoryDocument({0: "Someone else's."}, last=0, revision=1))
    destination.write(keys[1], other, expected=None)
    with pytest.raises(docmem.TransferRefused, match=keys[1]):
        import_store(destination, file, create_missing=True, workers=1)
    assert destination.read(keys[1]).data == other  # type: ignore[union-attr]
    assert sorted(destination.keys()) == keys[:2]  # the one before it, not the one after


def test_a_store_that_holds_documents_gets_none_it_lacks_unasked() -> None:
    source = populated(docmem.open_store("memory://"), scopes=4)
    file = io.BytesIO(exported(source))
    keys = sorted(source.keys())
    source.delete(keys[2])  # an operator's purge: the store keeps no trace of the scope
    plan = plan_import(source, file, check_export(file))
    assert (plan.store_documents, plan.missing, plan.missing_keys, plan.recreates) == (
        3,
        1,
        (keys[2],),
        True,
    )
    with pytest.raises(docmem.TransferRefused, match=r"lacks 1 document of the export \(first: "):
        import_store(source, file)
    assert source.read(keys[2]) is None
    again = import_store(source, file, create_missing=True)
    assert (again.created, again.skipped) == (1, 3)
    empty = plan_import(docmem.open_store("memory://"), file, check_export(file))
    assert (empty.missing, empty.recreates) == (4, False)  # into an empty store: nothing to ask


def test_verify_names_what_is_missing_different_and_extra() -> None:
    source = populated(docmem.open_store("memory://"), scopes=4)
    file = io.BytesIO(exported(source))
    copy = docmem.open_store("memory://")
    import_store(copy, file)
    keys = sorted(copy.keys())
    copy.delete(keys[0])
    docmem.FileMemory(copy).bind(docmem.lock_scope(namespace="t:x", scope="u1"), slot="user").save(
        "Changed after the import.", mutation_id="c"
    )
    docmem.FileMemory(copy).bind(docmem.lock_scope(namespace="t:x", scope="new"), slot="user").save(
        "A new scope.", mutation_id="n"
    )
    report = verify_store(copy, file)
    assert not report.ok
    assert (report.missing, report.different, report.extra) == (1, 1, 1)
    assert report.missing_keys == (keys[0],)
    assert report.logical_digest != report.store_digest
    with pytest.raises(docmem.TransferRefused, match="1 missing"):
        raise report.refusal()


def test_a_document_that_is_no_docmem_document_travels_as_base64() -> None:
    source = docmem.open_store("memory://")
    blob = bytes(range(256))
    source.write("memkey1_" + "A" * 43, blob, expected=None)
    data = exported(source)
    record = json.loads(data.splitlines()[1])
    assert (record["encoding"], record["revision"]) == ("base64", None)
    copy = docmem.open_store("memory://")
    import_store(copy, io.BytesIO(data))
    assert copy.read("memkey1_" + "A" * 43).data == blob  # type: ignore[union-attr]


def test_an_import_into_a_fenced_store_is_refused() -> None:
    file = io.BytesIO(exported(populated(docmem.open_store("memory://"), scopes=2)))
    destination = docmem.open_store("memory://")
    docmem.fence(destination, "mig-x")
    with pytest.raises(docmem.ScopeFenced):
        import_store(destination, file)
    assert list(destination.keys()) == [FENCE_KEY]


# -- a truncated or tampered file is refused with nothing written ------------------------------


def _lines() -> list[bytes]:
    return VECTOR["file"].encode("utf-8").splitlines(keepends=True)


def _one_byte_of_one_document(lines: list[bytes]) -> bytes:
    lines[4] = lines[4].replace(b"Prefers metric", b"Prefers metrik")
    return b"".join(lines)


def _dropped_record(lines: list[bytes]) -> bytes:
    del lines[2]
    return b"".join(lines)


def _changed_trailer_digest(lines: list[bytes]) -> bytes:
    trailer = json.loads(lines[-1])
    trailer["logical_digest"] = "0" * 64
    lines[-1] = json.dumps(trailer, separators=(",", ":")).encode() + b"\n"
    return b"".join(lines)


def _changed_trailer_count(lines: list[bytes]) -> bytes:
    lines[-1] = lines[-1].replace(b'"documents":4', b'"documents":3')
    return b"".join(lines)


def _reordered_record(lines: list[bytes]) -> bytes:
    lines[2], lines[3] = lines[3], lines[2]
    return b"".join(lines)


def _no_trailer(lines: list[bytes]) -> bytes:
    return b"".join(lines[:-1])


def _cut_mid_line(lines: list[bytes]) -> bytes:
    whole = b"".join(lines)
    return whole[: len(whole) - len(lines[-1]) - 20]


def _changed_header(lines: list[bytes]) -> bytes:
    lines[0] = lines[0].replace(b"memory://export-golden", b"memory://somewhere-else")
    return b"".join(lines)


def _another_format(lines: list[bytes]) -> bytes:
    lines[0] = lines[0].replace(b"docmem-export/1", b"docmem-export/2")
    return b"".join(lines)


def _reformatted_line(lines: list[bytes]) -> bytes:
    lines[2] = json.dumps(json.loads(lines[2])).encode() + b"\n"  # same values, spaces added
    return b"".join(lines)


def _record_after_the_trailer(lines: list[bytes]) -> bytes:
    return b"".join([*lines, lines[2]])


def _reserved_key(lines: list[bytes]) -> bytes:
    record = json.loads(lines[1])
    record["key"] = FENCE_KEY
    lines[1] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    return b"".join(lines)


TAMPERED: dict[str, Callable[[list[bytes]], bytes]] = {
    "one byte of one document": _one_byte_of_one_document,
    "a dropped record": _dropped_record,
    "a changed trailer digest": _changed_trailer_digest,
    "a changed trailer count": _changed_trailer_count,
    "a reordered record": _reordered_record,
    "no trailer (truncated)": _no_trailer,
    "cut in the middle of a line": _cut_mid_line,
    "a changed header": _changed_header,
    "another format version": _another_format,
    "a line not in canonical form": _reformatted_line,
    "a record after the trailer": _record_after_the_trailer,
    "the reserved key": _reserved_key,
    "empty": lambda lines: b"",
}


@pytest.mark.parametrize("how", TAMPERED)
def test_a_tampered_or_truncated_file_is_refused_with_nothing_written(
    how: str, tmp_path: Path
) -> None:
    data = TAMPERED[how](_lines())
    destination = docmem.open_store(f"file://{tmp_path}?create=true")
    with pytest.raises(docmem.ExportInvalid) as refused:
        import_store(destination, io.BytesIO(data))
    assert refused.value.code == "export_invalid"
    assert "Prefers" not in refused.value.message  # never the content
    assert list(destination.keys()) == []
    with pytest.raises(docmem.ExportInvalid):
        verify_store(destination, io.BytesIO(data))


def test_an_export_is_read_from_a_file_not_a_pipe() -> None:
    class Pipe(io.BytesIO):
        def seekable(self) -> bool:
            return False

    with pytest.raises(docmem.InvalidArgument, match="not a pipe"):
        import_store(docmem.open_store("memory://"), Pipe(VECTOR["file"].encode()))


def _canary_file() -> bytes:
    store = docmem.open_store("memory://")
    mem = docmem.FileMemory(store).bind(docmem.lock_scope(namespace="t:c", scope="u"), slot="user")
    mem.save(f"Remember {CANARY}.", mutation_id="c")
    return exported(store)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda data: data.replace(b"Remember", b"Rememper"),  # the digest no longer matches
        lambda data: data.replace(b'"encoding":"text"', b'"encoding":"base64"'),
        lambda data: data.replace(b'"data":"', b'"data":"\\ud800'),  # a lone surrogate
        lambda data: data.replace(b'"revision":1', b'"revision":"' + CANARY.encode() + b'"'),
        lambda data: data.replace(b"Remember", b'"' + CANARY.encode()),  # malformed JSON
    ],
)
def test_no_refusal_carries_the_memory_text(tamper: Callable[[bytes], bytes]) -> None:
    data = tamper(_canary_file())
    with pytest.raises(docmem.ExportInvalid) as refused:
        import_store(docmem.open_store("memory://"), io.BytesIO(data))
    assert CANARY not in all_text(refused.value)


# -- files written whole; copies out of encryption only when asked ------------------------------


def test_a_published_file_leaves_the_path_as_it_was_when_the_write_fails(tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    path.write_bytes(b"the older export\n")

    def interrupted() -> None:
        with published(path) as file:
            file.write(b"half of a new one")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert path.read_bytes() == b"the older export\n"
    assert os.listdir(tmp_path) == ["export.jsonl"]
    with pytest.raises(docmem.InvalidArgument, match="its folder does not exist"):
        published(tmp_path / "missing" / "x.jsonl").__enter__()


def test_a_migration_out_of_encryption_is_refused_unless_asked() -> None:
    from docmem.storage.encryption import Keyring, LocalKey, encrypted

    keyring = Keyring([LocalKey("k1", bytes(range(32)))])
    source = encrypted(docmem.open_store("memory://"), keyring)
    populated(source, scopes=2)
    plain = docmem.open_store("memory://")
    assert (encrypts(source), encrypts(plain)) == (True, False)
    with pytest.raises(docmem.TransferRefused, match="source store is encrypted"):
        migrate(source, plain, "mig-1", probe=lambda store: None)
    assert docmem.provider.fencing.store_fence(source) is None
    assert list(plain.keys()) == []
    report = migrate(source, plain, "mig-1", probe=lambda store: None, decrypt=True)
    assert (report.decrypted, report.imported.created) == (True, 2)
    sealed = encrypted(docmem.open_store("memory://"), keyring)
    docmem.unfence(source, "mig-1")
    assert migrate(source, sealed, "mig-2", probe=lambda store: None).decrypted is False
