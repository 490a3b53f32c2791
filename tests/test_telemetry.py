"""Spans and metrics through the OpenTelemetry SDK's in-memory exporter and reader."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from test_group_commit import Rig, save_call
from wrappers import ScriptedBackend

import docmem
from docmem import Stored, telemetry
from docmem.storage.builtin.inmemory import MemoryBackend
from docmem.testing.redaction import CANARY, SCOPE_CANARY


@dataclass
class Collected:
    """What the SDK received: finished spans and the metric points so far."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer: Any

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def span(self, name: str) -> ReadableSpan:
        [found] = self.spans(name)
        return found

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """``(attributes, value)`` of every point of ``metric`` (sum, or histogram count)."""
        data = self.reader.get_metrics_data()
        found: list[tuple[dict[str, Any], Any]] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for each in scope.metrics:
                    if each.name != metric:
                        continue
                    for point in each.data.data_points:
                        value = getattr(point, "value", None)
                        found.append((dict(point.attributes), value or point.count))
        return found

    def total(self, metric: str, **attributes: Any) -> Any:
        return sum(
            value
            for labels, value in self.points(metric)
            if all(labels.get(name) == wanted for name, wanted in attributes.items())
        )


def collected(sampler: Sampler | None = None) -> Collected:
    """A fresh SDK (with ``sampler``, else the SDK's default) that docmem reports to."""
    exporter = InMemorySpanExporter()
    tracing = TracerProvider(sampler=sampler)
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    telemetry.configure(tracer_provider=tracing, meter_provider=MeterProvider([reader]))
    return Collected(exporter, reader, tracing.get_tracer("host"))


@pytest.fixture
def otel() -> Iterator[Collected]:
    yield collected()
    telemetry.configure()


def scope(value: str = "u_1") -> docmem.LockedScope:
    return docmem.lock_scope(namespace="tests:otel", scope=("user", value))


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# -- spans -------------------------------------------------------------------------------


def test_a_save_is_a_span_with_a_child_per_store_request(otel: Collected, tmp_path: Path) -> None:
    store = docmem.open_store(f"file://{tmp_path}?create=true")
    mem = docmem.FileMemory(store).bind(scope(), slot="user")
    mem.save("Likes tea.", mutation_id="m1")
    save = otel.span("docmem.save")
    assert attrs(save) == {
        "docmem.operation": "save",
        "docmem.slot": "user",
        "docmem.store.scheme": "file",
        "docmem.outcome": "committed",
        "docmem.attempts": 1,
        "docmem.lost_races": 0,
        "docmem.backoff.seconds": 0.0,
        "docmem.batch.size": 1,
        "docmem.revision.written": 1,
        "docmem.document.bytes": len(store.read(mem.scope.storage_key).data),  # type: ignore[union-attr]
        "docmem.entries": 1,
    }
    children = [s for s in otel.spans() if s.parent and s.parent.span_id == save.context.span_id]
    # A create reads the store's fence marker before and after it (docmem.provider.fencing).
    names = ["docmem.store.read", "docmem.store.read", "docmem.store.write", "docmem.store.read"]
    assert [s.name for s in children] == names
    assert attrs(children[2]) == {"docmem.store.scheme": "file", "docmem.request": "write"}
    assert otel.total("docmem.operations", **{"docmem.operation": "save"}) == 1
    assert otel.total("docmem.operation.duration", **{"docmem.outcome": "committed"}) == 1
    store.close()


def test_a_batch_reports_its_requests_under_the_leader_and_its_size_on_every_member(
    otel: Collected,
) -> None:
    rig = Rig(scope())
    futures = rig.behind_a_held_write([save_call(rig, f"note {n}", f"q{n}") for n in range(3)])
    assert [future.result().status for future in futures] == ["saved"] * 4
    rig.pool.shutdown()
    saves = [span for span in otel.spans() if span.name == "docmem.save"]
    assert sorted(attrs(span)["docmem.batch.size"] for span in saves) == [1, 3, 3, 3]
    writes = [span for span in otel.spans() if span.name == "docmem.store.write"]
    parents = {span.parent.span_id for span in writes if span.parent}
    assert len(writes) == 2
    assert len(parents) == 2  # the lone save's, and the batch leader's
    assert {attrs(span)["docmem.outcome"] for span in saves} == {"committed"}


