"""Unit tests of the commit log's pure functions: names, listing records, and decisions.

No store is involved: listings are built from hand-made ``ls(detail=True)``
records (shaped like those of s3fs, adlfs, gcsfs and the local filesystem) or
straight from :class:`Entry` values.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from docmem.errors import DocumentCorrupt
from docmem_fsspec.commitlog import (
    Entry,
    Envelope,
    Kind,
    Leftover,
    Listing,
    Parent,
    Verdict,
    digest,
    object_name,
    parse_version,
    unwrap,
    wrap,
)

WHEN = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
EPOCH = WHEN.timestamp()


def entry(revision: int, kind: Kind = Kind.VERSION, at: float | None = 0.0) -> Entry:
    """An object of key ``k`` with revision ``revision``, stamped ``at``."""
    return Entry(
        revision=revision,
        kind=kind,
        path=f"bucket/root/k/{object_name(revision, kind)}",
        size=0 if kind is not Kind.VERSION else 5,
        modified=at,
    )


def version(revision: int, at: float | None = 0.0) -> Entry:
    return entry(revision, Kind.VERSION, at)


def tombstone(revision: int, at: float | None = 0.0) -> Entry:
    return entry(revision, Kind.TOMBSTONE, at)


def purge(revision: int, at: float | None = 0.0) -> Entry:
    return entry(revision, Kind.PURGE, at)


def listing(*entries: Entry) -> Listing:
    return Listing(entries)


def revisions(entries: list[Entry]) -> list[tuple[int, Kind]]:
    return [(found.revision, found.kind) for found in entries]


# --- object names ------------------------------------------------------------


@pytest.mark.parametrize("revision", [0, 1, 15, 16, 255, 0xDEADBEEF, 2**63, 2**64 - 1])
def test_version_names_round_trip(revision: int) -> None:
    name = object_name(revision)
    assert len(name) == len("0000000000000000.md")
    assert name.endswith(".md")
    assert parse_version(name) == revision


@pytest.mark.parametrize(
    ("revision", "kind", "name"),
    [
        (1, Kind.VERSION, "0000000000000001.md"),
        (0xAB, Kind.TOMBSTONE, "00000000000000ab.tombstone"),
        (2**64 - 1, Kind.PURGE, "ffffffffffffffff.purge"),
    ],
)
def test_object_name_is_sixteen_lowercase_hex_digits_and_kind(
    revision: int, kind: Kind, name: str
) -> None:
    assert object_name(revision, kind) == name


def test_object_name_defaults_to_a_version() -> None:
    assert object_name(3) == object_name(3, Kind.VERSION) == "0000000000000003.md"


@pytest.mark.parametrize(
    "token",
    [
        "0000000000000003.tombstone",
        "0000000000000003.purge",
        "000000000000000A.md",
        "00000000000000aB.md",
        "0000000000000003.MD",
        "000000000000003.md",
        "00000000000000003.md",
        "0000000000000003",
        "0000000000000003.md.tmp",
        ".tmp-0000000000000003.md",
        " 0000000000000003.md",
        "0000000000000003.md\n",
        "0x00000000000003.md",
        "-000000000000003.md",
        "0",
        "",
        "k/0000000000000003.md",
        "bucket/root/k/0000000000000003.md",
        "/0000000000000003.md",
    ],
)
def test_parse_version_refuses_anything_but_a_version_name(token: str) -> None:
    assert parse_version(token) is None


@pytest.mark.parametrize("token", [None, 3, 3.0, b"0000000000000003.md", ["0000000000000003.md"]])
def test_parse_version_refuses_non_strings(token: Any) -> None:
    assert parse_version(token) is None


def test_entry_name_is_its_object_name() -> None:
    assert version(7).name == "0000000000000007.md"
    assert tombstone(8).name == "0000000000000008.tombstone"
    assert purge(9).name == "0000000000000009.purge"


# --- parsing ls(detail=True) records ----------------------------------------

NAME = "0000000000000003.md"


def s3fs_record(name: str = f"bucket/root/k/{NAME}", **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "Key": name,
        "LastModified": WHEN,
        "ETag": '"5d41402abc4b2a76b9719d911017c592"',
        "Size": 5,
        "StorageClass": "STANDARD",
        "type": "file",
        "size": 5,
        "name": name,
    }
    record.update(extra)
    return record


def adlfs_record(name: str = f"container/root/k/{NAME}", **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": name,
        "size": 5,
        "type": "file",
        "creation_time": WHEN - timedelta(hours=1),
        "last_modified": WHEN,
        "etag": "0x8DC6A0F5D1E2F3A",
        "content_settings": {"content_type": "application/octet-stream"},
        "metadata": {},
        "deleted": None,
    }
    record.update(extra)
    return record


def local_record(name: str = f"/tmp/docmem/root/k/{NAME}", **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": name,
        "size": 5,
        "type": "file",
        "created": EPOCH - 3600.0,
        "islink": False,
        "mode": 0o100644,
        "uid": 1000,
        "gid": 1000,
        "mtime": EPOCH + 0.25,
        "ino": 123456,
        "nlink": 1,
    }
    record.update(extra)
    return record


def gcsfs_record(name: str = f"bucket/root/k/{NAME}", **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "kind": "storage#object",
        "id": f"{name}/1714564800123456",
        "name": name,
        "bucket": "bucket",
        "generation": "1714564800123456",
        "contentType": "application/octet-stream",
        "size": 5,
        "timeCreated": "2024-05-01T11:00:00.000Z",
        "updated": "2024-05-01T12:00:00.500Z",
        "type": "file",
    }
    record.update(extra)
    return record


@pytest.mark.parametrize(
    ("record", "modified"),
    [
        pytest.param(s3fs_record(), EPOCH, id="s3fs"),
        pytest.param(adlfs_record(), EPOCH, id="adlfs"),
        pytest.param(local_record(), EPOCH + 0.25, id="local"),
        pytest.param(gcsfs_record(), EPOCH + 0.5, id="gcsfs"),
    ],
)
def test_from_info_reads_each_implementations_record(
    record: dict[str, Any], modified: float
) -> None:
    parsed = Entry.from_info(record)
    assert parsed is not None
    assert parsed == Entry(
        revision=3, kind=Kind.VERSION, path=record["name"], size=5, modified=modified
    )
    assert parsed.name == NAME


@pytest.mark.parametrize(
    ("suffix", "kind"),
    [("md", Kind.VERSION), ("tombstone", Kind.TOMBSTONE), ("purge", Kind.PURGE)],
)
def test_from_info_reads_each_kind(suffix: str, kind: Kind) -> None:
    parsed = Entry.from_info(s3fs_record(f"bucket/root/k/00000000000000ff.{suffix}", size=0))
    assert parsed is not None
    assert (parsed.revision, parsed.kind, parsed.size) == (255, kind, 0)


@pytest.fixture
def far_from_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local time zone far from UTC, so a naive time read as local time is caught."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is not available on this platform")
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("far_from_utc")
def test_from_info_treats_a_naive_datetime_as_utc() -> None:
    naive = WHEN.replace(tzinfo=None)
    parsed = Entry.from_info(s3fs_record(LastModified=naive))
    assert parsed is not None
    assert parsed.modified == EPOCH


def test_from_info_converts_an_aware_datetime_in_another_zone() -> None:
    elsewhere = WHEN.astimezone(timezone(timedelta(hours=-7)))
    parsed = Entry.from_info(adlfs_record(last_modified=elsewhere))
    assert parsed is not None
    assert parsed.modified == EPOCH


@pytest.mark.usefixtures("far_from_utc")
def test_from_info_reads_an_iso_string_without_a_zone_as_utc() -> None:
    parsed = Entry.from_info(gcsfs_record(updated="2024-05-01T12:00:00"))
    assert parsed is not None
    assert parsed.modified == EPOCH


def test_from_info_reads_gcsfs_mtime_datetime() -> None:
    parsed = Entry.from_info(gcsfs_record(mtime=WHEN, updated="2024-05-01T13:00:00Z"))
    assert parsed is not None
    assert parsed.modified == EPOCH


@pytest.mark.parametrize(
    "record",
    [
        pytest.param({"name": f"bucket/root/k/{NAME}", "type": "file", "size": 5}, id="bare"),
        pytest.param(
            {"name": f"bucket/root/k/{NAME}", "size": 5, "updated": "yesterday"},
            id="unparseable-string",
        ),
        pytest.param(
            {"name": f"bucket/root/k/{NAME}", "size": 5, "mtime": True}, id="bool-is-no-time"
        ),
        pytest.param({"name": f"bucket/root/k/{NAME}", "size": 5, "mtime": None}, id="none"),
    ],
)
def test_from_info_without_a_timestamp_gives_none(record: dict[str, Any]) -> None:
    parsed = Entry.from_info(record)
    assert parsed is not None
    assert parsed.revision == 3
    assert parsed.modified is None


def test_from_info_skips_an_unparseable_field_for_the_next_one() -> None:
    parsed = Entry.from_info(local_record(LastModified="not a date"))
    assert parsed is not None
    assert parsed.modified == EPOCH + 0.25


@pytest.mark.parametrize("size", [None, "missing"])
def test_from_info_without_a_size_gives_zero(size: str | None) -> None:
    record = s3fs_record(f"bucket/root/k/{object_name(4, Kind.TOMBSTONE)}")
    if size is None:
        record["size"] = None
    else:
        del record["size"]
    parsed = Entry.from_info(record)
    assert parsed is not None
    assert parsed.size == 0


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(s3fs_record("bucket/root/k/.tmp-abc"), id="temporary"),
        pytest.param(local_record(f"/tmp/docmem/root/k/.tmp-{NAME}"), id="temporary-of-a-version"),
        pytest.param(s3fs_record("bucket/root/k/notes.txt"), id="notes"),
        pytest.param(s3fs_record(f"bucket/root/k/{NAME}.tmp"), id="suffixed"),
        pytest.param(s3fs_record("bucket/root/k/000000000000000A.md"), id="uppercase"),
        pytest.param(s3fs_record("bucket/root/k/0000000000000003.txt"), id="other-kind"),
        pytest.param(
            {"Key": "bucket/root/k/sub", "name": "bucket/root/k/sub", "type": "directory"},
            id="s3fs-directory",
        ),
        pytest.param(
            {"name": f"bucket/root/k/{NAME}", "type": "directory", "size": 0},
            id="directory-with-a-log-name",
        ),
        pytest.param(
            {"name": f"container/root/k/{NAME}/", "type": "directory", "size": 0},
            id="directory-with-a-trailing-slash",
        ),
        pytest.param(
            {"name": "container/root/k/", "type": "directory", "size": 0}, id="the-key-itself"
        ),
        pytest.param({"size": 5, "type": "file"}, id="no-name"),
        pytest.param({"name": "", "type": "file"}, id="empty-name"),
    ],
)
def test_from_info_gives_none_for_foreign_records(record: dict[str, Any]) -> None:
    assert Entry.from_info(record) is None


def test_listing_from_infos_keeps_log_objects_sorted_and_drops_the_rest() -> None:
    infos = [
        local_record(f"/r/k/{object_name(2)}"),
        local_record("/r/k/.tmp-abc"),
        local_record(f"/r/k/{object_name(1, Kind.TOMBSTONE)}", size=0),
        local_record(f"/r/k/{object_name(10)}"),
        {"name": "/r/k/sub", "type": "directory", "size": 0},
        local_record(f"/r/k/{object_name(1)}"),
        # Listed by name prefix, as adlfs does: another key's objects must not count.
        local_record(f"/r/k1/{object_name(30)}"),
        local_record(f"/r/{object_name(40)}"),
    ]
    parsed = Listing.from_infos(infos, folder="/r/k")
    assert revisions(list(parsed.entries)) == [
        (1, Kind.VERSION),
        (1, Kind.TOMBSTONE),
        (2, Kind.VERSION),
        (10, Kind.VERSION),
    ]
    assert [found.revision for found in parsed.versions] == [1, 2, 10]


# --- Listing: current, top, find ---------------------------------------------


def test_listing_sorts_entries_by_revision_then_kind() -> None:
    log = listing(tombstone(5), version(3), purge(3), version(1), version(5))
    assert revisions(list(log.entries)) == [
        (1, Kind.VERSION),
        (3, Kind.VERSION),
        (3, Kind.PURGE),
        (5, Kind.VERSION),
        (5, Kind.TOMBSTONE),
    ]
    assert [found.revision for found in log.versions] == [1, 3, 5]


def test_current_of_an_empty_listing_is_none() -> None:
    assert listing().current is None


def test_current_without_versions_is_none() -> None:
    assert listing(tombstone(4), purge(2)).current is None


def test_current_is_the_newest_version() -> None:
    assert listing(version(2), version(11), version(1)).current == version(11)


@pytest.mark.parametrize("at", [3, 4, 100])
def test_a_tombstone_at_or_above_the_newest_version_hides_it(at: int) -> None:
    assert listing(version(1), version(3), tombstone(at)).current is None


def test_a_tombstone_below_the_newest_version_does_not_hide_it() -> None:
    assert listing(version(1), tombstone(2), version(3)).current == version(3)


@pytest.mark.parametrize("at", [2, 3, 4])
def test_a_purge_marker_never_hides_the_newest_version(at: int) -> None:
    assert listing(version(1), version(3), purge(at)).current == version(3)


@pytest.mark.parametrize(
    ("entries", "top"),
    [
        ((), 0),
        ((version(1),), 1),
        ((version(1), version(3)), 3),
        ((version(1), tombstone(4)), 4),
        ((version(2), purge(7)), 7),
        ((tombstone(9),), 9),
        ((tombstone(2), version(5)), 5),
    ],
)
def test_top_is_the_highest_revision_of_any_object(entries: tuple[Entry, ...], top: int) -> None:
    assert Listing(entries).top == top


def test_find_looks_up_versions_only() -> None:
    log = listing(version(1), version(3), tombstone(4), purge(2))
    assert log.find(3) == version(3)
    assert log.find(1) == version(1)
    assert log.find(2) is None
    assert log.find(4) is None
    assert listing().find(1) is None


# --- envelopes: what each version records about its parent -------------------

DOC = b'<!-- docmem/1 {"last":-1,"rev":1,"ops":[]} -->\n'
PARENT = Parent(revision=1, digest=digest(b"the parent object"))


@pytest.mark.parametrize("parent", [PARENT, None], ids=["on-a-version", "on-nothing"])
@pytest.mark.parametrize("data", [DOC, b"", b"\x00\xff binary", wrap(b"nested", PARENT)])
def test_wrap_and_unwrap_round_trip(parent: Parent | None, data: bytes) -> None:
    envelope, unwrapped = unwrap(wrap(data, parent))
    assert envelope == Envelope(parent=parent)
    assert unwrapped == data


def test_the_envelope_is_one_readable_line() -> None:
    blob = wrap(DOC, PARENT)
    line, _, rest = blob.partition(b"\n")
    assert line == (b'<!-- docmem-fsspec/2 {"parent":[1,"' + PARENT.digest.encode() + b'"]} -->')
    assert rest == DOC
    assert wrap(DOC, None).startswith(b'<!-- docmem-fsspec/2 {"parent":null} -->\n')


@pytest.mark.parametrize("blob", [DOC, b"", b"raw bytes", b"<!-- docmem-fsspec/1 {} -->\n"])
def test_an_object_of_the_previous_format_reads_as_its_bytes(blob: bytes) -> None:
    assert unwrap(blob) == (None, blob)


@pytest.mark.parametrize(
    "line",
    [
        b'<!-- docmem-fsspec/2 {"parent":null}',
        b'<!-- docmem-fsspec/2 {"parent":null} -->',
        b'<!-- docmem-fsspec/2 {"parent": null} -->\n',
        b'<!-- docmem-fsspec/2 {"parent":[1,"short"]} -->\n',
        b'<!-- docmem-fsspec/2 {"parent":[0,"' + PARENT.digest.encode() + b'"]} -->\n',
        b'<!-- docmem-fsspec/2 {"parent":[1,"' + PARENT.digest.encode() + b'",2]} -->\n',
        b'<!-- docmem-fsspec/2 {"parent":null,"more":1} -->\n',
        b"<!-- docmem-fsspec/2 {} -->\n",
        b"<!-- docmem-fsspec/2 not json -->\n",
        b'<!-- docmem-fsspec/2 {"parent":"' + b"x" * 300 + b'"} -->\n',
    ],
)
def test_a_damaged_envelope_is_corrupt(line: bytes) -> None:
    with pytest.raises(DocumentCorrupt):
        unwrap(line + DOC)


def test_a_digest_names_the_whole_object() -> None:
    first = wrap(b"mine", PARENT)
    assert digest(first) == digest(bytes(first))
    assert len(digest(first)) == 43
    # The same revision on the same parent with other bytes is another object: a
    # re-created name is told from the original by the digest alone.
    assert digest(wrap(b"theirs", PARENT)) != digest(first)
    assert digest(wrap(b"mine", Parent(1, digest(b"another parent")))) != digest(first)


# --- Listing.successor and Listing.verdict --------------------------------------

MINE = digest(wrap(b"mine", PARENT))
THEIRS = digest(wrap(b"theirs", PARENT))


def built_on(revision: int, object_digest: str = MINE) -> Envelope:
    """The envelope of a version built on the one at ``revision`` with that digest."""
    return Envelope(parent=Parent(revision=revision, digest=object_digest))


@pytest.mark.parametrize(
    ("entries", "created"),
    [
        pytest.param((version(1),), 1, id="only-version"),
        pytest.param((version(1), version(2)), 2, id="newest"),
        pytest.param((version(1), tombstone(2), version(3)), 3, id="tombstone-below"),
        pytest.param((purge(3), version(3), version(4)), 4, id="purge-below"),
        pytest.param(
            (tombstone(1), purge(2), version(2), version(3), version(4)), 4, id="markers-below"
        ),
    ],
)
def test_the_newest_version_is_committed_without_a_successor(
    entries: tuple[Entry, ...], created: int
) -> None:
    log = Listing(entries)
    assert log.successor(created) is None
    assert log.verdict(created, MINE) is Verdict.COMMITTED


@pytest.mark.parametrize("above", [1, 2, 5])
def test_a_version_built_on_is_committed(above: int) -> None:
    log = listing(*(version(revision) for revision in range(2, 3 + above)))
    assert log.successor(2) == version(3)
    assert log.verdict(2, MINE, built_on(2)) is Verdict.COMMITTED


@pytest.mark.parametrize(
    "successor",
    [
        pytest.param(built_on(2, THEIRS), id="another-object-at-that-name"),
        pytest.param(built_on(1, MINE), id="another-revision"),
        pytest.param(Envelope(parent=None), id="built-on-nothing"),
    ],
)
def test_a_version_whose_successor_points_elsewhere_is_not_committed(
    successor: Envelope,
) -> None:
    log = listing(version(2), version(3), version(4))
    assert log.verdict(2, MINE, successor) is Verdict.NOT_COMMITTED


def test_the_clock_step_lost_update_is_not_committed() -> None:
    # Revisions 1 and 2 were collected early (the store's clock stepped); a writer that
    # still held revision 1 re-created 2 below the newest version, 10. Revision 3 was
    # built on the original 2, so the re-created one is garbage, whatever the clocks say.
    original = digest(wrap(b"the original revision 2", PARENT))
    log = listing(*(version(revision, at=1e9) for revision in range(2, 11)))
    assert log.current == version(10, at=1e9)
    assert log.successor(2) == version(3, at=1e9)
    assert log.verdict(2, MINE, built_on(2, original)) is Verdict.NOT_COMMITTED


@pytest.mark.parametrize(
    ("entries", "created", "successor"),
    [
        pytest.param((), 1, built_on(1), id="empty"),
        pytest.param((version(1), version(3)), 2, built_on(2), id="missing"),
        pytest.param((version(1), tombstone(2), purge(2)), 2, None, id="only-markers-at-it"),
        pytest.param((version(3), tombstone(3)), 3, None, id="tombstone-at-it"),
        pytest.param((version(3), tombstone(5)), 3, None, id="tombstone-above"),
        pytest.param((version(3), version(4), tombstone(5)), 4, None, id="tombstone-above-newest"),
        pytest.param((version(3), purge(3)), 3, None, id="purge-at-it"),
        pytest.param((version(2), version(3), purge(3)), 2, built_on(2), id="purge-above"),
        pytest.param((purge(1), version(2), tombstone(6), version(7)), 2, None, id="marker-above"),
        pytest.param((version(2), version(4)), 2, built_on(2), id="gap-above"),
        pytest.param((version(2), version(3)), 2, None, id="successor-unread-or-old-format"),
    ],
)
def test_verdict_unknown(entries: tuple[Entry, ...], created: int, successor: Envelope) -> None:
    assert Listing(entries).verdict(created, MINE, successor) is Verdict.UNKNOWN


@pytest.mark.parametrize(
    ("entries", "created"),
    [
        pytest.param((version(1), version(3)), 2, id="missing"),
        pytest.param((version(2), version(3), purge(3)), 2, id="marker-above"),
        pytest.param((version(2), version(4)), 2, id="gap-above"),
    ],
)
def test_no_successor_is_read_when_it_cannot_decide(
    entries: tuple[Entry, ...], created: int
) -> None:
    assert Listing(entries).successor(created) is None


# --- temporary files a crash left ------------------------------------------------


def test_listing_keeps_temporary_files_apart_from_the_log() -> None:
    temporary = f".tmp-{'a' * 32}"
    infos = [
        local_record(f"/r/k/{object_name(1)}"),
        local_record(f"/r/k/{temporary}"),
        local_record(f"/r/k1/{temporary}"),  # another key's folder
        local_record("/r/k/.tmp-short"),
        {"name": f"/r/k/.tmp-{'b' * 32}", "type": "directory", "size": 0},
    ]
    log = Listing.from_infos(infos, folder="/r/k")
    assert [found.revision for found in log.entries] == [1]
    assert log.leftovers == (Leftover(path=f"/r/k/{temporary}", modified=EPOCH + 0.25),)


def leftover(name: str, at: float | None) -> Leftover:
    return Leftover(path=f"/r/k/.tmp-{name * 32}", modified=at)


def test_only_temporary_files_older_than_grace_are_stale() -> None:
    young, old, exact, unstamped = (
        leftover("a", YOUNG),
        leftover("b", OLD),
        leftover("c", NOW - GRACE),
        leftover("d", None),
    )
    log = Listing([version(1, OLD), version(2, NOW)], [young, old, exact, unstamped])
    assert log.stale_leftovers(grace=GRACE) == [old]


def test_no_temporary_file_is_stale_without_store_timestamps() -> None:
    log = Listing([version(1, None), version(2, NOW)], [leftover("b", OLD)])
    assert log.stale_leftovers(grace=GRACE) == []
    assert Listing([], [leftover("b", OLD)]).stale_leftovers(grace=GRACE) == []


# --- Listing.expired -------------------------------------------------------------

NOW = 1000.0
GRACE = 10.0
OLD = 0.0  # far older than NOW - GRACE
YOUNG = NOW - GRACE / 2  # within the grace period


def expired(*entries: Entry, retain: int = 1, grace: float = GRACE) -> list[tuple[int, Kind]]:
    return revisions(Listing(entries).expired(retain=retain, grace=grace))


def test_nothing_expires_from_an_empty_listing() -> None:
    assert expired() == []


@pytest.mark.parametrize("missing", range(5))
def test_nothing_expires_without_a_timestamp_on_every_object(missing: int) -> None:
    entries = [version(1, OLD), version(2, OLD), purge(2, OLD), version(3, OLD), version(4, NOW)]
    entries[missing] = entry(entries[missing].revision, entries[missing].kind, None)
    assert expired(*entries) == []


def test_a_tombstone_without_a_timestamp_also_blocks_collection() -> None:
    assert expired(version(1, OLD), version(2, OLD), version(3, NOW), tombstone(1, None)) == []


@pytest.mark.parametrize("retain", [1, 2, 3, 4, 5, 6, 50])
def test_expired_keeps_the_newest_retain_versions(retain: int) -> None:
    # Every version is old; the newest object is a later purge marker.
    entries = [version(revision, OLD) for revision in range(1, 6)] + [purge(5, NOW)]
    kept = max(retain, 1)
    assert expired(*entries, retain=retain) == [
        (revision, Kind.VERSION) for revision in range(1, max(6 - kept, 1))
    ]


@pytest.mark.parametrize("retain", [1, 0, -3])
def test_the_newest_version_never_expires(retain: int) -> None:
    # The newest version is ages older than the newest object and grace is zero.
    log = (version(1, OLD), version(2, OLD), tombstone(3, 1e12))
    assert expired(*log, retain=retain, grace=0.0) == [(1, Kind.VERSION)]
    assert expired(version(1, OLD), purge(1, 1e12), retain=retain, grace=0.0) == []


def test_a_version_goes_only_once_its_successor_is_older_than_the_grace_period() -> None:
    entries = [version(1, OLD), version(2, YOUNG), version(3, NOW)]
    assert expired(*entries) == []
    assert expired(*entries, grace=GRACE / 4) == [(1, Kind.VERSION)]


def test_the_age_of_the_version_itself_does_not_matter() -> None:
    # Version 2 is young, but its successor is old (clocks need not be monotonic).
    assert expired(version(1, OLD), version(2, YOUNG), version(3, OLD), version(4, NOW)) == []
    assert expired(version(1, YOUNG), version(2, OLD), version(3, NOW)) == [(1, Kind.VERSION)]


def test_a_successor_exactly_at_the_cutoff_keeps_its_predecessor() -> None:
    assert expired(version(1, OLD), version(2, NOW - GRACE), version(3, NOW)) == []
    assert expired(version(1, OLD), version(2, NOW - GRACE - 0.001), version(3, NOW)) == [
        (1, Kind.VERSION)
    ]


def test_the_cutoff_counts_from_the_newest_object_of_any_kind() -> None:
    entries = [version(1, OLD), version(2, NOW - 20.0), version(3, NOW - 15.0)]
    assert expired(*entries, grace=GRACE) == []  # newest object is version 3: cutoff NOW - 25
    # A later tombstone moves the cutoff to NOW - 18: version 2 (NOW - 20) is past it,
    # version 3 (NOW - 15) is not.
    assert expired(*entries, tombstone(1, NOW - 8.0), grace=GRACE) == [(1, Kind.VERSION)]
    assert expired(*entries, purge(3, NOW), grace=GRACE) == [
        (1, Kind.VERSION),
        (2, Kind.VERSION),
    ]


def test_expired_is_a_prefix_of_the_versions() -> None:
    # Version 3 must stay (its successor is young), so version 4 stays too
    # although its successor is old.
    entries = [
        version(1, OLD),
        version(2, OLD),
        version(3, OLD),
        version(4, YOUNG),
        version(5, OLD),
        version(6, OLD),
        version(7, NOW),
    ]
    assert expired(*entries) == [(1, Kind.VERSION), (2, Kind.VERSION)]


def test_a_first_version_that_must_stay_keeps_them_all() -> None:
    entries = [version(1, OLD), version(2, YOUNG), version(3, OLD), version(4, NOW)]
    assert expired(*entries) == []


def test_old_purge_markers_go_and_young_ones_stay() -> None:
    entries = [
        version(3, OLD),
        purge(3, OLD),
        version(5, YOUNG),
        purge(5, YOUNG),
        version(6, NOW),
    ]
    assert expired(*entries, retain=3) == [(3, Kind.PURGE)]


def test_a_purge_marker_exactly_at_the_cutoff_stays() -> None:
    assert expired(version(2, NOW), purge(1, NOW - GRACE)) == []
    assert expired(version(2, NOW), purge(1, NOW - GRACE - 0.001)) == [(1, Kind.PURGE)]


def test_tombstones_never_expire() -> None:
    entries = [tombstone(1, OLD), tombstone(2, OLD), tombstone(5, NOW)]
    assert expired(*entries, grace=0.0) == []
    assert expired(tombstone(1, OLD), version(2, OLD), version(3, OLD), version(4, NOW)) == [
        (2, Kind.VERSION)
    ]


def test_expired_is_sorted_oldest_first() -> None:
    entries = [
        version(5, NOW),
        purge(3, OLD),
        version(4, OLD),
        version(3, OLD),
        purge(1, OLD),
        version(2, OLD),
        version(1, OLD),
    ]
    result = Listing(entries).expired(retain=1, grace=GRACE)
    assert revisions(result) == [
        (1, Kind.VERSION),
        (1, Kind.PURGE),
        (2, Kind.VERSION),
        (3, Kind.VERSION),
        (3, Kind.PURGE),
    ]
    assert result == sorted(result)
    assert result[0] == version(1, OLD)


# --- Listing.after and Listing.supersedes: the short listing's decisions -----------------


def test_after_keeps_only_the_names_after_a_version() -> None:
    log = listing(version(1), version(2), purge(2), tombstone(2), version(3), tombstone(5))
    assert revisions(list(log.after(object_name(2)).entries)) == [
        (2, Kind.PURGE),
        (2, Kind.TOMBSTONE),
        (3, Kind.VERSION),
        (5, Kind.TOMBSTONE),
    ]
    assert log.after(object_name(5)).entries == (tombstone(5),)
    assert log.after(object_name(6)).entries == ()


def test_after_orders_names_as_revisions_across_digit_widths() -> None:
    # Fixed-width hex: 0x10 sorts after 0xf as a name too.
    log = listing(version(0xF), version(0x10), version(0x100))
    assert [found.revision for found in log.after(object_name(0xF)).entries] == [0x10, 0x100]


@pytest.mark.parametrize(
    "entries",
    [
        pytest.param((version(4),), id="a-higher-version"),
        pytest.param((tombstone(3),), id="a-tombstone-at-it"),
        pytest.param((tombstone(9),), id="a-tombstone-above"),
        pytest.param((purge(3), version(5)), id="a-purge-then-a-version"),
    ],
)
def test_a_higher_version_or_a_tombstone_at_or_above_supersedes(
    entries: tuple[Entry, ...],
) -> None:
    assert Listing(entries).supersedes(3)


@pytest.mark.parametrize(
    "entries",
    [
        pytest.param((), id="nothing"),
        pytest.param((purge(3),), id="its-own-purge-marker"),
        pytest.param((purge(7),), id="a-purge-marker-above"),
        pytest.param((version(1), version(3), tombstone(2)), id="only-older-objects"),
    ],
)
def test_nothing_else_supersedes(entries: tuple[Entry, ...]) -> None:
    assert not Listing(entries).supersedes(3)


def test_the_current_version_of_a_short_listing_is_that_of_the_whole() -> None:
    # Whatever supersedes the version this process holds is after its name, so the
    # short listing and the whole folder agree on the current version.
    cases = [
        (version(1), version(2), version(3), version(4)),
        (version(1), version(2), tombstone(3)),
        (version(1), version(2), tombstone(3), version(4)),
        (version(2), tombstone(2), version(1)),
        (version(1), version(2), version(3), tombstone(5)),
    ]
    for entries in cases:
        whole = Listing(entries)
        short = whole.after(object_name(2))
        assert short.supersedes(2)
        assert short.current == whole.current
