"""docmem beside its peers: the same three jobs for every system, measured in one run.

Run ``make bench-peers`` (it builds ``.venv-peers`` from
``benchmarks/peers-requirements.txt``, installs docmem and docmem-s3 from
this checkout, and runs this script under ``scripts/with-test-servers`` so
LocalStack is up), or by hand: ``scripts/with-test-servers
.venv-peers/bin/python benchmarks/peers.py [--quick] [--json]``. Without an
S3 endpoint (``--endpoint`` or ``$LOCALSTACK_ENDPOINT``) the S3 rows are not
run and the report says so. The peers' packages are imported only inside
the functions that use them, so ``make test``'s type check (the main venv,
without them) still covers this file.

The jobs, the same for every system:

* ``save``: add one ~60-character entry to a user's memory holding 10
  entries; an untimed undo through the system's own API (remove the entry,
  or write the previous content back) keeps it at 10 for the next save.
* ``recall``: fetch the whole memory of that user, as it goes into the
  prompt.
* ``lost updates``: 4 processes x 2 workers x 25 concurrent adds (200
  distinct entries) to one new user whose memory was made, empty, before
  (the memory tool's file with its heading, an empty ``MEMORY.md``, ...);
  afterwards the entries actually stored
  are counted. An add that raised (a conflict the system gave up on, a
  locked database, a tool error) is *reported*; an entry that is missing
  without its add having raised is *silently lost*. Workers are threads
  sharing one instance of the system per process, or, for the async peers
  (Pydantic AI Harness), tasks on one event loop per process sharing one
  store, as each library's documentation sets it up.

Saves of all systems are interleaved (each round visits every system, in a
new random order each round, seeded, so that no system always follows the
same one) so the noise of a shared machine hits all alike, and so are
recalls; the table gives p50 and
p95 per system and, for p50, the ratio to the floor of the same medium (the
raw local floor for local systems, the raw S3 floor for S3 ones).

The systems, each used the way its documentation shows:

* ``docmem file://`` and ``docmem s3://``: ``FileMemory(store,
  max_characters=65536).bind(lock_scope(...), slot="user")``; ``save(text)``
  (a fresh mutation id each), ``remove(index)`` as the undo, ``recall()``.
  The higher ``max_characters`` lets the 200 entries of the lost-update job
  fit (the default of 4,000 holds about 60).
* ``LangGraph SqliteStore``, two ways (``langgraph.store.sqlite``,
  ``SqliteStore.from_conn_string(path)``, ``setup()``):

  - one row per entry: ``put(("memories", user), uuid4, {"text": ...})``;
    recall is ``search(("memories", user), limit=1000)`` (the default limit
    of 10 would not return the whole memory);
  - one document: ``get(ns, "memory")``, append to its ``entries`` list,
    ``put`` it back (the store has no compare-and-set, so this is the
    read-modify-write its API allows); recall is the ``get``.

* ``Pydantic AI Harness FileStore`` and ``SqliteMemoryStore``
  (``pydantic_ai_harness.memory``): a save makes exactly the store calls of
  the ``write_memory`` tool appending to ``MEMORY.md`` (``get_operation``,
  then up to 16 rounds of ``read`` + ``write(expected_version=...,
  operation=...)`` retried on ``MemoryConflictError``; after 16 the tool
  asks the model to retry, counted here as a reported failure); recall makes
  the calls of the capability's snapshot load (``read`` of ``MEMORY.md`` and
  ``list_paths`` of the scope). ``FileStore('.',
  workspace=LocalWorkspaceBackend(dir))`` keeps the files on this machine as
  its README shows. Its documented contract is one writer per directory: the
  lost-update job's 4 processes are outside it, and the table says so.
* ``Anthropic BetaLocalFilesystemMemoryTool`` (``anthropic.tools``):
  commands through ``tool.call(input)``, as the SDK's tool runner sends the
  model's tool input: the memory file is made with ``create``, a save is one
  ``insert`` after its heading line, the undo a ``str_replace`` of that line
  with nothing, a recall a ``view`` of the file.
* the raw floors: local, a read-modify-write under ``flock`` of a lock file
  with the atomic replace recipe (``mkstemp``, write, fsync, ``os.replace``,
  fsync of the directory), recall ``open`` + ``read``; S3, one conditional
  ``put_object`` (``If-Match`` of the ETag the previous PUT returned, the
  bytes known) per save and one ``get_object`` per recall, and in the
  lost-update job a conditional get+put loop retried at once, without
  back-off, on 412 or 409. The S3 clients are configured like docmem-s3's
  (its timeouts, read retries, no retries for PUTs).

``--json`` prints the report as one JSON object (the envelope every script
prints; benchmarks/README.md, "Peers", describes the rows). Benchmarks never
fail a build: the exit status is 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import fcntl
import hashlib
import importlib
import importlib.metadata
import json
import multiprocessing
import os
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ClassVar

from harness.arguments import add_endpoint_arguments, add_output_arguments, override
from harness.contention import run_threads
from harness.report import describe, format_duration, json_report, versions
from harness.s3 import Prefixes, S3Endpoint, check_bucket
from harness.timing import log, settle

import docmem
from docmem.provider.document import MAX_DOCUMENT_BYTES

NAMESPACE = "bench:peers"
USER = "user-1"
#: Entries in the memory every timed save and recall works on.
ENTRIES = 10
#: How long a lost-update run may take before its processes are given up on.
RUN_TIMEOUT = 600.0


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many runs each job takes; see :data:`FULL` and :data:`QUICK`."""

    save_runs: int
    recall_runs: int
    processes: int
    workers: int
    adds: int
    contention_runs: int
    warmup: int


