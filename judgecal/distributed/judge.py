"""``judgecal judge --executor ray``: the engine's planned calls answered by a Ray cluster.

The driver plans exactly as a local run (same requests, same content-hash keys), skips keys already
answered, claims the rest in the workspace (as concurrent local runs do), and sends batches of
``(key, request)`` to Ray tasks. A task runs on any worker with a free CPU (``num_gpus`` for a GPU
backend) and reuses the model its worker process already holds (:mod:`.worker`). Answers stream back
as tasks finish and are written by key in small transactions; a judgment is stored once per key
(the key is the table's primary key). Fault tolerance rests on Ray's task retries and on the keys: a
task lost with its node is re-run elsewhere (``max_retries``), a batch that still fails is recorded as
``error`` (retried by the next run), and a killed driver loses only the answers not yet written — a
re-run skips every stored key.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from judgecal.data.store import RunOwner
from judgecal.distributed.cluster import cluster_cpus, connect
from judgecal.distributed.worker import describe, judge_batch
from judgecal.judges.base import Request
from judgecal.judges.engine import Call, Engine, RunStats
from judgecal.progress import Bar

GPU_BACKENDS = ("vllm", "hf")
API_BACKENDS = ("openai", "anthropic")


@dataclass
class RemoteBackend:
    """The driver's stand-in for a backend that lives on the workers: what planning, keys and the spec
    need (name, model, identity, endpoint) as reported by a worker; it never generates."""

    judge: str
    options: dict[str, Any]
    name: str
    model: str
    max_concurrency: int
    identity: str | None = None
    endpoint: str = ""
    env: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    num_gpus: float = 0.0

    @property
    def client(self) -> Any:
        return _Client(self.endpoint) if self.endpoint else None

    def __getattr__(self, name: str) -> Any:  # n_batch, n_threads, deterministic, model_file
        attrs = self.__dict__.get("attrs", {})
        if name in attrs:
            return attrs[name]
        raise AttributeError(name)

    async def generate(self, request: Request) -> Any:
        raise RuntimeError("a remote backend answers through run_on_ray, not generate()")


@dataclass(frozen=True)
class _Client:
    base_url: str


def remote_backend(judge: str, options: dict[str, Any], address: str | None = None,
                   num_gpus: float | None = None) -> RemoteBackend:
    """Connect to the cluster and describe ``judge`` as a worker builds it: ``vllm`` on a GPU (refused on
    a cluster without one), ``hf`` on a GPU when the cluster has one, the rest on CPUs."""
    ray = connect(address)
    prefix = judge.split("/", 1)[0]
    has_gpu = ray.cluster_resources().get("GPU", 0) > 0
    gpus = float(num_gpus if num_gpus is not None else (1 if prefix in GPU_BACKENDS and has_gpu else 0))
    if prefix == "vllm" and not gpus:
        from judgecal.distributed.cluster import RayUnavailableError

        raise RayUnavailableError(f"{judge} runs on GPU nodes and this Ray cluster has no GPU")
    info = ray.get(ray.remote(describe).options(num_cpus=1, num_gpus=gpus, max_retries=3).remote(judge, options))
    attrs = {k: v for k, v in info["attrs"].items() if v is not None and k != "identity"}
    return RemoteBackend(judge=judge, options=options, name=info["name"], model=info["model"],
                         max_concurrency=info["max_concurrency"], identity=info["attrs"].get("identity"),
                         endpoint=info["endpoint"], env=info["env"], attrs=attrs, num_gpus=gpus)


def _task_options(backend: RemoteBackend) -> dict[str, Any]:
    # Ray re-runs a task whose worker or node died (system failures); application errors are data.
    return {"num_cpus": 1, "num_gpus": backend.num_gpus, "max_retries": 8, "retry_exceptions": False}


def run_on_ray(engine: Engine, calls: Sequence[Call], *, batch_size: int | None = None,
               rate_limit: float | None = None,
               burst: int = 1, in_flight: int | None = None, on_batch: Callable[[int], None] | None = None
               ) -> RunStats:
    """Answer every call of ``calls`` not yet in the workspace on the connected cluster.

    ``batch_size`` (calls per task) defaults to 8 for a CPU model, the engine's concurrency for an API
    judge (a task's calls run concurrently) and 64 for a GPU backend (one batched generation).
    ``rate_limit`` (calls/s) is one budget for the whole cluster, kept by a token-bucket actor.
    ``in_flight`` bounds the batches submitted at once (default twice the cluster's CPUs), so the
    driver's memory holds a window of requests, not the whole plan. ``on_batch(n_stored)`` is called
    after each write (tests use it to act mid-run).
    """
    import ray

    backend = engine.backend
    if not isinstance(backend, RemoteBackend):
        raise TypeError("run_on_ray needs an Engine built on remote_backend(...)")
    stats = RunStats(planned=len(calls))
    t0 = time.perf_counter()
    first: dict[str, Call] = {}
    for c in calls:
        first.setdefault(c.key, c)
    ws = engine.ws
    owner = RunOwner.here()
    claims = ws.claims_repo.claim(list(first), owner, engine.stale_claim_s)
    mine = [c for c in first.values() if c.key in claims.mine]
    if claims.held:
        engine.notice("claims", f"{len(claims.held)} calls are being made by another judge run on this workspace "
                      f"({', '.join(claims.holders) or 'ending'}); this run leaves them to it", stats)
    policy = engine.policy  # the engine's own retry policy (judgecal.judges.retry), not a copy of its rule
    bucket: Any = None
    if rate_limit:
        from judgecal.distributed.ratelimit import TokenBucket

        bucket = ray.remote(TokenBucket).options(num_cpus=0, max_restarts=-1).remote(rate_limit, burst)
    task = ray.remote(judge_batch).options(**_task_options(backend))
    if batch_size is None:
        batch_size = 64 if backend.num_gpus else (engine.concurrency if backend.name in API_BACKENDS else 8)
    batches = [mine[i:i + batch_size] for i in range(0, len(mine), batch_size)]
    window = in_flight or 2 * cluster_cpus(ray)
    by_ref: dict[Any, list[Call]] = {}
    buffer: list[Any] = []
    last_flush = last_beat = time.monotonic()
    stored = 0

    def flush() -> None:
        nonlocal buffer, last_flush, stored
        if buffer:
            engine.store(buffer)
            stored += len(buffer)
            buffer, last_flush = [], time.monotonic()
            if on_batch is not None:
                on_batch(stored)

    try:
        with Bar(engine.judge, len(mine), enabled=engine.progress, unit="calls", transient=False) as advance:
            todo = iter(batches)
            while True:
                for b in todo:
                    ref = task.remote(backend.judge, backend.options, [(c.key, c.request) for c in b], policy, bucket)
                    by_ref[ref] = b
                    if len(by_ref) >= window:
                        break
                if not by_ref:
                    break
                ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=1.0)
                for ref in ready:
                    batch = by_ref.pop(ref)
                    buffer.extend(_judgments(engine, batch, ref, ray, stats, advance))
                if len(buffer) >= engine.flush_every or time.monotonic() - last_flush > engine.flush_seconds:
                    flush()
                if time.monotonic() - last_beat > 5.0:
                    with contextlib.suppress(sqlite3.OperationalError):
                        ws.claims_repo.heartbeat(owner)
                    last_beat = time.monotonic()
    finally:
        for ref in by_ref:
            with contextlib.suppress(Exception):
                ray.cancel(ref)
        flush()
        ws.claims_repo.release(owner)
        if bucket is not None:
            with contextlib.suppress(Exception):
                ray.kill(bucket)
    stats.cached = stats.planned - stats.done
    stats.seconds = time.perf_counter() - t0
    return stats


def _judgments(engine: Engine, batch: list[Call], ref: Any, ray: Any, stats: RunStats,
               advance: Callable[[], None]) -> list[Any]:
    """A finished task's answers as judgments (each with its worker's fingerprint); a task that failed
    after Ray's retries makes every call of its batch a recorded ``error``."""
    try:
        env, answers = ray.get(ref)
        got = {key: (resp, latency, error) for key, resp, latency, error in answers}
    except Exception as exc:  # noqa: BLE001 - a lost batch is recorded, the run goes on
        msg = str(exc).strip().splitlines()
        env, got = engine.env, {c.key: (None, 0.0, f"{type(exc).__name__}: {msg[0] if msg else ''}"[:300])
                                for c in batch}
    out = []
    for c in batch:
        resp, latency, error = got[c.key]
        j = replace(engine.to_judgment(c, resp, latency, error), env=env)
        stats.count(j)
        advance()
        out.append(j)
    return out
