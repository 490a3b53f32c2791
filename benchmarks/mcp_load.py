"""Many users on one MCP server: ``docmem mcp --http`` under concurrent clients with JWTs.

Three phases, each with ``--clients`` concurrent clients (64; ``--quick``: 8),
every client with its own RS256 token (``sub`` ``client-N``, so its own scope)
signed by a key minted for the run:

* ``MCP, docmem``: the real console script, ``docmem mcp --http`` with
  ``--jwt-key-file``, ``--issuer`` and ``--audience``, in a process of its
  own. Each client is the official ``mcp`` client over streamable HTTP (all
  of them in this process, one asyncio loop) running a seeded mix: the
  recall prompt (50%), a save (30%) and a remove of one of its own entries
  (20%; a save when it has none, a remove when it has ``--entries``, 12).
* ``in-process, docmem``: the same mix at the same concurrency through
  docmem's API, ``MemoryRuntime.arecall`` and ``adispatch`` on the slot
  ``docmem mcp`` builds, on the same store (other subjects).
* ``MCP, no-op tool``: as many calls as the docmem phase made, to a tool that
  returns at once. docmem's server has no such tool and gets none (a model
  would see it); this script serves one itself (``--serve-noop``) in a second
  process with the same SDK, the same ``JwtVerifier`` and the same uvicorn
  set-up (``mcp_cli._serve_http``), so its latency is what the SDK, the HTTP
  stack and token verification cost, and docmem's p50 minus it is docmem's
  own cost inside the server.

Both servers run throughout and the phases alternate in ``--rounds`` rounds
(5 of 5 s each for the docmem phases, ``--seconds`` 25 in all), so a busy
neighbour on a shared machine slows all three alike; the no-op round follows
the docmem round whose call count it repeats. Every latency is one call
timed in the client. Afterwards every entry a client was told was saved (and
did not remove itself) is read back through docmem's API: a missing one is a
lost save, a removed one still there an undone remove. The docmem server's
VmRSS is sampled every 0.2 s through the run; the mean of its first quarter
is compared with its last.

Goals (issue 28): 0 errors and 0 lost saves; docmem's cost in the server at
most 1.2x its in-process p50; memory within 10% between the first and last
quarter. The store is S3 when an endpoint is given (``--endpoint`` or
``$LOCALSTACK_ENDPOINT``: ``scripts/with-test-servers .venv/bin/python
benchmarks/mcp_load.py``), else ``file://`` in a temporary directory
(``--file`` forces it). Run it under ``nice``: client, servers and store
share the machine, which the notes show (CPU of the client and the server).
The exit status is 0 whether the goals are met or not.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from harness.arguments import add_endpoint_arguments, add_output_arguments, override
from harness.report import Result, describe, format_duration, json_report, layout, table, versions
from harness.s3 import Prefixes, S3Endpoint, check_bucket
from harness.timing import log
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent

import docmem
from docmem.host.runtime import MemoryRuntime
from docmem.integrations.mcp import RECALL_PROMPT, TOKEN_AUTHENTICATOR

ISSUER = "https://issuer.mcp-load.example"
AUDIENCE = "docmem-mcp-load"
NAMESPACE = "bench:mcp"
SLOT = "user"
SAVE = f"{SLOT}__save_memory"
REMOVE = f"{SLOT}__remove_memory"
NOOP = "noop"
#: Shares of the mix, in percent: recall, save, remove (the rest).
RECALL_SHARE = 50
SAVE_SHARE = 30
RSS_INTERVAL = 0.2
DEADLINE = 30.0
COST_TARGET = 1.2
MEMORY_TARGET = 1.1
_INDEX = re.compile(r"memory (\d+)")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Clients, seconds of load per docmem phase and the rounds they are cut into, the mix's
    seed, and the entries a client keeps at most."""

    clients: int
    seconds: int
    rounds: int
    seed: int
    entries: int


FULL = Settings(clients=64, seconds=25, rounds=5, seed=28, entries=12)
QUICK = Settings(clients=8, seconds=5, rounds=2, seed=28, entries=12)


# -- what one phase measured -------------------------------------------------