FULL = Settings(
    save_runs=200,
    recall_runs=300,
    processes=4,
    workers=2,
    adds=25,
    contention_runs=3,
    warmup=10,
)
QUICK = Settings(
    save_runs=12,
    recall_runs=20,
    processes=4,
    workers=2,
    adds=5,
    contention_runs=1,
    warmup=2,
)


def seed_text(index: int) -> str:
    return f"Seed {index:02d}: the user prefers metric units and short answers."


def save_text(count: int) -> str:
    """A distinct ~60-character entry (docmem would treat a repeated one as a no-op)."""
    return f"Note {count:04d}: the user moved the weekly sync to Thursday 10."


def add_text(process: int, worker: int, index: int) -> str:
    return f"p{process} w{worker} add {index:02d}: the user prefers short, metric answers."


def expected_adds(settings: Settings) -> list[str]:
    return [
        add_text(process, worker, index)
        for process in range(settings.processes)
        for worker in range(settings.workers)
        for index in range(settings.adds)
    ]


def module(name: str) -> Any:
    """A peer's module, imported when first used (the main venv does not have the peers)."""
    return importlib.import_module(name)


# -- where a system keeps its data ---------------------------------------------


@dataclasses.dataclass(frozen=True)
class Place:
    """Where one system keeps one user's memory: picklable, so a child process opens it too."""

    #: A fresh local directory (local systems keep their files or database here).
    directory: str
    #: The S3 endpoint and a fresh prefix (S3 systems only).
    endpoint: S3Endpoint | None = None
    prefix: str = ""


class Reported(Exception):
    """An add the system refused or gave up on, telling the caller (not a silent loss)."""


# -- the systems ---------------------------------------------------------------


class System:
    """One system: opened on a :class:`Place`, it saves, undoes, recalls and adds."""

    key: ClassVar[str]
    label: ClassVar[str]
    #: ``"local"`` or ``"s3"``: which floor its ratios are against.
    medium: ClassVar[str]
    #: The distribution whose version the report gives (``None``: docmem's own).
    distribution: ClassVar[str | None] = None
    #: What its documentation promises about concurrent writers.
    contract: ClassVar[str]
    #: True when the lost-update job uses it outside that promise.
    outside_contract: ClassVar[bool] = False

    def __init__(self, place: Place) -> None:
        self.place = place

    # The jobs. ``save`` raises on a failure the system reports.
    def seed(self, texts: Sequence[str]) -> None:
        raise NotImplementedError

    def save(self, text: str) -> None:
        raise NotImplementedError

    def undo(self) -> None:
        """Untimed, after each timed save: back to the memory before it."""
        raise NotImplementedError

    def recall(self) -> str:
        raise NotImplementedError

    def add(self, text: str) -> None:
        """One add in the lost-update job (a save, unless the floor does it differently)."""
        self.save(text)

    def held(self, texts: Sequence[str]) -> set[str]:
        """Those of ``texts`` the memory holds (read through the system itself)."""
        memory = self.recall()
        return {text for text in texts if text in memory}

    def close(self) -> None:
        """Release clients and connections."""

    # Timing and concurrency; the async systems override these.
    def timed_save(self, text: str) -> float:
        start = time.perf_counter_ns()
        self.save(text)
        return (time.perf_counter_ns() - start) / 1e9

    def timed_recall(self) -> tuple[float, str]:
        start = time.perf_counter_ns()
        memory = self.recall()
        return (time.perf_counter_ns() - start) / 1e9, memory

    def contend(self, process: int, workers: int, adds: int) -> list[str]:
        """``workers`` threads sharing this instance make ``adds`` adds each; the texts refused."""
        refused: list[str] = []
        lock = threading.Lock()

        def work(worker: int) -> None:
            for index in range(adds):
                text = add_text(process, worker, index)
                try:
                    self.add(text)
                except Exception as exc:  # every error is a failure the caller was told of
                    with lock:
                        refused.append(f"{text}\t{type(exc).__name__}: {exc}")

        run_threads(workers, work)
        return refused


