"""The console script's promises beyond its transcripts: versions, laziness, progress, failures.

Every test runs the real ``docmem`` script (or ``python -B -m docmem``) in a
subprocess, with a minimal environment, on real stores.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest
from cli_transcript import DOCMEM, base_environment, docmem

import docmem as docmem_package
from docmem.cli.advice import advice

#: Each test here starts the docmem command, an example or a benchmark in a process of its own.
pytestmark = pytest.mark.process

NAMESPACE = "acme:prod:user"
ALICE = ("--namespace", NAMESPACE, "--scope", "user", "--scope", "u_123")


def store_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return base_environment(DOCMEM_STORE=f"file://{tmp_path}/store?create=true", **extra)


def test_version_from_the_script_and_from_python_dash_m() -> None:
    expected = f"docmem {docmem_package.__version__}\n"
    assert docmem("--version").stdout == expected
    done = subprocess.run(
        [sys.executable, "-B", "-m", "docmem", "--version"],
        env=base_environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == expected


def test_help_lists_every_command_and_exits_0() -> None:
    ran = docmem("--help")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("usage: docmem")
    for command in (
        "show",
        "save",
        "remove",
        "erase",
        "inspect",
        "history",
        "revert",
        "audit",
        "probe",
        "stats",
        "mcp",
    ):
        assert command in ran.stdout
    shown = docmem("show", "--help")
    assert shown.code == 0
    assert "--principal KIND:AUTHENTICATOR:ID" in shown.stdout


def test_principal_is_keyed_exactly_as_by_principal(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    for issuer in (None, "https://auth0.example/"):
        flags = ["--namespace", NAMESPACE, "--principal", "user:auth0:u_123"]
        flags += [] if issuer is None else ["--issuer", issuer]
        answer = json.loads(docmem("show", *flags, "--json", env=env).stdout)
        principal = docmem_package.Principal("user", "auth0", "u_123", issuer=issuer)
        scope = docmem_package.by_principal(docmem_package.ScopeContext(principal=principal))
        assert scope is not None
        locked = docmem_package.lock_scope(namespace=NAMESPACE, scope=scope)
        assert answer["key"] == locked.storage_key
        assert (answer["namespace_key"], answer["scope_key"]) == (
            locked.namespace_key,
            locked.scope_key,
        )


def test_an_application_reads_what_the_command_line_saved(tmp_path: Path) -> None:
    ran = docmem(
        "save", *ALICE, "Prefers metric units.", "--mutation-id", "m-1", env=store_env(tmp_path)
    )
    assert ran.code == 0, ran.stderr
    store = docmem_package.open_store(f"file://{tmp_path}/store")
    scope = docmem_package.lock_scope(namespace=NAMESPACE, scope=("user", "u_123"))
    memory = docmem_package.FileMemory(store).bind(scope, slot="user")
    assert memory.inspect("m-1") == docmem_package.MutationRecord("save", "saved", 0, 1)
    # ... and the application's own retry of that mutation id has no second effect.
    assert memory.save("Prefers metric units.", mutation_id="m-1").revision == 1


def test_a_save_replayed_after_an_erase_says_it_changed_nothing(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    save = ("save", *ALICE, "Lives at 12 Elm Street.", "--mutation-id", "m1")
    assert docmem(*save, env=env).code == 0
    assert docmem("erase", *ALICE, "--yes", "--mutation-id", "gdpr-1", env=env).code == 0
    replayed = docmem(*save, env=env)
    assert replayed.code == 0, replayed.stderr
    assert replayed.stdout == (
        "this mutation id was applied before; nothing changed (revision 2); mutation id m1\n"
    )
    answer = json.loads(docmem(*save, "--json", env=env).stdout)
    assert (answer["status"], answer["index"], answer["revision"]) == ("replayed", None, 2)
    shown = docmem("show", *ALICE, env=env).stdout
    assert "Elm Street" not in shown


def test_a_mutation_without_an_id_gets_a_fresh_one_that_inspect_finds(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    saved = json.loads(docmem("save", *ALICE, "Likes tea.", "--json", env=env).stdout)
    assert saved["mutation_id"].startswith("docmem-")
    found = json.loads(docmem("inspect", *ALICE, saved["mutation_id"], "--json", env=env).stdout)
    assert (found["landed"], found["op"], found["index"]) == (True, "save", 0)


def test_show_never_imports_mcp_tqdm_or_the_adapters(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from docmem.cli import main
        code = main(["show", *{list(ALICE)!r}, "--quiet"])
        loaded = sorted(name for name in sys.modules
                        if name.split(".")[0] in ("mcp", "tqdm", "jwt")
                        or name.startswith("docmem.integrations"))
        print(code, loaded)
        """
    )
    done = subprocess.run(
        [sys.executable, "-B", "-c", code],
        env=store_env(tmp_path),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "0 []"


def _on_a_terminal(arguments: list[str], env: dict[str, str]) -> tuple[int, str, bytes]:
    """Run with stderr on a pseudo-terminal of 100 columns: (exit code, stdout, the terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(
        [str(DOCMEM), *arguments], stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert process.stdout is not None
    stdout = process.stdout.read().decode()
    return process.wait(timeout=60), stdout, bytes(seen)


def test_stats_draws_a_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    for user in ("u_1", "u_2", "u_3"):
        scope = ("--namespace", NAMESPACE, "--scope", "user", "--scope", user)
        assert docmem("save", *scope, "A note.", env=env).code == 0
    code, stdout, terminal = _on_a_terminal(["stats"], env)
    assert code == 0
    assert stdout.startswith("3 keys, 3 documents, 3 entries")
    assert b"/3 [" in terminal, terminal  # count of total, then elapsed<remaining, rate
    assert b"doc/s" in terminal, terminal
    code, stdout, terminal = _on_a_terminal(["stats", "--quiet"], env)
    assert (code, stdout, terminal) == (0, "", b"")
    piped = docmem("stats", env=env)
    assert piped.stderr == ""
    assert piped.stdout == stdout or piped.stdout.startswith("3 keys")


def test_a_closed_pipe_is_exit_141_without_a_traceback(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    assert docmem("save", *ALICE, "A note.", env=env).code == 0
    read, write = os.pipe()
    os.close(read)  # nobody will read: the first write fails with EPIPE
    done = subprocess.run(
        [str(DOCMEM), "show", *ALICE], stdout=write, stderr=subprocess.PIPE, env=env, check=False
    )
    os.close(write)
    assert (done.returncode, done.stderr) == (141, b"")


def _broken_plugin(root: Path) -> dict[str, str]:
    """A real plug-in distribution, found by its entry point, whose store raises a foreign error.

    The error's text stands for anything a third-party library might put there.
    """
    (root / "docmem_cli_broken.py").write_text(
        textwrap.dedent(
            """
            from docmem.backend import Backend

            class Broken(Backend):
                @classmethod
                def from_url(cls, url, **options):
                    return cls()

                @property
                def url(self):
                    return "broken://"

                def read(self, key):
                    raise RuntimeError("CANARY-3f9 the raw text a library put here")

                write = delete = read

                def keys(self):
                    raise RuntimeError("CANARY-3f9 the raw text a library put here")
            """
        )
    )
    info = root / "docmem_cli_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: docmem-cli-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[docmem.backends]\nbroken = docmem_cli_broken:Broken\n")
    return base_environment(PYTHONPATH=str(root), DOCMEM_STORE="broken://")


def test_an_unexpected_error_is_one_line_and_a_traceback_only_with_debug(tmp_path: Path) -> None:
    env = _broken_plugin(tmp_path)
    ran = docmem("show", *ALICE, env=env)
    assert ran.code == 1
    assert ran.stdout == ""
    assert ran.stderr == (
        "internal_error: an unexpected RuntimeError: a bug in docmem or a plug-in; "
        "run the command again with --debug for the traceback and report it\n"
    )
    answer = json.loads(docmem("stats", "--json", env=env).stdout)
    assert answer["error"]["code"] == "internal_error"
    debugged = docmem("show", *ALICE, "--debug", env=env)
    assert debugged.code == 1
    assert "Traceback (most recent call last)" in debugged.stderr
    assert "CANARY-3f9" in debugged.stderr  # the operator asked for everything


def test_a_docmem_error_prints_its_traceback_only_with_debug(tmp_path: Path) -> None:
    missing = ("--store", f"file://{tmp_path}/missing")
    quiet = docmem("show", *ALICE, *missing)
    assert quiet.code == 1
    assert quiet.stderr.count("\n") == 1
    assert quiet.stderr.startswith("store_unavailable: ")
    loud = docmem("show", *ALICE, *missing, "--debug")
    assert loud.code == 1
    assert "Traceback (most recent call last)" in loud.stderr
    assert loud.stderr.splitlines()[-1] == quiet.stderr.strip()


def test_mcp_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    # The mcp package shadowed by one that cannot be imported, as on an install without the extra.
    shadow = tmp_path / "shadow" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n"
    )
    env = base_environment(PYTHONPATH=str(shadow.parent))
    for arguments in (["mcp", "--namespace", "n", "--principal", "user:a:b"], ["mcp", "--help"]):
        ran = docmem(*arguments, "--store", f"file://{tmp_path}", env=env)
        assert (ran.code, ran.stdout) == (1, "")
        assert ran.stderr == 'docmem mcp needs the mcp extra: pip install "agent-docmem[mcp]"\n'
    # Every other command works without it, and still lists mcp in the help.
    assert docmem("show", *ALICE, "--store", f"file://{tmp_path}", env=env).code == 1  # no marker
    assert "mcp" in docmem("--help", env=env).stdout


def test_mcp_takes_its_flags_from_the_integration() -> None:
    pytest.importorskip("docmem.integrations.mcp")
    ran = docmem("mcp", "--help")
    assert ran.code == 0, ran.stderr
    for flag in ("--store", "--namespace", "--principal", "--debug"):
        assert flag in ran.stdout


def test_the_advice_for_an_unknown_outcome_names_inspect_and_the_retry() -> None:
    error = docmem_package.StoreBusy("memory did not confirm this change in time")
    error.outcome = "unknown"
    hint = advice(error, {"mutation_id": "op-7", "key": "memkey1_x"})
    assert hint == (
        "it may have landed: check with `docmem inspect op-7`, or retry with --mutation-id op-7"
    )
    error.outcome = "not_committed"
    assert advice(error, {"mutation_id": "op-7"}) == (
        "nothing was changed; retry with --mutation-id op-7"
    )


def test_the_advice_for_a_kept_history_asks_the_error_whether_erasing_again_purges() -> None:
    class NeverPurged(docmem_package.HistoryKept):
        erase_again_purges = False  # as docmem-azure's and docmem-gcs's say

    retried = docmem_package.HistoryKept("older versions are left")
    retried.outcome = "committed"
    assert advice(retried, {"mutation_id": "gdpr-1"}) == (
        "the change itself is stored; once the store allows the purge, "
        "erase again with --mutation-id gdpr-1"
    )
    kept = NeverPurged("older versions are left")
    kept.outcome = "committed"
    assert advice(kept, {"mutation_id": "gdpr-1"}) == (
        "the change itself is stored; "
        "remove the older versions the message names with the store's own tools"
    )
