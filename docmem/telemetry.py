"""Content-free OpenTelemetry spans and metrics for every provider operation and store request.

With the OpenTelemetry API installed (``pip install "agent-docmem[otel]"``) and an
SDK configured, each recall, save, remove, erase, inspect and read that the
tracer's sampler keeps is a span (``docmem.<op>``). A mutation's span has a
child span per store request (``docmem.store.read``, ``.write``,
``.delete``); a read's span is its one store request, current while the
store is asked (a store's own spans and its cache answer land on it), so a
read's trace does not time the request apart from parsing and rendering.
Every operation, sampled or not, feeds the metrics below. Without the API
nothing here is imported or run; until something in the process has imported
``opentelemetry.trace`` (an SDK set up, or an instrumented framework) the API
is not imported either, and while its global providers are still its no-op
proxies nothing is recorded: :func:`operation` then hands back :data:`NULL`,
whose methods do nothing.

The sampler is asked first, because a warm recall costs about as much as one
SDK span: with the SDK's own samplers (``ParentBased``, ``ALWAYS_ON``,
``ALWAYS_OFF``, ``TraceIdRatioBased``) an operation they drop gets no span
object at all, only its count; any other sampler decides through the span
itself. An unsampled root operation thus puts no docmem span in the context:
spans a store's client makes (botocore, say) are roots of their own.

What is recorded is never content: slot names, the store's URL scheme,
revisions, attempts, lost races, seconds backed off, the outcome, error
codes, sizes and counts. The storage key (an opaque digest) only after
:func:`configure` with ``storage_keys=True``; memory text, raw scope and
namespace values and credentials never (docs/design.md, sections 6.2 and 7).

Metrics (meter ``docmem``): ``docmem.operations`` (by ``docmem.operation``,
``docmem.outcome``, ``error.type``), counted in plain integers and handed to
the SDK when it collects, so a read does no SDK metric work;
``docmem.operation.duration`` (seconds, mutations only: a read is not timed
in metrics, its latency is in its sampled spans), ``docmem.document.size``
(bytes written), ``docmem.lost_races``, ``docmem.retries``,
``docmem.store_busy`` (budgets exhausted), ``docmem.unknown_outcomes`` (by
``docmem.settled``: ``committed``, ``not_committed``, ``ambiguous``,
``unsettled``) and ``docmem.store.cache`` (by ``docmem.cache.hit``: a read a
store's cache answered, a 304 on S3).
"""

from __future__ import annotations

import contextvars
import functools
import sys
import threading
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Protocol

from .errors import DocmemError, StoreBusy

__all__ = [
    "NULL",
    "NullObserver",
    "Observation",
    "Observer",
    "RequestSpan",
    "active",
    "configure",
    "note_cache",
    "operation",
]

#: Attribute names, once: the span and the metrics say the same thing the same way.
OPERATION = "docmem.operation"
OUTCOME = "docmem.outcome"
SLOT = "docmem.slot"
SCHEME = "docmem.store.scheme"
ERROR = "error.type"
CACHE_HIT = "docmem.cache.hit"
_MUTATIONS = frozenset({"save", "remove", "erase", "revert"})


class _NullRequest:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_NULL_REQUEST = _NullRequest()


class NullObserver:
    """An :class:`Observer` that records nothing: what every call gets when nothing would record."""

    __slots__ = ()

    def __enter__(self) -> NullObserver:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
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

    def request(self, kind: str) -> _NullRequest:
        """Nothing."""
        return _NULL_REQUEST


#: The observer every operation gets when nothing would be recorded.
NULL = NullObserver()