@dataclasses.dataclass
class Ledger:
    """One client's saves the store must hold afterwards, and its removes it must not."""

    kept: dict[int, str] = dataclasses.field(default_factory=dict)
    removed: set[int] = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class Phase:
    """Every timed call of one phase: ``(operation, offset on the phase's clock, seconds)``.

    The phase's clock runs only during its rounds: ``started`` is when it
    would have read 0, ``wall`` how long it has run over all its rounds.
    """

    name: str
    calls: list[tuple[str, float, float]] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    started: float = 0.0
    wall: float = 0.0
    lost: int = 0
    undone: int = 0
    cpu_seconds: dict[str, float] = dataclasses.field(default_factory=dict)

    @contextlib.contextmanager
    def round(self, server: int | None) -> Iterator[None]:
        """One round of the phase: its clock runs on, CPU of this process and ``server``."""
        self.started = time.perf_counter() - self.wall
        used = {"client": time.process_time()}
        if server is not None:
            used["server"] = cpu_seconds(server)
        try:
            yield
        finally:
            self.wall = time.perf_counter() - self.started
            now = {"client": time.process_time()}
            if server is not None:
                now["server"] = cpu_seconds(server)
            for who, start in used.items():
                self.cpu_seconds[who] = self.cpu_seconds.get(who, 0.0) + now[who] - start

    @property
    def cpu(self) -> dict[str, float]:
        """The CPU each process used, in shares of one core over the phase's time."""
        return {who: seconds / self.wall for who, seconds in self.cpu_seconds.items()}

    def timed(self, operation: str | None = None) -> list[float]:
        return [s for op, _, s in self.calls if operation is None or op == operation]

    def quarters(self) -> list[float]:
        """The p50 of each quarter of the phase (by when a call started): the spread."""
        medians = []
        for quarter in range(4):
            low, high = self.wall * quarter / 4, self.wall * (quarter + 1) / 4
            found = [s for _, at, s in self.calls if low <= at < high]
            medians.append(statistics.median(found) if found else float("nan"))
        return medians


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


# -- sessions: the same three operations over MCP and in-process --------------


class CallFailed(Exception):
    """A call answered with an error result (its text is the reason)."""


class Session(Protocol):
    async def recall(self) -> None: ...
    async def save(self, text: str) -> int: ...
    async def remove(self, index: int) -> None: ...


def index_in(text: str) -> int:
    found = _INDEX.search(text)
    if found is None:
        raise CallFailed(f"no index in {text!r}")
    return int(found.group(1))


