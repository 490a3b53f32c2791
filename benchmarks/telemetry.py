"""What docmem's OpenTelemetry instrumentation costs on ``file://`` save and recall.

Five ways of running the same operations, interleaved in one run (every
round runs each once, in a rotated order):

* off: ``docmem.telemetry.configure(enabled=False)``, every operation gets the
  no-op observation (what docmem does without the ``otel`` extra): the baseline;
* API only: the OpenTelemetry API with no SDK configured (its no-op tracer and
  meter), what an application gets by installing the extra and nothing else;
* SDK, unsampled: an SDK ``TracerProvider`` whose sampler says no, once as
  ``ParentBased(ALWAYS_OFF)`` and once as ``TraceIdRatioBased(0)``;
* SDK, sampled: ``ALWAYS_ON``.

Every SDK provider has a simple processor into an in-memory exporter, and
all share a ``MeterProvider`` with an in-memory reader. Each row is one way
against off in the same rounds; its notes give the quartiles of the
per-round ratios, and the sampled rows the SDK's own floor: one bare span
(start, end) of the same provider, timed after each sample. Targets: 1.03x
(API only), 1.05x (unsampled), 1.15x (sampled save) and 2x (sampled
recall). A row whose mode exported spans it should not have (or none it
should) fails its check. A recall sample is a few hundred recalls after one
untimed recall: a switch of providers leaves caches cold, which an
application never pays per operation::

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
from harness.report import Result, describe, json_report, notes, table, verdict, versions
from harness.timing import log, settle
from harness.workload import bind, index_of, save_text, seeded
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)

import docmem
from docmem import telemetry

NAMESPACE = "bench:telemetry"


@dataclasses.dataclass(frozen=True)
class Settings:
    """How many rounds, and how many operations each sample times."""

    rounds: int = 300
    batch: int = 20
    #: Recalls per sample: a recall is 50 us, and a sample of a few would time the switch.
    recall_batch: int = 400
    warmup: int = 20


FULL = Settings()
QUICK = Settings(rounds=20, batch=5, recall_batch=50, warmup=3)


@dataclasses.dataclass(frozen=True)
class Mode:
    """One way of running: its label in a row's name, its sampler, whether spans are kept."""

    label: str
    sampler: Sampler | None  # None: no SDK (off, or the API alone)
    sampled: bool
    save_target: float
    recall_target: float


OFF = Mode("off", None, sampled=False, save_target=1.0, recall_target=1.0)
MODES = (
    Mode("API only", None, sampled=False, save_target=1.03, recall_target=1.03),
    Mode(
        "SDK, unsampled (ParentBased(ALWAYS_OFF))",
        ParentBased(ALWAYS_OFF),
        sampled=False,
        save_target=1.05,
        recall_target=1.05,
    ),
    Mode(
        "SDK, unsampled (TraceIdRatioBased(0))",
        TraceIdRatioBased(0),
        sampled=False,
        save_target=1.05,
        recall_target=1.05,
    ),
    Mode("SDK, sampled (ALWAYS_ON)", ALWAYS_ON, sampled=True, save_target=1.15, recall_target=2.0),
)


class Modes:
    """Switches docmem's telemetry between the modes, outside the clock."""

    def __init__(self) -> None:
        self.meters = MeterProvider([InMemoryMetricReader()])
        self.exporters: dict[str, InMemorySpanExporter] = {}
        self.tracers: dict[str, TracerProvider] = {}
        for mode in MODES:
            if mode.sampler is not None:
                self.exporters[mode.label] = InMemorySpanExporter()
                self.tracers[mode.label] = TracerProvider(sampler=mode.sampler)
                self.tracers[mode.label].add_span_processor(
                    SimpleSpanProcessor(self.exporters[mode.label])
                )

    def use(self, mode: Mode) -> None:
        if mode is OFF:
            telemetry.configure(enabled=False)
        elif mode.sampler is None:
            telemetry.configure()  # the API's global providers: no SDK is set in this process
        else:
            telemetry.configure(
                tracer_provider=self.tracers[mode.label], meter_provider=self.meters
            )
        telemetry.active()  # build the instruments now, not inside the first timed call
        self.clear()

    def clear(self) -> None:
        """Empty every exporter: one that grows without end would be timed too."""
        for exporter in self.exporters.values():
            exporter.clear()

    def bare_span(self, mode: Mode, count: int) -> float:
        """Seconds one span of ``mode``'s SDK takes to start and end, nothing else: a floor."""
        tracer = self.tracers[mode.label].get_tracer("bench")
        start = time.perf_counter_ns()
        for _ in range(count):
            tracer.start_span("bare").end()
        spent = (time.perf_counter_ns() - start) / 1e9 / count
        self.clear()
        return spent

    def traced(self, mode: Mode, root: str) -> int:
        """Spans the mode's exporter holds in the traces whose root span is named ``root``."""
        spans = self.exporters[mode.label].get_finished_spans()
        traces = {span.context.trace_id for span in spans if span.name == root}
        return sum(span.context.trace_id in traces for span in spans)

    def exported(self, mode: Mode) -> int:
        """Spans the mode's exporter holds (since :meth:`use`)."""
        exporter = self.exporters.get(mode.label)
        return 0 if exporter is None else len(exporter.get_finished_spans())


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