class AsyncSystem(System):
    """A system whose API is async: one event loop per instance, workers are its tasks."""

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        self.loop = asyncio.new_event_loop()

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    async def asave(self, text: str) -> None:
        raise NotImplementedError

    async def arecall(self) -> str:
        raise NotImplementedError

    def save(self, text: str) -> None:
        self.run(self.asave(text))

    def recall(self) -> str:
        result: str = self.run(self.arecall())
        return result

    def timed_save(self, text: str) -> float:
        async def timed() -> float:
            start = time.perf_counter_ns()
            await self.asave(text)
            return (time.perf_counter_ns() - start) / 1e9

        elapsed: float = self.run(timed())
        return elapsed

    def timed_recall(self) -> tuple[float, str]:
        async def timed() -> tuple[float, str]:
            start = time.perf_counter_ns()
            memory = await self.arecall()
            return (time.perf_counter_ns() - start) / 1e9, memory

        result: tuple[float, str] = self.run(timed())
        return result

    def contend(self, process: int, workers: int, adds: int) -> list[str]:
        refused: list[str] = []

        async def work(worker: int) -> None:
            for index in range(adds):
                text = add_text(process, worker, index)
                try:
                    await self.asave(text)
                except Exception as exc:
                    refused.append(f"{text}\t{type(exc).__name__}: {exc}")

        async def everyone() -> None:
            await asyncio.gather(*(work(worker) for worker in range(workers)))

        self.run(everyone())
        return refused

    def close(self) -> None:
        self.loop.close()


# -- docmem


class Docmem(System):
    medium = "local"
    contract = "many writers, many processes (conditional writes)"

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        memory = docmem.FileMemory(self.open_store(), max_characters=MAX_DOCUMENT_BYTES)
        self.memory = memory.bind(docmem.lock_scope(namespace=NAMESPACE, scope=USER), slot="user")
        self.last: int | None = None

    def open_store(self) -> docmem.Backend:
        return docmem.open_store(pathlib.Path(self.place.directory).as_uri() + "?create=true")

    def seed(self, texts: Sequence[str]) -> None:
        for text in texts:
            self.memory.save(text)

    def save(self, text: str) -> None:
        self.last = self.memory.save(text).index

    def undo(self) -> None:
        if self.last is not None:
            self.memory.remove(self.last)

    def recall(self) -> str:
        return "\n".join(message.content for message in self.memory.recall())

    def held(self, texts: Sequence[str]) -> set[str]:
        document = self.memory.read()
        entries = set(document.entries.values()) if document is not None else set()
        return {text for text in texts if text in entries}


class DocmemFile(Docmem):
    key = "docmem-file"
    label = "docmem file://"


class DocmemS3(Docmem):
    key = "docmem-s3"
    label = "docmem s3:// (LocalStack)"
    medium = "s3"
    distribution = "agent-docmem-s3"

    def open_store(self) -> docmem.Backend:
        assert self.place.endpoint is not None
        return self.place.endpoint.s3_store(self.place.prefix)


# -- LangGraph


class LangGraph(System):
    medium = "local"
    distribution = "langgraph-checkpoint-sqlite"
    contract = "none stated (SQLite transactions; no compare-and-set in the API)"
    NS = ("memories", USER)

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        sqlite_store = module("langgraph.store.sqlite")
        self.exits = contextlib.ExitStack()
        path = os.path.join(place.directory, "langgraph.sqlite")
        self.store: Any = self.exits.enter_context(sqlite_store.SqliteStore.from_conn_string(path))
        self.store.setup()

    def close(self) -> None:
        self.exits.close()


class LangGraphRows(LangGraph):
    key = "langgraph-rows"
    label = "LangGraph SqliteStore, one row per entry"

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        self.last = ""

    def seed(self, texts: Sequence[str]) -> None:
        for text in texts:
            self.save(text)

    def save(self, text: str) -> None:
        self.last = uuid.uuid4().hex
        self.store.put(self.NS, self.last, {"text": text})

    def undo(self) -> None:
        self.store.delete(self.NS, self.last)

    def recall(self) -> str:
        return "\n".join(str(item.value["text"]) for item in self.store.search(self.NS, limit=1000))


class LangGraphDocument(LangGraph):
    key = "langgraph-document"
    label = "LangGraph SqliteStore, one document (get + put)"
    KEY = "memory"

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        self.previous: list[str] = []

    def entries(self) -> list[str]:
        item = self.store.get(self.NS, self.KEY)
        return [] if item is None else [str(entry) for entry in item.value["entries"]]

    def seed(self, texts: Sequence[str]) -> None:
        self.store.put(self.NS, self.KEY, {"entries": list(texts)})

    def save(self, text: str) -> None:
        self.previous = self.entries()
        self.store.put(self.NS, self.KEY, {"entries": [*self.previous, text]})

    def undo(self) -> None:
        self.store.put(self.NS, self.KEY, {"entries": self.previous})

    def recall(self) -> str:
        return "\n".join(self.entries())


# -- Pydantic AI Harness

#: ``write_memory``'s compare-and-swap rounds before it asks the model to retry
#: (``pydantic_ai_harness.memory._toolset._MAX_CAS_ATTEMPTS``).
PYDANTIC_CAS_ATTEMPTS = 16
#: ``Memory``'s defaults: ``max_memory_size`` and the snapshot's listing bound
#: (``injection_listing_limit(max_tokens=2000)`` plus the two extra paths it asks for).
PYDANTIC_MAX_MEMORY_SIZE = 65_536
PYDANTIC_LISTING_LIMIT = 2000 * 4 // 6 + 2