def test_every_operation_has_its_span(otel: Collected) -> None:
    mem = docmem.FileMemory(docmem.open_store("memory://")).bind(scope(), slot="user")
    mem.save("One.", mutation_id="m1")
    mem.remove(0, mutation_id="m2")
    mem.recall()
    mem.inspect("m1")
    mem.erase(mutation_id="m3")
    names = [s.name for s in otel.spans() if not s.name.startswith("docmem.store.")]
    assert names == [
        "docmem.save",
        "docmem.remove",
        "docmem.recall",
        "docmem.inspect",
        "docmem.erase",
    ]
    recall = otel.span("docmem.recall")
    assert "docmem.outcome" not in attrs(recall)  # a read's outcome is its status
    assert "docmem.operation" not in attrs(recall)  # and its name says the operation
    assert recall.status.status_code.name == "UNSET"
    assert attrs(recall)["docmem.revision.read"] == 2
    assert attrs(recall)["docmem.recall.characters"] == len(mem.recall()[0].content)
    erase = otel.span("docmem.erase")
    kids = [s.name for s in otel.spans() if s.parent and s.parent.span_id == erase.context.span_id]
    assert kids == ["docmem.store.read", "docmem.store.write", "docmem.store.delete"]


def test_a_conflict_that_retried(otel: Collected) -> None:
    store = ScriptedBackend()
    store.script = ["conflict", "ok"]
    mem = docmem.FileMemory(store).bind(scope(), slot="user")
    mem.save("Likes tea.", mutation_id="m1")
    save = attrs(otel.span("docmem.save"))
    assert (save["docmem.attempts"], save["docmem.lost_races"]) == (2, 1)
    assert save["docmem.backoff.seconds"] >= 0
    assert otel.total("docmem.lost_races") == 1
    assert otel.total("docmem.retries") == 1


def test_a_store_busy(otel: Collected) -> None:
    store = ScriptedBackend()
    store.script = ["conflict", "conflict"]
    memory = docmem.FileMemory(store, retry=docmem.RetryPolicy(max_attempts=2, base=0.0))
    with pytest.raises(docmem.StoreBusy):
        memory.bind(scope(), slot="user").save("Likes tea.", mutation_id="m1")
    save = otel.span("docmem.save")
    assert attrs(save)["docmem.outcome"] == "not_committed"
    assert attrs(save)["error.type"] == "store_busy"
    assert save.status.status_code.name == "ERROR"
    assert otel.total("docmem.store_busy") == 1
    assert otel.total("docmem.operations", **{"error.type": "store_busy"}) == 1


def test_an_unknown_outcome_settled_as_committed(otel: Collected) -> None:
    store = ScriptedBackend()
    store.script = ["lost"]  # the write lands, its answer is lost, the next read settles it
    docmem.FileMemory(store).bind(scope(), slot="user").save("Likes tea.", mutation_id="m1")
    save = otel.span("docmem.save")
    assert attrs(save)["docmem.settled"] == "committed"
    assert attrs(save)["docmem.outcome"] == "committed"
    assert [event.name for event in save.events] == ["docmem.write_outcome_unknown"]
    assert otel.total("docmem.unknown_outcomes", **{"docmem.settled": "committed"}) == 1


def test_an_unknown_outcome_settled_as_not_committed(otel: Collected) -> None:
    store = ScriptedBackend()
    store.script = ["unsent", "ok"]  # the write never happened, its answer is lost
    docmem.FileMemory(store).bind(scope(), slot="user").save("Likes tea.", mutation_id="m1")
    assert otel.total("docmem.unknown_outcomes", **{"docmem.settled": "not_committed"}) == 1


@pytest.mark.parametrize(
    ("text", "code"),
    [("x" * 600, "limit_exceeded"), ("AKIAIOSFODNN7EXAMPLE", "secret_detected")],
)
def test_refusals(otel: Collected, text: str, code: str) -> None:
    mem = docmem.FileMemory(docmem.open_store("memory://"), max_characters=300)
    with pytest.raises(docmem.DocmemError):
        mem.bind(scope(), slot="user").save(text, mutation_id="m1")
    save = attrs(otel.span("docmem.save"))
    assert (save["docmem.outcome"], save["error.type"]) == ("not_committed", code)
    assert otel.total("docmem.operations", **{"error.type": code}) == 1