@dataclasses.dataclass
class Timings:
    """Each mode's sample times, round by round, and whether its spans were as expected."""

    times: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    wrong_spans: dict[str, int] = dataclasses.field(default_factory=dict)
    #: A bare span of the sampled SDK, timed after its sample, round by round.
    bare: list[float] = dataclasses.field(default_factory=list)
    #: Spans the sampled SDK exported per sample.
    spans: list[int] = dataclasses.field(default_factory=list)


def rounds(
    count: int,
    run: Callable[[], float],
    modes: Modes,
    warm: Callable[[], object] | None,
    root: str,
) -> Timings:
    """``count`` rounds, each running off and every mode once, the order rotated each round.

    ``root`` names the timed operation's span (its trace's spans are counted).
    ``warm`` runs once, untimed, after each switch: an application does not switch
    providers between operations, and the first operation after a switch pays
    for the switch (caches cold), which on a 50 us recall would be timed too.
    """
    everyone = (OFF, *MODES)
    timings = Timings({mode.label: [] for mode in everyone}, {mode.label: 0 for mode in MODES})
    for number in range(count):
        shift = number % len(everyone)
        order = everyone[shift:] + everyone[:shift]
        for mode in order if number % 2 == 0 else order[::-1]:
            modes.use(mode)
            if warm is not None:
                warm()
                modes.clear()
            timings.times[mode.label].append(run())
            if mode is not OFF and (modes.exported(mode) > 0) != mode.sampled:
                timings.wrong_spans[mode.label] += 1
            if mode.sampled:
                timings.spans.append(modes.traced(mode, root))
                timings.bare.append(modes.bare_span(mode, 20))
    return timings


def spread(subject: Sequence[float], baseline: Sequence[float]) -> tuple[float, float]:
    """The first and third quartiles of the per-round ratios."""
    ratios = [ours / off for ours, off in zip(subject, baseline, strict=True)]
    if len(ratios) < 2:
        return ratios[0], ratios[0]
    quartiles = statistics.quantiles(ratios, n=4, method="inclusive")
    return quartiles[0], quartiles[2]


def bench(
    name: str,
    run: Callable[[], float],
    modes: Modes,
    settings: Settings,
    batch: int,
    warm: Callable[[], object] | None = None,
) -> list[Result]:
    """Every mode against off, all interleaved in the same rounds (``batch`` calls a sample)."""
    root = f"docmem.{name.partition(',')[0]}"
    rounds(settings.warmup, run, modes, warm, root)
    settle()
    timings = rounds(settings.rounds, run, modes, warm, root)
    baseline = timings.times[OFF.label]
    results = []
    for mode in MODES:
        times = timings.times[mode.label]
        low, high = spread(times, baseline)
        wrong = timings.wrong_spans[mode.label]
        expected = "spans exported" if mode.sampled else "no span exported"
        floor: tuple[str, ...] = ()
        if mode.sampled:  # the SDK's own cost: what no instrumentation can go under
            bare, off = statistics.median(timings.bare), statistics.median(baseline)
            each = statistics.median(timings.spans) / batch
            floor = (
                f"spans per call: {each:g}; one bare span of this SDK (start, end): "
                f"{bare * 1e6:.1f} us; off + that many: {1 + each * bare / off:.2f}x",
            )
        results.append(
            Result(
                name=f"{name}, {mode.label}",
                subject=statistics.median(times),
                baseline=statistics.median(baseline),
                baseline_name="telemetry off",
                target=mode.save_target if name.startswith("save") else mode.recall_target,
                runs=settings.rounds * batch,
                notes=(
                    f"per-round ratio, quartiles: {low:.2f}x - {high:.2f}x",
                    f"{expected}: {settings.rounds - wrong} of {settings.rounds} rounds",
                    *floor,
                ),
                checked=wrong == 0,
            )
        )
    log(f"{name}: done")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rounds", type=int, help="rounds, each timing every mode once")
    parser.add_argument("--batch", type=int, help="saves per sample")
    parser.add_argument("--recall-batch", type=int, help="recalls per sample")
    parser.add_argument("--warmup", type=int, help="untimed rounds first")
    parser.add_argument("--op", choices=("save", "recall"), help="only this operation's rows")
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
        results = []
        if arguments.op in ("save", None):
            run = saves(writer, settings.batch)
            results += bench("save, file://", run, modes, settings, settings.batch)
        if arguments.op in ("recall", None):
            run = recalls(reader, settings.recall_batch)
            batch = settings.recall_batch
            results += bench("recall, file://", run, modes, settings, batch, warm=reader.recall)
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
    print("ratio = with telemetry / telemetry off (medians of interleaved rounds)")
    print()
    print(table(results))
    print()
    print(notes(results, "spans not as the sampler says"))
    print()
    print(verdict(results, started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
