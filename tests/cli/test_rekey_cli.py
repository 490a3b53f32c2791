"""``docmem keyring`` and ``docmem rekey`` through the real console script, on file://.

Rotation end to end: a keyring file made by ``docmem keyring add``, saves
through an ``encrypted+file://`` store, a new primary, ``docmem rekey`` (a
progress bar on a terminal, resumable, failures by key), and the old key
removed while everything still recalls.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cli_transcript import base_environment, docmem
from test_cli_behaviour import _on_a_terminal

from docmem.storage.encryption.keyfile import read_keyring_file

#: Each test here starts the docmem command, an example or a benchmark in a process of its own.
pytestmark = pytest.mark.process

NAMESPACE = "acme:prod:user"


def _user(name: str) -> tuple[str, ...]:
    return ("--namespace", NAMESPACE, "--scope", "user", "--scope", name)


def _env(tmp_path: Path, *, extra: str = "") -> dict[str, str]:
    url = f"encrypted+file://{tmp_path}/store?create=true&keyring=file:{tmp_path}/keys.json{extra}"
    return base_environment(DOCMEM_STORE=url)


def _stored(tmp_path: Path) -> bytes:
    root = tmp_path / "store"
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*.md")) if p.is_file())


def test_rotation_with_keyring_and_rekey(tmp_path: Path) -> None:
    keys = str(tmp_path / "keys.json")
    added = docmem("keyring", "add", keys, "2024-11", env=base_environment())
    assert (added.code, added.stdout) == (0, "key '2024-11' added\n2024-11  (primary)\n")
    assert stat.S_IMODE((tmp_path / "keys.json").stat().st_mode) == 0o600
    env = _env(tmp_path)
    for user in ("u_1", "u_2", "u_3"):
        assert docmem("save", *_user(user), f"Secret plan of {user}.", env=env).code == 0
    assert b"Secret plan" not in _stored(tmp_path)
    assert b"u_1" not in _stored(tmp_path)

    rotated = docmem("keyring", "add", keys, "2025-06", "--primary", env=base_environment())
    assert rotated.stdout.endswith("2024-11\n2025-06  (primary)\n"), rotated.stdout
    saved = docmem("save", *_user("u_4"), "Under the new key.", env=env)
    assert saved.code == 0

    code, stdout, terminal = _on_a_terminal(["rekey"], env)
    assert code == 0, stdout
    assert stdout == (
        "4 keys, primary key '2025-06':\n"
        "  3 documents re-encrypted from an older key\n"
        "  1 document already under the primary key\n"
        "every document is under the primary key: older keys may now be removed\n"
    )
    assert b"rekeying" in terminal, terminal
    assert b"/4 [" in terminal, terminal

    again = docmem("rekey", "--json", env=env)  # resumable: a second run finds nothing to do
    assert again.code == 0, again.stderr
    answer = json.loads(again.stdout)
    assert answer == {
        "command": "rekey",
        "ok": True,
        "primary": "2025-06",
        "keys": 4,
        "rekeyed": 0,
        "encrypted": 0,
        "current": 4,
        "vanished": 0,
        "failed": [],
    }
    refused = docmem("keyring", "remove", keys, "2025-06", env=base_environment())
    assert refused.code == 1
    assert refused.stderr.startswith("store_not_configured: the primary key cannot be removed")
    removed = docmem("keyring", "remove", keys, "2024-11", "--json", env=base_environment())
    assert json.loads(removed.stdout)["key_ids"] == ["2025-06"]
    assert list(read_keyring_file(keys)[0]) == ["2025-06"]
    for user in ("u_1", "u_2", "u_3"):
        shown = docmem("show", *_user(user), "--quiet", env=env)
        assert shown.code == 0, shown.stderr
        assert f"0: Secret plan of {user}." in shown.stdout


def test_rekey_reports_what_it_could_not_move_and_resumes(tmp_path: Path) -> None:
    keys = str(tmp_path / "keys.json")
    assert docmem("keyring", "add", keys, "old", env=base_environment()).code == 0
    env = _env(tmp_path)
    for user in ("u_1", "u_2"):
        assert docmem("save", *_user(user), "A note.", env=env).code == 0
    # A plaintext document planted beside them, by a writer without the keyring.
    plain = base_environment(DOCMEM_STORE=f"file://{tmp_path}/store")
    assert docmem("save", *_user("planted"), "Planted.", env=plain).code == 0
    shown = docmem("show", *_user("planted"), env=env)
    assert shown.code == 1
    assert shown.stderr.startswith("plaintext_document: the encrypted store holds a document")
    assert "Planted" not in shown.stderr
    assert "allow_plaintext=true" in shown.stderr

    assert docmem("keyring", "add", keys, "new", "--primary", env=base_environment()).code == 0
    ran = docmem("rekey", "--json", env=env)
    assert ran.code == 1
    answer = json.loads(ran.stdout)
    assert (answer["ok"], answer["rekeyed"], answer["current"]) == (False, 2, 0)
    [failed] = answer["failed"]
    assert failed["code"] == "plaintext_document"
    assert answer["error"]["code"] == "plaintext_document"
    assert answer["error"]["message"].startswith("1 document of 3 keys could not be re-encrypted")
    human = docmem("rekey", env=env)
    assert human.code == 1
    assert "  2 documents already under the primary key\n" in human.stdout
    assert f"    {failed['key']}  plaintext_document: " in human.stdout

    migrated = docmem("rekey", "--json", env=_env(tmp_path, extra="&allow_plaintext=true"))
    assert migrated.code == 0, migrated.stderr
    assert json.loads(migrated.stdout)["encrypted"] == 1
    assert b"Planted" not in _stored(tmp_path)
    assert "0: Planted." in docmem("show", *_user("planted"), "--quiet", env=env).stdout


def test_an_unknown_key_says_which_and_what_to_do(tmp_path: Path) -> None:
    keys = str(tmp_path / "keys.json")
    assert docmem("keyring", "add", keys, "gone", env=base_environment()).code == 0
    env = _env(tmp_path)
    assert docmem("save", *_user("u_1"), "A note.", env=env).code == 0
    assert docmem("keyring", "add", keys, "kept", "--primary", env=base_environment()).code == 0
    assert docmem("keyring", "remove", keys, "gone", env=base_environment()).code == 0
    shown = docmem("show", *_user("u_1"), env=env)
    assert shown.code == 1
    assert shown.stderr.startswith("unknown_key: the document is encrypted under key id 'gone'")
    assert "put the key it names back into the store's keyring" in shown.stderr


def test_rekey_needs_an_encrypted_store_and_keyring_needs_its_arguments(tmp_path: Path) -> None:
    plain = base_environment(DOCMEM_STORE=f"file://{tmp_path}/store?create=true")
    ran = docmem("rekey", env=plain)
    assert ran.code == 1
    assert ran.stderr.startswith("store_not_configured: docmem rekey works on an encrypted store")
    keys = str(tmp_path / "keys.json")
    assert docmem("keyring", "add", keys, env=base_environment()).code == 2
    assert docmem("keyring", "list", keys, "k1", env=base_environment()).code == 2
    assert docmem("keyring", "add", keys, "bad id", env=base_environment()).code == 2
    missing = docmem("keyring", "list", keys, env=base_environment())
    assert missing.code == 1
    assert missing.stderr.startswith("store_not_configured: the keyring file")
    assert docmem("keyring", "add", keys, "k1", env=base_environment()).code == 0
    twice = docmem("keyring", "add", keys, "k1", env=base_environment())
    assert twice.code == 1
    assert "already holds key id 'k1'" in twice.stderr
    listed = docmem("keyring", "list", keys, env=base_environment())
    assert listed.stdout == "k1  (primary)\n"
    text = (tmp_path / "keys.json").read_text()
    secret = json.loads(text)["keys"]["k1"]
    for ran in (twice, listed, missing):
        assert secret not in ran.stdout + ran.stderr
