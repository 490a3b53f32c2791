"""Content-free OpenTelemetry spans and metrics for every provider operation and store request.

With the OpenTelemetry API installed (``pip install "docmem[otel]"``) each
recall, save, remove, erase and inspect is a span (``docmem.<op>``) with a
child span per store request (``docmem.store.read``, ``.write``, ``.delete``),
and feeds the metrics below; with no SDK configured the API makes all of it a
no-op. Without the API nothing here is imported or run: :func:`operation`
hands back :data:`NULL`, whose methods do nothing.

What is recorded is never content: slot names, the store's URL scheme,
revisions, attempts, lost races, seconds backed off, the outcome, error
codes, sizes and counts. The storage key (an opaque digest) only after
:func:`configure` with ``storage_keys=True``; memory text, raw scope and
namespace values and credentials never (docs/design.md, section 7).

Metrics (meter ``docmem``): ``docmem.operations`` (by ``docmem.operation``,
``docmem.outcome``, ``error.type``), ``docmem.lost_races``,
``docmem.retries``, ``docmem.store_busy`` (budgets exhausted),
``docmem.unknown_outcomes`` (by ``docmem.settled``: ``committed``,
``not_committed``, ``ambiguous``, ``unsettled``), ``docmem.operation.duration``
(seconds), ``docmem.document.size`` (bytes) and ``docmem.store.cache``
(by ``docmem.cache.hit``: a recall served by a store's cache, a 304 on S3).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from .errors import DocmemError, StoreBusy

__all__ = ["NULL", "Observation", "active", "configure", "note_cache", "operation"]

#: Attribute names, once: the span and the metrics say the same thing the same way.
OPERATION = "docmem.operation"
OUTCOME = "docmem.outcome"
SLOT = "docmem.slot"
SCHEME = "docmem.store.scheme"
ERROR = "error.type"


class _Instruments:
    """The tracer and the metric instruments, made once the API is found."""

    def __init__(self, trace: Any, metrics: Any, tracer_provider: Any, meter_provider: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        from opentelemetry import context

        try:
            release: str | None = version("docmem")
        except PackageNotFoundError:  # a source tree that was never installed
            release = None

        self.trace = trace
        self.context = context
        tracers = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        self.tracer = tracers.get_tracer("docmem", release)
        meter = meters.get_meter("docmem", release)
        self.operations = meter.create_counter(
            "docmem.operations", description="provider operations, by op and outcome"
        )
        self.lost_races = meter.create_counter(
            "docmem.lost_races", description="conditional writes another writer won"
        )
        self.retries = meter.create_counter(
            "docmem.retries", description="attempts after the first, of a mutation"
        )
        self.store_busy = meter.create_counter(
            "docmem.store_busy", description="mutations that ran out of their retry budget"
        )
        self.unknown = meter.create_counter(
            "docmem.unknown_outcomes", description="writes whose answer was lost, by how settled"
        )
        self.duration = meter.create_histogram(
            "docmem.operation.duration", unit="s", description="provider operation time"
        )
        self.size = meter.create_histogram(
            "docmem.document.size", unit="By", description="stored document size"
        )
        self.cache = meter.create_counter(
            "docmem.store.cache", description="store reads answered from a cache (hit) or not"
        )


_instruments: _Instruments | None = None
_looked = False
_storage_keys = False
_providers: tuple[Any, Any] = (None, None)


def _found() -> _Instruments | None:
    """The instruments, or ``None`` without the API (looked for once, at first use)."""
    global _instruments, _looked
    if not _looked:
        try:
            from opentelemetry import metrics, trace
        except ImportError:
            _instruments = None
        else:
            _instruments = _Instruments(trace, metrics, *_providers)
        _looked = True
    return _instruments


def configure(
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    storage_keys: bool = False,
) -> None:
    """Use these providers instead of the global ones, and say whether keys are recorded.

    ``storage_keys=True`` adds ``docmem.storage_key`` (an opaque digest of
    namespace and scope, never their values) to every span, for an operator
    who wants to follow one scope. Call with no arguments to go back to the
    global providers without keys.
    """
    global _looked, _storage_keys, _providers
    _providers = (tracer_provider, meter_provider)
    _storage_keys = bool(storage_keys)
    _looked = False


def active() -> bool:
    """Whether the OpenTelemetry API was found (spans may still be no-ops without an SDK)."""
    return _found() is not None


class _Null:
    """An observation that records nothing: what every call gets without the API."""

    __slots__ = ()

    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def set(self, name: str, value: Any) -> None:
        """Nothing."""

    def attempt(self, number: int) -> None:
        """Nothing."""

    def lost_race(self) -> None:
        """Nothing."""

    def backed_off(self, seconds: float) -> None:
        """Nothing."""

    def document(self, size: int, entries: int, revision: int, *, written: bool) -> None:
        """Nothing."""

    def unknown(self) -> None:
        """Nothing."""

    def settled(self, how: str) -> None:
        """Nothing."""

    @contextmanager
    def request(self, kind: str) -> Iterator[None]:
        """Nothing."""
        yield


#: The observation every operation gets when the API is absent.
NULL = _Null()


class Observation:
    """One provider operation as a span, and what its metrics record when it ends."""

    def __init__(self, tools: _Instruments, op: str, slot: str, scheme: str, key: str) -> None:
        self._tools = tools
        self._common = {OPERATION: op, SLOT: slot, SCHEME: scheme}
        attributes: dict[str, Any] = dict(self._common)
        if _storage_keys:
            attributes["docmem.storage_key"] = key
        self._span = tools.tracer.start_span(f"docmem.{op}", attributes=attributes)
        self._recording = self._span.is_recording()
        self._mutation = op in ("save", "remove", "erase")
        self._attempts = 0
        self._lost = 0
        self._backoff = 0.0
        self._pending_unknown = False
        self._wrote = False
        self._started = 0.0
        self._token: Any = None

    def __enter__(self) -> Observation:
        self._started = time.perf_counter()
        tools = self._tools
        self._token = tools.context.attach(tools.trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        tools = self._tools
        tools.context.detach(self._token)
        outcome = self._outcome(error)
        labels = dict(self._common, **{OUTCOME: outcome})
        if isinstance(error, DocmemError):
            labels[ERROR] = error.code
        elif error is not None:
            labels[ERROR] = type(error).__name__
        if self._pending_unknown:
            self.settled("unsettled")
        if isinstance(error, StoreBusy):
            tools.store_busy.add(1, self._common)
        tools.operations.add(1, labels)
        if self._lost:
            tools.lost_races.add(self._lost, self._common)
        if self._attempts > 1:
            tools.retries.add(self._attempts - 1, self._common)
        tools.duration.record(time.perf_counter() - self._started, labels)
        span = self._span
        if self._recording:
            span.set_attribute(OUTCOME, outcome)
            if self._mutation:
                span.set_attribute("docmem.attempts", self._attempts)
                span.set_attribute("docmem.lost_races", self._lost)
                span.set_attribute("docmem.backoff.seconds", self._backoff)
            if ERROR in labels:
                span.set_attribute(ERROR, labels[ERROR])
                span.set_status(tools.trace.Status(tools.trace.StatusCode.ERROR, labels[ERROR]))
        span.end()

    def _outcome(self, error: BaseException | None) -> str:
        if not self._mutation:
            return "ok" if error is None else "failed"
        if error is None:
            return "committed"
        if isinstance(error, DocmemError) and error.outcome is not None:
            return error.outcome
        return "unknown" if self._wrote else "not_committed"

    def set(self, name: str, value: Any) -> None:
        """A content-free attribute of the operation's span (a count, a size, a revision)."""
        if self._recording:
            self._span.set_attribute(name, value)

    def attempt(self, number: int) -> None:
        """Attempt ``number`` (0 is the first) of a mutation begins."""
        self._attempts = number + 1

    def lost_race(self) -> None:
        """A conditional write lost to another writer."""
        self._lost += 1

    def backed_off(self, seconds: float) -> None:
        """The mutation slept this long in all between its attempts."""
        self._backoff = seconds

    def document(self, size: int, entries: int, revision: int, *, written: bool) -> None:
        """The document read (or written): bytes, entries and revision."""
        self._tools.size.record(size, self._common)
        if written:
            self._wrote = True
        if self._recording:
            which = "written" if written else "read"
            self._span.set_attribute(f"docmem.revision.{which}", revision)
            self._span.set_attribute("docmem.document.bytes", size)
            self._span.set_attribute("docmem.entries", entries)

    def unknown(self) -> None:
        """A write's answer was lost: its outcome is unknown until a read settles it."""
        self._pending_unknown = True
        self._wrote = True
        if self._recording:
            self._span.add_event("docmem.write_outcome_unknown")

    def settled(self, how: str) -> None:
        """How a lost answer was settled: ``committed``, ``not_committed``, ``ambiguous``."""
        if not self._pending_unknown:
            return
        self._pending_unknown = False
        self._tools.unknown.add(1, dict(self._common, **{"docmem.settled": how}))
        if self._recording:
            self._span.set_attribute("docmem.settled", how)

    @contextmanager
    def request(self, kind: str) -> Iterator[None]:
        """One store request (``read``, ``write``, ``delete``) as a child span."""
        tools = self._tools
        with tools.tracer.start_as_current_span(
            f"docmem.store.{kind}",
            kind=tools.trace.SpanKind.CLIENT,
            attributes={SCHEME: self._common[SCHEME], "docmem.request": kind},
            record_exception=False,  # an exception's text is the store's, not ours to ship
        ) as span:
            try:
                yield
            except DocmemError as error:
                if span.is_recording():
                    span.set_attribute(ERROR, error.code)
                raise
            except Exception as error:
                if span.is_recording():
                    span.set_attribute(ERROR, type(error).__name__)
                raise


def operation(op: str, *, slot: str, scheme: str, key: str) -> Observation | _Null:
    """The observation of one provider operation: use it as a context manager."""
    tools = _found()
    if tools is None:
        return NULL
    return Observation(tools, op, slot, scheme, key)


def note_cache(hit: bool, scheme: str) -> None:
    """A store's read was answered from its cache (``hit``) or not: for the hit ratio."""
    tools = _found()
    if tools is None:
        return
    tools.cache.add(1, {SCHEME: scheme, "docmem.cache.hit": hit})
    span = tools.trace.get_current_span()
    if span.is_recording():
        span.set_attribute("docmem.cache.hit", hit)