def test_the_storage_key_only_when_asked(otel: Collected) -> None:
    mem = docmem.FileMemory(docmem.open_store("memory://")).bind(scope(), slot="user")
    mem.recall()
    assert "docmem.storage_key" not in attrs(otel.span("docmem.recall"))
    telemetry.configure(
        tracer_provider=otel_provider(otel), meter_provider=MeterProvider(), storage_keys=True
    )
    mem.recall()
    keyed = [s for s in otel.spans("docmem.recall") if "docmem.storage_key" in attrs(s)]
    assert [attrs(s)["docmem.storage_key"] for s in keyed] == [mem.scope.storage_key]


def otel_provider(otel: Collected) -> TracerProvider:
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(otel.exporter))
    return tracing


def test_a_read_is_one_span_current_while_the_store_is_asked(otel: Collected) -> None:
    reads = 0

    class Cached(MemoryBackend):
        def read(self, key: str) -> Stored | None:
            nonlocal reads
            reads += 1
            telemetry.note_cache(True, "memory")  # as docmem-s3 does on a 304
            with otel.tracer.start_as_current_span("store client"):
                return super().read(key)

    mem = docmem.FileMemory(Cached()).bind(scope(), slot="user")
    mem.save("One.", mutation_id="m1")
    otel.exporter.clear()
    mem.recall()
    recall = otel.span("docmem.recall")
    assert [s.name for s in otel.spans() if s.name.startswith("docmem.store.")] == []
    [client] = otel.spans("store client")
    assert client.parent is not None
    assert client.parent.span_id == recall.context.span_id
    assert attrs(recall)["docmem.cache.hit"] is True
    assert otel.total("docmem.store.cache", **{"docmem.cache.hit": True}) == reads


@pytest.mark.parametrize("sampler", [None, ALWAYS_OFF], ids=["sampled", "unsampled"])
def test_a_failed_read(sampler: Sampler | None) -> None:
    class Down(MemoryBackend):
        def read(self, key: str) -> Stored | None:
            raise docmem.StoreUnavailable("down")

    otel = collected(sampler)
    try:
        with pytest.raises(docmem.StoreUnavailable):
            docmem.FileMemory(Down()).bind(scope(), slot="user").recall()
    finally:
        telemetry.configure()
    failed = {"docmem.outcome": "failed", "error.type": "store_unavailable"}
    assert otel.total("docmem.operations", **failed) == 1
    if sampler is None:
        recall = otel.span("docmem.recall")
        assert recall.status.status_code.name == "ERROR"
        assert attrs(recall)["error.type"] == "store_unavailable"
    else:
        assert otel.spans() == []


def test_reads_are_counted_and_mutations_timed_in_a_histogram(otel: Collected) -> None:
    mem = docmem.FileMemory(docmem.open_store("memory://")).bind(scope(), slot="user")
    mem.save("One.", mutation_id="m1")
    mem.recall()
    mem.recall()
    assert otel.total("docmem.operations", **{"docmem.operation": "recall"}) == 2
    assert otel.total("docmem.operation.duration", **{"docmem.operation": "recall"}) == 0
    assert otel.total("docmem.operation.duration", **{"docmem.operation": "save"}) == 1