class McpSession:
    """A client of the MCP server: the recall prompt and the two tools."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def recall(self) -> None:
        await self.client.get_prompt(RECALL_PROMPT)

    async def tool(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.client.call_tool(name, arguments)
        text = " ".join(getattr(part, "text", "") for part in result.content)
        if result.is_error:
            raise CallFailed(text)
        return text

    async def save(self, text: str) -> int:
        return index_in(await self.tool(SAVE, {"text": text}))

    async def remove(self, index: int) -> None:
        await self.tool(REMOVE, {"index": index})


class RuntimeSession:
    """The same calls through docmem's API, as the server makes them, without MCP."""

    def __init__(self, runtime: MemoryRuntime, scope: docmem.ScopeContext) -> None:
        self.runtime = runtime
        self.scope = scope

    async def recall(self) -> None:
        await self.runtime.arecall(self.scope)

    async def tool(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.runtime.adispatch(self.scope, name, arguments)
        if result.is_error:
            raise CallFailed(result.text)
        return result.text

    async def save(self, text: str) -> int:
        return index_in(await self.tool(SAVE, {"text": text}))

    async def remove(self, index: int) -> None:
        await self.tool(REMOVE, {"index": index})


# -- the mix -----------------------------------------------------------------


@dataclasses.dataclass
class Worker:
    """One client of a phase: its session, its seeded mix, and what it was told."""

    number: int
    session: Session
    rng: random.Random
    ledger: Ledger = dataclasses.field(default_factory=Ledger)
    count: int = 0


def workers(sessions: Sequence[Session], seed: int) -> list[Worker]:
    """A worker per session; worker N's mix is the same in every phase and run."""
    return [
        Worker(number, session, random.Random(seed * 1_000 + number))
        for number, session in enumerate(sessions)
    ]


def choose(rng: random.Random, ledger: Ledger, most: int) -> str:
    """The next operation: recall, save or remove, kept between 0 and ``most`` entries."""
    roll = rng.randrange(100)
    if roll < RECALL_SHARE:
        return "recall"
    wants_save = roll < RECALL_SHARE + SAVE_SHARE
    if (wants_save and len(ledger.kept) < most) or not ledger.kept:
        return "save"
    return "remove"


async def one_call(
    session: Session, operation: str, rng: random.Random, ledger: Ledger, text: str
) -> None:
    """Run ``operation``; the ledger learns only what the client was told succeeded."""
    if operation == "recall":
        await session.recall()
    elif operation == "save":
        ledger.kept[await session.save(text)] = text
    else:
        index = rng.choice(sorted(ledger.kept))
        await session.remove(index)
        del ledger.kept[index]
        ledger.removed.add(index)


async def drive(worker: Worker, most: int, phase: Phase, until: float) -> None:
    """One client's seeded mix until ``until`` (monotonic), each call timed and recorded."""
    while time.monotonic() < until:
        worker.count += 1
        operation = choose(worker.rng, worker.ledger, most)
        text = f"Client {worker.number} note {worker.count}: prefers short answers, metric units."
        start = time.perf_counter()
        try:
            await one_call(worker.session, operation, worker.rng, worker.ledger, text)
        except Exception as error:
            phase.errors.append(f"{operation}: {type(error).__name__}: {error}"[:300])
            continue
        phase.calls.append((operation, start - phase.started, time.perf_counter() - start))


async def run_mix(workers: Sequence[Worker], seconds: float, most: int, phase: Phase) -> None:
    """Every worker's mix at once for ``seconds``."""
    until = time.monotonic() + seconds
    await asyncio.gather(*(drive(worker, most, phase, until) for worker in workers))


async def run_noop(clients: Sequence[Client], total: int, phase: Phase) -> None:
    """``total`` no-op tool calls shared by every client, as many at once as there are clients."""
    left = [total]

    async def client_loop(client: Client) -> None:
        while left[0] > 0:
            left[0] -= 1
            start = time.perf_counter()
            try:
                result = await client.call_tool(NOOP, {})
                if result.is_error:
                    raise CallFailed(str(result.content))
            except Exception as error:
                phase.errors.append(f"noop: {type(error).__name__}: {error}"[:300])
                continue
            phase.calls.append(("noop", start - phase.started, time.perf_counter() - start))

    await asyncio.gather(*(client_loop(client) for client in clients))


# -- tokens, servers and the server's memory -----------------------------------


@dataclasses.dataclass(frozen=True)
class Keys:
    """The run's signing key, its public half in a PEM file, and one token per subject."""

    private: rsa.RSAPrivateKey
    pem: Path

    @classmethod
    def mint(cls, directory: Path) -> Keys:
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = directory / "issuer.pem"
        pem.write_bytes(
            private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        return cls(private, pem)

    def token(self, subject: str) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 3600}
        return jwt.encode(claims, self.private, algorithm="RS256")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def token_flags(keys: Keys) -> list[str]:
    return ["--jwt-key-file", str(keys.pem), "--issuer", ISSUER, "--audience", AUDIENCE]


def docmem_command(store_url: str, port: int, keys: Keys) -> list[str]:
    """The console script installed next to this interpreter, as an operator starts it."""
    script = Path(sys.executable).parent / "docmem"
    flags = ["--store", store_url, "--namespace", NAMESPACE, "--http", f"127.0.0.1:{port}"]
    return [str(script), "mcp", *flags, *token_flags(keys)]


def noop_command(port: int, keys: Keys) -> list[str]:
    return [sys.executable, "-B", __file__, "--serve-noop", str(port), *token_flags(keys)]


@contextlib.contextmanager
def server(command: list[str], port: int, log_file: Path) -> Iterator[int]:
    """``command`` running until the block ends, once it listens on ``port``; yields its pid."""
    with log_file.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process, log_file)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(DEADLINE)


