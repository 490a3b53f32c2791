"""The read cache: a 304 for an unchanged document (as GCS answers), and its telemetry.

GCS answers a download with ``ifGenerationNotMatch=<the current generation>``
with a 304 and no body; fake-gcs-server sends the body anyway, so these tests
put ``Revalidator`` (``docmem.testing.rewriting_proxy``, which answers the 304
the way GCS does) between the store and the emulator. Without it the read is a
miss that still reports the generation of the bytes it got.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from gcs_servers import endpoint
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import docmem
from docmem import telemetry
from docmem.testing.rewriting_proxy import Revalidator
from docmem_gcs import GcsBackend

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


@pytest.fixture
def revalidator() -> Iterator[Revalidator]:
    with Revalidator(endpoint()) as proxy:
        yield proxy


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
    open_gcs: Callable[..., GcsBackend],
    revalidator: Revalidator,
    collected: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    exporter, reader = collected
    store = open_gcs(through=revalidator.url)
    mem = docmem.FileMemory(store).bind(
        docmem.lock_scope(namespace="tests:otel:gcs", scope="u"), slot="user"
    )
    mem.save("Likes tea.", mutation_id="m1")
    mem.recall()  # answered 304: the copy the save left in the cache is current
    assert revalidator.not_modified == 1
    other = docmem.FileMemory(open_gcs(store.prefix)).bind(mem.scope, slot="user")
    other.save("Lives in Lisbon.", mutation_id="m2")  # another client changes it
    assert [m.content.count("\n0: ") + m.content.count("\n1: ") for m in mem.recall()] == [2]
    assert cache_points(reader) == {True: 1, False: 1}
    recalls = [s for s in exporter.get_finished_spans() if s.name == "docmem.recall"]
    assert [dict(s.attributes or {})["docmem.cache.hit"] for s in recalls] == [True, False]
    assert dict(recalls[0].attributes or {})["docmem.store.scheme"] == "gs"


def test_a_304_serves_the_cached_bytes_and_version(
    open_gcs: Callable[..., GcsBackend], revalidator: Revalidator
) -> None:
    store = open_gcs(through=revalidator.url)
    version = store.write("k", b"cached", expected=None)
    assert store.read("k") == docmem.Stored(data=b"cached", version=version)
    assert revalidator.not_modified == 1
    changed = open_gcs(store.prefix).write("k", b"changed", expected=version)
    assert store.read("k") == docmem.Stored(data=b"changed", version=changed)
    assert revalidator.not_modified == 1


def test_without_the_304_a_read_reports_the_generation_of_its_bytes(
    open_gcs: Callable[..., GcsBackend],
    collected: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    """fake-gcs-server sends the body: the read is a miss, with the bytes' own generation."""
    _, reader = collected
    store = open_gcs()
    version = store.write("k", b"one", expected=None)
    assert store.read("k") == docmem.Stored(data=b"one", version=version)
    assert cache_points(reader) == {False: 1}
