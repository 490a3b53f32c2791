"""The retry budget of docmem's optimistic-concurrency loop."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """How long a mutation keeps trying when other writers win.

    A mutation makes at most ``max_attempts`` conditional writes and stops
    starting new ones after ``max_seconds``; between attempts it sleeps with
    full jitter: a uniform draw from ``[0, min(cap, base * 2**attempt))``.
    """

    max_attempts: int = 32
    max_seconds: float = 10.0
    base: float = 0.005
    cap: float = 0.25

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.max_seconds <= 0 or self.base < 0 or self.cap < 0:
            raise ValueError("RetryPolicy needs max_attempts >= 1, max_seconds > 0, base, cap >= 0")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (0 is the first: no wait)."""
        if attempt <= 0:
            return 0.0
        return random.uniform(0.0, min(self.cap, self.base * 2.0 ** min(attempt, 32)))