class Refusing(Sampler):
    """A sampler docmem does not know: it drops every span, so the span decides."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return SamplingResult(Decision.DROP)

    def get_description(self) -> str:
        return "Refusing"


@pytest.mark.parametrize(
    "sampler",
    [ParentBased(ALWAYS_OFF), TraceIdRatioBased(0), ALWAYS_OFF, Refusing()],
    ids=["parent based, off", "ratio 0", "always off", "a sampler docmem does not know"],
)
def test_an_unsampled_operation_makes_no_span_and_is_counted(sampler: Sampler) -> None:
    otel = collected(sampler)
    try:
        memory = docmem.FileMemory(docmem.open_store("memory://"), max_characters=300)
        mem = memory.bind(scope(), slot="user")
        mem.save("One.", mutation_id="m1")
        mem.recall()
        with pytest.raises(docmem.DocmemError):
            mem.save("x" * 600, mutation_id="m2")
    finally:
        telemetry.configure()
    assert otel.spans() == []
    assert otel.total("docmem.operations", **{"docmem.outcome": "committed"}) == 1
    assert otel.total("docmem.operations", **{"docmem.outcome": "ok"}) == 1
    assert otel.total("docmem.operations", **{"error.type": "limit_exceeded"}) == 1
    assert otel.total("docmem.operation.duration", **{"docmem.operation": "save"}) == 2
    assert otel.total("docmem.document.size") == 1


@pytest.mark.parametrize("sampled", [True, False], ids=["sampled host", "unsampled host"])
def test_parent_based_follows_the_hosts_span(sampled: bool) -> None:
    otel = collected(ParentBased(ALWAYS_OFF))
    host = TracerProvider(sampler=ALWAYS_ON if sampled else ALWAYS_OFF).get_tracer("host")
    try:
        mem = docmem.FileMemory(docmem.open_store("memory://")).bind(scope(), slot="user")
        with host.start_as_current_span("turn") as turn:
            mem.save("One.", mutation_id="m1")
            mem.recall()
    finally:
        telemetry.configure()
    names = [s.name for s in otel.spans() if not s.name.startswith("docmem.store.")]
    assert names == (["docmem.save", "docmem.recall"] if sampled else [])
    for span in otel.spans():
        assert span.context.trace_id == turn.get_span_context().trace_id
    assert otel.total("docmem.operations") == 2


def test_the_sdks_samplers_are_asked_before_a_span_is_made() -> None:
    sampled_host = TracerProvider().get_tracer("host")
    unsampled_host = TracerProvider(sampler=ALWAYS_OFF).get_tracer("host")
    try:
        for sampler, root in ((ParentBased(ALWAYS_OFF), False), (ALWAYS_ON, True)):
            collected(sampler)
            tools = telemetry._found()
            assert tools is not None
            assert tools.sampled("docmem.recall") is root
        collected(ParentBased(TraceIdRatioBased(0.5)))
        tools = telemetry._found()
        assert tools is not None
        assert tools.sampled("docmem.recall") is None  # a root's answer depends on its trace id
        with sampled_host.start_as_current_span("turn"):
            assert tools.sampled("docmem.recall") is True
        with unsampled_host.start_as_current_span("turn"):
            assert tools.sampled("docmem.recall") is False
    finally:
        telemetry.configure()


def test_the_current_context_is_read_as_the_api_reads_it(otel: Collected) -> None:
    from opentelemetry import context

    tools = telemetry._found()
    assert tools is not None
    assert tools._current() is context.get_current()
    with otel.tracer.start_as_current_span("turn"):
        assert tools._current() is context.get_current()
    assert tools._current is not context.get_current  # the ContextVar's own get, one C call


# -- context propagation ---------------------------------------------------------------------


def test_the_hosts_current_span_is_the_parent(otel: Collected) -> None:
    mem = docmem.FileMemory(docmem.open_store("memory://")).bind(scope(), slot="user")
    with otel.tracer.start_as_current_span("turn") as turn:
        mem.save("One.", mutation_id="m1")

        async def later() -> None:
            await mem.arecall()

        asyncio.run(later())
    trace_id = turn.get_span_context().trace_id
    for name in ("docmem.save", "docmem.recall"):
        span = otel.span(name)
        assert span.context.trace_id == trace_id
        assert span.parent is not None
        assert span.parent.span_id == turn.get_span_context().span_id


def test_concurrent_slot_reads_stay_in_the_turns_trace(otel: Collected) -> None:
    store = docmem.open_store("memory://")
    memory = docmem.FileMemory(store)
    slots = [
        docmem.MemorySlot(name, memory, scope=docmem.by_principal, namespace=f"tests:otel:{name}")
        for name in ("a", "b", "c")
    ]
    context = docmem.ScopeContext(principal=docmem.Principal("user", "t", "u"))
    runtime = docmem.MemoryRuntime(slots)
    with otel.tracer.start_as_current_span("model call") as host:
        runtime.recall(context)
    recalls = otel.spans("docmem.recall")
    assert sorted(attrs(s)["docmem.slot"] for s in recalls) == ["a", "b", "c"]
    assert {s.context.trace_id for s in recalls} == {host.get_span_context().trace_id}


def test_an_adapters_tool_call_shows_under_the_frameworks_run(otel: Collected) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from docmem.integrations.langchain import DocmemMiddleware
    from docmem.testing.langchain_model import RecordingFakeChatModel

    store = docmem.open_store("memory://")
    slot = docmem.MemorySlot(
        "user", docmem.FileMemory(store), scope=docmem.by_principal, namespace="tests:otel"
    )
    middleware = DocmemMiddleware([slot], scope_context=lambda ctx: ctx)
    model = RecordingFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "user__save_memory", "args": {"text": "Tea."}, "id": "call_1"}
                    ],
                ),
                AIMessage("Noted."),
            ]
        )
    )
    agent = create_agent(model, [], middleware=[middleware], context_schema=docmem.ScopeContext)
    context = docmem.ScopeContext(principal=docmem.Principal("user", "t", "u"))
    with otel.tracer.start_as_current_span("agent turn") as host:
        agent.invoke({"messages": [{"role": "user", "content": "Remember tea."}]}, context=context)
    docmem_spans = [s for s in otel.spans() if s.name.startswith("docmem.")]
    assert {s.name for s in docmem_spans} >= {"docmem.recall", "docmem.save"}
    assert {s.context.trace_id for s in docmem_spans} == {host.get_span_context().trace_id}


# -- nothing of memory in telemetry -------------------------------------------------------------


def _everything(otel: Collected) -> str:
    spans = [
        {
            "name": span.name,
            "attributes": attrs(span),
            "events": [(event.name, dict(event.attributes or {})) for event in span.events],
            "status": span.status.description,
        }
        for span in otel.spans()
    ]
    data = otel.reader.get_metrics_data()
    return json.dumps(spans, default=str) + (data.to_json() if data else "")


@pytest.mark.parametrize("url", ["memory://", "file"])
def test_no_memory_text_or_scope_value_in_any_span_or_metric(
    otel: Collected, url: str, tmp_path: Path
) -> None:
    store = docmem.open_store(f"file://{tmp_path}?create=true" if url == "file" else url)
    memory = docmem.FileMemory(store, max_characters=400)
    mem = memory.bind(scope(SCOPE_CANARY), slot="user")
    mem.save(CANARY, mutation_id=f"id-{CANARY}")
    mem.recall()
    mem.inspect(f"id-{CANARY}")
    for refused in (CANARY * 40, f"{CANARY} AKIAIOSFODNN7EXAMPLE"):
        with pytest.raises(docmem.DocmemError):
            mem.save(refused)
    mem.remove(0)
    mem.erase()
    text = _everything(otel)
    assert "docmem.save" in text
    assert CANARY not in text
    assert SCOPE_CANARY not in text
    store.close()


# -- without the API -----------------------------------------------------------------------------


@pytest.mark.process
def test_without_opentelemetry_no_telemetry_path_is_taken() -> None:
    code = """
