"""The retry budget of docmem's optimistic-concurrency loop, and the attempts it allows."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import InvalidArgument

__all__ = ["Attempt", "Attempts", "RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """How long a mutation keeps trying when other writers win.

    A mutation makes at most ``max_attempts`` conditional writes and stops
    starting new ones after ``max_seconds``; between attempts it sleeps with
    full jitter: a uniform draw from ``[0, min(cap, base * 2**attempt))``.
    Every field is checked here, so a bad value fails at construction with
    InvalidArgument naming it instead of later inside a mutation.
    """

    max_attempts: int = 32
    max_seconds: float = 10.0
    base: float = 0.005
    cap: float = 0.25

    def __post_init__(self) -> None:
        attempts = self.max_attempts
        # bool is an int; float("inf") would make the loop unbounded and range() raise.
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise InvalidArgument("RetryPolicy max_attempts must be an integer of at least 1")
        _seconds("max_seconds", self.max_seconds, positive=True)
        _seconds("base", self.base, positive=False)
        _seconds("cap", self.cap, positive=False)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (0 is the first: no wait)."""
        if attempt <= 0:
            return 0.0
        return random.uniform(0.0, min(self.cap, self.base * 2.0 ** min(attempt, 32)))

    def attempts(self, *, cancel: threading.Event | None = None) -> Attempts:
        """The attempts of one mutation: ``for attempt in policy.attempts(cancel=...)``."""
        return Attempts(self, cancel)


@dataclass
class Attempt:
    """One attempt of a mutation; ``number`` 0 is the first.

    A failed attempt is followed by a back-off unless it calls
    :meth:`retry_at_once`: a failure that is no sign of contention (a stale
    cached read) should not wait.
    """

    number: int
    back_off: bool = True

    def retry_at_once(self) -> None:
        """Start the next attempt without backing off."""
        self.back_off = False


class Attempts:
    """The attempts a :class:`RetryPolicy` allows one mutation, in order.

    Iterating yields an :class:`Attempt` at a time: the first at once, each
    later one after the previous one's back-off, and none once the attempts
    or the seconds are spent or ``cancel`` is set (checked before every
    attempt, the first included; a set event also cuts a back-off short).
    Afterwards :attr:`cancelled` says whether the cancel is why it stopped,
    and :attr:`slept` how many seconds it backed off in all.
    """

    def __init__(self, policy: RetryPolicy, cancel: threading.Event | None) -> None:
        self._policy = policy
        self._cancel = cancel
        self.cancelled = False
        self.slept = 0.0

    def __iter__(self) -> Iterator[Attempt]:
        deadline = time.monotonic() + self._policy.max_seconds
        previous: Attempt | None = None
        for number in range(self._policy.max_attempts):
            if previous is not None:
                if time.monotonic() >= deadline:
                    return
                if previous.back_off:
                    self._sleep(self._policy.delay(number))
            if self._cancel is not None and self._cancel.is_set():
                self.cancelled = True
                return
            previous = Attempt(number)
            yield previous

    def _sleep(self, seconds: float) -> None:
        started = time.monotonic()
        if self._cancel is None:
            time.sleep(seconds)
        else:
            self._cancel.wait(seconds)
        self.slept += time.monotonic() - started


def _seconds(name: str, value: object, *, positive: bool) -> None:
    """A finite number of seconds: NaN compares false with everything, inf never ends."""
    bound = "greater than 0" if positive else "at least 0"
    message = f"RetryPolicy {name} must be a finite number of seconds {bound}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(message)
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0 or (positive and seconds == 0):
        raise InvalidArgument(message)