class PydanticHarness(AsyncSystem):
    medium = "local"
    distribution = "pydantic-ai-harness"
    #: ``Memory(namespace=USER)`` with the default ``agent_name="main"``.
    SCOPE = f"{USER}/main"
    PATH = f"{SCOPE}/MEMORY.md"

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        self.memory: Any = module("pydantic_ai_harness.memory")
        self.store: Any = self.open_store()
        self.undo_to: tuple[str, str] | None = None

    def open_store(self) -> Any:
        raise NotImplementedError

    def seed(self, texts: Sequence[str]) -> None:
        content = "".join(f"{text}\n" for text in texts)
        self.run(self.store.write(self.PATH, content, expected_version=None))

    async def asave(self, text: str) -> None:
        """The store calls of ``write_memory(content=text)`` (append to ``MEMORY.md``)."""
        arguments = {"content": text, "file": "MEMORY.md", "old_text": None}
        fingerprint = {"kind": "write", "path": self.PATH, "model_args": arguments}
        operation = self.memory.MemoryOperation(
            id=uuid.uuid4().hex,  # the tool's digest of run id, step and tool call id
            fingerprint=hashlib.sha256(
                json.dumps(fingerprint, sort_keys=True).encode()
            ).hexdigest(),
        )
        if await self.store.get_operation(operation) is not None:
            return
        for _ in range(PYDANTIC_CAS_ATTEMPTS):
            current = await self.store.read(self.PATH, max_chars=PYDANTIC_MAX_MEMORY_SIZE)
            if current is not None and current.truncated:
                raise Reported("MEMORY.md exceeds max_memory_size")
            existing = None if current is None else str(current.content)
            if existing is not None and existing.strip():
                updated = f"{existing.rstrip()}\n{text.rstrip()}\n"
            else:
                updated = f"{text.rstrip()}\n"
            if len(updated) > PYDANTIC_MAX_MEMORY_SIZE:
                raise Reported("MEMORY.md would exceed max_memory_size")
            expected = None if current is None else current.version
            try:
                mutation = await self.store.write(
                    self.PATH, updated, expected_version=expected, operation=operation
                )
            except self.memory.MemoryConflictError:
                continue
            self.undo_to = (existing or "", str(mutation.version))
            return
        raise Reported("Memory changed repeatedly while writing; retry the operation.")

    def undo(self) -> None:
        assert self.undo_to is not None
        content, version = self.undo_to
        self.run(self.store.write(self.PATH, content, expected_version=version))

    async def arecall(self) -> str:
        """The store calls of the capability's snapshot load: ``MEMORY.md`` and the file list."""
        main = await self.store.read(self.PATH, max_chars=PYDANTIC_MAX_MEMORY_SIZE)
        await self.store.list_paths(f"{self.SCOPE}/", limit=PYDANTIC_LISTING_LIMIT)
        return "" if main is None else str(main.content)


class PydanticFileStore(PydanticHarness):
    key = "pydantic-filestore"
    label = "Pydantic AI Harness FileStore"
    contract = "one writer per directory"
    outside_contract = True

    def open_store(self) -> Any:
        workspaces = module("pydantic_ai.workspaces")
        return self.memory.FileStore(
            ".", workspace=workspaces.LocalWorkspaceBackend(self.place.directory)
        )


class PydanticSqlite(PydanticHarness):
    key = "pydantic-sqlite"
    label = "Pydantic AI Harness SqliteMemoryStore"
    contract = "concurrent writers (transactional compare-and-swap)"

    def open_store(self) -> Any:
        return self.memory.SqliteMemoryStore(
            database=os.path.join(self.place.directory, "memory.db")
        )


# -- Anthropic


class AnthropicMemoryTool(System):
    key = "anthropic-memory-tool"
    label = "Anthropic BetaLocalFilesystemMemoryTool"
    medium = "local"
    distribution = "anthropic"
    contract = "none stated (no lock, no version check)"
    PATH = "/memories/user.md"
    HEADING = "# User memory"

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        self.errors: Any = module("anthropic.lib.tools")  # ToolError
        tools = module("anthropic.tools")
        self.tool: Any = tools.BetaLocalFilesystemMemoryTool(base_path=place.directory)
        self.last = ""

    def command(self, **arguments: Any) -> str:
        """One command, as the tool runner hands the model's input to the tool."""
        try:
            return str(self.tool.call({"path": self.PATH, **arguments}))
        except self.errors.ToolError as exc:  # the runner returns it to the model as an error
            raise Reported(str(exc)) from exc

    def seed(self, texts: Sequence[str]) -> None:
        lines = "".join(f"{text}\n" for text in texts)
        self.command(command="create", file_text=f"{self.HEADING}\n{lines}")

    def save(self, text: str) -> None:
        self.command(command="insert", insert_line=1, insert_text=text)
        self.last = text

    def undo(self) -> None:
        self.command(command="str_replace", old_str=f"{self.last}\n", new_str="")

    def recall(self) -> str:
        return self.command(command="view")


# -- the raw floors


