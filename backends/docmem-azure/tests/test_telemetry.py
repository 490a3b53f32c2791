"""docmem-azure under OpenTelemetry: the 304 ratio under scheme "az", nothing of memory."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import docmem
from docmem import telemetry
from docmem.testing.redaction import CANARY, SCOPE_CANARY
from docmem_azure import AzureBlobBackend

pytestmark = pytest.mark.integration


@pytest.fixture
def collected() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    telemetry.configure(tracer_provider=tracing, meter_provider=MeterProvider([reader]))
    yield exporter, reader
    telemetry.configure()


def cache_points(reader: InMemoryMetricReader) -> dict[tuple[bool, str], int]:
    found: dict[tuple[bool, str], int] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "docmem.store.cache":
                    for point in metric.data.data_points:
                        attributes = dict(point.attributes or {})
                        hit = bool(attributes["docmem.cache.hit"])
                        found[(hit, str(attributes.get("docmem.store.scheme")))] = int(
                            getattr(point, "value", 0)
                        )
    return found


def test_an_unchanged_recall_counts_as_a_cache_hit(
    open_azure: Callable[..., AzureBlobBackend],
    collected: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = collected
    store = open_azure()
    mem = docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace="tests:otel", scope="u"), slot="user"
    )
    mem.save("Likes tea.", mutation_id="m1")
    mem.recall()  # answered 304: the copy the save left in the cache is current
    other = docmem.FileMemory(open_azure(store.prefix)).bind(mem.scope, slot="user")
    other.save("Lives in Lisbon.", mutation_id="m2")  # another client changes it
    mem.recall()  # a conditional GET that gets the new body: a miss
    assert cache_points(reader) == {(True, "az"): 1, (False, "az"): 1}
    recalls = [s for s in exporter.get_finished_spans() if s.name == "docmem.recall"]
    assert [dict(s.attributes or {})["docmem.cache.hit"] for s in recalls] == [True, False]


def test_no_memory_text_or_scope_value_reaches_telemetry(
    open_azure: Callable[..., AzureBlobBackend],
    collected: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = collected
    mem = docmem.FileMemory(open_azure(), max_characters=400).bind(
        docmem.lock_scope(namespace="tests:otel", scope=("user", SCOPE_CANARY)), slot="user"
    )
    mem.save(CANARY, mutation_id=f"id-{CANARY}")
    mem.recall()
    mem.inspect(f"id-{CANARY}")
    mem.erase()
    spans: list[dict[str, Any]] = [
        {
            "name": span.name,
            "attributes": dict(span.attributes or {}),
            "events": [(event.name, dict(event.attributes or {})) for event in span.events],
            "status": span.status.description,
        }
        for span in exporter.get_finished_spans()
    ]
    data = reader.get_metrics_data()
    text = json.dumps(spans, default=str) + (data.to_json() if data else "")
    assert "docmem.store.write" in text
    assert CANARY not in text
    assert SCOPE_CANARY not in text
