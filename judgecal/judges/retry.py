"""The one retry policy of a judge call, used by the engine and by the Ray workers alike.

A transient failure (a timeout, a :class:`~judgecal.judges.base.TransientError` such as HTTP 429/5xx) is
retried up to ``max_retries`` times after ``delay = U(0, min(cap, base * 2**attempt))``, exponential backoff
with full jitter (Brooker, "Exponential Backoff and Jitter", AWS Architecture Blog, 2015), or after the
server's ``Retry-After``, capped at ``max_retry_after``. A permanent failure
(:class:`~judgecal.judges.base.BackendError`, or anything else) is not retried. Errors become data: the
call returns its response or its error message (secrets redacted), never raises.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from judgecal.judges.base import BackendError, Response, TransientError, redact


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a call is retried, and how long one attempt may take."""

    max_retries: int = 6
    timeout_s: float = 120.0
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None,
              rng: Callable[[float, float], float] = random.uniform) -> float:
        """Seconds to wait before attempt ``attempt + 1``: the server's hint (capped), else full jitter."""
        if retry_after is not None:
            return min(float(retry_after), self.max_retry_after)
        return rng(0.0, min(self.backoff_cap, self.backoff_base * 2**attempt))


# (attempt, the failure, the server's Retry-After or None) before each wait: counts and notices
OnRetry = Callable[[int, BaseException, float | None], None]


async def call_with_retries(attempt_call: Callable[[], Awaitable[Response]], policy: RetryPolicy, *,
                            before: Callable[[], Awaitable[None]] | None = None, on_retry: OnRetry | None = None,
                            secrets: Sequence[str] = ()) -> tuple[Response | None, float, str | None]:
    """``(response or None, seconds, error or None)`` of one call under ``policy``; ``before`` runs ahead of
    every attempt (a cluster-wide rate limit)."""
    start = time.perf_counter()
    last = "error"
    for attempt in range(policy.max_retries + 1):
        try:
            if before is not None:
                await before()
            async with asyncio.timeout(policy.timeout_s):  # a timer, not a second task per call
                resp = await attempt_call()
            return resp, time.perf_counter() - start, None
        except (TimeoutError, TransientError) as exc:
            last = f"{type(exc).__name__}: {exc}"
            if attempt == policy.max_retries:
                break
            hinted = getattr(exc, "retry_after", None)
            if on_retry is not None:
                on_retry(attempt, exc, hinted)
            await asyncio.sleep(policy.delay(attempt, hinted))
        except BackendError as exc:
            last = f"BackendError: {exc}"
            break
        except Exception as exc:  # noqa: BLE001 - one failed call is recorded, the run goes on
            last = f"{type(exc).__name__}: {exc}"
            break
    return None, time.perf_counter() - start, redact(last, secrets)
