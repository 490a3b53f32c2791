"""What per-entry provenance costs: this checkout's save against the previous release's.

Issue 25's targets, each measured against a baseline in the same run, the two
sides interleaved (A/B, then B/A, ...), the ratio of the medians:

* ``save, file://``: ``save()`` into a 10-entry document (an untimed
  ``remove`` after each keeps it at 10), this checkout's docmem against the
  previous release's (:data:`BASELINE_REF`, extracted from git into a
  temporary directory), each side in a process of its own whose
  ``PYTHONPATH`` names its tree. Each round, the parent asks one side, then
  the other, for a batch of saves, and each side answers its own per-save
  time. The docmem side opens its store as a user gets it (``history``
  at its default: every write hard-links the replaced document into a kept
  slot); the old release knows no history option. Target: at most 1.05x.
* ``save, file://, history=0``: the same with the docmem side's store opened
  with ``history=0``, so the first row's cost can be told apart: provenance
  alone here, provenance and the kept versions there. Target: at most 1.05x.
* ``save, s3://``: the same on docmem-s3 on LocalStack (``--endpoint`` or
  ``$LOCALSTACK_ENDPOINT``: ``scripts/with-test-servers .venv/bin/python
  benchmarks/provenance.py``), each save from a fresh cached version (this
  store wrote last: one conditional PUT). Each side imports docmem-s3 from its
  own tree (the old release's from the same commit: this checkout's may name
  what only the new core has). Target: at most 1.05x. Without an endpoint the
  row is not run and the report says so.
* ``recall, file://``: ``recall()`` of an unchanged 10-entry document, batched,
  the two releases as above. Target: 1.0x.
* ``audit, 10,000 scopes``: ``docmem audit --store URL --session ID --json``
  run in this process through :func:`docmem.cli.main` (stdout to
  ``/dev/null``), on a ``file://`` store of 10,000 scopes (``--quick``: 1,000)
  written out of band (``docmem/2`` documents of three entries with their
  provenance records), with a session filter that matches four entries of
  two documents, against a raw walk of the same store: ``LocalBackend.keys()``
  and ``open`` + ``read`` of each file, as many at a time as the audit's
  default ``--workers``, no parse. Target: at most 1.3x. An untimed run
  first checks that the audit names exactly the matching entries.

The rows that need the previous release are skipped, with the reason, when
this checkout is not a git repository or lacks the commit
(``--baseline-ref`` names another). Notes under each row give the spread: the
quartiles of the per-round ratios. ``--quick`` is a smoke run; ``--json``
prints one JSON object (benchmarks/README.md), whose rows add
``ratio_spread`` (those quartiles) and whose ``skipped`` lists the rows not run
and why. Benchmarks never fail a build: the exit status is 0 whether a target
is met (PASS) or not (MISS), and a row that fails is listed in ``errors``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from harness.arguments import add_endpoint_arguments, add_output_arguments, override
from harness.report import Result, describe, json_report, notes, table, verdict, versions
from harness.s3 import Prefixes, Requests, S3Endpoint, check_bucket
from harness.timing import clock, interleave, log, settle
from harness.workload import index_of, save_text, scale_keys, seeded

import docmem

#: The previous release: "today's save", the commit before provenance (205de87).
BASELINE_REF = "6d7b6c8"
#: The checkout this script belongs to, and docmem-s3's distribution in it.
CHECKOUT = Path(__file__).resolve().parent.parent
S3_DISTRIBUTION = "backends/docmem-s3"
NAMESPACE = "bench:provenance"
SAVE_TARGET = 1.05
RECALL_TARGET = 1.0
AUDIT_TARGET = 1.3
#: ``docmem audit``'s module, which the audit row needs.
AUDIT_MODULE = "docmem.cli.commands.audit"
#: Entries per document of the audit's store, and the sessions they were saved in.
AUDIT_ENTRIES = 3


@dataclasses.dataclass(frozen=True)
class Settings:
    """Rounds per side, operations per round, untimed rounds first; the audit's store."""

    save_rounds: int = 300
    save_batch: int = 5
    s3_rounds: int = 150
    s3_batch: int = 5
    recall_rounds: int = 300
    recall_batch: int = 20
    audit_scopes: int = 10_000
    audit_runs: int = 11
    warmup: int = 10


