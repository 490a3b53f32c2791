"""The operator console's benchmarks: pages served by a running console against the CLI's work.

A real ``docmem console --port 0`` process serves a ``file://`` store; the
benchmark signs in with its one-time link and then keeps one HTTP/1.1
connection alive (``http.client``), as a browser does. Each row alternates
the page with its baseline in the same run (A/B, then B/A, ...) and reports
the ratio of the medians:

* ``scope page``: ``GET /scope/KEY`` of a 10-entry scope, the whole page
  read, against ``docmem show --json --key KEY`` for the same scope of the
  same store, run **in this process** through the command line's own driver
  (``docmem.cli.driver.run``: parse the flags, open the store, read, parse,
  render, print the JSON to a buffer), so the interpreter's start, which
  the console pays once, is not counted against the command. Target: <= 2x.
* ``overview, 10,000 scopes``: ``GET /store`` (every document read and
  parsed, three SVG charts drawn) against ``docmem stats --json`` of the
  same store, in-process the same way. Both read 8 documents at a time.
  Target: <= 1.3x.

The 10,000 scopes are written out of band (``local.py``'s ``populate``: the
bytes of a small valid document straight to each key's file, no fsync).
``--quick`` is a smoke run (1,000 scopes, few rounds); ``--json`` prints one
JSON object (benchmarks/README.md). The exit status is 0 whether a target is
met (PASS) or not (MISS).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import io
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence

from harness.arguments import add_output_arguments, override
from harness.report import Result, describe, json_report, notes, table, verdict, versions
from harness.timing import Sample, interleave, log, settle
from harness.workload import scale_keys, seeded, small_document
from local import populate

import docmem
from docmem.cli.driver import run as docmem_cli

NAMESPACE = "bench:console"


@dataclasses.dataclass(frozen=True)
class Settings:
    """Rounds per row and the overview's store size; see :data:`FULL` and :data:`QUICK`."""

    page_runs: int
    overview_runs: int
    scopes: int
    warmup: int


FULL = Settings(page_runs=301, overview_runs=9, scopes=10_000, warmup=20)
QUICK = Settings(page_runs=31, overview_runs=3, scopes=1_000, warmup=3)


class Console:
    """A ``docmem console`` process and one kept-alive, signed-in connection to it."""

    def __init__(self, store_url: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "docmem", "console", "--port", "0", "--store", store_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        found = re.search(r"http://([^/\s]+)(/login\?token=\S+)", self.process.stdout.readline())
        if found is None:
            raise RuntimeError("docmem console printed no login link")
        self.host = found.group(1)
        hostname, port = self.host.rsplit(":", 1)
        self.connection = http.client.HTTPConnection(hostname, int(port), timeout=120)
        answer = self._request(found.group(2))
        cookie = answer.getheader("set-cookie", "").split(";", 1)[0]
        if answer.status != 303 or not cookie:
            raise RuntimeError(f"the login link was refused ({answer.status})")
        self.cookie = cookie

    def _request(self, path: str, cookie: str = "") -> http.client.HTTPResponse:
        headers = {"Host": self.host, "Cookie": cookie} if cookie else {"Host": self.host}
        self.connection.request("GET", path, headers=headers)
        answer = self.connection.getresponse()
        answer.read()
        return answer

    def get(self, path: str) -> bytes:
        """The page at ``path``, read whole (it must be a 200)."""
        self.connection.request("GET", path, headers={"Host": self.host, "Cookie": self.cookie})
        answer = self.connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"GET {path} answered {answer.status}")
        return body

    def close(self) -> None:
        self.connection.close()
        self.process.terminate()
        self.process.wait(timeout=30)