class _Cell(NullObserver):
    """One operation, slot and scheme: how many ended how; and the observer of its unsampled reads.

    An SDK counter's ``add`` walks views, attributes and locks on every call;
    adding to a cell under one uncontended lock is a fraction of that, and
    the totals reach the SDK through an observable counter when it collects.
    A read its sampler dropped needs nothing else (no span, no timing), so
    the cell itself observes it: no object is made per read.
    """

    __slots__ = ("_lock", "common", "count", "ended", "spanned", "usual")

    def __init__(self, lock: threading.Lock, op: str, slot: str, scheme: str) -> None:
        self._lock = lock
        self.common: dict[str, Any] = {OPERATION: op, SLOT: slot, SCHEME: scheme}
        #: What a span starts with: a read's name says the operation (each attribute costs).
        self.spanned = self.common if op in _MUTATIONS else {SLOT: slot, SCHEME: scheme}
        #: The outcome of almost every call, counted in one plain number.
        self.usual = "committed" if op in _MUTATIONS else "ok"
        self.count = 0
        #: Every other ending, by outcome and error code.
        self.ended: dict[tuple[str, str | None], int] = {}

    def add(self, outcome: str, code: str | None) -> None:
        with self._lock:
            if code is None and outcome == self.usual:
                self.count += 1
            else:
                self.ended[outcome, code] = self.ended.get((outcome, code), 0) + 1

    def totals(self) -> list[tuple[dict[str, Any], int]]:
        """``(attributes, count)`` of each ending so far (the caller holds the lock)."""
        found = [({**self.common, OUTCOME: self.usual}, self.count)] if self.count else []
        for (outcome, code), count in self.ended.items():
            labels = {**self.common, OUTCOME: outcome}
            if code is not None:
                labels[ERROR] = code
            found.append((labels, count))
        return found

    # -- the Observer of a read its sampler dropped (the rest does nothing, as NULL) ------

    def __enter__(self) -> _Cell:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None:
            self.add("failed", _code(error))
            return
        lock = self._lock
        lock.acquire()  # not ``with``: half the cost, and nothing in between can raise
        self.count += 1
        lock.release()


class _Tally:
    """Every cell of one meter provider, and the store cache's answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cells: dict[tuple[str, str, str], _Cell] = {}
        self._cache: dict[tuple[str, bool], int] = {}

    def cell(self, op: str, slot: str, scheme: str) -> _Cell:
        found = self._cells.get((op, slot, scheme))
        if found is None:
            with self._lock:
                found = self._cells.setdefault(
                    (op, slot, scheme), _Cell(self._lock, op, slot, scheme)
                )
        return found

    def cache(self, scheme: str, hit: bool) -> None:
        with self._lock:
            self._cache[scheme, hit] = self._cache.get((scheme, hit), 0) + 1

    def operations(self) -> list[tuple[dict[str, Any], int]]:
        """``(attributes, count)`` per operation, slot, scheme and ending so far."""
        with self._lock:
            return [total for cell in self._cells.values() for total in cell.totals()]

    def caches(self) -> list[tuple[dict[str, Any], int]]:
        with self._lock:
            counted = list(self._cache.items())
        return [({SCHEME: scheme, CACHE_HIT: hit}, count) for (scheme, hit), count in counted]


class _Metrics:
    """One meter provider's instruments and tally: made once per provider.

    An SDK meter hands back the instrument it already has for a name, with
    the callbacks it was first made with, so a tally made twice for one
    provider would never be read: :func:`_metrics_for` keeps one per provider.
    """

    def __init__(self, meters: Any, release: str | None) -> None:
        from opentelemetry.metrics import Observation as Point

        meter = meters.get_meter("docmem", release)
        tally = self.tally = _Tally()

        def operations(_options: Any) -> Iterator[Any]:
            return (Point(count, labels) for labels, count in tally.operations())

        def caches(_options: Any) -> Iterator[Any]:
            return (Point(count, labels) for labels, count in tally.caches())

        meter.create_observable_counter(
            "docmem.operations", [operations], description="provider operations, by op and outcome"
        )
        meter.create_observable_counter(
            "docmem.store.cache", [caches], description="store reads answered from a cache or not"
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
            "docmem.operation.duration", unit="s", description="mutation time"
        )
        self.size = meter.create_histogram(
            "docmem.document.size", unit="By", description="stored document size"
        )


_metrics: dict[Any, _Metrics] = {}
_metrics_lock = threading.Lock()


def _metrics_for(meter_provider: Any, metrics: Any, release: str | None) -> _Metrics:
    """The instruments of ``meter_provider`` (``None``: the global one, proxy or not)."""
    with _metrics_lock:
        found = _metrics.get(meter_provider)
        if found is None:
            meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
            found = _metrics[meter_provider] = _Metrics(meters, release)
        return found


def _sampler_of(tracer: Any) -> tuple[Any, bool | None]:
    """The tracer's sampler when docmem may ask it first, and its answer for a root if fixed.

    Only the SDK's own samplers: their answer depends on the parent and the
    trace id alone, so asking before the span is made answers what the span
    would. ``(None, None)``: the span decides (any other tracer or sampler).
    """
    if not type(tracer).__module__.startswith("opentelemetry.sdk"):
        return None, None
    from opentelemetry.sdk.trace.sampling import ParentBased, StaticSampler, TraceIdRatioBased

    sampler = getattr(tracer, "sampler", None)
    if not isinstance(sampler, (ParentBased, StaticSampler, TraceIdRatioBased)):
        return None, None
    # ParentBased keeps its root sampler private; without it a root span decides for itself.
    root = getattr(sampler, "_root", None) if isinstance(sampler, ParentBased) else sampler
    if isinstance(root, StaticSampler):
        decision: Any = root.should_sample(None, 1, "docmem").decision  # the API's is untyped
        return sampler, bool(decision.is_recording())
    if isinstance(root, TraceIdRatioBased) and root.bound <= 0:
        return sampler, False  # ratio 0: no trace id is under the bound
    return sampler, None


def _current_context(context: Any) -> Any:
    """``context.get_current``, or the ``ContextVar.get`` behind it: two Python calls fewer.

    The API keeps the current context in a ``ContextVar`` of its runtime
    context (the default one, ``contextvars``); any other runtime, or a
    change of that private layout, gets the public call.
    """
    variable = getattr(getattr(context, "_RUNTIME_CONTEXT", None), "_current_context", None)
    if isinstance(variable, contextvars.ContextVar):
        return variable.get
    return context.get_current


@functools.cache
def _release() -> str | None:
    """docmem's version, for the tracer and the meter (looked up once: it reads the disk)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-docmem")
    except PackageNotFoundError:  # a source tree that was never installed
        return None