FULL = Settings()
QUICK = Settings(
    save_rounds=10,
    save_batch=3,
    s3_rounds=6,
    s3_batch=3,
    recall_rounds=10,
    recall_batch=5,
    audit_scopes=1_000,
    audit_runs=3,
    warmup=2,
)


class Skipped(Exception):
    """A row that cannot run here; its message says why."""


@dataclasses.dataclass(frozen=True)
class Measured:
    """A row and the quartiles of its per-round ratios (the spread)."""

    result: Result
    spread: tuple[float, float]


def spread_of(subject: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """The first and third quartiles of the per-round ratios (round i of one over the other's)."""
    ratios = [ours / theirs for ours, theirs in zip(subject, baseline, strict=True)]
    if len(ratios) < 2:
        return ratios[0], ratios[0]
    quartiles = statistics.quantiles(ratios, n=4, method="inclusive")
    return quartiles[0], quartiles[2]


def measured(
    name: str,
    subject: Sequence[float],
    baseline: Sequence[float],
    *,
    baseline_name: str,
    target: float,
    runs: int,
    detail: str,
    notes: Sequence[str] = (),
    checked: bool = True,
) -> Measured:
    low, high = spread_of(subject, baseline)
    result = Result(
        name=name,
        detail=detail,
        subject=statistics.median(subject),
        baseline=statistics.median(baseline),
        baseline_name=baseline_name,
        target=target,
        runs=runs,
        notes=(f"per-round ratio, quartiles: {low:.2f}x - {high:.2f}x", *notes),
        checked=checked,
    )
    return Measured(result, (low, high))


# -- the two trees ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Tree:
    """Where one side imports docmem (and docmem_s3) from: its ``PYTHONPATH``."""

    label: str
    #: The folder holding the package ``docmem``, and the one holding ``docmem_s3`` (if any).
    root: Path
    s3_root: Path | None

    @property
    def path(self) -> str:
        return os.pathsep.join(str(p) for p in (self.root, self.s3_root) if p is not None)


def checkout_tree() -> Tree:
    s3_root = CHECKOUT / S3_DISTRIBUTION
    return Tree("this checkout", CHECKOUT, s3_root if (s3_root / "docmem_s3").is_dir() else None)


def _git(*arguments: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(CHECKOUT), *arguments], capture_output=True)


def _extract(commit: str, paths: Sequence[str], into: Path) -> bool:
    """``paths`` of ``commit`` written under ``into`` (``git archive``); False if none is there."""
    archive = _git("archive", "--format=tar", commit, "--", *paths)
    if archive.returncode != 0:
        return False
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:  # a Python without extraction filters (before 3.10.12); git's own archive
            tar.extractall(into)
    return True


def baseline_tree(ref: str, into: Path) -> Tree:
    """The previous release's ``docmem/`` and ``docmem_s3/``, extracted from ``ref`` into ``into``.

    Raises :class:`Skipped` saying why when it cannot be had: no git, not a
    git repository, or no such commit (a shallow clone).
    """
    if shutil.which("git") is None:
        raise Skipped(f"git is not installed: the previous release ({ref}) cannot be extracted")
    if _git("rev-parse", "--is-inside-work-tree").returncode != 0:
        raise Skipped(
            f"{CHECKOUT} is not a git repository: the previous release ({ref}) cannot be extracted"
        )
    found = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise Skipped(f"no commit {ref} in this repository (a shallow clone?); see --baseline-ref")
    commit = found.stdout.decode().strip()
    if not _extract(commit, ["docmem"], into):
        raise Skipped(f"commit {ref} holds no docmem/ package")
    s3_package = f"{S3_DISTRIBUTION}/docmem_s3"
    s3_root = into / S3_DISTRIBUTION if _extract(commit, [s3_package], into) else None
    return Tree(f"{ref} ({commit[:12]})", into, s3_root)