def wait_for_port(port: int, process: subprocess.Popen[bytes], log_file: Path) -> None:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode}: {log_file.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise SystemExit(f"the server did not listen in time: {log_file.read_text()}")


def rss(pid: int) -> int:
    """The process's resident set size in bytes (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds the process has used (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Memory:
    """The server's VmRSS: before and after the load, and samples through it."""

    before: int = 0
    after: int = 0
    samples: list[tuple[float, int]] = dataclasses.field(default_factory=list)

    def quarter(self, which: int) -> float:
        """The mean of the samples in quarter ``which`` (0 to 3) of the sampled time."""
        first, last = self.samples[0][0], self.samples[-1][0]
        span = (last - first) / 4
        low, high = first + span * which, first + span * (which + 1)
        found = [size for at, size in self.samples if low <= at <= high]
        return statistics.fmean(found)


async def sample_rss(pid: int, memory: Memory) -> None:
    while True:
        memory.samples.append((time.monotonic(), rss(pid)))
        await asyncio.sleep(RSS_INTERVAL)


@contextlib.asynccontextmanager
async def sampling(pid: int, memory: Memory) -> AsyncIterator[None]:
    """Sample the server's memory while the block runs."""
    memory.before = rss(pid)
    task = asyncio.create_task(sample_rss(pid, memory))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        memory.after = rss(pid)


@contextlib.asynccontextmanager
async def mcp_clients(url: str, tokens: Sequence[str]) -> AsyncIterator[list[Client]]:
    """One connected MCP client per token, each with its own HTTP connection pool."""
    async with contextlib.AsyncExitStack() as stack:
        clients = []
        for token in tokens:
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"}, timeout=DEADLINE
            )
            transport = streamable_http_client(url, http_client=http)
            clients.append(await stack.enter_async_context(Client(transport)))
        yield clients


# -- the phases ----------------------------------------------------------------


