"""What runs on a Ray worker: one backend per worker process, a batch of requests per task.

The backend is built once per worker process and kept (``_BACKENDS``): a worker process that Ray
reuses for the next task keeps its loaded model (llama.cpp on CPU workers, a ``vllm.LLM`` on GPU
workers). Retries of transient errors follow the engine's one policy (:mod:`judgecal.judges.retry`:
full-jitter exponential backoff or the server's ``Retry-After``); an API backend first reserves a slot in the cluster's
one :class:`~judgecal.distributed.ratelimit.TokenBucket`. Errors become data: a call that fails for
good comes back as its error message, never as an exception that would fail the whole batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from judgecal.judges.base import Backend, Request, Response
from judgecal.judges.retry import RetryPolicy, call_with_retries

_BACKENDS: dict[str, Backend] = {}
_ENV: dict[str, str] = {}


def _assigned_cpus() -> int:
    try:
        import ray

        return max(1, int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)))
    except Exception:  # noqa: BLE001 - outside a Ray task: one
        return 1


def backend_for(judge: str, options: dict[str, Any]) -> Backend:
    """The backend of ``judge`` in this worker process (built on first use). A local llama.cpp judge
    holds one model instance per CPU the task was given, not per core of the machine."""
    key = json.dumps([judge, options], sort_keys=True, default=str)
    if key not in _BACKENDS:
        from judgecal.judges.registry import make_backend

        opts = dict(options)
        if judge.startswith("local/"):
            opts.setdefault("workers", _assigned_cpus())
        _BACKENDS[key] = make_backend(judge, **opts)
        from judgecal.judges.fingerprint import fingerprint_json

        _ENV[key] = fingerprint_json(_BACKENDS[key])
    return _BACKENDS[key]


def describe(judge: str, options: dict[str, Any]) -> dict[str, Any]:
    """What the driver needs to plan and key calls exactly as a local run would: name, model, identity,
    endpoint, settings the fingerprint reads, and this worker's fingerprint."""
    b = backend_for(judge, options)
    client = getattr(b, "client", None)
    endpoint = str(getattr(client, "base_url", "") or "").rstrip("/") if client is not None else ""
    attrs = {a: getattr(b, a, None) for a in ("identity", "n_batch", "n_threads", "deterministic", "model_file")}
    return {"name": b.name, "model": b.model, "max_concurrency": b.max_concurrency, "endpoint": endpoint,
            "module": type(b).__module__, "attrs": attrs,
            "env": _ENV[json.dumps([judge, options], sort_keys=True, default=str)]}


async def _one(b: Backend, req: Request, policy: RetryPolicy, bucket: Any,
               sem: asyncio.Semaphore) -> tuple[Response | None, float, str | None]:
    async def reserve() -> None:  # a slot in the cluster's one token bucket, before every attempt
        await asyncio.sleep(await bucket.reserve.remote())

    async with sem:
        return await call_with_retries(lambda: b.generate(req), policy, before=reserve if bucket is not None else None,
                                       secrets=getattr(b, "secrets", ()))


async def _run(b: Backend, batch: list[tuple[str, Request]], policy: RetryPolicy,
               bucket: Any) -> list[tuple[str, Response | None, float, str | None]]:
    sem = asyncio.Semaphore(max(1, b.max_concurrency))
    try:
        got = await asyncio.gather(*(_one(b, req, policy, bucket, sem) for _, req in batch))
    finally:
        close = getattr(b, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):  # closing a connection pool is best effort
                await close()
    return [(key, *res) for (key, _), res in zip(batch, got, strict=True)]


def judge_batch(judge: str, options: dict[str, Any], batch: list[tuple[str, Request]], policy: RetryPolicy,
                bucket: Any = None) -> tuple[str, list[tuple[str, Response | None, float, str | None]]]:
    """Answer ``batch`` (key, request) with this process's backend: ``(fingerprint, [(key, response or
    None, latency, error or None)])``."""
    b = backend_for(judge, options)
    env = _ENV[json.dumps([judge, options], sort_keys=True, default=str)]
    return env, asyncio.run(_run(b, batch, policy, bucket))