class _Instruments:
    """The tracer, its sampler and the metric instruments, made once the API is found."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        from opentelemetry import context, metrics, trace

        release = _release()
        self.trace = trace
        self.context = context
        self.metrics = metrics
        #: Only the global providers can be the API's no-op proxies; given ones never are.
        self.follows_globals = tracer_provider is None and meter_provider is None
        self._recording = False
        self._known_until = 0.0
        self._release = release
        tracers = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self.tracer = tracers.get_tracer("docmem", release)
        self._sampler, self._root = _sampler_of(self.tracer)
        self.measured = _metrics_for(meter_provider, metrics, release)
        self.tally = self.measured.tally
        self.client = trace.SpanKind.CLIENT
        self._current = _current_context(context)
        #: The key the API keeps the current span under (public only as what it sets).
        [self._span_key] = trace.set_span_in_context(trace.INVALID_SPAN, context.Context())
        self._kinds: dict[tuple[str, str, str], tuple[str, _Cell, bool]] = {}

    def recording(self) -> bool:
        """Whether anything would be recorded: false while the globals are the no-op proxies.

        Looked up at most once a second (the API's lookups read the
        environment each time), so an SDK an application sets up after
        docmem's first operation is used within a second.
        """
        if not self.follows_globals:
            return True
        now = time.monotonic()
        if now < self._known_until:
            return self._recording
        self._recording = self._globals_record()
        self._known_until = now + 1.0
        if self._recording and self._sampler is None:  # a proxy until an SDK is set: look again
            self.tracer = self.trace.get_tracer_provider().get_tracer("docmem", self._release)
            self._sampler, self._root = _sampler_of(self.tracer)
        return self._recording

    def _globals_record(self) -> bool:
        trace, metrics = self.trace, self.metrics
        tracing = trace.get_tracer_provider()
        if not isinstance(tracing, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return True
        meters = metrics.get_meter_provider()
        # The API's stand-in until a provider is set has no public name; pinned by a test.
        return not (
            isinstance(meters, metrics.NoOpMeterProvider)
            or type(meters).__name__ == "_ProxyMeterProvider"
        )

    def sampled(self, name: str) -> bool | None:
        """Whether a span ``name`` made now would record, when the sampler can say before."""
        sampler = self._sampler
        if sampler is None:
            return None
        parent: Any = self._current().get(self._span_key)
        if parent is None:
            return self._root
        found = parent.get_span_context()
        if not found.is_valid:
            return self._root
        return bool(sampler.should_sample(None, found.trace_id, name).decision.is_recording())

    def observe(self, op: str, slot: str, scheme: str, key: str) -> Observer:
        """The operation's observer: no span unless the sampler keeps it (asked first)."""
        kind = self._kinds.get((op, slot, scheme))
        if kind is None:
            kind = self._kinds.setdefault((op, slot, scheme), self._kind(op, slot, scheme))
        name, cell, mutation = kind
        # The common unsampled case without a call: no parent span, a root sampler saying no.
        dropped = self._root is False and self._current().get(self._span_key) is None
        if not dropped and self.sampled(name) is not False:
            span = self.tracer.start_span(name)
            if span.is_recording():
                return Observation(self, cell, span, key, mutation=mutation)
        if mutation:
            return _Mutation(self.measured, cell)
        return cell

    def _kind(self, op: str, slot: str, scheme: str) -> tuple[str, _Cell, bool]:
        """An operation's span name, its cell and whether it writes: looked up once."""
        return f"docmem.{op}", self.tally.cell(op, slot, scheme), op in _MUTATIONS