def subjects(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{number}" for number in range(count)]


def principal(subject: str) -> docmem.Principal:
    """Whom ``docmem mcp`` serves for a token with this subject (``access_token_principal``)."""
    return docmem.Principal("user", TOKEN_AUTHENTICATOR, subject, issuer=ISSUER)


async def warm_up(sessions: Sequence[Session]) -> None:
    """One recall per session, untimed: connections and caches ready, as in steady use."""
    await asyncio.gather(*(session.recall() for session in sessions))


@dataclasses.dataclass
class Run:
    """Both servers, the workers of each phase, and what the phases measured."""

    settings: Settings
    docmem_pid: int
    noop_pid: int
    mcp: list[Worker]
    in_process: list[Worker]
    noop: list[Client]
    phases: tuple[Phase, Phase, Phase] = dataclasses.field(
        default_factory=lambda: (
            Phase("MCP, docmem"),
            Phase("in-process, docmem"),
            Phase("MCP, no-op tool"),
        )
    )

    async def mcp_round(self, seconds: float) -> None:
        phase = self.phases[0]
        with phase.round(self.docmem_pid):
            await run_mix(self.mcp, seconds, self.settings.entries, phase)

    async def in_process_round(self, seconds: float) -> None:
        phase = self.phases[1]
        with phase.round(None):
            await run_mix(self.in_process, seconds, self.settings.entries, phase)

    async def noop_round(self, calls: int) -> None:
        phase = self.phases[2]
        with phase.round(self.noop_pid):
            await run_noop(self.noop, calls, phase)

    async def one_round(self, number: int) -> None:
        """The three phases in turn: the no-op after docmem over MCP, with its call count."""
        seconds = self.settings.seconds / self.settings.rounds
        if number % 2:
            await self.in_process_round(seconds)
        made = len(self.phases[0].calls)
        await self.mcp_round(seconds)
        await self.noop_round(len(self.phases[0].calls) - made)
        if not number % 2:
            await self.in_process_round(seconds)


@contextlib.contextmanager
def servers(store_url: str, keys: Keys, work: Path) -> Iterator[tuple[int, str, int, str]]:
    """``docmem mcp --http`` and the no-op server: each one's pid and URL."""
    ports = free_port(), free_port()
    with (
        server(docmem_command(store_url, ports[0], keys), ports[0], work / "docmem.log") as ours,
        server(noop_command(ports[1], keys), ports[1], work / "noop.log") as theirs,
    ):
        urls = [f"http://127.0.0.1:{port}/mcp" for port in ports]
        yield ours, urls[0], theirs, urls[1]


def slot(store: docmem.Backend) -> docmem.MemorySlot:
    """The slot ``docmem mcp`` serves by default, on ``store``."""
    return docmem.MemorySlot(
        SLOT,
        docmem.FileMemory(store),
        scope=docmem.by_principal,
        namespace=f"{NAMESPACE}:{SLOT}",
    )


def in_process_sessions(store: docmem.Backend, count: int) -> list[Session]:
    """docmem's API in this process, one runtime for every client as the server has."""
    runtime = MemoryRuntime([slot(store)])
    contexts = [
        docmem.ScopeContext(principal=principal(subject)) for subject in subjects("inproc", count)
    ]
    return [RuntimeSession(runtime, context) for context in contexts]


def check_ledgers(
    store: docmem.Backend, prefix: str, ledgers: Sequence[Ledger], phase: Phase
) -> None:
    """Read every client's document back: lost saves and undone removes."""
    served = slot(store)
    for subject, ledger in zip(subjects(prefix, len(ledgers)), ledgers, strict=True):
        context = docmem.ScopeContext(principal=principal(subject))
        lock = served.lock(context, app_root=os.getcwd(), node="agent")
        assert lock is not None
        document = docmem.FileMemory(store).bind(lock.scope, slot=SLOT).read()
        entries = document.entries if document is not None else {}
        phase.lost += sum(entries.get(index) != text for index, text in ledger.kept.items())
        phase.undone += sum(index in entries for index in ledger.removed)


# -- the no-op server (a process of its own) ---------------------------------------


def serve_noop(argv: Sequence[str]) -> int:
    """The SDK-only server: one no-op tool behind the same verifier, app and uvicorn set-up."""
    from docmem.integrations.mcp import JwtVerifier, load_public_key
    from docmem.integrations.mcp_cli import _Address, _serve_http

    parser = argparse.ArgumentParser(prog="mcp_load.py --serve-noop")
    parser.add_argument("--serve-noop", type=int, required=True, metavar="PORT")
    parser.add_argument("--jwt-key-file", required=True)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--audience", required=True)
    arguments = parser.parse_args(argv)
    key = load_public_key(arguments.jwt_key_file)
    verifier = JwtVerifier(issuer=arguments.issuer, audience=arguments.audience, key=key)

    async def noop() -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ok")])

    tool = Tool.from_function(noop, name=NOOP, structured_output=False)
    mcp = MCPServer(
        "noop",
        token_verifier=verifier,
        auth=verifier.auth_settings(),
        tools=[tool],
        log_level="WARNING",
    )
    return int(_serve_http(mcp, _Address("127.0.0.1", arguments.serve_noop), None))


# -- the report ------------------------------------------------------------------


def mib(size: float) -> str:
    return f"{size / 2**20:.1f} MiB"


def phase_rows(phase: Phase) -> list[tuple[str, ...]]:
    """The phase's row, then one per operation."""
    rows = [phase_row(phase.name, phase, None)]
    for operation in sorted({op for op, _, _ in phase.calls}):
        if len({op for op, _, _ in phase.calls}) > 1:
            rows.append(phase_row(f"  {operation}", phase, operation))
    return rows


def phase_row(name: str, phase: Phase, operation: str | None) -> tuple[str, ...]:
    times = phase.timed(operation)
    whole = operation is None
    return (
        name,
        f"{len(times):,}",
        f"{len(times) / phase.wall:,.0f}/s",
        format_duration(percentile(times, 0.5)),
        format_duration(percentile(times, 0.99)),
        f"{len(phase.errors):,}" if whole else "",
        f"{phase.lost:,}" if whole and phase.name != "MCP, no-op tool" else "",
    )


def phase_notes(phase: Phase) -> list[str]:
    spread = " / ".join(format_duration(p50) for p50 in phase.quarters())
    cpu = ", ".join(f"{who} {share:.0%}" for who, share in phase.cpu.items())
    lines = [f"{phase.name}: p50 by quarter {spread}; CPU of a core: {cpu}"]
    if phase.undone:
        lines.append(f"    removes undone: {phase.undone}")
    lines.extend(f"    error: {error}" for error in phase.errors[:5])
    return lines


@dataclasses.dataclass(frozen=True)
class Goal:
    name: str
    figure: str
    target: str
    passed: bool


def goals(docmem_mcp: Phase, in_process: Phase, memory: Memory, cost: Result) -> list[Goal]:
    errors = len(docmem_mcp.errors) + len(in_process.errors)
    lost = docmem_mcp.lost + in_process.lost + docmem_mcp.undone + in_process.undone
    growth = memory.quarter(3) / memory.quarter(0)
    return [
        Goal("errors (both docmem phases)", f"{errors}", "0", errors == 0),
        Goal("lost saves and undone removes", f"{lost}", "0", lost == 0),
        Goal(cost.name, f"{cost.ratio:.2f}x", f"<= {cost.target:g}x", cost.passed),
        Goal(
            "server memory, last quarter / first",
            f"{growth:.2f}x ({mib(memory.quarter(3))} / {mib(memory.quarter(0))})",
            f"<= {MEMORY_TARGET:g}x",
            growth <= MEMORY_TARGET,
        ),
    ]


def cost_result(docmem_mcp: Phase, noop: Phase, in_process: Phase) -> Result:
    """docmem's p50 in the server minus the no-op tool's, against its in-process p50."""
    served = percentile(docmem_mcp.timed(), 0.5)
    sdk = percentile(noop.timed(), 0.5)
    return Result(
        name="docmem in the server, p50 minus the no-op tool's",
        subject=served - sdk,
        baseline=percentile(in_process.timed(), 0.5),
        baseline_name="in-process p50, same mix",
        target=COST_TARGET,
        runs=len(docmem_mcp.calls),
        detail=f"{format_duration(served)} - {format_duration(sdk)}",
    )


HEADER = ("phase", "calls", "throughput", "p50", "p99", "errors", "lost saves")


def print_report(
    context: dict[str, Any], phases: Sequence[Phase], memory: Memory, cost: Result, started: float
) -> None:
    print(describe(versions("mcp", "pyjwt", "uvicorn")))
    print(f"store {context['store']}; {context['mix']}")
    print()
    rows = [row for phase in phases for row in phase_rows(phase)]
    print(layout([HEADER, *rows], numeric={1, 2, 3, 4, 5, 6}))
    print()
    for phase in phases:
        print("\n".join(phase_notes(phase)))
    print(
        f"server memory (VmRSS): before {mib(memory.before)}, after {mib(memory.after)}; "
        f"{len(memory.samples)} samples"
    )
    print()
    print(table([cost]))
    print()
    found = goals(phases[0], phases[1], memory, cost)
    for goal in found:
        verdict = "PASS" if goal.passed else "MISS"
        print(f"{verdict}  {goal.name}: {goal.figure} (goal {goal.target})")
    misses = sum(not goal.passed for goal in found)
    print(
        f"{len(found) - misses} PASS, {misses} MISS in {time.monotonic() - started:.0f} s "
        "(benchmarks never fail the build)"
    )


def figure(value: float) -> float | None:
    """A figure for the JSON report: ``None`` where there was nothing to measure (NaN)."""
    return None if math.isnan(value) else value


def phase_json(phase: Phase) -> dict[str, Any]:
    times = phase.timed()
    operations = sorted({op for op, _, _ in phase.calls})
    return {
        "name": phase.name,
        "calls": len(times),
        "seconds": phase.wall,
        "throughput": len(times) / phase.wall,
        "p50_seconds": figure(percentile(times, 0.5)),
        "p99_seconds": figure(percentile(times, 0.99)),
        "p50_by_quarter": [figure(p50) for p50 in phase.quarters()],
        "by_operation": {
            op: {"calls": len(phase.timed(op)), "p50_seconds": percentile(phase.timed(op), 0.5)}
            for op in operations
        },
        "errors": phase.errors,
        "lost_saves": phase.lost,
        "undone_removes": phase.undone,
        "cpu": phase.cpu,
    }


def print_json(
    context: dict[str, Any],
    settings: Settings,
    phases: Sequence[Phase],
    memory: Memory,
    cost: Result,
    started: float,
) -> None:
    found = versions("mcp", "pyjwt", "uvicorn")
    errors = [error for phase in phases for error in phase.errors]
    report = json.loads(
        json_report(
            "mcp_load",
            [cost],
            settings=settings,
            found=found,
            context=context,
            started=started,
            errors=errors,
        )
    )
    report["phases"] = [phase_json(phase) for phase in phases]
    report["memory"] = {
        "before_bytes": memory.before,
        "after_bytes": memory.after,
        "first_quarter_bytes": memory.quarter(0),
        "last_quarter_bytes": memory.quarter(3),
    }
    report["goals"] = [
        dataclasses.asdict(goal) for goal in goals(phases[0], phases[1], memory, cost)
    ]
    print(json.dumps(report, indent=2, allow_nan=False))


# -- main --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Store:
    """Where the run keeps memory: its URL (for the server) and how it shows in the report."""

    url: str
    shown: str


@contextlib.contextmanager
def chosen_store(arguments: argparse.Namespace, work: Path) -> Iterator[Store]:
    """S3 under a fresh prefix (deleted afterwards) when there is an endpoint, else file://."""
    if arguments.file or not arguments.endpoint:
        yield Store(f"file://{work / 'store'}?create=true", "file:// (a temporary directory)")
        return
    endpoint = S3Endpoint(arguments.endpoint, arguments.bucket, arguments.region)
    check_bucket(endpoint, "benchmarks/mcp_load.py")
    prefixes = Prefixes(endpoint)
    prefix = prefixes.fresh("mcp-load")
    url = f"s3://{endpoint.bucket}/{prefix}?endpoint_url={endpoint.url}&region={endpoint.region}"
    try:
        yield Store(url, f"s3:// at {endpoint.url}, bucket {endpoint.bucket}")
    finally:
        prefixes.clean_up()


async def run(settings: Settings, store: Store, work: Path) -> tuple[Sequence[Phase], Memory]:
    """Every round of the three phases, then every client's memory read back."""
    keys = Keys.mint(work)
    opened = docmem.open_store(store.url)
    memory = Memory()
    tokens = [
        [keys.token(s) for s in subjects(who, settings.clients)] for who in ("client", "noop")
    ]
    with servers(store.url, keys, work) as (docmem_pid, docmem_url, noop_pid, noop_url):
        async with (
            mcp_clients(docmem_url, tokens[0]) as ours,
            mcp_clients(noop_url, tokens[1]) as theirs,
        ):
            mcp = workers([McpSession(client) for client in ours], settings.seed)
            local = workers(in_process_sessions(opened, settings.clients), settings.seed)
            run = Run(settings, docmem_pid, noop_pid, mcp, local, theirs)
            await warm_up([worker.session for worker in (*mcp, *local)])
            await asyncio.gather(*(client.call_tool(NOOP, {}) for client in theirs))
            async with sampling(docmem_pid, memory):
                for number in range(settings.rounds):
                    log(f"round {number + 1} of {settings.rounds}")
                    await run.one_round(number)
    check_ledgers(opened, "client", [worker.ledger for worker in mcp], run.phases[0])
    check_ledgers(opened, "inproc", [worker.ledger for worker in local], run.phases[1])
    return run.phases, memory


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        description="Many clients with their own tokens on one `docmem mcp --http` server."
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: 8 clients, 5 s")
    parser.add_argument("--clients", type=int, help="concurrent clients (and in-process tasks)")
    parser.add_argument("--seconds", type=int, help="seconds of load per docmem phase")
    parser.add_argument("--rounds", type=int, help="rounds the phases alternate in")
    parser.add_argument("--seed", type=int, help="the mix's seed")
    parser.add_argument("--entries", type=int, help="entries a client keeps at most")
    parser.add_argument("--file", action="store_true", help="file:// even with an S3 endpoint")
    add_endpoint_arguments(parser)
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    return override(parser, QUICK if arguments.quick else FULL, arguments), arguments


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--serve-noop" in argv:
        return serve_noop(argv)
    settings, arguments = parse_arguments(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="docmem-mcp-load-") as scratch:
        work = Path(scratch)
        with chosen_store(arguments, work) as store:
            phases, memory = asyncio.run(run(settings, store, work))
    cost = cost_result(phases[0], phases[2], phases[1])
    mix = (
        f"{settings.clients} clients, each its own token and scope; mix recall {RECALL_SHARE}% "
        f"/ save {SAVE_SHARE}% / remove {100 - RECALL_SHARE - SAVE_SHARE}% "
        f"(seed {settings.seed}) for {settings.seconds} s per docmem phase"
    )
    context = {"store": store.shown, "mix": mix}
    if arguments.json:
        print_json(context, settings, phases, memory, cost, started)
    else:
        print_report(context, phases, memory, cost, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
