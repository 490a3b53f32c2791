"""What docmem's OpenTelemetry instrumentation costs on ``file://`` save and recall.

Three ways of running the same operations, interleaved in one run:

* off: ``docmem.telemetry.configure(enabled=False)``, every operation gets the
  no-op observation (what docmem does without the ``otel`` extra);
* API only: the OpenTelemetry API with no SDK configured (its no-op tracer and
  meter), what an application gets by installing the extra and nothing else;
* SDK: an SDK ``TracerProvider`` with a simple processor into an in-memory
  exporter and a ``MeterProvider`` with an in-memory reader.

Each row is API only or SDK against off. Targets: at most 1.03x (API only)
and 1.15x (SDK)::

    .venv/bin/python benchmarks/telemetry.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence

from harness.arguments import add_output_arguments, override
from harness.report import Result, describe, json_report, table, verdict, versions
from harness.timing import interleave, log, settle
from harness.workload import bind, index_of, save_text, seeded
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import docmem
from docmem import telemetry

NAMESPACE = "bench:telemetry"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many samples, and how many operations each sample times."""

    rounds: int = 300
    batch: int = 20
    warmup: int = 20


FULL = Settings()
QUICK = Settings(rounds=20, batch=5, warmup=3)


class Modes:
    """Switches docmem's telemetry between off, API only and SDK, outside the clock."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracing = TracerProvider()
        self.tracing.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meters = MeterProvider([InMemoryMetricReader()])

    def use(self, mode: str) -> None:
        if mode == "off":
            telemetry.configure(enabled=False)
        elif mode == "api":
            telemetry.configure()  # the API's global providers: no SDK is set in this process
        else:
            telemetry.configure(tracer_provider=self.tracing, meter_provider=self.meters)
        telemetry.active()  # build the instruments now, not inside the first timed call
        self.exporter.clear()  # an exporter that grows without end would be timed too


def sample(modes: Modes, mode: str, run: Callable[[], float]) -> Callable[[], float]:
    def timed() -> float:
        modes.use(mode)
        return run()

    return timed


def saves(memory: docmem.BoundMemory, batch: int) -> Callable[[], float]:
    """Each call: ``batch`` timed saves, each followed by an untimed remove (10 entries kept)."""
    count = 0

    def run() -> float:
        nonlocal count
        spent = 0
        for _ in range(batch):
            count += 1
            start = time.perf_counter_ns()
            result = memory.save(save_text(count), mutation_id=f"save-{count}")
            spent += time.perf_counter_ns() - start
            memory.remove(index_of(result), mutation_id=f"remove-{count}")
        return spent / 1e9 / batch

    return run


def recalls(memory: docmem.BoundMemory, batch: int) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter_ns()
        for _ in range(batch):
            memory.recall()
        return (time.perf_counter_ns() - start) / 1e9 / batch

    return run


def bench(name: str, run: Callable[[], float], modes: Modes, settings: Settings) -> list[Result]:
    """API only against off and SDK against off, each interleaved with off."""
    results = []
    for mode, label, target in (("api", "API only", 1.03), ("sdk", "SDK, in-memory", 1.15)):
        subject, baseline = sample(modes, mode, run), sample(modes, "off", run)
        interleave(settings.warmup, subject, baseline)
        settle()
        subject_times, baseline_times = interleave(settings.rounds, subject, baseline)
        results.append(
            Result(
                name=f"{name}, {label}",
                subject=statistics.median(subject_times),
                baseline=statistics.median(baseline_times),
                baseline_name="telemetry off",
                target=target,
                runs=settings.rounds * settings.batch,
            )
        )
        log(f"{name}, {label}: done")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rounds", type=int, help="samples per side")
    parser.add_argument("--batch", type=int, help="operations per sample")
    parser.add_argument("--warmup", type=int, help="untimed samples per side first")
    add_output_arguments(parser)
    arguments = parser.parse_args(argv)
    settings = override(parser, QUICK if arguments.quick else FULL, arguments)
    started = time.monotonic()
    modes = Modes()
    with tempfile.TemporaryDirectory(prefix="docmem-bench-otel-") as base:
        store = docmem.open_store(f"file://{base}?create=true")
        writer = seeded(store, NAMESPACE, "save")
        reader = seeded(store, NAMESPACE, "recall")
        bind(store, NAMESPACE, "recall").recall()  # warm: the parse cache holds it
        log(f"benchmarking docmem {docmem.__version__} telemetry in {base}")
        results = [
            *bench("save, file://", saves(writer, settings.batch), modes, settings),
            *bench("recall, file://", recalls(reader, settings.batch), modes, settings),
        ]
        store.close()
    telemetry.configure()
    found = versions("opentelemetry-api", "opentelemetry-sdk")
    if arguments.json:
        context = {"docmem_from": os.path.dirname(docmem.__file__)}
        print(
            json_report(
                "telemetry",
                results,
                settings=settings,
                found=found,
                context=context,
                started=started,
            )
        )
        return 0
    print(describe(found))
    print("ratio = with telemetry / telemetry off (medians of interleaved runs)")
    print()
    print(table(results))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
