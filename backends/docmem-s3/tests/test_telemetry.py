"""docmem-s3 under OpenTelemetry: spans of real requests, the 304 ratio, nothing of memory."""

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
from docmem_s3 import S3Backend

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


def cache_points(reader: InMemoryMetricReader) -> dict[bool, int]:
    found: dict[bool, int] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "docmem.store.cache":
                    for point in metric.data.data_points:
                        found[bool(point.attributes["docmem.cache.hit"])] = int(point.value)
    return found


def test_an_unchanged_recall_counts_as_a_cache_hit(
    open_s3: Callable[..., S3Backend],
    collected: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = collected
    store = open_s3()
    mem = docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace="tests:otel", scope="u"), slot="user"
    )
    mem.save("Likes tea.", mutation_id="m1")
    mem.recall()  # answered 304: the copy the save left in the cache is current
    other = docmem.FileMemory(open_s3(store.prefix)).bind(mem.scope, slot="user")
    other.save("Lives in Lisbon.", mutation_id="m2")  # another client changes it
    mem.recall()  # a conditional GET that gets the new body: a miss
    assert cache_points(reader) == {True: 1, False: 1}
    spans = exporter.get_finished_spans()
    recalls = [s for s in spans if s.name == "docmem.recall"]
    # A read's span is its one store request: the answer lands on the recall's own span.
    assert [dict(s.attributes or {})["docmem.cache.hit"] for s in recalls] == [True, False]
    assert dict(recalls[0].attributes or {})["docmem.store.scheme"] == "s3"
    recall_ids = {s.context.span_id for s in recalls}
    assert not [s for s in spans if s.parent and s.parent.span_id in recall_ids]


def test_no_memory_text_or_scope_value_reaches_telemetry(
    open_s3: Callable[..., S3Backend],
    collected: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = collected
    store = open_s3()
    mem = docmem.FileMemory(store, max_characters=400).bind(
        docmem.lock_scope(namespace="tests:otel", scope=("user", SCOPE_CANARY)), slot="user"
    )
    mem.save(CANARY, mutation_id=f"id-{CANARY}")
    mem.recall()
    mem.inspect(f"id-{CANARY}")
    with pytest.raises(docmem.LimitExceeded):
        mem.save(CANARY * 40)
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
