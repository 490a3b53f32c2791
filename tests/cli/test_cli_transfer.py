"""``docmem export | import | verify | migrate | fence | unfence`` through the real console script.

Every test runs the installed ``docmem`` in a subprocess on real ``file://``
stores: a round trip with its JSON answers, a tampered file, an import
killed with SIGKILL and resumed, a migration while another process keeps
saving from several threads, and the refusals of a non-empty destination
and of one that fails its probe.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_transcript import DOCMEM, base_environment, docmem
from test_cli_behaviour import _on_a_terminal

import docmem as docmem_package
from docmem.provider.document import MemoryDocument, parse, serialize
from docmem.provider.fencing import FENCE_KEY, listed, unfenced
from docmem.provider.transfer import export_store
from docmem.storage.builtin.local import LocalBackend

#: Each test here starts the docmem command, an example or a benchmark in a process of its own.
pytestmark = pytest.mark.process

NAMESPACE = "acme:prod:user"


def url(root: Path, *, create: bool = True) -> str:
    return f"file://{root}" + ("?create=true" if create else "")


def fill(root: Path, scopes: int, *, erased: int = 0) -> LocalBackend:
    """A store of ``scopes`` documents written straight through the backend (fast)."""
    store = LocalBackend(root, create=True)
    for number in range(scopes):
        key = docmem_package.lock_scope(namespace=NAMESPACE, scope=f"u{number}").storage_key
        entries = {} if number < erased else {0: f"Note {number}.", 1: "Likes tea."}
        document = MemoryDocument(entries, last=1, revision=2 + (number < erased))
        store.write(key, serialize(document), expected=None)
    return store


def answer(*arguments: str) -> dict[str, Any]:
    ran = docmem(*arguments, "--json")
    assert ran.stdout, ran.stderr
    decoded: dict[str, Any] = json.loads(ran.stdout)
    decoded["_code"] = ran.code
    return decoded


def test_help_lists_the_transfer_commands() -> None:
    shown = docmem("--help").stdout
    for command in ("export", "import", "verify", "migrate", "fence", "unfence"):
        assert command in shown


def test_export_import_verify_round_trip(tmp_path: Path) -> None:
    source = fill(tmp_path / "a", 20, erased=3)
    file = tmp_path / "out.jsonl"
    exported = answer("export", str(file), "--store", url(tmp_path / "a"), "--workers", "3")
    assert (exported["_code"], exported["ok"], exported["documents"]) == (0, True, 20)
    assert exported["fenced"] is False
    assert len(exported["logical_digest"]) == 64
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".out.jsonl")]
    imported = answer("import", str(file), "--store", url(tmp_path / "b"))
    assert (imported["created"], imported["skipped"]) == (20, 0)
    again = answer("import", str(file), "--store", url(tmp_path / "b"))
    assert (again["created"], again["skipped"]) == (0, 20)
    verified = answer("verify", str(file), "--store", url(tmp_path / "b", create=False))
    assert verified["matches"] is True
    assert verified["store_digest"] == exported["logical_digest"]
    copy = LocalBackend(tmp_path / "b")
    for key in listed(source):
        assert copy.read(key).data == source.read(key).data  # type: ignore[union-attr]
    checked = answer("verify", str(file), "--file-only")
    assert (checked["_code"], checked["documents"]) == (0, 20)


def test_export_to_stdout_and_import_from_stdin(tmp_path: Path) -> None:
    fill(tmp_path / "a", 5)
    streamed = docmem("export", "-", "--store", url(tmp_path / "a"))
    assert streamed.code == 0, streamed.stderr
    assert streamed.stdout.startswith('{"type":"header","format":"docmem-export/1"')
    fed = docmem("import", "-", "--store", url(tmp_path / "b"), stdin=streamed.stdout)
    assert fed.code == 0, fed.stderr
    assert fed.stdout.startswith("imported 5 documents")
    assert docmem("export", "-", "--json", "--store", url(tmp_path / "a")).code == 2


def test_a_tampered_file_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    fill(tmp_path / "a", 4)
    file = tmp_path / "out.jsonl"
    assert docmem("export", str(file), "--store", url(tmp_path / "a")).code == 0
    lines = file.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"Note", b"Nope")
    file.write_bytes(b"".join(lines))
    refused = answer("import", str(file), "--store", url(tmp_path / "b"))
    assert (refused["_code"], refused["error"]["code"]) == (1, "export_invalid")
    assert "line 3" in refused["error"]["message"]
    assert not (tmp_path / "b").exists() or not list(LocalBackend(tmp_path / "b").keys())


def test_verify_fails_when_the_store_differs(tmp_path: Path) -> None:
    fill(tmp_path / "a", 3)
    file = tmp_path / "out.jsonl"
    assert docmem("export", str(file), "--store", url(tmp_path / "a")).code == 0
    docmem(
        "save",
        "--store",
        url(tmp_path / "a"),
        "--namespace",
        NAMESPACE,
        "--scalar-scope",
        "u1",
        "Changed.",
    )
    failed = answer("verify", str(file), "--store", url(tmp_path / "a"))
    assert (failed["_code"], failed["error"]["code"]) == (1, "transfer_refused")
    assert (failed["different"], failed["missing"], failed["extra"]) == (1, 0, 0)
    assert len(failed["different_keys"]) == 1


def test_export_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    fill(tmp_path / "a", 30)
    env = base_environment(DOCMEM_STORE=url(tmp_path / "a"))
    code, stdout, terminal = _on_a_terminal(["export", str(tmp_path / "out.jsonl")], env)
    assert code == 0
    assert stdout.startswith("exported 30 documents")
    for shown in (b"exporting", b"/30 [", b"doc/s"):
        assert shown in terminal, terminal


# -- an import killed part-way, and resumed ------------------------------------------------------


def _documents(root: Path) -> int:
    return sum(
        name.endswith(".md") and not name.startswith(".")
        for _, _, names in os.walk(root)
        for name in names
    )


def test_an_import_killed_part_way_resumes_with_nothing_missing_or_twice(tmp_path: Path) -> None:
    scopes = 1500
    source = fill(tmp_path / "a", scopes, erased=10)
    docmem_package.fence(source, "mig-k")  # fenced documents: the copies must come out unfenced
    file = tmp_path / "out.jsonl"
    with file.open("wb") as out:
        export_store(source, out)
    destination = tmp_path / "b"
    process = subprocess.Popen(
        [str(DOCMEM), "import", str(file), "--store", url(destination), "--workers", "1"],
        env=base_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while _documents(destination) < 100 and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    landed = _documents(destination)
    assert 100 <= landed < scopes, "the import ended before it could be killed"
    unasked = answer("import", str(file), "--store", url(destination))  # perhaps a deleted scope
    assert (unasked["_code"], unasked["error"]["code"]) == (1, "transfer_refused")
    assert unasked["store_documents"] + unasked["missing"] == scopes
    resumed = answer("import", str(file), "--store", url(destination), "--create-missing")
    assert resumed["_code"] == 0, resumed
    assert resumed["created"] + resumed["skipped"] == scopes
    assert resumed["skipped"] in (landed, landed - 1)  # one create may have been in flight
    copy = LocalBackend(destination)
    keys = sorted(copy.keys())
    assert keys == listed(source)
    for key in keys:
        assert copy.read(key).data == unfenced(source.read(key).data)  # type: ignore[union-attr]
    leftovers = [n for _, _, names in os.walk(destination) for n in names if ".tmp-" in n]
    assert leftovers == []
    assert answer("verify", str(file), "--store", url(destination))["matches"] is True


# -- a migration while another process keeps saving ---------------------------------------------

WRITER = textwrap.dedent(
    """
    import json, sys, threading, time, os
    import docmem

    store_url, log_path, stop_path = sys.argv[1:4]
    memory = docmem.FileMemory(docmem.open_store(store_url))
    lock = threading.Lock()
    log = open(log_path, "a", buffering=1)

    def record(kind, scope, text, outcome, started):
        with lock:
            log.write(json.dumps({"kind": kind, "scope": scope, "text": text,
                                  "outcome": outcome, "started": started}) + "\\n")

    def writer(kind, number):
        count = 0
        while not os.path.exists(stop_path):
            count += 1
            scope = f"u{count % 5}" if kind == "existing" else f"new-{number}-{count}"
            text = f"{kind} {number} {count}"
            bound = memory.bind(docmem.lock_scope(namespace="acme:prod:user", scope=scope),
                                slot="user")
            started = time.time()
            try:
                result = bound.save(text, mutation_id=f"{kind}-{number}-{count}")
                outcome = result.status
            except docmem.DocmemError as error:
                outcome = f"{error.code}:{error.outcome}"
            record(kind, scope, text, outcome, started)
            time.sleep(0.003)

    threads = [threading.Thread(target=writer, args=(kind, n))
               for kind in ("existing", "new") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    """
)


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _wait_for(path: Path, what: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not what(_log(path)):
        assert time.monotonic() < deadline, "the writer process did not get there in time"
        time.sleep(0.05)


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    script, log, stop = tmp_path / "writer.py", tmp_path / "log.jsonl", tmp_path / "stop"
    script.write_text(WRITER)
    fill(tmp_path / "src", 300)  # enough that the fence and the export overlap the saves
    process = subprocess.Popen(
        [
            sys.executable,
            "-B",
            str(script),
            url(tmp_path / "src", create=False),
            str(log),
            str(stop),
        ],
        env=base_environment(),
    )
    yield log, stop
    stop.touch()
    process.wait(timeout=60)
    assert process.returncode == 0


def _texts(root: Path, scope: str) -> set[str]:
    store = LocalBackend(root)
    found = store.read(docmem_package.lock_scope(namespace=NAMESPACE, scope=scope).storage_key)
    return set(parse(found.data).entries.values()) if found is not None else set()


def test_migrate_with_a_concurrent_writer_loses_nothing_saved_and_rolls_back(
    tmp_path: Path, writer: tuple[Path, Path]
) -> None:
    log, stop = writer
    _wait_for(log, lambda rows: sum(r["outcome"] == "saved" for r in rows) >= 20)
    source, destination = url(tmp_path / "src", create=False), url(tmp_path / "dst")
    migrated = answer("migrate", source, destination, "--id", "mig-w", "--workers", "2")
    assert migrated["_code"] == 0, migrated
    moved = time.time()

    def fenced_after_move(kind: str) -> Any:
        return lambda rows: (
            sum(
                r["kind"] == kind
                and r["started"] > moved
                and r["outcome"].startswith("scope_fenced")
                for r in rows
            )
            >= 3
        )

    _wait_for(log, fenced_after_move("existing"))
    _wait_for(log, fenced_after_move("new"))
    rows = _log(log)
    assert any(r["outcome"] == "scope_fenced:not_committed" for r in rows if r["kind"] == "new")
    assert any(r["outcome"] == "scope_fenced:not_committed" for r in rows if r["kind"] != "new")
    for row in rows:
        if row["outcome"] == "saved":  # told it was saved: it is in the new store
            assert row["text"] in _texts(tmp_path / "dst", row["scope"]), row
        else:
            assert row["outcome"].startswith("scope_fenced"), row
    rolled = answer("migrate", source, destination, "--id", "mig-w", "--rollback")
    assert rolled["_code"] == 0, rolled
    back = time.time()
    _wait_for(
        log,
        lambda rows: sum(r["started"] > back and r["outcome"] == "saved" for r in rows) >= 10,
    )
    stop.touch()
    for row in _log(log):
        if row["started"] > back and row["outcome"] == "saved":
            assert row["text"] in _texts(tmp_path / "src", row["scope"]), row


# -- refusals -----------------------------------------------------------------------------------


def _unconditional_plugin(root: Path) -> dict[str, str]:
    """A real plug-in distribution whose store ignores the write condition (fails the probe)."""
    (root / "docmem_unconditional.py").write_text(
        textwrap.dedent(
            """
            from docmem.storage.builtin.inmemory import MemoryBackend

            class Unconditional(MemoryBackend):
                def write(self, key, data, *, expected):
                    current = self.read(key)
                    version = current.version if current is not None else None
                    return super().write(key, data, expected=version)
            """
        )
    )
    info = root / "docmem_unconditional-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: docmem-unconditional\nVersion: 1\n"
    )
    (info / "entry_points.txt").write_text(
        "[docmem.backends]\nunconditional = docmem_unconditional:Unconditional\n"
    )
    return base_environment(PYTHONPATH=str(root))


def test_migrate_refuses_a_non_empty_destination_and_one_failing_its_probe(
    tmp_path: Path,
) -> None:
    fill(tmp_path / "src", 3)
    fill(tmp_path / "other", 1)
    source = url(tmp_path / "src", create=False)
    merged = answer("migrate", source, url(tmp_path / "other"), "--id", "mig-1")
    assert (merged["_code"], merged["error"]["code"]) == (1, "transfer_refused")
    assert "never merges" in merged["error"]["message"]
    env = _unconditional_plugin(tmp_path)
    ran = docmem("migrate", source, "unconditional://x", "--id", "mig-1", "--json", env=env)
    failed = json.loads(ran.stdout)
    assert (ran.code, failed["error"]["code"]) == (1, "store_unavailable")
    assert "conditional writes" in failed["error"]["message"]
    assert LocalBackend(tmp_path / "src").read(FENCE_KEY) is None  # refused before the fence
    rollback = docmem("migrate", source, url(tmp_path / "other"), "--rollback")
    assert rollback.code == 2  # --rollback needs --id


def test_fence_and_unfence_commands(tmp_path: Path) -> None:
    fill(tmp_path / "s", 2)
    store = url(tmp_path / "s", create=False)
    fenced = answer("fence", "--id", "ops-1", "--store", store)
    assert (fenced["_code"], fenced["changed"]) == (0, 2)
    flags = ("--store", store, "--namespace", NAMESPACE, "--scalar-scope", "u0")
    refused = docmem("save", *flags, "More.")
    assert refused.code == 1
    assert refused.stderr.startswith("scope_fenced: ")
    other = answer("unfence", "--id", "ops-2", "--store", store)
    assert other["error"]["code"] == "scope_fenced"
    lifted = answer("unfence", "--id", "ops-1", "--store", store)
    assert (lifted["_code"], lifted["changed"]) == (0, 2)
    assert docmem("save", *flags, "More.").code == 0


# -- issue 21: the operator's paths, plaintext copies, deleted scopes, plurals ------------------


@pytest.mark.parametrize(
    ("command", "verb", "problem"),
    [
        (("import", "{tmp}/missing.jsonl"), "read", "there is no such file"),
        (("verify", "{tmp}/missing.jsonl", "--file-only"), "read", "there is no such file"),
        (("export", "{tmp}/no/such/dir/x.jsonl"), "write", "its folder does not exist"),
        (("import", "{tmp}"), "read", "it is a folder, not a file"),
        (("export", "{tmp}"), "write", "it is a folder, not a file"),
    ],
)
def test_a_path_that_cannot_be_opened_is_the_operators_mistake_not_a_bug(
    tmp_path: Path, command: tuple[str, ...], verb: str, problem: str
) -> None:
    fill(tmp_path / "s", 1)
    words = [word.format(tmp=tmp_path) for word in command]
    ran = docmem(*words, "--store", url(tmp_path / "s", create=False))
    assert ran.code == 1
    assert (
        ran.stderr == f"invalid_argument: cannot {verb} the export file {words[1]!r}: {problem}\n"
    )
    failed = answer(*words, "--store", url(tmp_path / "s", create=False))
    assert (failed["_code"], failed["error"]["code"]) == (1, "invalid_argument")


def test_a_kept_export_that_cannot_be_written_is_refused_before_the_fence(tmp_path: Path) -> None:
    fill(tmp_path / "src", 2)
    source = url(tmp_path / "src", create=False)
    kept = tmp_path / "no" / "such" / "x.jsonl"
    ran = docmem("migrate", source, url(tmp_path / "dst"), "--keep-export", str(kept))
    assert ran.code == 1
    assert ran.stderr.startswith(f"invalid_argument: cannot write the export file '{kept}'")
    assert LocalBackend(tmp_path / "src").read(FENCE_KEY) is None


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask, inherited by the console script: a file open() makes is 0644."""
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("command", ["export", "migrate"])
def test_an_export_file_is_0600_replaces_a_symlink_and_truncates_no_file(
    tmp_path: Path, command: str
) -> None:
    fill(tmp_path / "src", 3)
    source = url(tmp_path / "src", create=False)
    target, link = tmp_path / "elsewhere.txt", tmp_path / "link.jsonl"
    target.write_text("not docmem's\n")
    link.symlink_to(target)
    existing, other_name = tmp_path / "old.jsonl", tmp_path / "old-hard-link.jsonl"
    existing.write_text("an older export\n")
    os.link(existing, other_name)
    for number, path in enumerate((link, existing)):
        if command == "export":
            ran = docmem("export", str(path), "--store", source)
        else:
            destination = url(tmp_path / f"dst{number}")
            ran = docmem(
                "migrate", source, destination, "--id", f"m{number}", "--keep-export", str(path)
            )
            assert docmem("unfence", "--id", f"m{number}", "--store", source).code == 0
        assert ran.code == 0, ran.stderr
        assert not path.is_symlink()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_bytes().startswith(b'{"type":"header","format":"docmem-export/1"')
    assert target.read_text() == "not docmem's\n"  # the link was replaced, not followed
    assert other_name.read_text() == "an older export\n"  # the old inode was not truncated
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def _encrypted(tmp_path: Path, name: str) -> str:
    keys = tmp_path / "keys.json"
    if not keys.exists():
        assert docmem("keyring", "add", str(keys), "k1").code == 0
    return f"encrypted+file://{tmp_path}/{name}?create=true&keyring=file:{keys}"


def test_a_migration_out_of_encryption_needs_decrypt_and_warns(tmp_path: Path) -> None:
    source = _encrypted(tmp_path, "src")
    flags = ("--namespace", NAMESPACE, "--scalar-scope", "u0")
    assert docmem("save", "--store", source, *flags, "Prefers tea.").code == 0
    plain = url(tmp_path / "plain")
    refused = docmem("migrate", source, plain, "--id", "m1")
    assert refused.code == 1
    assert refused.stderr.startswith("transfer_refused: the source store is encrypted")
    assert "pass --decrypt" in refused.stderr
    assert LocalBackend(tmp_path / "src").read(FENCE_KEY) is None  # refused before anything
    assert not (tmp_path / "plain").exists() or not list(LocalBackend(tmp_path / "plain").keys())
    decrypted = docmem("migrate", source, plain, "--id", "m1", "--decrypt", "--json")
    assert decrypted.code == 0, decrypted.stderr
    assert json.loads(decrypted.stdout)["decrypted"] is True
    assert "warning: SRC is encrypted and DST is not" in decrypted.stderr
    (key,) = listed(LocalBackend(tmp_path / "plain"))
    copy = LocalBackend(tmp_path / "plain").read(key)
    assert copy is not None
    assert list(parse(copy.data).entries.values()) == ["Prefers tea."]  # plaintext, as asked
    assert docmem("unfence", "--id", "m1", "--store", source).code == 0
    sealed = docmem("migrate", source, _encrypted(tmp_path, "sealed"), "--id", "m2", "--json")
    assert sealed.code == 0, sealed.stderr
    assert (json.loads(sealed.stdout)["decrypted"], sealed.stderr) == (False, "")


def test_an_export_of_an_encrypted_store_warns_that_the_file_is_plaintext(
    tmp_path: Path,
) -> None:
    source = _encrypted(tmp_path, "src")
    flags = ("--namespace", NAMESPACE, "--scalar-scope", "u0")
    assert docmem("save", "--store", source, *flags, "Prefers tea.").code == 0
    file = tmp_path / "out.jsonl"
    exported = docmem("export", str(file), "--store", source, "--json")
    assert exported.code == 0
    assert json.loads(exported.stdout)["source_encrypted"] is True
    assert exported.stderr.startswith(
        f"warning: the store is encrypted, but the export file {file} is not"
    )
    assert b"Prefers tea." in file.read_bytes()
    streamed = docmem("export", "-", "--store", source, "--quiet")
    assert streamed.stdout.startswith('{"type":"header"')
    assert streamed.stderr.startswith("warning: the store is encrypted, but the export on stdout")
    fill(tmp_path / "plain", 1)
    plain = docmem("export", str(file), "--store", url(tmp_path / "plain"), "--json")
    assert (json.loads(plain.stdout)["source_encrypted"], plain.stderr) == (False, "")


def test_an_import_does_not_bring_back_a_scope_an_operator_deleted(tmp_path: Path) -> None:
    store = fill(tmp_path / "s", 4)
    file = tmp_path / "backup.jsonl"
    assert docmem("export", str(file), "--store", url(tmp_path / "s")).code == 0
    purged = listed(store)[1]
    store.delete(purged)  # the operator's purge: no trace left in the store
    refused = answer("import", str(file), "--store", url(tmp_path / "s"))
    assert (refused["_code"], refused["error"]["code"]) == (1, "transfer_refused")
    assert (refused["store_documents"], refused["missing"]) == (3, 1)
    assert refused["missing_keys"] == [purged]
    assert "--create-missing" in refused["error"]["hint"]
    assert store.read(purged) is None
    said = docmem("import", str(file), "--store", url(tmp_path / "s"))
    assert said.stderr.startswith(
        f"transfer_refused: the store already holds 3 documents and lacks 1 document of the "
        f"export (first: {purged})"
    )
    asked = answer("import", str(file), "--store", url(tmp_path / "s"), "--create-missing")
    assert (asked["_code"], asked["created"], asked["skipped"]) == (0, 1, 3)


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    fill(tmp_path / "src", 1)
    source = url(tmp_path / "src", create=False)
    file = tmp_path / "one.jsonl"
    outputs = [docmem("export", str(file), "--store", source)]
    outputs.append(docmem("migrate", source, url(tmp_path / "dst"), "--id", "m1"))
    outputs.append(docmem("migrate", source, url(tmp_path / "dst"), "--id", "m1", "--rollback"))
    flags = ("--namespace", NAMESPACE, "--scalar-scope", "u0")
    outputs.append(docmem("save", "--store", source, *flags, "Changed."))
    mismatch = docmem("verify", str(file), "--store", source)
    assert mismatch.code == 1
    assert "the export holds 1 document, the store 1" in mismatch.stderr
    outputs.append(mismatch)
    for ran in outputs:
        shown = ran.stdout + ran.stderr
        for wrong in ("1 documents", "1 scopes", "1 copies", "1 copy are"):
            assert wrong not in shown, shown
    assert "fenced the source: 1 document under" in outputs[1].stdout
    assert "(1 copy of the source's documents)" in outputs[2].stdout