class RawLocal(System):
    key = "raw-local"
    label = "floor: flock + atomic replace"
    medium = "local"
    contract = "many processes (flock)"

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        self.path = os.path.join(place.directory, "user.md")
        self.lock_path = f"{self.path}.lock"
        self.previous = b""

    def replace(self, data: bytes) -> None:
        directory = os.path.dirname(self.path)
        fd, temp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".md")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def locked(self, change: Callable[[bytes], bytes]) -> None:
        """Read, change and atomically replace the file, holding an exclusive ``flock``."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                with open(self.path, "rb") as file:
                    data = file.read()
            except FileNotFoundError:
                data = b""
            self.replace(change(data))
        finally:
            os.close(fd)  # releases the lock

    def seed(self, texts: Sequence[str]) -> None:
        self.locked(lambda _: "".join(f"{text}\n" for text in texts).encode())

    def save(self, text: str) -> None:
        def append(data: bytes) -> bytes:
            self.previous = data
            return data + f"{text}\n".encode()

        self.locked(append)

    def undo(self) -> None:
        self.locked(lambda _: self.previous)

    def recall(self) -> str:
        with open(self.path, "rb") as file:
            return file.read().decode()


class RawS3(System):
    key = "raw-s3"
    label = "floor: conditional PUT / GET; adds: get+put loop, no back-off"
    medium = "s3"
    distribution = "boto3"
    contract = "many writers (conditional PUT)"
    #: A bound on the no-back-off loop, so a broken server cannot hang the run.
    MAX_ATTEMPTS = 10_000

    def __init__(self, place: Place) -> None:
        super().__init__(place)
        assert place.endpoint is not None
        boto3 = module("boto3")
        config = module("botocore.config")
        like = place.endpoint.s3_store(place.prefix)  # for its client settings only
        timeouts = {"connect_timeout": like.connect_timeout, "read_timeout": like.read_timeout}
        retries = {"mode": "standard", "total_max_attempts": like.max_attempts}
        session = boto3.session.Session()
        common = {"endpoint_url": place.endpoint.url, "region_name": place.endpoint.region}
        self.reader = session.client(
            "s3", config=config.Config(retries=retries, **timeouts), **common
        )
        no_retries = {"mode": "standard", "total_max_attempts": 1}
        self.writer = session.client(
            "s3", config=config.Config(retries=no_retries, **timeouts), **common
        )
        self.errors: Any = module("botocore.exceptions")
        self.bucket = place.endpoint.bucket
        self.key_name = f"{place.prefix}/user.md"
        self.data = b""
        self.etag: str | None = None
        self.previous = b""

    def get(self) -> tuple[bytes, str | None]:
        try:
            response = self.reader.get_object(Bucket=self.bucket, Key=self.key_name)
        except self.errors.ClientError as exc:
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return b"", None
            raise
        return bytes(response["Body"].read()), str(response["ETag"])

    def put(self, data: bytes, expected: str | None) -> str:
        condition = {"IfMatch": expected} if expected is not None else {"IfNoneMatch": "*"}
        response = self.writer.put_object(
            Bucket=self.bucket,
            Key=self.key_name,
            Body=data,
            ContentType="text/markdown; charset=utf-8",
            **condition,
        )
        return str(response["ETag"])

    def seed(self, texts: Sequence[str]) -> None:
        self.data = "".join(f"{text}\n" for text in texts).encode()
        self.etag = self.put(self.data, None)

    def save(self, text: str) -> None:
        """One conditional PUT: the bytes and ETag are known from this client's last write."""
        self.previous = self.data
        self.data = self.previous + f"{text}\n".encode()
        self.etag = self.put(self.data, self.etag)

    def undo(self) -> None:
        self.data = self.previous
        self.etag = self.put(self.data, self.etag)

    def recall(self) -> str:
        return self.get()[0].decode()

    def add(self, text: str) -> None:
        """GET, append, conditional PUT; on 412 or 409 again at once (no back-off)."""
        for _ in range(self.MAX_ATTEMPTS):
            data, etag = self.get()
            try:
                self.put(data + f"{text}\n".encode(), etag)
                return
            except self.errors.ClientError as exc:
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                if status not in (409, 412):
                    raise
        raise Reported(f"no PUT won in {self.MAX_ATTEMPTS} attempts")

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


#: In report order; each floor follows the systems of its medium.
SYSTEMS: tuple[type[System], ...] = (
    DocmemFile,
    LangGraphRows,
    LangGraphDocument,
    PydanticFileStore,
    PydanticSqlite,
    AnthropicMemoryTool,
    RawLocal,
    DocmemS3,
    RawS3,
)
BY_KEY = {system.key: system for system in SYSTEMS}
FLOORS = {"local": RawLocal.key, "s3": RawS3.key}


# -- the lost-update job -------------------------------------------------------


