"""Startup benchmarks: what a fresh process running docmem costs, against ``python -c pass``.

A stdio MCP server is started by its host once per session, and the command
line may run in a shell loop, so the time to start matters. Each row runs a
fresh process per sample and alternates it with a fresh ``python -c pass``
(the same interpreter, environment and flags) in the same run (A/B, then
B/A, ...), and reports the ratio of the medians against a target:

* ``docmem --version``: the console script printing its version, the least a
  command can do. Target: at most 3x ``python -c pass``.
* ``docmem show, file://``: the console script showing a 10-entry document
  of a ``file://`` store (``--quiet``: the document alone), the whole path of
  a command: parse the flags, lock the scope, open the store, read, parse
  and render the document. Target: at most 3x ``python -c pass``.
* ``import docmem``: ``python -c "import docmem"``. Its figure is the time
  the import adds: the median minus the median of ``python -c pass``,
  against the fixed budget of 40 ms (the baseline is that budget, not
  measured, so the ratio is the share of the budget used; target 1x).
* ``docmem mcp, stdio initialize``: the console script started as an MCP
  host starts a stdio server, timed from the start of the process to its
  answer to ``initialize`` (checked to name the server ``docmem``); closing
  stdin then ends it, outside the clock. Most of it is importing the MCP SDK.
  Target: at most 80x ``python -c pass``, about a second: what a host waits
  once per session. At most 15 samples a side: each takes most of a second.

Every process gets an explicit, minimal environment. Bytecode goes to a
temporary ``PYTHONPYCACHEPREFIX`` (warmed before timing and removed
afterwards), as an installed package has its bytecode compiled: never
into the checkout, and no sample pays for compiling docmem's sources. Each
command's output is checked once before timing. ``--quick`` is a smoke run
with few samples; ``--json`` prints the report as one JSON object
(benchmarks/README.md). Benchmarks never fail a build: the exit status is 0
whether a target is met (PASS) or not (MISS).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import pathlib
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence

from harness.arguments import add_output_arguments, override
from harness.report import (
    Result,
    describe,
    format_duration,
    json_report,
    notes,
    table,
    verdict,
    versions,
)
from harness.timing import Sample, interleave, log

import docmem

#: The added time ``import docmem`` may cost over ``python -c pass``.
IMPORT_BUDGET = 0.040
NAMESPACE = "bench:startup"
SCOPE = ("user", "u_bench")
ENTRIES = 10


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many fresh processes each side of a row starts; see :data:`FULL` and :data:`QUICK`."""

    runs: int
    warmup: int


FULL = Settings(runs=41, warmup=3)
QUICK = Settings(runs=5, warmup=1)


@dataclasses.dataclass(frozen=True)
class Context:
    """What every row runs with: the interpreter, the console script, the environment, a store."""

    python: str
    script: str
    env: dict[str, str]
    #: The ``file://`` store holding the benchmark's 10-entry document.
    store_url: str
    document_bytes: int

    def command(self, *arguments: str) -> list[str]:
        """The console script with ``arguments``."""
        return [self.script, *arguments]

    def python_c(self, code: str) -> list[str]:
        """``python -c CODE`` with the benchmark's interpreter."""
        return [self.python, "-c", code]


