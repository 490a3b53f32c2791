"""docmem-export/1 across three stores: file:// -> s3:// (LocalStack) -> az:// (Azurite).

It needs both plug-ins and both servers, so it lives here, where
``scripts/with-test-servers`` runs it. The first leg is an export and an
import (the source holds a document fenced by an older migration, which
must arrive unfenced); the second a fenced migration between the two
servers, through the same probes the command line runs. Every leg must give
the same logical digest, and every document must arrive byte for byte.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from fsspec_stores import bucket, require, store_url

import docmem
from docmem.backend import Backend
from docmem.cli.checks import probe_destination
from docmem.provider.fencing import FENCE_KEY, fence_document, listed, store_fence, unfenced
from docmem.provider.transfer import export_store, import_store, migrate, verify_store

NAMESPACE = "acme:prod:user"
DOCMEM = Path(sys.executable).parent / "docmem"


def s3_url(prefix: str | None = None) -> str:
    endpoint = os.environ["LOCALSTACK_ENDPOINT"]
    prefix = prefix or f"t-{uuid.uuid4().hex[:12]}"
    return f"s3://{bucket()}/{prefix}?endpoint_url={endpoint}&region=us-east-1"


def bound(store: Backend, scope: str) -> docmem.BoundMemory:
    locked = docmem.lock_scope(namespace=NAMESPACE, scope=scope)
    return docmem.FileMemory(store).bind(locked, slot="user")


def source_store(root: Path) -> Backend:
    """A file:// store with plain, erased and fenced documents."""
    store = docmem.open_store(f"file://{root}?create=true")
    for number in range(8):
        mem = bound(store, f"u{number}")
        mem.save(f"Note {number}.", mutation_id=f"a{number}")
        mem.save("Prefers metric units.", mutation_id=f"b{number}")
    bound(store, "u2").erase(mutation_id="forget")  # header only, last kept
    fence_document(store, bound(store, "u5").scope.storage_key, "mig-older.1")
    return store


def test_file_to_localstack_to_azurite_keeps_every_byte_and_the_digest(tmp_path: Path) -> None:
    require("localstack")
    require("azurite")
    source = source_store(tmp_path / "src")
    file = io.BytesIO()
    exported = export_store(source, file, workers=4)
    assert exported.documents == 8

    s3 = docmem.open_store(s3_url())
    imported = import_store(s3, file, workers=4)
    assert (imported.created, imported.skipped) == (8, 0)
    assert verify_store(s3, file).ok

    azure = docmem.open_store(store_url("azurite"))
    moved = migrate(s3, azure, "mig-roundtrip", probe=probe_destination, workers=4)
    assert moved.verified.ok
    assert moved.verified.method == "read"  # adlfs lists no versions: every document read back
    assert moved.exported.logical_digest == exported.logical_digest
    assert moved.verified.store_digest == exported.logical_digest
    assert store_fence(s3) == "mig-roundtrip"
    assert store_fence(azure) is None

    again = verify_store(azure, file)  # the very first export verifies the last store
    assert again.ok
    assert again.store_digest == exported.logical_digest
    keys = listed(source)
    assert listed(azure) == keys
    assert FENCE_KEY not in keys
    for key in keys:
        original = source.read(key)
        arrived = azure.read(key)
        assert original is not None
        assert arrived is not None
        assert arrived.data == unfenced(original.data)  # byte for byte, fences cleared
    erased = bound(azure, "u2").read()
    assert erased is not None
    assert (erased.entries, erased.last) == ({}, 1)
    fenced_before = bound(azure, "u5")
    assert fenced_before.save("Saved in the new store.", mutation_id="n").index == 2


def test_migrate_into_localstack_on_the_command_line(tmp_path: Path) -> None:
    require("localstack")
    source = docmem.open_store(f"file://{tmp_path / 'src'}?create=true")
    for number in range(5):
        bound(source, f"u{number}").save(f"Note {number}.", mutation_id=f"m{number}")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        **{k: v for k, v in os.environ.items() if k.startswith("AWS_")},
    }
    destination = s3_url()
    done = subprocess.run(
        [
            str(DOCMEM),
            "migrate",
            f"file://{tmp_path / 'src'}",
            destination,
            "--id",
            "mig-cli",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert (answer["documents"], answer["created"]) == (5, 5)
    assert answer["verified_by"] == "versions"  # the S3 listing's ETags, no read per document
    assert answer["new_store"].startswith(f"s3://{bucket()}/")
    copy = docmem.open_store(destination)
    assert bound(copy, "u3").recall()[0].content.endswith("0: Note 3.")
    assert store_fence(source) == "mig-cli"