_instruments: _Instruments | None = None
_looked = False
_storage_keys = False
_enabled = True
_providers: tuple[Any, Any] = (None, None)


def _found() -> _Instruments | None:
    """The instruments, or ``None`` without the API or when turned off (looked for once)."""
    global _instruments, _looked
    if not _looked:
        if _enabled and _providers == (None, None) and "opentelemetry.trace" not in sys.modules:
            # Nothing in this process set OpenTelemetry up, so nothing could record: do not
            # import it (it costs a short-lived process tens of ms). Looked at again next time.
            return None
        _instruments = None
        if _enabled:
            try:
                _instruments = _Instruments(*_providers)
            except ImportError:
                _instruments = None
        _looked = True
    return _instruments


def configure(
    *,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    storage_keys: bool = False,
    enabled: bool = True,
) -> None:
    """Use these providers instead of the global ones, and say whether keys are recorded.

    ``storage_keys=True`` adds ``docmem.storage_key`` (an opaque digest of
    namespace and scope, never their values) to every span, for an operator
    who wants to follow one scope. ``enabled=False`` turns docmem's telemetry
    off even with an SDK configured (every operation gets :data:`NULL`).
    Call with no arguments to go back to the global providers without keys.
    """
    global _looked, _storage_keys, _providers, _enabled
    _providers = (tracer_provider, meter_provider)
    _storage_keys = bool(storage_keys)
    _enabled = bool(enabled)
    _looked = False


def active() -> bool:
    """Whether operations are recorded now: the API found, on, and an SDK (or providers) set."""
    tools = _found()
    return tools is not None and tools.recording()


class RequestSpan(Protocol):
    """One store request while it runs (a context manager)."""

    def __enter__(self) -> None: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


class Observer(Protocol):
    """What the conflict loop and the provider report of one operation, content-free.

    :class:`Observation` records it as a span and metrics; an operation its
    sampler drops records the metrics only; :data:`NULL`, a
    :class:`NullObserver`, records nothing. Code that reports takes an
    ``Observer`` and never asks which one it has.
    """

    def __enter__(self) -> Observer: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...

    def set(self, name: str, value: Any) -> None:
        """A content-free attribute of the operation (a count, a size, a revision)."""

    def attempt(self, number: int) -> None:
        """Attempt ``number`` (0 is the first) of a mutation begins."""

    def lost_race(self) -> None:
        """A conditional write lost to another writer."""

    def backed_off(self, seconds: float) -> None:
        """The mutation slept this long in all between its attempts."""

    def document(self, size: int, entries: int, revision: int, *, written: bool) -> None:
        """The document read (or written): bytes, entries and revision."""

    def unknown(self) -> None:
        """A write's answer was lost: its outcome is unknown until a read settles it."""

    def settled(self, how: str) -> None:
        """How a lost answer was settled: ``committed``, ``not_committed``, ``ambiguous``."""

    def request(self, kind: str) -> RequestSpan:
        """One store request (``read``, ``write``, ``delete``)."""
        ...