def process(command: Sequence[str], env: dict[str, str]) -> Sample:
    """A sample: start ``command`` as a fresh process and wait for it; its wall time."""

    def sample() -> float:
        start = time.perf_counter_ns()
        subprocess.run(
            list(command),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        return (time.perf_counter_ns() - start) / 1e9

    return sample


def output_of(command: Sequence[str], env: dict[str, str]) -> str:
    """What ``command`` prints (for the checks before timing); it must exit 0."""
    done = subprocess.run(list(command), env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def a_b(subject: Sample, baseline: Sample, settings: Settings) -> tuple[list[float], list[float]]:
    """Warm both up, then the interleaved samples of each."""
    interleave(settings.warmup, subject, baseline)
    return interleave(settings.runs, subject, baseline)


def bench_ratio(
    name: str,
    command: Sequence[str],
    context: Context,
    settings: Settings,
    *,
    target: float,
    checked: bool,
    detail: str = "",
) -> Result:
    """A row timing ``command`` against ``python -c pass``: the ratio of the two medians."""
    subject, baseline = a_b(
        process(command, context.env), process(context.python_c("pass"), context.env), settings
    )
    return Result(
        name=name,
        detail=detail,
        subject=statistics.median(subject),
        baseline=statistics.median(baseline),
        baseline_name="python -c pass",
        target=target,
        runs=settings.runs,
        checked=checked,
    )


def bench_version(context: Context, settings: Settings) -> Result:
    """``docmem --version``, checked to print the version, against ``python -c pass``."""
    command = context.command("--version")
    checked = output_of(command, context.env) == f"docmem {docmem.__version__}\n"
    return bench_ratio("docmem --version", command, context, settings, target=3.0, checked=checked)


def bench_show(context: Context, settings: Settings) -> Result:
    """``docmem show`` of the 10-entry document, checked to print it, against ``python -c pass``."""
    command = context.command(
        "show", "--store", context.store_url, "--namespace", NAMESPACE, "--quiet",
        *(argument for part in SCOPE for argument in ("--scope", part)),
    )  # fmt: skip
    shown = output_of(command, context.env)
    checked = shown.startswith("# Memory: user") and shown.count("\n") == 4 + ENTRIES
    return bench_ratio(
        "docmem show, file://",
        command,
        context,
        settings,
        target=3.0,
        checked=checked,
        detail=f"{ENTRIES} entries, {context.document_bytes:,} B",
    )


def bench_import(context: Context, settings: Settings) -> Result:
    """What ``import docmem`` adds to ``python -c pass``, against the 40 ms budget."""
    code = "import docmem"
    checked = output_of(context.python_c(f"{code}; print(docmem.__version__)"), context.env) == (
        f"{docmem.__version__}\n"
    )
    imported, passed = a_b(
        process(context.python_c(code), context.env),
        process(context.python_c("pass"), context.env),
        settings,
    )
    with_import, bare = statistics.median(imported), statistics.median(passed)
    return Result(
        name="import docmem, added to python -c pass",
        subject=with_import - bare,
        baseline=IMPORT_BUDGET,
        baseline_name=f"{IMPORT_BUDGET * 1e3:.0f} ms budget (fixed)",
        target=1.0,
        runs=settings.runs,
        checked=checked,
        notes=(
            f'python -c "import docmem" {format_duration(with_import)}, '
            f"python -c pass {format_duration(bare)} (medians)",
        ),
    )


#: What a host sends first to a stdio server it started (one JSON-RPC line).
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "docmem-bench", "version": docmem.__version__},
    },
}
#: How long a stdio server may take to answer before the benchmark gives up on it.
ANSWER_DEADLINE = 60.0
#: At most this many samples a side for the MCP row: each is most of a second.
MCP_RUNS = 15


def initialized(command: Sequence[str], env: dict[str, str]) -> tuple[float, object]:
    """Start ``command`` as a stdio MCP server; (seconds to its answer to initialize, answer).

    The clock runs from the start of the process to the answer's line on
    stdout; closing stdin then ends the server, outside the clock.
    """
    start = time.perf_counter_ns()
    server = subprocess.Popen(
        list(command),
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], ANSWER_DEADLINE)
        line = server.stdout.readline() if ready else b""
        elapsed = (time.perf_counter_ns() - start) / 1e9
        server.stdin.close()
        server.wait(ANSWER_DEADLINE)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if not line:
        raise RuntimeError(f"{command[0]} did not answer initialize")
    answer: object = json.loads(line)
    return elapsed, answer