def child(
    key: str,
    place: Place,
    process: int,
    workers: int,
    adds: int,
    start: Any,
    results: Any,
) -> None:
    """One process of the lost-update job: open the system, wait for the others, add."""
    try:
        system = BY_KEY[key](place)
    except BaseException as exc:
        start.abort()
        results.put((process, [], f"{type(exc).__name__}: {exc}"))
        return
    try:
        start.wait(timeout=RUN_TIMEOUT)
        refused = system.contend(process, workers, adds)
        results.put((process, refused, None))
    except BaseException as exc:
        results.put((process, [], f"{type(exc).__name__}: {exc}"))
    finally:
        system.close()


@dataclasses.dataclass
class Contention:
    """What the lost-update runs of one system gave, over all its runs."""

    runs: int = 0
    attempted: int = 0
    stored: int = 0
    reported: int = 0
    silent: int = 0
    seconds: list[float] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    first_refusal: str = ""


def contention_run(
    system: type[System], place: Place, settings: Settings, tally: Contention
) -> None:
    """One run on a new user whose memory exists, empty: the processes start together at a
    barrier; then the entries are counted."""
    opener = system(place)
    try:
        opener.seed([])
    finally:
        opener.close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(settings.processes + 1)
    results = context.Queue()
    processes = [
        context.Process(
            target=child,
            args=(system.key, place, number, settings.workers, settings.adds, start, results),
        )
        for number in range(settings.processes)
    ]
    for process in processes:
        process.start()
    refused: list[str] = []
    errors: list[str] = []
    try:
        start.wait(timeout=RUN_TIMEOUT)
        began = time.perf_counter()
        for _ in processes:
            _, texts, error = results.get(timeout=RUN_TIMEOUT)
            refused.extend(texts)
            if error is not None:
                errors.append(error)
        tally.seconds.append(time.perf_counter() - began)
    except threading.BrokenBarrierError:
        while not results.empty():
            _, _, error = results.get()
            if error is not None:
                errors.append(error)
        errors = errors or ["a process failed before the start"]
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
                process.join()
    expected = expected_adds(settings)
    tally.runs += 1
    tally.errors.extend(errors)
    if errors and not tally.seconds:
        return
    reader = system(place)
    try:
        held = reader.held(expected)
    finally:
        reader.close()
    refused_texts = {line.split("\t", 1)[0] for line in refused}
    tally.attempted += len(expected)
    tally.stored += len(held)
    tally.reported += len(refused)
    tally.silent += sum(text not in held and text not in refused_texts for text in expected)
    if refused and not tally.first_refusal:
        tally.first_refusal = refused[0].split("\t", 1)[1]


# -- the run -------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    """One system's row of the report."""

    system: type[System]
    save: list[float] = dataclasses.field(default_factory=list)
    recall: list[float] = dataclasses.field(default_factory=list)
    contention: Contention = dataclasses.field(default_factory=Contention)
    errors: list[str] = dataclasses.field(default_factory=list)
    detail: str = ""


def p95(times: Sequence[float]) -> float:
    return statistics.quantiles(times, n=20, method="inclusive")[18]


class Places:
    """Fresh places for each system and job, and their clean-up."""

    def __init__(self, root: str, endpoint: S3Endpoint | None) -> None:
        self.root = root
        self.endpoint = endpoint
        self.prefixes = Prefixes(endpoint) if endpoint is not None else None

    def fresh(self, system: type[System], job: str) -> Place:
        directory = tempfile.mkdtemp(prefix=f"{system.key}-{job}-", dir=self.root)
        if system.medium != "s3":
            return Place(directory)
        assert self.prefixes is not None
        return Place(directory, self.endpoint, self.prefixes.fresh(f"{system.key}-{job}"))

    def clean_up(self) -> None:
        if self.prefixes is not None:
            self.prefixes.clean_up()


def shuffled(rounds: int, seed: int, *sides: Callable[[], float]) -> list[list[float]]:
    """Run every side once per round, each round in a new random order (seeded).

    Over many rounds each side runs in every place equally often, like
    :func:`harness.frameworks.rotate`, and also after every other side: a
    rotation keeps the cyclic order, so each side would always follow the same
    one and inherit its after-effects (dirty pages its fsync must flush, its
    garbage, a server still busy with its requests).
    """
    order = random.Random(seed)
    times: list[list[float]] = [[] for _ in sides]
    indexes = list(range(len(sides)))
    for _ in range(rounds):
        order.shuffle(indexes)
        for index in indexes:
            times[index].append(sides[index]())
    return times