def _code(error: BaseException) -> str:
    """The code or the type: an exception's text is not ours to ship."""
    return error.code if isinstance(error, DocmemError) else type(error).__name__


class _Mutation:
    """A mutation without a span: its count, its histograms, and how its outcome settled.

    An :class:`Observer` (the protocol's methods say what each hears).
    """

    __slots__ = (
        "_attempts",
        "_cell",
        "_lost",
        "_measured",
        "_pending_unknown",
        "_started",
        "_wrote",
    )

    def __init__(self, measured: _Metrics, cell: _Cell) -> None:
        self._measured = measured
        self._cell = cell
        self._attempts = 0
        self._lost = 0
        self._pending_unknown = False
        self._wrote = False
        self._started = time.perf_counter()

    def __enter__(self) -> _Mutation:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._ended(error)

    def _ended(self, error: BaseException | None) -> tuple[str, str | None]:
        """Record the metrics of the mutation's end; its outcome and error code."""
        seconds = time.perf_counter() - self._started
        if self._pending_unknown:
            self.settled("unsettled")
        outcome = self._outcome(error)
        code = None if error is None else _code(error)
        self._cell.add(outcome, code)
        measured, common = self._measured, self._cell.common
        labels = {**common, OUTCOME: outcome}
        if code is not None:
            labels[ERROR] = code
        measured.duration.record(seconds, labels)
        if isinstance(error, StoreBusy):
            measured.store_busy.add(1, common)
        if self._lost:
            measured.lost_races.add(self._lost, common)
        if self._attempts > 1:
            measured.retries.add(self._attempts - 1, common)
        return outcome, code

    def _outcome(self, error: BaseException | None) -> str:
        if error is None:
            return "committed"
        if isinstance(error, DocmemError) and error.outcome is not None:
            return error.outcome
        return "unknown" if self._wrote else "not_committed"

    def set(self, name: str, value: Any) -> None:
        """Nothing: attributes are for a span."""

    def attempt(self, number: int) -> None:
        self._attempts = number + 1

    def lost_race(self) -> None:
        self._lost += 1

    def backed_off(self, seconds: float) -> None:
        """Nothing: the seconds are a span's attribute."""

    def document(self, size: int, entries: int, revision: int, *, written: bool) -> None:
        """The size histogram counts written documents only (a size changes only then)."""
        if written:
            self._wrote = True
            self._measured.size.record(size, self._cell.common)

    def unknown(self) -> None:
        self._pending_unknown = True
        self._wrote = True

    def settled(self, how: str) -> None:
        if not self._pending_unknown:
            return
        self._pending_unknown = False
        self._measured.unknown.add(1, {**self._cell.common, "docmem.settled": how})

    def request(self, kind: str) -> RequestSpan:
        """Nothing: no span to be a child of."""
        return _NULL_REQUEST


class _Request:
    """One store request of a mutation as a child span of its operation, current while it runs."""

    __slots__ = ("_kind", "_observation", "_span", "_token")

    def __init__(self, observation: Observation, kind: str) -> None:
        self._observation = observation
        self._kind = kind

    def __enter__(self) -> None:
        observation = self._observation
        tools = observation._tools
        self._span = tools.tracer.start_span(
            f"docmem.store.{self._kind}",
            context=observation._context,
            kind=tools.client,
            attributes={SCHEME: observation._cell.common[SCHEME], "docmem.request": self._kind},
        )
        self._token = tools.context.attach(tools.trace.set_span_in_context(self._span))

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._observation._tools.context.detach(self._token)
        if error is not None:
            self._span.set_attribute(ERROR, _code(error))
        self._span.end()