import sys
sys.modules["opentelemetry"] = None  # as if the extra were not installed
import docmem
from docmem import telemetry
store = docmem.open_store("memory://")
mem = docmem.FileMemory(store).bind(docmem.lock_scope(namespace="n", scope="s"), slot="user")
mem.save("Tea.")
mem.recall()
assert not telemetry.active()
assert telemetry.operation("save", slot="user", scheme="memory", key="k") is telemetry.NULL
print([m for m, module in sys.modules.items() if m.startswith("opentelemetry") and module])
"""
    done = subprocess.run(
        [sys.executable, "-B", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.process
def test_importing_docmem_imports_no_opentelemetry() -> None:
    code = "import sys, docmem; print([m for m in sys.modules if m.startswith('opentelemetry')])"
    done = subprocess.run(
        [sys.executable, "-B", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_telemetry_can_be_turned_off_with_the_api_installed(otel: Collected) -> None:
    telemetry.configure(enabled=False)
    assert not telemetry.active()
    assert telemetry.operation("save", slot="u", scheme="memory", key="k") is telemetry.NULL
    docmem.FileMemory(docmem.open_store("memory://")).bind(scope(), slot="user").recall()
    assert otel.spans() == []


GLOBAL_SDK = """
import time
import docmem
from docmem import telemetry
from opentelemetry import {module}
mem = docmem.FileMemory(docmem.open_store("memory://")).bind(
    docmem.lock_scope(namespace="n", scope="s"), slot="user"
)
mem.recall()
assert not telemetry.active(), "the API alone records nothing"
assert telemetry.operation("recall", slot="u", scheme="memory", key="k") is telemetry.NULL
{setup}
time.sleep(1.1)  # the globals are looked at again at most once a second
assert telemetry.active()
mem.recall()
{check}
print("ok")
"""

TRACING = """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
"""

METERING = """
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider([reader]))
"""


@pytest.mark.process
@pytest.mark.parametrize(
    ("module", "setup", "check"),
    [
        (
            "trace",
            TRACING,
            'assert "docmem.recall" in [s.name for s in exporter.get_finished_spans()]',
        ),
        ("metrics", METERING, 'assert "docmem.operations" in reader.get_metrics_data().to_json()'),
    ],
    ids=["tracer provider", "meter provider"],
)
def test_an_sdk_set_globally_later_is_picked_up(module: str, setup: str, check: str) -> None:
    code = GLOBAL_SDK.format(module=module, setup=setup, check=check)
    done = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
