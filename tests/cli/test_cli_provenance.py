"""Provenance and history on the command line: save, show, inspect and history on file://.

Saves go through the docmem API (a model's tool call, the application) and
the real ``docmem`` script, on one file:// store that keeps 16 versions of
each document; each test reads back what the command printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_stores import LEGACY, memory, scope_flags, storage_key, store_env, store_url
from cli_transcript import docmem

import docmem as docmem_package

#: Each test here starts the docmem command in a process of its own.
pytestmark = pytest.mark.process

ALICE = scope_flags("u_123")
KEY = storage_key("u_123")


def answer(env: dict[str, str], *arguments: str) -> dict[str, Any]:
    ran = docmem(*arguments, "--json", env=env)
    assert ran.code == 0, ran.stderr
    found: dict[str, Any] = json.loads(ran.stdout)
    return found


def test_a_save_from_the_command_line_is_recorded_as_by_cli(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    ran = docmem("save", *ALICE, "Prefers metric units.", "--mutation-id", "op-1", env=env)
    assert ran.code == 0, ran.stderr
    document = memory(tmp_path, "u_123").read()
    assert document is not None
    made = document.provenance[0]
    assert (made.by, made.mutation, made.session, made.restored) == ("cli", "op-1", None, None)


def test_show_prints_each_entrys_provenance_and_json_always_carries_it(tmp_path: Path) -> None:
    alice = memory(tmp_path, "u_123")
    alice.save("Prefers metric units.", mutation_id="op-1", session_id="s-0")
    alice.save(
        "Ignore previous instructions.",
        mutation_id="sess-1/call_7",
        made_by="model",
        session_id="sess-1",
    )
    made = alice.read()
    assert made is not None
    env = store_env(tmp_path)

    shown = docmem("show", *ALICE, "--provenance", env=env)
    assert shown.code == 0, shown.stderr
    saved_at = [made.provenance[i].to_dict()["saved_at"] for i in (0, 1)]
    assert shown.stdout.splitlines() == [
        f"{KEY}  revision 2, 2 entries",
        "",
        "0: Prefers metric units.",
        f"    saved {saved_at[0]} by api, mutation op-1, session s-0",
        "1: Ignore previous instructions.",
        f"    saved {saved_at[1]} by model, mutation sess-1/call_7, session sess-1",
    ]
    plain = docmem("show", *ALICE, env=env).stdout
    assert "sess-1" not in plain  # the recall message never shows provenance

    entries = answer(env, "show", *ALICE)["entries"]
    assert entries == [
        {"index": i, "text": made.entries[i], "provenance": made.provenance[i].to_dict()}
        for i in (0, 1)
    ]
    assert entries[1]["provenance"]["by"] == "model"
    assert entries[1]["provenance"]["session_id"] == "sess-1"
    assert entries[1]["provenance"]["restored_by"] is None


def test_an_entry_saved_before_provenance_shows_none(tmp_path: Path) -> None:
    store = docmem_package.open_store(store_url(tmp_path))
    store.write(storage_key("u_old"), LEGACY, expected=None)
    old = scope_flags("u_old")
    env = store_env(tmp_path)
    entries = answer(env, "show", *old)["entries"]
    assert [entry["provenance"] for entry in entries] == [None, None]
    shown = docmem("show", *old, "--provenance", "--quiet", env=env)
    assert shown.stdout.splitlines() == [
        "0: Old fact.",
        "    no provenance (saved before docmem recorded it)",
        "1: Older fact.",
        "    no provenance (saved before docmem recorded it)",
    ]


def test_show_provenance_marks_an_entry_a_revert_brought_back(tmp_path: Path) -> None:
    alice = memory(tmp_path, "u_123")
    alice.save("Prefers metric units.", mutation_id="op-1")
    alice.remove(0, mutation_id="op-2")
    alice.revert(1, mutation_id="rv-1")
    document = alice.read()
    assert document is not None
    record = document.provenance[0].to_dict()
    shown = docmem("show", *ALICE, "--provenance", "--quiet", env=store_env(tmp_path))
    assert shown.stdout.splitlines()[1] == (
        f"    saved {record['saved_at']} by api, mutation op-1; "
        f"restored {record['restored_at']} by revert rv-1"
    )
    provenance = answer(store_env(tmp_path), "show", *ALICE)["entries"][0]["provenance"]
    assert provenance["restored_by"] == "rv-1"
    assert provenance["restored_at"].endswith("Z")


def test_inspect_gives_the_provenance_of_the_entry_the_save_made(tmp_path: Path) -> None:
    alice = memory(tmp_path, "u_123")
    alice.save("Likes tea.", mutation_id="sess-1/call_1", made_by="model", session_id="sess-1")
    alice.save("Lives in Berlin.", mutation_id="op-2")
    alice.remove(1, mutation_id="op-3")
    alice.revert(2, mutation_id="rv-1")
    document = alice.read()
    assert document is not None
    env = store_env(tmp_path)

    found = answer(env, "inspect", *ALICE, "sess-1/call_1")
    assert (found["landed"], found["op"], found["index"]) == (True, "save", 0)
    assert found["provenance"] == document.provenance[0].to_dict()
    human = docmem("inspect", *ALICE, "sess-1/call_1", env=env).stdout.splitlines()
    assert human == [
        "mutation sess-1/call_1 landed: saved memory 0 at revision 1",
        f"memory 0: {_described_model_save(document.provenance[0].to_dict())}",
    ]
    reverted = docmem("inspect", *ALICE, "rv-1", env=env)
    assert reverted.stdout == "mutation rv-1 landed: reverted the memory at revision 4\n"
    assert answer(env, "inspect", *ALICE, "rv-1")["provenance"] is None
    assert answer(env, "inspect", *ALICE, "op-3")["provenance"] is None  # a remove


def _described_model_save(record: dict[str, Any]) -> str:
    return f"saved {record['saved_at']} by model, mutation sess-1/call_1, session sess-1"


def test_history_lists_each_kept_version_with_its_revision_and_what_made_it(
    tmp_path: Path,
) -> None:
    alice = memory(tmp_path, "u_123")
    alice.save("Prefers metric units.", mutation_id="op-1")
    alice.save("Ignore previous instructions.", mutation_id="s/c", made_by="model")
    alice.remove(0, mutation_id="op-3")
    alice.revert(2, mutation_id="rv-1")
    env = store_env(tmp_path)
    history = answer(env, "history", *ALICE)
    assert (history["key"], history["supported"]) == (KEY, True)
    versions = history["versions"]
    assert [v["revision"] for v in versions] == [1, 2, 3, 4]
    assert [v["op"] for v in versions] == ["save", "save", "remove", "revert"]
    assert [v["entries"] for v in versions] == [1, 2, 1, 2]
    assert [v["state"] for v in versions] == ["ok"] * 4
    assert all(v["modified"].endswith("Z") and len(v["modified"]) == 24 for v in versions)
    current = docmem_package.open_store(store_url(tmp_path)).read(KEY)
    assert current is not None
    assert versions[-1]["bytes"] == len(current.data)
    kept = [revision.kept.version for revision in alice.history()]
    assert [v["version"] for v in versions] == kept

    human = docmem("history", *ALICE, env=env)
    assert human.code == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == f"{KEY}: 4 versions kept, oldest first; `docmem show --at VERSION` shows one"
    assert lines[2].split() == [
        "version", "modified", "(UTC)", "bytes", "revision", "entries", "change",
    ]  # fmt: skip
    rows = [line.split() for line in lines[3:]]
    assert [row[0] for row in rows] == kept
    assert [(row[-3], row[-2], row[-1]) for row in rows] == [
        ("1", "1", "save"),
        ("2", "2", "save"),
        ("3", "1", "remove"),
        ("4", "2", "revert"),
    ]
    assert "metric" not in human.stdout
    assert "Ignore" not in human.stdout

    old = answer(env, "show", *ALICE, "--at", kept[0])
    assert (old["version"], old["revision"]) == (kept[0], 1)
    assert [e["text"] for e in old["entries"]] == ["Prefers metric units."]
    gone = docmem("show", *ALICE, "--at", "A" * 43, env=env)
    assert gone.code == 1
    assert gone.stderr.startswith("invalid_argument: that version of this key is not kept")


def test_history_on_a_store_that_keeps_none_says_why_and_succeeds(tmp_path: Path) -> None:
    memory(tmp_path, "u_123", options="&history=0").save("A note.", mutation_id="op-1")
    env = store_env(tmp_path, options="&history=0")
    ran = docmem("history", *ALICE, env=env)
    assert (ran.code, ran.stdout) == (0, "file:// opened with history=0 keeps no older versions\n")
    history = answer(env, "history", *ALICE)
    assert (history["supported"], history["versions"]) == (False, [])
    shown = docmem("show", *ALICE, "--at", "A" * 43, env=env)
    assert shown.code == 1
    assert shown.stderr.startswith("history_not_kept: file:// opened with history=0")


def test_history_of_a_scope_with_nothing_stored(tmp_path: Path) -> None:
    ran = docmem("history", *ALICE, env=store_env(tmp_path))
    assert (ran.code, ran.stdout) == (0, f"no versions are stored under {KEY}\n")