class _Current:
    """A read's store request: the operation's own span is current while it runs."""

    __slots__ = ("_observation", "_token")

    def __init__(self, observation: Observation) -> None:
        self._observation = observation

    def __enter__(self) -> None:
        observation = self._observation
        self._token = observation._tools.context.attach(observation._context)

    def __exit__(self, *exc_info: object) -> None:
        self._observation._tools.context.detach(self._token)


class Observation(_Mutation):
    """One sampled provider operation as a span, and what its metrics record when it ends.

    An :class:`Observer` (the protocol's methods say what each hears), made
    by :func:`operation` with its span already started. A read's span has no
    child: its one store request runs with the span current.
    """

    __slots__ = ("_attributes", "_context", "_mutation", "_span", "_tools")

    def __init__(
        self, tools: _Instruments, cell: _Cell, span: Any, key: str, *, mutation: bool
    ) -> None:
        super().__init__(tools.measured, cell)
        self._tools = tools
        self._span = span
        self._mutation = mutation
        self._context = tools.trace.set_span_in_context(span)
        self._attributes: dict[str, Any] = dict(cell.spanned)
        if _storage_keys:
            self._attributes["docmem.storage_key"] = key

    def __enter__(self) -> Observation:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        attributes = self._attributes
        if self._mutation:
            attributes[OUTCOME], code = self._ended(error)
            attributes["docmem.attempts"] = self._attempts
            attributes["docmem.lost_races"] = self._lost
            attributes.setdefault("docmem.backoff.seconds", 0.0)
        else:  # a read's outcome is its status: unset, or an error and its code
            code = None if error is None else _code(error)
            self._cell.add("ok" if code is None else "failed", code)
        span = self._span
        if code is not None:
            attributes[ERROR] = code
            trace = self._tools.trace
            span.set_status(trace.Status(trace.StatusCode.ERROR, code))
        span.set_attributes(attributes)
        span.end()

    def set(self, name: str, value: Any) -> None:
        """A content-free attribute of the operation's span (a count, a size, a revision)."""
        self._attributes[name] = value

    def backed_off(self, seconds: float) -> None:
        self._attributes["docmem.backoff.seconds"] = seconds

    def document(self, size: int, entries: int, revision: int, *, written: bool) -> None:
        """The document read (or written): bytes, entries and revision.

        The size histogram counts written documents only: a size changes only
        when a document is written, and a recall stays one histogram call cheaper.
        """
        super().document(size, entries, revision, written=written)
        attributes = self._attributes
        attributes["docmem.revision.written" if written else "docmem.revision.read"] = revision
        attributes["docmem.document.bytes"] = size
        attributes["docmem.entries"] = entries

    def unknown(self) -> None:
        super().unknown()
        self._span.add_event("docmem.write_outcome_unknown")

    def settled(self, how: str) -> None:
        if self._pending_unknown:
            self._attributes["docmem.settled"] = how
        super().settled(how)

    def request(self, kind: str) -> RequestSpan:
        """A mutation's store request (``read``, ``write``, ``delete``) as a child span.

        A read's one request is the read itself: its span is made current
        while the store is asked, and no child span is made.
        """
        if self._mutation:
            return _Request(self, kind)
        return _Current(self)


def operation(op: str, *, slot: str, scheme: str, key: str) -> Observer:
    """The observation of one provider operation: use it as a context manager at once.

    Its span, when the sampler keeps it, starts here, in the caller's context.
    """
    tools = _instruments if _looked else _found()
    if tools is None or (tools.follows_globals and not tools.recording()):
        return NULL
    return tools.observe(op, slot, scheme, key)


def note_cache(hit: bool, scheme: str) -> None:
    """A store's read was answered from its cache (``hit``) or not: for the hit ratio."""
    tools = _instruments if _looked else _found()
    if tools is None or not tools.recording():
        return
    tools.tally.cache(scheme, hit)
    span = tools.trace.get_current_span()
    if span.is_recording():
        span.set_attribute(CACHE_HIT, hit)
