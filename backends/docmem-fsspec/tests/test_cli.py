"""``docmem history`` (and ``show --at``, ``probe``, ``stats``) on a docmem-fsspec store.

The real console script in subprocesses, on ``fsspec+file://`` in a
temporary folder (no server needed): the commit log keeps older versions,
so ``history`` lists them, and ``show --at`` reads one back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import docmem

DOCMEM = Path(sys.executable).parent / "docmem"
NAMESPACE = "acme:prod:user"
ALICE = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_123")
KEY = docmem.lock_scope(namespace=NAMESPACE, scope=("user", "u_123")).storage_key


def run(store: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "DOCMEM_STORE": store,
    }
    return subprocess.run(
        [str(DOCMEM), *arguments], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def answer(store: str, *arguments: str) -> dict[str, Any]:
    done = run(store, *arguments, "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_history_lists_every_kept_version_oldest_first(tmp_path: Path) -> None:
    store = f"fsspec+file://{tmp_path}/store?create=true"
    for number, text in enumerate(("Prefers metric units.", "Likes tea.", "Lives in Berlin.")):
        assert run(store, "save", *ALICE, text, "--mutation-id", f"m-{number}").returncode == 0
    assert run(store, "remove", *ALICE, "1", "--mutation-id", "m-3").returncode == 0
    history = answer(store, "history", *ALICE)
    assert (history["key"], history["supported"]) == (KEY, True)
    versions = history["versions"]
    assert [v["revision"] for v in versions] == [1, 2, 3, 4]
    assert [v["op"] for v in versions] == ["save", "save", "save", "remove"]
    assert [v["entries"] for v in versions] == [1, 2, 3, 2]
    assert all(v["state"] == "ok" and v["modified"].endswith("Z") for v in versions)
    assert [v["version"] for v in versions] == [f"{n:016x}.md" for n in range(1, 5)]
    assert versions[0]["bytes"] < versions[2]["bytes"]
    human = run(store, "history", *ALICE)
    assert human.returncode == 0
    lines = human.stdout.splitlines()
    assert lines[0] == (
        f"{KEY}: 4 versions kept, oldest first; `docmem show --at VERSION` shows one"
    )
    assert lines[2].split() == [
        "version",
        "modified",
        "(UTC)",
        "bytes",
        "revision",
        "entries",
        "change",
    ]
    assert [line.split()[-1] for line in lines[3:]] == ["save", "save", "save", "remove"]
    for line in lines:  # counts and names, never the text
        assert "metric" not in line
        assert "tea" not in line


def test_show_at_reads_an_older_version_back(tmp_path: Path) -> None:
    store = f"fsspec+file://{tmp_path}/store?create=true"
    run(store, "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1")
    run(store, "save", *ALICE, "Likes tea.", "--mutation-id", "m-2")
    first = answer(store, "history", *ALICE)["versions"][0]["version"]
    old = answer(store, "show", *ALICE, "--at", first)
    assert (old["version"], old["revision"]) == (first, 1)
    assert [(e["index"], e["text"]) for e in old["entries"]] == [(0, "Prefers metric units.")]
    shown = run(store, "show", *ALICE, "--at", first)
    assert shown.stdout.splitlines()[0] == f"{KEY} (version {first})  revision 1, 1 entry"
    gone = run(store, "show", *ALICE, "--at", "00000000000000ff.md")
    assert gone.returncode == 1
    assert gone.stderr.startswith("invalid_argument: that version of this key is not kept")


def test_an_erase_leaves_only_its_own_version(tmp_path: Path) -> None:
    store = f"fsspec+file://{tmp_path}/store?create=true"
    run(store, "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1")
    run(store, "save", *ALICE, "Likes tea.", "--mutation-id", "m-2")
    assert run(store, "erase", *ALICE, "--yes", "--mutation-id", "m-3").returncode == 0
    versions = answer(store, "history", *ALICE)["versions"]
    assert [(v["revision"], v["op"], v["entries"]) for v in versions] == [(3, "erase", 0)]


def test_history_of_a_scope_with_nothing_stored(tmp_path: Path) -> None:
    store = f"fsspec+file://{tmp_path}/store?create=true"
    done = run(store, "history", *ALICE)
    assert (done.returncode, done.stdout) == (0, f"no versions are stored under {KEY}\n")
    missing = run(f"fsspec+file://{tmp_path}/nowhere", "history", *ALICE)
    assert missing.returncode == 1
    assert missing.stderr.startswith("store_unavailable: ")
    assert missing.stderr.count("\n") == 1


def test_probe_and_stats_on_the_commit_log(tmp_path: Path) -> None:
    store = f"fsspec+file://{tmp_path}/store?create=true"
    probed = answer(store, "probe")
    assert (probed["probe"], probed["passed"]) == ("contract", True)
    assert len(probed["checks"]) == 9
    run(store, "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1")
    stats = answer(store, "stats")
    # The probe's own key is deleted: only its tombstone is left, which lists as no key.
    assert (stats["keys"], stats["documents"], stats["entries"]) == (1, 1, 1)
    assert stats["largest"][0]["key"] == KEY
