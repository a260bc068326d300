"""One rate limit for the whole cluster: a token bucket held by a single Ray actor.

Reservation form of the token bucket (the GCRA of ATM networks, ITU-T I.371): a call asks
:meth:`TokenBucket.reserve` for its slot; with rate ``r`` and burst ``b`` the bucket keeps the
theoretical arrival time ``t``; a call at time ``now`` gets ``s = max(now, t - (b - 1) / r)``, waits
``s - now`` and moves ``t`` to ``max(t, now) + 1 / r``. Every worker's calls pass through the one
actor, so the cluster as a whole never exceeds ``r`` calls per second (plus the burst).
"""

from __future__ import annotations

import time

from judgecal.errors import InputError


class TokenBucket:
    """``rate`` calls per second across all workers, bursts up to ``burst`` calls."""

    def __init__(self, rate: float, burst: int = 1) -> None:
        if not rate > 0:
            raise InputError("rate must be positive")
        self.rate, self.burst = float(rate), max(1, int(burst))
        self.tat = time.monotonic()

    def reserve(self) -> float:
        """Seconds the caller waits before its call (0 when a token is free now)."""
        now = time.monotonic()
        start = max(now, self.tat - (self.burst - 1) / self.rate)
        self.tat = max(self.tat, now) + 1.0 / self.rate
        return start - now
