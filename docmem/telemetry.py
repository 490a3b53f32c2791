"""Content-free OpenTelemetry spans and metrics for every provider operation and store request.

With the OpenTelemetry API installed (``pip install "agent-docmem[otel]"``) and an
SDK configured, each recall, save, remove, erase, inspect and read is a span
(``docmem.<op>``) with a child span per store request (``docmem.store.read``,
``.write``, ``.delete``), and feeds the metrics below. Without the API
nothing here is imported or run; until something in the process has imported
``opentelemetry.trace`` (an SDK set up, or an instrumented framework) the API
is not imported either, and while its global providers are still its no-op
proxies nothing is recorded: :func:`operation` then hands back :data:`NULL`,
whose methods do nothing.

What is recorded is never content: slot names, the store's URL scheme,
revisions, attempts, lost races, seconds backed off, the outcome, error
codes, sizes and counts. The storage key (an opaque digest) only after
:func:`configure` with ``storage_keys=True``; memory text, raw scope and
namespace values and credentials never (docs/design.md, sections 6.2 and 7).

Metrics (meter ``docmem``): ``docmem.operations`` (by ``docmem.operation``,
``docmem.outcome``, ``error.type``), ``docmem.lost_races``,
``docmem.retries``, ``docmem.store_busy`` (budgets exhausted),
``docmem.unknown_outcomes`` (by ``docmem.settled``: ``committed``,
``not_committed``, ``ambiguous``, ``unsettled``), ``docmem.operation.duration``
(seconds), ``docmem.document.size`` (bytes written) and ``docmem.store.cache``
(by ``docmem.cache.hit``: a read a store's cache answered, a 304 on S3).
"""

from __future__ import annotations

import sys
import time
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
_MUTATIONS = frozenset({"save", "remove", "erase", "revert"})


class _Instruments:
    """The tracer and the metric instruments, made once the API is found."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        from opentelemetry import context, metrics, trace

        try:
            release: str | None = version("agent-docmem")
        except PackageNotFoundError:  # a source tree that was never installed
            release = None
        self.trace = trace
        self.context = context
        self.metrics = metrics
        #: Only the global providers can be the API's no-op proxies; given ones never are.
        self.follows_globals = tracer_provider is None and meter_provider is None
        self._recording = False
        self._known_until = 0.0
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

    :class:`Observation` records it as a span and metrics; :data:`NULL`, a
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

    def request(self, kind: str) -> _NullRequest:
        """Nothing."""
        return _NULL_REQUEST


#: The observer every operation gets when nothing would be recorded.
NULL = NullObserver()


class _Request:
    """One store request as a child span of its operation, current while it runs."""

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
            kind=tools.trace.SpanKind.CLIENT,
            attributes={SCHEME: observation._scheme, "docmem.request": self._kind},
        )
        self._token = tools.context.attach(tools.trace.set_span_in_context(self._span))

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._observation._tools.context.detach(self._token)
        if error is not None:  # the code or the type: an exception's text is not ours to ship
            code = error.code if isinstance(error, DocmemError) else type(error).__name__
            self._span.set_attribute(ERROR, code)
        self._span.end()


class Observation(Observer):
    """One provider operation as a span, and what its metrics record when it ends.

    An :class:`Observer` by name, so its methods carry the protocol's docstrings.
    """

    def __init__(self, tools: _Instruments, op: str, slot: str, scheme: str, key: str) -> None:
        self._tools = tools
        self._scheme = scheme
        self._common = {OPERATION: op, SLOT: slot, SCHEME: scheme}
        self._attributes: dict[str, Any] = dict(self._common)
        if _storage_keys:
            self._attributes["docmem.storage_key"] = key
        self._mutation = op in _MUTATIONS
        self._span: Any = None
        self._context: Any = None
        self._attempts = 0
        self._lost = 0
        self._pending_unknown = False
        self._wrote = False
        self._started = 0.0

    def __enter__(self) -> Observation:
        tools = self._tools
        self._span = tools.tracer.start_span(f"docmem.{self._common[OPERATION]}")
        self._context = tools.trace.set_span_in_context(self._span)
        self._started = time.perf_counter()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        tools = self._tools
        common = self._common
        outcome = self._outcome(error)
        labels = {**common, OUTCOME: outcome}
        if error is not None:
            labels[ERROR] = error.code if isinstance(error, DocmemError) else type(error).__name__
        if self._pending_unknown:
            self.settled("unsettled")
        tools.operations.add(1, labels)
        tools.duration.record(time.perf_counter() - self._started, labels)
        if isinstance(error, StoreBusy):
            tools.store_busy.add(1, common)
        if self._lost:
            tools.lost_races.add(self._lost, common)
        if self._attempts > 1:
            tools.retries.add(self._attempts - 1, common)
        attributes = self._attributes
        attributes[OUTCOME] = outcome
        if self._mutation:
            attributes["docmem.attempts"] = self._attempts
            attributes["docmem.lost_races"] = self._lost
            attributes.setdefault("docmem.backoff.seconds", 0.0)
        span = self._span
        if ERROR in labels:
            attributes[ERROR] = labels[ERROR]
            span.set_status(tools.trace.Status(tools.trace.StatusCode.ERROR, labels[ERROR]))
        span.set_attributes(attributes)
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
        self._attributes[name] = value

    def attempt(self, number: int) -> None:
        self._attempts = number + 1

    def lost_race(self) -> None:
        self._lost += 1

    def backed_off(self, seconds: float) -> None:
        self._attributes["docmem.backoff.seconds"] = seconds

    def document(self, size: int, entries: int, revision: int, *, written: bool) -> None:
        """The document read (or written): bytes, entries and revision.

        The size histogram counts written documents only: a size changes only
        when a document is written, and a recall stays one histogram call cheaper.
        """
        if written:
            self._wrote = True
            self._tools.size.record(size, self._common)
        attributes = self._attributes
        attributes["docmem.revision.written" if written else "docmem.revision.read"] = revision
        attributes["docmem.document.bytes"] = size
        attributes["docmem.entries"] = entries

    def unknown(self) -> None:
        self._pending_unknown = True
        self._wrote = True
        self._span.add_event("docmem.write_outcome_unknown")

    def settled(self, how: str) -> None:
        if not self._pending_unknown:
            return
        self._pending_unknown = False
        self._tools.unknown.add(1, {**self._common, "docmem.settled": how})
        self._attributes["docmem.settled"] = how

    def request(self, kind: str) -> _Request:
        """One store request (``read``, ``write``, ``delete``) as a child span."""
        return _Request(self, kind)


def operation(op: str, *, slot: str, scheme: str, key: str) -> Observer:
    """The observation of one provider operation: use it as a context manager."""
    tools = _found()
    if tools is None or not tools.recording():
        return NULL
    return Observation(tools, op, slot, scheme, key)


def note_cache(hit: bool, scheme: str) -> None:
    """A store's read was answered from its cache (``hit``) or not: for the hit ratio."""
    tools = _found()
    if tools is None or not tools.recording():
        return
    tools.cache.add(1, {SCHEME: scheme, "docmem.cache.hit": hit})
    span = tools.trace.get_current_span()
    if span.is_recording():
        span.set_attribute("docmem.cache.hit", hit)