# -- one side, a process of its own -------------------------------------------


def worker(spec: dict[str, Any], replies: TextIO) -> int:
    """One side: seed a 10-entry document, then answer ``run`` with one round's seconds per call.

    Runs in a process whose ``PYTHONPATH`` names its tree, so ``docmem`` here
    is that tree's. It uses only what both releases offer. Replies are JSON
    lines on ``replies`` (the process's stdout; anything else printed goes to
    stderr).
    """
    store = docmem.open_store(spec["url"])
    memory = seeded(store, NAMESPACE, "provenance")
    if not memory.recall():
        raise RuntimeError("the seeded document is missing")
    stored = store.read(memory.scope.storage_key)
    clients = getattr(store, "clients", None)  # docmem-s3's reader and writer
    requests = Requests().attach(*(clients() if callable(clients) else ()))
    s3_module = sys.modules.get("docmem_s3")

    def reply(**fields: Any) -> None:
        replies.write(json.dumps(fields) + "\n")
        replies.flush()

    reply(
        docmem=os.path.dirname(docmem.__file__),
        docmem_s3=os.path.dirname(s3_module.__file__ or "") if s3_module else None,
        bytes=len(stored.data) if stored else 0,
        header=bytes(stored.data[:14]).decode() if stored else "",
    )
    batch: int = spec["batch"]
    count = calls = 0
    for line in sys.stdin:
        command = line.strip()
        if command == "reset":
            requests.reset()
            calls = 0
            reply(ok=True)
        elif command == "run" and spec["op"] == "save":
            spent = 0
            for _ in range(batch):
                count += 1
                text = save_text(count)
                with requests.counting():
                    start = time.perf_counter_ns()
                    result = memory.save(text, mutation_id=f"save-{count}")
                    spent += time.perf_counter_ns() - start
                memory.remove(index_of(result), mutation_id=f"remove-{count}")
            calls += batch
            reply(seconds=spent / 1e9 / batch)
        elif command == "run" and spec["op"] == "recall":
            with requests.counting():
                start = time.perf_counter_ns()
                for _ in range(batch):
                    memory.recall()
                spent = time.perf_counter_ns() - start
            calls += batch
            reply(seconds=spent / 1e9 / batch)
        elif command == "stop":
            reply(requests=requests.per_call(max(calls, 1)))
            break
        else:
            raise RuntimeError(f"unknown command {command!r}")
    store.close()
    return 0


