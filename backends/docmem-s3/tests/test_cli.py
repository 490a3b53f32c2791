"""The ``docmem`` console script on S3: show, save, probe and stats against LocalStack.

Run in subprocesses with an explicit environment holding only the test
servers' credentials. The dead-port test needs no server; the others need
LocalStack (``scripts/with-test-servers``; under ``DOCMEM_REQUIRE_SERVERS=1``
a missing server fails, never skips).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from s3_servers import (
    REGION,
    TEST_CREDENTIALS,
    bucket,
    endpoint_of,
    free_port,
    store_url,
    versioned_bucket,
)

import docmem

DOCMEM = Path(sys.executable).parent / "docmem"
NAMESPACE = "acme:prod:user"
ALICE = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_123")
KEY = docmem.lock_scope(namespace=NAMESPACE, scope=("user", "u_123")).storage_key


def run(
    store: str, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    credentials = {name: os.environ.get(name, value) for name, value in TEST_CREDENTIALS.items()}
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "DOCMEM_STORE": store,
        **credentials,
        **(env or {}),
    }
    return subprocess.run(
        [str(DOCMEM), *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def answer(store: str, *arguments: str) -> dict[str, Any]:
    done = run(store, *arguments, "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_an_unreachable_endpoint_is_one_line_that_says_what_to_do() -> None:
    dead = (
        f"s3://{bucket()}/p?endpoint_url=http://127.0.0.1:{free_port()}"
        f"&region={REGION}&connect_timeout=0.5&max_attempts=1"
    )
    started = time.monotonic()
    for arguments in (("show", *ALICE), ("save", *ALICE, "A note.", "--mutation-id", "m-1")):
        done = run(dead, *arguments)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(
            "store_unavailable: the s3 read could not reach the store (EndpointConnectionError); "
        )
        assert done.stderr.rstrip().endswith(
            "check the --store URL (or DOCMEM_STORE) and that the store is reachable"
        )
    assert "nothing was changed" in done.stderr  # the save's outcome
    assert time.monotonic() - started < 30


@pytest.mark.integration
def test_save_show_and_stats_on_localstack() -> None:
    endpoint = endpoint_of("localstack")
    store = store_url(endpoint, f"cli-{uuid.uuid4().hex[:12]}")
    saved = answer(store, "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1")
    assert (saved["key"], saved["status"], saved["index"], saved["revision"]) == (
        KEY,
        "saved",
        0,
        1,
    )
    again = run(store, "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1")
    assert again.stdout == "saved as memory 0 at revision 1; mutation id m-1\n"
    shown = run(store, "show", *ALICE)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"{KEY}  revision 1, 1 entry"
    assert shown.stdout.rstrip().endswith("0: Prefers metric units.")
    entries = answer(store, "show", *ALICE)["entries"]
    # Each entry carries its provenance beside these too.
    assert [(e["index"], e["text"]) for e in entries] == [(0, "Prefers metric units.")]
    bob = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_456")
    run(store, "save", *bob, "Likes tea.", "--mutation-id", "m-2")
    stats = answer(store, "stats")
    assert (stats["keys"], stats["documents"], stats["entries"], stats["corrupt"]) == (2, 2, 2, [])
    assert stats["largest"][0]["key"] == KEY
    history = run(store, "history", *ALICE)
    assert history.returncode == 0
    assert history.stdout.startswith(f"s3://{bucket()} keeps no older versions")


@pytest.mark.integration
def test_history_and_show_at_on_a_versioned_bucket() -> None:
    endpoint = endpoint_of("localstack")
    store = store_url(endpoint, f"cli-{uuid.uuid4().hex[:12]}", name=versioned_bucket(endpoint))
    run(store, "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1")
    run(store, "save", *ALICE, "Likes tea.", "--mutation-id", "m-2")
    versions = answer(store, "history", *ALICE)["versions"]
    assert [(v["revision"], v["op"], v["entries"]) for v in versions] == [
        (1, "save", 1),
        (2, "save", 2),
    ]
    assert all(v["version"].startswith('"') for v in versions)  # ETags, as a write returns them
    old = answer(store, "show", *ALICE, "--at", versions[0]["version"])
    assert [(e["index"], e["text"]) for e in old["entries"]] == [(0, "Prefers metric units.")]


@pytest.mark.integration
def test_probe_runs_docmem_s3s_checks_on_localstack() -> None:
    endpoint = endpoint_of("localstack")
    store = store_url(endpoint, f"cli-{uuid.uuid4().hex[:12]}")
    done = run(store, "probe", "--writers", "4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "probe: docmem-s3's conditional-write checks on s3://"
    assert lines[1] == "versioning: unversioned"
    checks = lines[2:-1]
    assert len(checks) == 8  # the seven deterministic checks and the race
    assert all(line.startswith("ok ") for line in checks), done.stdout
    assert "4 concurrent creates have exactly one winner" in checks[-1]
    assert lines[-1] == "all 8 checks passed: docmem can share this store between writers"
    probed = answer(store, "probe")
    assert (probed["probe"], probed["passed"], probed["versioning"]) == (
        "docmem-s3",
        True,
        "unversioned",
    )


def test_the_advice_for_a_kept_history_is_to_erase_again_under_the_same_id() -> None:
    from docmem.cli.advice import advice
    from docmem_s3.history import HistoryKept

    error = HistoryKept("the erase is stored, but older versions are left")
    error.outcome = "committed"
    assert advice(error, {"mutation_id": "gdpr-1"}) == (
        "the change itself is stored; once the store allows the purge, "
        "erase again with --mutation-id gdpr-1"
    )


@pytest.mark.integration
def test_probe_asks_the_store_so_an_encrypted_s3_store_gets_docmem_s3s_checks() -> None:
    """encrypted+s3:// answers through the wrapped store's check_server, not by a module name."""
    from docmem.storage.encryption.keyfile import render_keyring

    endpoint = endpoint_of("localstack")
    plain = store_url(endpoint, f"cli-{uuid.uuid4().hex[:12]}")
    keyring = render_keyring({"k1": os.urandom(32)}, "k1")
    encrypted = f"encrypted+{plain}&keyring=env:DOCMEM_TEST_KEYRING"
    done = run(encrypted, "probe", "--writers", "4", env={"DOCMEM_TEST_KEYRING": keyring})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "probe: docmem-s3's conditional-write checks on encrypted+s3://"
    assert lines[1] == "versioning: unversioned"
    assert lines[-1] == "all 8 checks passed: docmem can share this store between writers"