def bench_mcp_initialize(context: Context, settings: Settings) -> Result:
    """``docmem mcp`` over stdio answering ``initialize``, against ``python -c pass``."""
    command = context.command(
        "mcp", "--store", context.store_url, "--namespace", NAMESPACE,
        "--principal", "user:bench:u_bench",
    )  # fmt: skip
    _, answer = initialized(command, context.env)
    result = answer.get("result", {}) if isinstance(answer, dict) else {}
    checked = result.get("serverInfo", {}).get("name") == "docmem"
    settings = dataclasses.replace(settings, runs=min(settings.runs, MCP_RUNS))
    subject, baseline = a_b(
        lambda: initialized(command, context.env)[0],
        process(context.python_c("pass"), context.env),
        settings,
    )
    return Result(
        name="docmem mcp, stdio initialize",
        subject=statistics.median(subject),
        baseline=statistics.median(baseline),
        baseline_name="python -c pass",
        target=80.0,
        runs=settings.runs,
        checked=checked,
        detail=f"protocol {result.get('protocolVersion', '?')}",
    )


#: The rows, in the order they run and print. A row needing more than a command line
#: goes here too: it gets the same Context and Settings and returns one Result, timing
#: fresh processes against ``python -c pass`` in the same run (see ``bench_ratio``).
ROWS: tuple[Callable[[Context, Settings], Result], ...] = (
    bench_version,
    bench_show,
    bench_import,
    bench_mcp_initialize,
)


# -- set-up -------------------------------------------------------------------


def seeded_store(base: pathlib.Path) -> tuple[str, int]:
    """A ``file://`` store with one 10-entry document, made the public way; (URL, its bytes)."""
    root = base / "store"
    store = docmem.open_store(root.as_uri() + "?create=true")
    memory = docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace=NAMESPACE, scope=SCOPE), slot="user"
    )
    for number in range(ENTRIES):
        memory.save(f"Benchmark note number {number}.", mutation_id=f"seed-{number}")
    stored = store.read(memory.scope.storage_key)
    assert stored is not None
    return root.as_uri(), len(stored.data)


def environment(base: pathlib.Path) -> dict[str, str]:
    """The minimal environment of every process; bytecode cached under ``base``."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(base)),
        "LANG": "C.UTF-8",
        "PYTHONPYCACHEPREFIX": str(base / "pycache"),
    }


@contextlib.contextmanager
def scratch(parent: str | None) -> Iterator[pathlib.Path]:
    """A temporary directory (store and bytecode), removed afterwards however the run ends."""
    base = tempfile.mkdtemp(prefix="docmem-bench-startup-", dir=parent)
    try:
        yield pathlib.Path(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, str | None, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark the start of docmem processes against python -c pass."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with few samples")
    parser.add_argument(
        "--dir", default=None, help="where to create the temporary store and bytecode cache"
    )
    parser.add_argument("--runs", type=int, help="fresh processes per side of each row")
    parser.add_argument("--warmup", type=int, help="untimed processes per side before each row")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    return (
        override(parser, QUICK if arguments.quick else FULL, arguments),
        arguments.dir,
        arguments.json,
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings, parent, as_json = parse_arguments(argv)
    started = time.monotonic()
    script = pathlib.Path(sys.executable).parent / "docmem"
    results: list[Result] = []
    with scratch(parent) as base:
        store_url, size = seeded_store(base)
        context = Context(sys.executable, str(script), environment(base), store_url, size)
        log(f"benchmarking the start of docmem {docmem.__version__} processes in {base}")
        for row in ROWS:
            phase = time.monotonic()
            result = row(context, settings)
            results.append(result)
            log(f"{result.name}: {time.monotonic() - phase:.1f} s")
    found = versions()
    if as_json:
        where = {
            "python": sys.executable,
            "script": str(script),
            "docmem_from": os.path.dirname(docmem.__file__),
            "bytecode": "cached in a temporary PYTHONPYCACHEPREFIX",
        }
        print(
            json_report(
                "startup", results, settings=settings, found=found, context=where, started=started
            )
        )
        return 0
    print(f"{describe(found)}; docmem from {os.path.dirname(docmem.__file__)}")
    print(f"fresh processes of {sys.executable}; medians of interleaved runs")
    print("ratio = docmem median / python -c pass median; import row: added time / 40 ms budget")
    print()
    print(table(results))
    print()
    print(notes([result for result in results if result.notes], "a check failed"))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