def measure_latency(rows: Sequence[Row], places: Places, settings: Settings) -> None:
    """Interleaved saves, then interleaved recalls, of every system that opened."""
    opened: list[tuple[Row, System]] = []
    for row in rows:
        if row.errors:
            continue
        try:
            system = row.system(places.fresh(row.system, "latency"))
            system.seed([seed_text(index) for index in range(ENTRIES)])
            opened.append((row, system))
        except Exception as exc:
            row.errors.append(f"latency: {type(exc).__name__}: {exc}")
            log(f"{row.system.label}: not run ({type(exc).__name__}: {exc})")
    count = 0

    def saving(system: System) -> Callable[[], float]:
        def sample() -> float:
            nonlocal count
            count += 1
            elapsed = system.timed_save(save_text(count))
            system.undo()
            return elapsed

        return sample

    def recalling(system: System) -> Callable[[], float]:
        def sample() -> float:
            elapsed, memory = system.timed_recall()
            if seed_text(ENTRIES - 1) not in memory or save_text(count) in memory:
                raise RuntimeError(f"{system.label}: the recall is not the 10-entry memory")
            return elapsed

        return sample

    try:
        saves = [saving(system) for _, system in opened]
        recalls = [recalling(system) for _, system in opened]
        shuffled(settings.warmup, 0, *saves)
        os.sync()
        settle()
        log(f"saves: {settings.save_runs} rounds of {len(saves)} systems")
        for (row, _), times in zip(opened, shuffled(settings.save_runs, 1, *saves), strict=True):
            row.save = times
        shuffled(settings.warmup, 2, *recalls)
        settle()
        log(f"recalls: {settings.recall_runs} rounds of {len(recalls)} systems")
        for (row, _), times in zip(
            opened, shuffled(settings.recall_runs, 3, *recalls), strict=True
        ):
            row.recall = times
        for row, system in opened:
            row.detail = f"{len(system.recall().encode()):,} B recalled"
    finally:
        for _, system in opened:
            system.close()


def measure_contention(rows: Sequence[Row], places: Places, settings: Settings) -> None:
    """Every system's lost-update runs, the systems taking turns run by run."""
    for run in range(settings.contention_runs):
        order = [*rows[run % len(rows) :], *rows[: run % len(rows)]]
        for row in order:
            if row.errors:
                continue
            phase = time.monotonic()
            place = places.fresh(row.system, f"contention{run}")
            try:
                contention_run(row.system, place, settings, row.contention)
            except Exception as exc:
                row.contention.errors.append(f"{type(exc).__name__}: {exc}")
            tally = row.contention
            log(
                f"  {row.system.label}, run {run + 1}: {time.monotonic() - phase:.1f} s, "
                f"{tally.stored}/{tally.attempted} stored so far, {tally.reported} reported, "
                f"{tally.silent} silently lost"
                + (f", errors: {tally.errors[-1]}" if tally.errors else "")
            )


# -- the report ----------------------------------------------------------------


def over_floor(row: Row, floors: dict[str, Row], attribute: str) -> float | None:
    """The median of ``row``'s ``save`` or ``recall`` times over its floor's (``None``: not run)."""
    floor = floors.get(row.system.medium)
    mine: list[float] = getattr(row, attribute)
    theirs: list[float] = getattr(floor, attribute) if floor is not None else []
    if not mine or not theirs:
        return None
    return statistics.median(mine) / statistics.median(theirs)


def ratio(row: Row, floors: dict[str, Row], attribute: str) -> str:
    found = over_floor(row, floors, attribute)
    return "-" if found is None else f"{found:.2f}x"


def lost_cells(row: Row) -> tuple[str, str]:
    tally = row.contention
    if not tally.attempted:
        return "not run", "-"
    silent = f"{tally.silent:,} of {tally.attempted:,}"
    if tally.errors:
        silent += f" ({len(tally.errors)} process errors, see below)"
    return silent, f"{tally.reported:,}"


def percentiles(times: Sequence[float]) -> tuple[str, str]:
    if len(times) < 2:
        return "-", "-"
    return format_duration(statistics.median(times)), format_duration(p95(times))


def table(rows: Sequence[Row], settings: Settings) -> str:
    floors = {
        medium: row for row in rows for medium, key in FLOORS.items() if row.system.key == key
    }
    adds = f"{settings.processes} x {settings.workers} x {settings.adds}"
    header = (
        "system",
        "save p50",
        "save p95",
        "save p50 / floor",
        "recall p50",
        "recall p95",
        "recall p50 / floor",
        f"lost silently ({adds} adds)",
        "lost, reported",
        "concurrent writers, as documented",
    )
    lines = [header]
    for row in rows:
        contract = row.system.contract
        if row.system.outside_contract:
            contract = f"{contract}: **outside its contract** here (4 processes)"
        lines.append(
            (
                row.system.label,
                *percentiles(row.save),
                ratio(row, floors, "save"),
                *percentiles(row.recall),
                ratio(row, floors, "recall"),
                *lost_cells(row),
                contract,
            )
        )
    rendered = [f"| {' | '.join(line)} |" for line in lines]
    rendered.insert(1, "|" + "|".join("---" for _ in header) + "|")
    return "\n".join(rendered)


def distributions(rows: Sequence[Row]) -> list[str]:
    found = []
    for row in rows:
        name = row.system.distribution
        if name is None or name in found or not row.save:
            continue
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            importlib.metadata.version(name)
            found.append(name)
    return found


