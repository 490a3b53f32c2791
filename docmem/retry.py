"""The retry budget of docmem's optimistic-concurrency loop."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .errors import InvalidArgument

__all__ = ["RetryPolicy"]


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