def in_process(*arguments: str) -> str:
    """What ``docmem ARGUMENTS`` prints, run by the command line's driver in this process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = docmem_cli(list(arguments))
    if code != 0:
        raise RuntimeError(f"docmem {arguments[0]} exited {code}")
    return out.getvalue()


def timed(function: Callable[[], object]) -> Sample:
    """A sample: the seconds one call of ``function`` takes."""

    def sample() -> float:
        start = time.perf_counter_ns()
        function()
        return (time.perf_counter_ns() - start) / 1e9

    return sample


def bench_scope_page(console: Console, store_url: str, key: str, settings: Settings) -> Result:
    """``GET /scope/KEY`` against ``docmem show --json --key KEY`` in-process."""
    path = f"/scope/{key}"
    page = console.get(path).decode()
    shown = in_process("show", "--store", store_url, "--key", key, "--json")
    checked = "Seed fact 9" in page and '"revision": 10' in shown
    page_sample = timed(lambda: console.get(path))
    show_sample = timed(lambda: in_process("show", "--store", store_url, "--key", key, "--json"))
    settle()
    interleave(settings.warmup, page_sample, show_sample)
    subject, baseline = interleave(settings.page_runs, page_sample, show_sample)
    return Result(
        name="scope page, file://",
        detail=f"10 entries, {len(page):,} B of HTML",
        subject=statistics.median(subject),
        baseline=statistics.median(baseline),
        baseline_name="docmem show --json (in-process)",
        target=2.0,
        runs=settings.page_runs,
        checked=checked,
    )


def bench_overview(console: Console, store_url: str, settings: Settings) -> Result:
    """``GET /store`` against ``docmem stats --json`` in-process, on the same store."""
    page = console.get("/store").decode()
    stats = in_process("stats", "--store", store_url, "--json")
    documents = settings.scopes + 1
    checked = f"{documents:,} documents" in page and f'"documents": {documents}' in stats
    overview = timed(lambda: console.get("/store"))
    counted = timed(lambda: in_process("stats", "--store", store_url, "--json"))
    settle()
    interleave(1, overview, counted)
    subject, baseline = interleave(settings.overview_runs, overview, counted)
    return Result(
        name=f"overview, {settings.scopes:,} scopes, file://",
        subject=statistics.median(subject),
        baseline=statistics.median(baseline),
        baseline_name="docmem stats --json (in-process)",
        target=1.3,
        runs=settings.overview_runs,
        checked=checked,
    )


@contextlib.contextmanager
def scratch(parent: str | None) -> Iterator[pathlib.Path]:
    """A temporary directory for the store, removed afterwards however the run ends."""
    base = tempfile.mkdtemp(prefix="docmem-bench-console-", dir=parent)
    try:
        yield pathlib.Path(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, str | None, bool]:
    parser = argparse.ArgumentParser(
        description="Benchmark the console's pages against the docmem commands they mirror."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (1,000 scopes)")
    parser.add_argument("--dir", default=None, help="where to create the temporary store")
    parser.add_argument("--page-runs", type=int, help="rounds of the scope-page row")
    parser.add_argument("--overview-runs", type=int, help="rounds of the overview row")
    parser.add_argument("--scopes", type=int, help="scopes in the overview's store")
    parser.add_argument("--warmup", type=int, help="untimed rounds before the scope-page row")
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
    results: list[Result] = []
    with scratch(parent) as base:
        root = base / "store"
        with docmem.open_store(root.as_uri() + "?create=true") as store:
            key = seeded(store, NAMESPACE, "u_page").scope.storage_key
        log(f"writing {settings.scopes:,} scopes to {root}")
        populate(str(root), scale_keys(NAMESPACE, settings.scopes), small_document())
        os.sync()
        store_url = root.as_uri()
        console = Console(store_url)
        try:
            log("scope page against docmem show --json")
            results.append(bench_scope_page(console, store_url, key, settings))
            log("overview against docmem stats --json")
            results.append(bench_overview(console, store_url, settings))
        finally:
            console.close()
    found = versions("starlette", "uvicorn", "jinja2")
    if as_json:
        where = {"server": "docmem console on 127.0.0.1, one kept-alive connection"}
        print(
            json_report(
                "console", results, settings=settings, found=found, context=where, started=started
            )
        )
        return 0
    print(describe(found))
    print("a docmem console process on one kept-alive connection; the commands in-process")
    print()
    print(table(results))
    print()
    print(notes([result for result in results if result.notes], "a check failed"))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