def json_rows(rows: Sequence[Row], settings: Settings) -> list[dict[str, Any]]:
    floors = {
        medium: row for row in rows for medium, key in FLOORS.items() if row.system.key == key
    }

    def seconds(times: Sequence[float]) -> dict[str, float | None]:
        enough = len(times) >= 2
        return {
            "p50_seconds": statistics.median(times) if enough else None,
            "p95_seconds": p95(times) if enough else None,
        }

    found = []
    for row in rows:
        tally = row.contention
        found.append(
            {
                "name": row.system.label,
                "system": row.system.key,
                "medium": row.system.medium,
                "detail": row.detail,
                "save": {**seconds(row.save), "runs": len(row.save)},
                "save_over_floor": over_floor(row, floors, "save"),
                "recall": {**seconds(row.recall), "runs": len(row.recall)},
                "recall_over_floor": over_floor(row, floors, "recall"),
                "lost_updates": {
                    "processes": settings.processes,
                    "workers": settings.workers,
                    "adds": settings.adds,
                    "runs": tally.runs,
                    "attempted": tally.attempted,
                    "stored": tally.stored,
                    "reported": tally.reported,
                    "silent": tally.silent,
                    "seconds": tally.seconds,
                    "first_refusal": tally.first_refusal or None,
                    "errors": tally.errors,
                },
                "contract": row.system.contract,
                "outside_contract": row.system.outside_contract,
                "errors": row.errors,
            }
        )
    return found


def notes(rows: Sequence[Row]) -> str:
    lines = []
    for row in rows:
        tally = row.contention
        parts = [row.detail] if row.detail else []
        if tally.seconds:
            parts.append(
                f"lost-update run {statistics.median(tally.seconds):.2f} s (median of {tally.runs})"
            )
        if tally.first_refusal:
            parts.append(f"first refusal: {tally.first_refusal[:120]}")
        parts.extend(f"error: {error[:160]}" for error in [*row.errors, *tally.errors][:3])
        lines.append(f"{row.system.label}: " + "; ".join(parts))
    return "\n".join(lines)


def parse_arguments(argv: Sequence[str] | None) -> tuple[Settings, S3Endpoint | None, bool]:
    parser = argparse.ArgumentParser(
        description="docmem beside its peers: save, recall and lost updates, in one run."
    )
    parser.add_argument("--quick", action="store_true", help="a fast smoke run with small counts")
    add_endpoint_arguments(parser)
    parser.add_argument("--save-runs", type=int, help="timed saves per system")
    parser.add_argument("--recall-runs", type=int, help="timed recalls per system")
    parser.add_argument("--processes", type=int, help="processes in the lost-update job")
    parser.add_argument("--workers", type=int, help="workers per process")
    parser.add_argument("--adds", type=int, help="adds per worker")
    parser.add_argument("--contention-runs", type=int, help="lost-update runs per system")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    endpoint = None
    if arguments.endpoint:
        endpoint = S3Endpoint(arguments.endpoint, arguments.bucket, arguments.region)
    return settings, endpoint, arguments.json


def main(argv: Sequence[str] | None = None) -> int:
    settings, endpoint, as_json = parse_arguments(argv)
    started = time.monotonic()
    if endpoint is not None:
        check_bucket(endpoint, "benchmarks/peers.py")
    rows = [Row(system) for system in SYSTEMS]
    for row in rows:
        if row.system.medium == "s3" and endpoint is None:
            row.errors.append("no S3 endpoint (--endpoint or $LOCALSTACK_ENDPOINT)")
    skipped = [row.system.key for row in rows if row.errors]
    root = tempfile.mkdtemp(prefix="docmem-peers-")
    places = Places(root, endpoint)
    log(f"benchmarking docmem {docmem.__version__} beside its peers in {root}")
    try:
        phase = time.monotonic()
        measure_latency(rows, places, settings)
        log(f"saves and recalls: {time.monotonic() - phase:.1f} s")
        phase = time.monotonic()
        measure_contention(rows, places, settings)
        log(f"lost updates: {time.monotonic() - phase:.1f} s")
    finally:
        places.clean_up()
        shutil.rmtree(root, ignore_errors=True)
    found = versions(*distributions(rows))
    if as_json:
        context = {
            "directory": tempfile.gettempdir(),
            "endpoint": endpoint.url if endpoint is not None else None,
            "bucket": endpoint.bucket if endpoint is not None else None,
            "skipped": skipped,
        }
        envelope = json.loads(
            json_report(
                "peers",
                [],
                settings=settings,
                found=found,
                context=context,
                started=started,
            )
        )
        envelope["results"] = json_rows(rows, settings)
        envelope["errors"] = [
            f"{row.system.label}: {error}"
            for row in rows
            for error in [*row.errors, *row.contention.errors]
        ]
        print(json.dumps(envelope, indent=2, allow_nan=False))
        return 0
    print(describe(found))
    print(
        time.strftime("%Y-%m-%d", time.gmtime())
        + (f"; S3 on {endpoint.url}, bucket {endpoint.bucket}" if endpoint else "; no S3 endpoint")
    )
    print(
        f"save and recall: {settings.save_runs} and {settings.recall_runs} interleaved rounds on a "
        f"{ENTRIES}-entry memory; lost updates: {settings.contention_runs} run(s) of "
        f"{settings.processes} processes x {settings.workers} workers x {settings.adds} adds"
    )
    print()
    print(table(rows, settings))
    print()
    print(notes(rows))
    print()
    print(f"{time.monotonic() - started:.0f} s (benchmarks never fail the build)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
