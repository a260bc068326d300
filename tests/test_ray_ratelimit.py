"""The cluster-wide token bucket (reservation form): a burst is free, then one slot every 1/rate s."""

from __future__ import annotations

import pytest

from judgecal.distributed import ratelimit
from judgecal.distributed.ratelimit import TokenBucket


def test_reservations_follow_rate_and_burst(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: now[0])
    b = TokenBucket(rate=4.0, burst=2)
    waits = [b.reserve() for _ in range(5)]  # five calls at the same instant
    assert waits == pytest.approx([0.0, 0.0, 0.25, 0.5, 0.75])
    now[0] += 10.0  # idle time refills at most the burst
    assert [b.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.25])
    # over any span the bucket grants at most burst + rate * span calls
    b2, granted = TokenBucket(rate=10.0, burst=3), []
    for _ in range(100):
        granted.append(now[0] + b2.reserve())
    span = max(granted) - min(granted)
    assert len(granted) <= 3 + 10.0 * span + 1e-9


def test_rate_must_be_positive():
    with pytest.raises(ValueError, match="rate must be positive"):
        TokenBucket(rate=0)