class Side:
    """A worker process running one tree's docmem (see :func:`worker`)."""

    def __init__(self, tree: Tree, spec: dict[str, Any], scratch: str) -> None:
        self.tree = tree
        env = dict(os.environ, PYTHONPATH=tree.path)
        self._process = subprocess.Popen(
            [sys.executable, "-B", __file__, "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=scratch,
        )
        self.hello = self._ask(None)
        imported = Path(self.hello["docmem"]).resolve()
        if imported != (tree.root / "docmem").resolve():
            raise RuntimeError(f"the {tree.label} side imported docmem from {imported}")
        s3_from = self.hello["docmem_s3"]
        expected = tree.s3_root / "docmem_s3" if tree.s3_root else None
        if s3_from and expected and Path(s3_from).resolve() != expected.resolve():
            raise RuntimeError(f"the {tree.label} side imported docmem_s3 from {s3_from}")

    def _ask(self, command: str | None) -> dict[str, Any]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None
        assert stdout is not None
        if command is not None:
            stdin.write(command + "\n")
            stdin.flush()
        line = stdout.readline()
        if not line:
            code = self._process.wait(timeout=30)
            raise RuntimeError(f"the {self.tree.label} side ended (exit code {code}); see stderr")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def sample(self) -> float:
        return float(self._ask("run")["seconds"])

    def reset(self) -> None:
        self._ask("reset")

    def stop(self) -> str:
        """Ends the process; the S3 requests per timed call since the last reset."""
        requests = str(self._ask("stop")["requests"])
        self._process.wait(timeout=60)
        return requests

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    @property
    def described(self) -> str:
        return f"{self.hello['header'].split()[1]} {self.hello['bytes']:,} B"


@contextlib.contextmanager
def sides(
    subject: tuple[Tree, dict[str, Any]], baseline: tuple[Tree, dict[str, Any]], scratch: str
) -> Iterator[tuple[Side, Side]]:
    """Both workers started (the docmem side first), and killed however the row ends."""
    started: list[Side] = []
    try:
        for tree, spec in (subject, baseline):
            started.append(Side(tree, spec, scratch))
        yield started[0], started[1]
    finally:
        for side in started:
            side.kill()


def compare_releases(
    name: str,
    subject: tuple[Tree, dict[str, Any]],
    baseline: tuple[Tree, dict[str, Any]],
    *,
    rounds: int,
    warmup: int,
    target: float,
    scratch: str,
    per_call: str,
) -> Measured:
    """Interleave ``rounds`` of the two workers (after ``warmup``): the row."""
    with sides(subject, baseline, scratch) as (ours, theirs):
        interleave(warmup, ours.sample, theirs.sample)
        ours.reset()
        theirs.reset()
        started = time.monotonic()
        subject_times, baseline_times = interleave(rounds, ours.sample, theirs.sample)
        log(f"{name}: {time.monotonic() - started:.1f} s")
        detail = f"{ours.described} vs {theirs.described}"
        requests = (ours.stop(), theirs.stop())
    calls = rounds * subject[1]["batch"]
    extra = [f"docmem from {ours.tree.label}, baseline from {theirs.tree.label}"]
    if subject[1]["url"].startswith("s3://"):
        extra += [f"docmem {per_call}: {requests[0]}", f"baseline {per_call}: {requests[1]}"]
    return measured(
        name,
        subject_times,
        baseline_times,
        baseline_name=f"previous release ({BASELINE_REF})",
        target=target,
        runs=calls,
        detail=detail,
        notes=extra,
    )


# -- the rows against the previous release ------------------------------------


def file_url(root: Path, **options: str) -> str:
    query = "&".join(f"{name}={value}" for name, value in {"create": "true", **options}.items())
    return f"{root.as_uri()}?{query}"


def file_rows(old: Tree, base: Path, settings: Settings) -> list[Measured]:
    new = checkout_tree()
    results = []
    save_rows: tuple[tuple[str, dict[str, str]], ...] = (
        ("save, file://", {}),
        ("save, file://, history=0", {"history": "0"}),
    )
    for number, (name, options) in enumerate(save_rows):
        spec = {"op": "save", "batch": settings.save_batch}
        results.append(
            compare_releases(
                name,
                (new, {**spec, "url": file_url(base / f"save-{number}-new", **options)}),
                (old, {**spec, "url": file_url(base / f"save-{number}-old")}),
                rounds=settings.save_rounds,
                warmup=settings.warmup,
                target=SAVE_TARGET,
                scratch=str(base),
                per_call="per save",
            )
        )
    spec = {"op": "recall", "batch": settings.recall_batch}
    results.append(
        compare_releases(
            "recall, file://",
            (new, {**spec, "url": file_url(base / "recall-new")}),
            (old, {**spec, "url": file_url(base / "recall-old")}),
            rounds=settings.recall_rounds,
            warmup=settings.warmup,
            target=RECALL_TARGET,
            scratch=str(base),
            per_call="per recall",
        )
    )
    return results


def s3_row(old: Tree, endpoint: S3Endpoint, base: Path, settings: Settings) -> Measured:
    new = checkout_tree()
    for tree in (new, old):
        if tree.s3_root is None:
            raise Skipped(f"{tree.label} holds no {S3_DISTRIBUTION}/docmem_s3")
    prefixes = Prefixes(endpoint)
    query = f"endpoint_url={endpoint.url}&region={endpoint.region}"
    spec = {"op": "save", "batch": settings.s3_batch}
    try:
        return compare_releases(
            "save, s3://",
            (new, {**spec, "url": f"s3://{endpoint.bucket}/{prefixes.fresh('new')}?{query}"}),
            (old, {**spec, "url": f"s3://{endpoint.bucket}/{prefixes.fresh('old')}?{query}"}),
            rounds=settings.s3_rounds,
            warmup=settings.warmup,
            target=SAVE_TARGET,
            scratch=str(base),
            per_call="per save",
        )
    finally:
        prefixes.clean_up()


# -- audit ------------------------------------------------------------------


def audit_document(number: int, sessions: int) -> tuple[bytes, list[str]]:
    """A ``docmem/2`` document of three entries with provenance; the model saves' mutation ids.

    Two entries were saved by a model in session ``sess-<number % sessions>``
    (so each session has saved in two documents), one through the API.
    """
    from docmem.provider.document import MemoryDocument, parse, serialize
    from docmem.provider.journal import JournalRecord, id_digest, request_digest
    from docmem.provider.provenance import Provenance

    session = f"sess-{number % sessions}"
    texts = [
        f"Prefers metric units and short answers ({number}).",
        "Works on the billing team; on call every other week.",
        "Lives in Lisbon; usually online 9-17 UTC.",
    ]
    made = [
        (f"{session}/call_{number}_0", "model", session),
        (f"{session}/call_{number}_1", "model", session),
        (f"op-{number}-2", "api", None),
    ]
    at = 1_764_633_600_000 + number * 1_000
    journal = tuple(
        JournalRecord(
            id_digest(mutation), request_digest(mutation, "save", text), i + 1, "save", "saved", i
        )
        for i, (text, (mutation, _, _)) in enumerate(zip(texts, made, strict=True))
    )
    provenance = {
        i: Provenance(i, at + i, by, mutation, sid) for i, (mutation, by, sid) in enumerate(made)
    }
    document = MemoryDocument(
        dict(enumerate(texts)), last=2, revision=3, journal=journal, provenance=provenance
    )
    data = serialize(document)
    parse(data)  # fail here, not in the middle of the benchmark, if the format moved on
    return data, [mutation for mutation, by, _ in made if by == "model"]


def populate_audit(root: Path, scopes: int) -> dict[str, list[str]]:
    """A ``file://`` store of ``scopes`` documents written out of band (no fsync), one sync.

    The first goes through ``LocalBackend.write``, which marks the store. Returns
    each session's model mutation ids.
    """
    from docmem.storage.builtin.local import LocalBackend

    store = LocalBackend(root, create=True, history=0)
    sessions = max(scopes // 2, 1)
    saved: dict[str, list[str]] = collections.defaultdict(list)
    made: set[Path] = set()
    for number, key in enumerate(scale_keys(NAMESPACE, scopes)):
        data, mutations = audit_document(number, sessions)
        saved[f"sess-{number % sessions}"].extend(mutations)
        if number == 0:
            store.write(key, data, expected=None)
            continue
        path = Path(store.path(key))
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(data)
    store.close()
    os.sync()
    return saved


def audit_workers() -> int:
    """The audit's default ``--workers``, from its own flags."""
    from docmem.cli.commands import load

    parser = argparse.ArgumentParser()
    load("audit").configure(parser)
    workers = parser.get_default("workers")
    if not isinstance(workers, int):
        raise RuntimeError("docmem audit has no --workers default")
    return workers


def run_audit(arguments: Sequence[str], output: TextIO) -> int:
    """``docmem audit ARGUMENTS`` in this process, its stdout into ``output``: the exit code."""
    from docmem.cli import main as docmem_main

    with contextlib.redirect_stdout(output):
        return docmem_main(["audit", *arguments])


def raw_walk(root: Path, workers: int) -> int:
    """The audit's baseline: list the keys, read each file's bytes, ``workers`` at a time.

    As :func:`docmem.storage.parallel.ordered` bounds it: ``4 * workers`` reads in flight.
    """
    from docmem.storage.builtin.local import LocalBackend

    store = LocalBackend(root)
    pending: collections.deque[Future[bytes]] = collections.deque()
    total = 0

    def read(path: str) -> bytes:
        with open(path, "rb") as file:
            return file.read()

    listing = store.keys()  # a Backend's listing, not a dict's
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for key in listing:
            pending.append(pool.submit(read, store.path(key)))
            if len(pending) >= 4 * workers:
                total += len(pending.popleft().result())
        while pending:
            total += len(pending.popleft().result())
    return total


def audit_row(base: Path, settings: Settings) -> Measured:
    import importlib.util

    if importlib.util.find_spec(AUDIT_MODULE) is None:
        raise Skipped(f"docmem audit is not in this checkout yet ({AUDIT_MODULE})")
    scopes = settings.audit_scopes
    name = f"audit, {scopes:,} scopes"
    root = base / "audit"
    started = time.monotonic()
    saved = populate_audit(root, scopes)
    log(f"  populated {scopes:,} scopes in {time.monotonic() - started:.1f} s")
    workers = audit_workers()
    session = f"sess-{(scopes // 2) // 2}"
    arguments = ["--store", root.as_uri(), "--session", session, "--json"]
    # One untimed run: the audit must succeed and name the session's entries, and no other.
    answer = io.StringIO()
    code = run_audit(arguments, answer)
    expected = saved[session]
    others = [mutation for s, ids in saved.items() if s != session for mutation in ids[:1]]
    named = [mutation for mutation in expected if f'"{mutation}"' in answer.getvalue()]
    strays = [mutation for mutation in others if f'"{mutation}"' in answer.getvalue()]
    checked = code == 0 and len(named) == len(expected) and not strays
    check = (
        f"check: exit {code}, {len(named)} of the {len(expected)} matching entries named, "
        f"{len(strays)} others"
    )
    walked = raw_walk(root, workers)
    with open(os.devnull, "w") as devnull:

        def audit() -> float:
            return clock(lambda: run_audit(arguments, devnull))

        def raw() -> float:
            return clock(lambda: raw_walk(root, workers))

        interleave(1, audit, raw)
        settle()
        phase = time.monotonic()
        audit_times, raw_times = interleave(settings.audit_runs, audit, raw)
    log(f"{name}: {time.monotonic() - phase:.1f} s")
    return measured(
        name,
        audit_times,
        raw_times,
        baseline_name="keys() + read, same workers",
        target=AUDIT_TARGET,
        runs=settings.audit_runs,
        detail=f"{walked:,} B, --workers {workers}",
        notes=(check, f"filter --session {session}: {len(expected)} entries of 2 documents"),
        checked=checked,
    )


# -- the command line ---------------------------------------------------------


@dataclasses.dataclass
class Run:
    """What the rows gave: results, the rows not run and why, the rows that raised."""

    measured: list[Measured] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)

    def row(self, names: Sequence[str], make: Callable[[], list[Measured]]) -> None:
        """Run ``make``; a :class:`Skipped` or any error is noted under ``names``."""
        try:
            self.measured.extend(make())
        except Skipped as skipped:
            log(f"not run: {', '.join(names)}: {skipped}")
            self.skipped.extend(f"{name}: {skipped}" for name in names)
        except Exception as error:
            traceback.print_exc()
            self.errors.extend(f"{name}: {type(error).__name__}: {error}" for name in names)


FILE_ROWS = ("save, file://", "save, file://, history=0", "recall, file://")
S3_ROW = "save, s3://"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument(
        "--baseline-ref",
        default=BASELINE_REF,
        help="the commit of the previous release (default: %(default)s)",
    )
    parser.add_argument("--dir", default=None, help="where the temporary stores go")
    parser.add_argument("--save-rounds", type=int, help="rounds per side, file:// saves")
    parser.add_argument("--save-batch", type=int, help="saves per round, file://")
    parser.add_argument("--s3-rounds", type=int, help="rounds per side, s3:// saves")
    parser.add_argument("--s3-batch", type=int, help="saves per round, s3://")
    parser.add_argument("--recall-rounds", type=int, help="rounds per side, recall")
    parser.add_argument("--recall-batch", type=int, help="recalls per round")
    parser.add_argument("--audit-scopes", type=int, help="documents in the audit's store")
    parser.add_argument("--audit-runs", type=int, help="timed runs per side, audit")
    parser.add_argument("--warmup", type=int, help="untimed rounds per side first")
    parser.add_argument("--skip-audit", action="store_true", help="leave the audit row out")
    parser.add_argument("--skip-releases", action="store_true", help="only the audit row")
    add_endpoint_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    started = time.monotonic()
    run = Run()
    endpoint: S3Endpoint | None = None
    context: dict[str, Any] = {"baseline_ref": arguments.baseline_ref, "checkout": str(CHECKOUT)}
    with tempfile.TemporaryDirectory(prefix="docmem-bench-provenance-", dir=arguments.dir) as tmp:
        base = Path(tmp)
        log(f"benchmarking docmem {docmem.__version__} provenance in {base}")
        old: Tree | None = None
        if not arguments.skip_releases:

            def extracted() -> list[Measured]:
                nonlocal old
                old = baseline_tree(arguments.baseline_ref, base / "baseline")
                context["baseline"] = old.label
                return file_rows(old, base, settings)

            run.row(FILE_ROWS, extracted)
            if not arguments.endpoint:
                reason = "no S3 endpoint (--endpoint URL or $LOCALSTACK_ENDPOINT)"
                run.skipped.append(f"{S3_ROW}: {reason}")
                log(f"not run: {S3_ROW}: {reason}")
            elif old is None:
                run.skipped.append(f"{S3_ROW}: the previous release was not extracted")
            else:
                endpoint = S3Endpoint(arguments.endpoint, arguments.bucket, arguments.region)
                context.update(endpoint=endpoint.url, bucket=endpoint.bucket)
                releases = old

                def on_s3() -> list[Measured]:
                    assert endpoint is not None
                    try:
                        check_bucket(endpoint, "benchmarks/provenance.py")
                    except SystemExit as unusable:
                        raise Skipped(str(unusable)) from None
                    return [s3_row(releases, endpoint, base, settings)]

                run.row([S3_ROW], on_s3)
        if not arguments.skip_audit:
            audit_name = f"audit, {settings.audit_scopes:,} scopes"
            run.row([audit_name], lambda: [audit_row(base, settings)])
        log("clean-up")
    results = [m.result for m in run.measured]
    found = versions(*(("boto3",) if endpoint else ()))
    if arguments.json:
        report = json.loads(
            json_report(
                "provenance",
                results,
                settings=settings,
                found=found,
                context=context,
                started=started,
                errors=run.errors,
            )
        )
        for row, measurement in zip(report["results"], run.measured, strict=True):
            low, high = measurement.spread
            row["ratio_spread"] = {"p25": low, "p75": high}
        report["skipped"] = run.skipped
        print(json.dumps(report, indent=2, allow_nan=False))
        return 0
    print(f"{describe(found)}; docmem from {os.path.dirname(docmem.__file__)}")
    print(
        f"ratio = this checkout / the previous release ({arguments.baseline_ref}), "
        "or docmem audit / a raw walk; medians of interleaved rounds"
    )
    print()
    if results:
        print(table(results))
        print()
        print(notes(results, "check FAILED"))
        print()
    for entry in run.skipped:
        print(f"not run: {entry}")
    for entry in run.errors:
        print(f"FAILED: {entry}")
    if run.skipped or run.errors:
        print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        # The worker's replies own stdout; whatever else prints goes to stderr.
        replies, sys.stdout = sys.stdout, sys.stderr
        sys.exit(worker(json.loads(sys.argv[2]), replies))
    sys.exit(main())
