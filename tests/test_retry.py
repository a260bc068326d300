"""The one retry policy (judgecal.judges.retry) that the engine and the Ray workers share."""

from __future__ import annotations

import asyncio

import pytest

from judgecal.judges.base import BackendError, Response, TransientError
from judgecal.judges.retry import RetryPolicy, call_with_retries


def test_delay_is_full_jitter_or_the_capped_hint() -> None:
    p = RetryPolicy(backoff_base=0.5, backoff_cap=3.0, max_retry_after=10.0)
    seen = []
    assert p.delay(0, rng=lambda lo, hi: seen.append((lo, hi)) or hi) == 0.5
    assert p.delay(4, rng=lambda lo, hi: hi) == 3.0  # 0.5 * 2**4 = 8, capped at 3
    assert seen == [(0.0, 0.5)]
    assert p.delay(0, retry_after=4.0) == 4.0 and p.delay(0, retry_after=120.0) == 10.0


class Flaky:
    def __init__(self, fail: int, exc: BaseException) -> None:
        self.fail, self.exc, self.calls = fail, exc, 0

    async def __call__(self) -> Response:
        self.calls += 1
        if self.calls <= self.fail:
            raise self.exc
        return Response(text="Verdict: A")


def _run(flaky: Flaky, policy: RetryPolicy, **kw) -> tuple:  # type: ignore[no-untyped-def, type-arg]
    return asyncio.run(call_with_retries(flaky, policy, **kw))


def test_transient_failures_are_retried_then_answered() -> None:
    flaky = Flaky(2, TransientError("429"))
    waits: list[tuple[int, float | None]] = []
    resp, _, err = _run(flaky, RetryPolicy(max_retries=3, backoff_base=0.0),
                        on_retry=lambda a, e, h: waits.append((a, h)))
    assert resp is not None and resp.text == "Verdict: A" and err is None
    assert flaky.calls == 3 and waits == [(0, None), (1, None)]


def test_retries_run_out_and_the_error_is_data_with_secrets_redacted() -> None:
    flaky = Flaky(10, TransientError("503 for key sk-secret123"))
    resp, _, err = _run(flaky, RetryPolicy(max_retries=2, backoff_base=0.0), secrets=("sk-secret123",))
    assert resp is None and flaky.calls == 3
    assert err is not None and err.startswith("TransientError: 503") and "sk-secret123" not in err


@pytest.mark.parametrize("exc", [BackendError("bad request"), ValueError("boom")])
def test_a_permanent_failure_is_not_retried(exc: BaseException) -> None:
    flaky = Flaky(10, exc)
    resp, _, err = _run(flaky, RetryPolicy(max_retries=5, backoff_base=0.0))
    assert resp is None and flaky.calls == 1 and err is not None and str(exc) in err


def test_an_attempt_past_its_timeout_is_retried() -> None:
    calls = []

    async def slow() -> Response:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(5)
        return Response(text="ok")

    resp, _, err = asyncio.run(call_with_retries(slow, RetryPolicy(max_retries=1, timeout_s=0.05, backoff_base=0.0)))
    assert resp is not None and resp.text == "ok" and err is None and len(calls) == 2


def test_the_engine_and_the_ray_worker_share_it() -> None:
    import inspect

    from judgecal.distributed import worker
    from judgecal.judges import engine

    assert "call_with_retries" in inspect.getsource(engine.Engine._call)
    assert "call_with_retries" in inspect.getsource(worker._one)
    assert not hasattr(worker, "RetryPolicy") or worker.RetryPolicy is RetryPolicy
