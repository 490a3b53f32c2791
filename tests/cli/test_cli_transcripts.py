"""The real ``docmem`` console script on ``file://``: whole sessions against golden transcripts.

Each test plays a scripted operator session in a fresh store and compares
every step (command, stdout, stderr, exit code) with ``golden/<name>.txt``,
in the human form and the ``--json`` form. Keys and revisions are the same
in every run because the scopes are; mutation ids are given with
``--mutation-id`` wherever one would be printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_transcript import Transcript, base_environment

import docmem
from docmem.storage.builtin.local import LocalBackend

#: Each test here starts the docmem command, an example or a benchmark in a process of its own.
pytestmark = pytest.mark.process

NAMESPACE = "acme:prod:user"
ALICE = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_123")
BOB = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_456")
CAROL = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_789")


def transcript(tmp_path: Path, *, store: str | None = "store?create=true") -> Transcript:
    """A transcript whose runs see ``DOCMEM_STORE`` set to ``store`` under ``tmp_path``."""
    extra = {} if store is None else {"DOCMEM_STORE": f"file://{tmp_path}/{store}"}
    return Transcript(base_environment(**extra), replace={str(tmp_path): "<tmp>"}, cwd=tmp_path)


def storage_key(*parts: str) -> str:
    return docmem.lock_scope(namespace=NAMESPACE, scope=parts).storage_key


def corrupt(root: Path, key: str, data: bytes = b"not a docmem document\n") -> None:
    """Overwrite a document out of band, as a careless hand edit would."""
    path = Path(LocalBackend(root).path(key))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def play_session(t: Transcript, *json: str) -> None:
    t.run("show", *ALICE, *json)
    t.run("save", *ALICE, "Prefers metric units.", "--mutation-id", "op-1", *json)
    t.run("save", *ALICE, "Prefers metric units.", "--mutation-id", "op-1", *json)  # a retry
    t.run("save", *ALICE, "Prefers   metric units. ", "--mutation-id", "op-2", *json)
    t.run("save", *ALICE, "Works at Acme on the billing team.", "--mutation-id", "op-3", *json)
    t.run("show", *ALICE, *json)
    t.run("show", *ALICE, "--quiet", *json)
    t.run("show", *ALICE, "--slot", "profile", *json)
    t.run("inspect", *ALICE, "op-1", *json)
    t.run("inspect", *ALICE, "op-2", *json)  # a duplicate writes nothing: no record
    t.run("remove", *ALICE, "0", "--mutation-id", "op-4", *json)
    t.run("remove", *ALICE, "0", "--mutation-id", "op-5", *json)
    t.run("remove", *ALICE, "0", "--mutation-id", "op-5", "--quiet", *json)
    t.run("erase", *ALICE, "--mutation-id", "op-6", *json)  # no --yes: a usage error
    t.run("erase", *ALICE, "--yes", "--mutation-id", "op-6", *json)
    t.run("show", *ALICE, *json)
    t.run("inspect", *ALICE, "op-6", *json)
    t.run("inspect", *ALICE, "op-3", *json)  # an erase keeps only its own record
    t.run("save", *ALICE, "Lives in Berlin.", "--mutation-id", "op-7", *json)  # index 2, not 0
    t.run("save", *ALICE, "-", "--mutation-id", "op-8", *json, stdin="Drinks tea, not coffee.")
    t.run("show", *ALICE, *json)
    t.run("history", *ALICE, *json)
    t.run("erase", *BOB, "--yes", "--mutation-id", "op-9", *json)  # nothing there
    t.run("stats", *json)
    t.run("show", *ALICE, "--provenance", *json)
    t.run("revert", *ALICE, "--to", "5", "--dry-run", *json)  # op-8's entry would go
    t.run("revert", *ALICE, "--to", "5", "--mutation-id", "op-10", *json)
    t.run("inspect", *ALICE, "op-10", *json)
    t.run("audit", "--by", "cli", *json)


def test_a_session_in_human_form(tmp_path: Path) -> None:
    t = transcript(tmp_path)
    play_session(t)
    t.check("session")


def test_a_session_in_json_form(tmp_path: Path) -> None:
    t = transcript(tmp_path)
    play_session(t, "--json")
    t.check("session-json")


def play_addressing(t: Transcript, *json: str) -> None:
    """The same scope under every spelling, then every way to name it wrongly."""
    principal = ("--namespace", NAMESPACE, "--principal", "user:auth0:u_123")
    t.run("save", *principal, "Prefers metric units.", "--mutation-id", "a-1", *json)
    parts = ("--scope", "user", "--scope", "auth0", "--scope", "", "--scope", "u_123")
    t.run("show", "--namespace", NAMESPACE, *parts, *json)  # by_principal's tuple, spelled out
    key = storage_key("user", "auth0", "", "u_123")
    t.run("inspect", "--key", key, "a-1", *json)
    t.run("show", *principal, "--issuer", "https://auth0.example/", *json)  # another scope
    t.run("show", "--namespace", NAMESPACE, "--scalar-scope", "u_123", *json)  # not ("u_123",)
    t.run("show", "--namespace", NAMESPACE, "--scope", "u_123", *json)
    t.run("show", *json)
    t.run("show", "--namespace", NAMESPACE, *json)
    t.run("show", "--scope", "u_123", *json)
    t.run("show", "--key", key, "--namespace", NAMESPACE, *json)
    t.run("show", "--namespace", NAMESPACE, "--scope", "x", "--scalar-scope", "y", *json)
    t.run("show", "--namespace", NAMESPACE, "--scalar-scope", "y", "--issuer", "https://i", *json)
    t.run("show", "--key", "memkey1_short", *json)
    t.run("show", "--namespace", NAMESPACE, "--principal", "user:auth0", *json)
    t.run("show", "--namespace", NAMESPACE, "--principal", "anonymous:web:visitor-1", *json)
    t.run("show", "--namespace", " ", "--scope", "u_123", *json)
    t.run("show", *ALICE, "--slot", "no__double", *json)


def test_addressing_in_human_form(tmp_path: Path) -> None:
    t = transcript(tmp_path)
    play_addressing(t)
    t.check("addressing")


def test_addressing_in_json_form(tmp_path: Path) -> None:
    t = transcript(tmp_path)
    play_addressing(t, "--json")
    t.check("addressing-json")


def play_errors(t: Transcript, root: Path, *json: str) -> None:
    """Every failure an operator meets, each one line that says what to do."""
    (root / "empty").mkdir()
    t.run("show", *ALICE, *json)  # no store at all
    t.run("show", *ALICE, "--store", "", *json)
    t.run("show", *ALICE, "--store", "bogus://somewhere", *json)
    t.run("show", *ALICE, "--store", f"file://{root}/missing", *json)
    t.run("save", *ALICE, "x", "--mutation-id", "e-1", "--store", f"file://{root}/missing", *json)
    t.run("show", *ALICE, "--store", f"file://{root}/empty", *json)  # a folder, not a store
    t.run("stats", "--store", f"file://{root}/empty", *json)
    store = ("--store", f"file://{root}/store?create=true")
    t.run("save", *ALICE, "Prefers metric units.", "--mutation-id", "e-2", *store, *json)
    corrupt(root / "store", storage_key("user", "u_123"))
    t.run("show", *ALICE, *store, *json)
    t.run("save", *ALICE, "Anything.", "--mutation-id", "e-3", *store, *json)
    t.run("erase", *ALICE, "--yes", "--mutation-id", "e-4", *store, *json)
    t.run("save", *BOB, "password=hunter2hunter2", "--mutation-id", "e-5", *store, *json)
    t.run("save", *BOB, "-", "--mutation-id", "e-6", *store, *json, stdin="x" * 2100)
    t.run("save", *BOB, "   ", "--mutation-id", "e-7", *store, *json)
    t.run("save", *BOB, "Fine.", "--mutation-id", "", *store, *json)
    t.run("save", *BOB, "Fine.", "--mutation-id", "e-8", *store, *json)
    t.run("save", *BOB, "Something else.", "--mutation-id", "e-8", *store, *json)
    t.run("save", *BOB, "Small.", "--mutation-id", "e-9", "--max-characters", "50", *store, *json)
    t.run("remove", *BOB, "-1", "--mutation-id", "e-10", *store, *json)
    t.run("remove", *BOB, "first", *store, *json)
    t.run("show", *BOB, "--at", "0000000000000001.md", *store, *json)
    t.run("stats", "--top", "0", *store, *json)
    t.run("frobnicate", *json)
    t.run(*json)


def test_errors_in_human_form(tmp_path: Path) -> None:
    t = transcript(tmp_path, store=None)
    play_errors(t, tmp_path)
    t.check("errors")


def test_errors_in_json_form(tmp_path: Path) -> None:
    t = transcript(tmp_path, store=None)
    play_errors(t, tmp_path, "--json")
    t.check("errors-json")


def play_store(t: Transcript, root: Path, *json: str) -> None:
    """``probe`` and ``stats`` on a store with a few documents, one of them corrupt."""
    t.run("stats", *json)  # a new store: created by its first save, nothing yet
    t.run("probe", *json)
    t.run("probe", "--writers", "3", "--quiet", *json)
    t.run("save", *ALICE, "Prefers metric units.", "--mutation-id", "s-1", *json)
    t.run("save", *ALICE, "Works at Acme on the billing team.", "--mutation-id", "s-2", *json)
    t.run("save", *BOB, "Likes tea.", "--mutation-id", "s-3", *json)
    t.run("save", *CAROL, "Speaks German and English.", "--mutation-id", "s-4", *json)
    corrupt(root / "store", storage_key("user", "u_789"), b"<!-- docmem/1 {} -->\n")
    t.run("stats", *json)
    t.run("stats", "--top", "1", "--workers", "1", *json)
    t.run("stats", "--quiet", *json)


def test_probe_and_stats_in_human_form(tmp_path: Path) -> None:
    t = transcript(tmp_path)
    play_store(t, tmp_path)
    t.check("store")


def test_probe_and_stats_in_json_form(tmp_path: Path) -> None:
    t = transcript(tmp_path)
    play_store(t, tmp_path, "--json")
    t.check("store-json")


@pytest.mark.parametrize("name", ["session", "addressing", "errors", "store"])
def test_every_golden_file_has_its_json_twin(name: str) -> None:
    from cli_transcript import GOLDEN

    assert (GOLDEN / f"{name}.txt").exists()
    assert (GOLDEN / f"{name}-json.txt").exists()
