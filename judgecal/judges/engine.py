"""The judging engine: plan calls, skip cached ones, run the rest with bounded concurrency.

Retries follow the one policy of :mod:`judgecal.judges.retry` (the Ray workers use it too): exponential
backoff with full jitter, or the server's ``Retry-After``, capped at ``max_retry_after`` (with a message). Results are committed
in small batches, so a killed run loses at most the calls in flight; the content-hash key makes a
re-run skip everything already stored. Concurrent runs on one workspace claim the keys they call
(:meth:`~judgecal.data.store.claims.ClaimsRepository.claim`): a key another live run holds is waited for, never called twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from fnmatch import fnmatch

from judgecal.data.records import Item, Judgment, LabelSet, Span, stable_hash, to_item_orientation
from judgecal.data.store import RunOwner, Workspace
from judgecal.inert import term
from judgecal.judges.base import Backend, Request, Response
from judgecal.judges.mutations import mutate
from judgecal.judges.parse import (
    expected_score,
    label_probs,
    label_set_probs,
    parse_label,
    parse_score,
    parse_verdict,
)
from judgecal.judges.prices import Prices, load_prices
from judgecal.judges.retry import RetryPolicy, call_with_retries
from judgecal.judges.rubric import Rubric, RubricError
from judgecal.judges.spec import JudgeSpec
from judgecal.progress import Bar


def cache_key(backend: str, model: str, request: Request, item_id: str = "", order: str = "",
              mutation: str = "none", labels: tuple[str, ...] | None = None) -> str:
    """Content hash of (backend, model, rendered prompt, output-changing parameters, seed).

    The item, order and mutation are part of the key too, so two items with the same text each
    keep their own judgment. A label judge's labels (which its answer is read against) are in the
    rendered prompt, and in the key as well (``labels``; absent for other judges, whose keys are as before).
    """
    d = {"backend": backend, "model": model, "messages": request.messages, "params": request.params(),
         "item": item_id, "order": order, "mutation": mutation}
    if labels is not None:
        d["labels"] = list(labels)
    return stable_hash(d, 32)


@dataclass(frozen=True)
class Call:
    key: str
    item_id: str
    order: str
    sample: int
    seed: int | None
    mutation: str
    request: Request


@dataclass
class RunStats:
    planned: int = 0
    cached: int = 0
    done: int = 0
    errors: int = 0
    invalid: int = 0
    retries: int = 0
    seconds: float = 0.0
    error_messages: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def count(self, j: Judgment) -> None:
        """Count one finished judgment (the first five errors are kept to show)."""
        self.done += 1
        self.errors += j.status == "error"
        self.invalid += j.status == "invalid"
        if j.status == "error" and len(self.error_messages) < 5:
            self.error_messages.append(j.raw)


def environment_fingerprint(backend: Backend) -> str:
    """The environment of every judgment (see :mod:`judgecal.judges.fingerprint`)."""
    from judgecal.judges.fingerprint import fingerprint_json

    return fingerprint_json(backend)


class Engine:
    """Runs one judge (a backend + a rubric) over items into a workspace.

    The judge is a :class:`~judgecal.judges.spec.JudgeSpec`: given as ``spec`` (its parameters win), or
    derived from ``judge``, ``max_tokens``, ``temperature`` and ``logprobs``. Either way it is bound to the
    backend and rubric that run, stored in the workspace, and its hash is recorded on every judgment.
    """

    def __init__(
        self, ws: Workspace, backend: Backend, rubric: Rubric, *, judge: str | None = None,
        spec: JudgeSpec | None = None, concurrency: int = 16, max_retries: int = 6, timeout_s: float = 120.0,
        backoff_base: float = 0.5, backoff_cap: float = 30.0, max_tokens: int = 8, temperature: float = 0.0,
        logprobs: bool = True, prices: Prices | None = None, progress: bool = True, flush_every: int = 64,
        flush_seconds: float = 1.0, max_retry_after: float = 60.0, stale_claim_s: float = 60.0,
    ) -> None:
        self.ws, self.backend, self.rubric = ws, backend, rubric
        if spec is None:
            spec = JudgeSpec(backend=backend.name, model=backend.model, temperature=temperature,
                             max_tokens=max_tokens, logprobs=logprobs)
        self.spec = spec.bind(backend, rubric)
        if judge:
            self.spec = replace(self.spec, name=judge)
        self.judge = self.spec.base_name
        self.concurrency = max(1, min(concurrency, backend.max_concurrency))
        self.max_retries, self.timeout_s = max_retries, timeout_s
        self.max_retry_after, self.stale_claim_s = max_retry_after, stale_claim_s
        self.backoff_base, self.backoff_cap = backoff_base, backoff_cap
        self.max_tokens = int(self.spec.max_tokens if self.spec.max_tokens is not None else max_tokens)
        self.temperature = float(self.spec.temperature if self.spec.temperature is not None else temperature)
        self.logprobs = bool(self.spec.logprobs if self.spec.logprobs is not None else logprobs)
        self.top_logprobs = int(self.spec.top_logprobs if self.spec.top_logprobs is not None else 10)
        self.prices = prices if prices is not None else load_prices(ws.path)
        self.progress, self.flush_every, self.flush_seconds = progress, flush_every, flush_seconds
        self.spec_hash = self.spec.spec_hash
        self._spec_stored = False
        name = f"{backend.name}/{backend.model}"
        self._rates = next(((i, o) for pat, (i, o) in self.prices.table.items() if fnmatch(name, pat)), None)
        self.env = environment_fingerprint(backend)
        self._texts: dict[str, str] = {}  # spans rubric: item -> the text its quotes are aligned to
        self._spans: dict[str, list[Span]] = {}  # spans rubric: judgment key -> its spans, until stored
        self._label_sets: dict[str, LabelSet] = {}  # labels rubric: item -> the label set its answer is read on

    # -- planning ----------------------------------------------------------------------------
    def plan(self, items: Iterable[Item], *, orders: Sequence[str] = ("AB", "BA"), samples: int = 1,
             seed: int = 0, mutation: str = "none") -> list[Call]:
        calls = []
        rubric = mutate(mutation, self.rubric)  # refuses a rubric the mutation does not apply to
        model = self.spec.call_identity()
        items = list(items)
        if rubric.kind == "labels":  # every item has a label set, or nothing is planned (nor the spec stored)
            self._label_sets.update((item.item_id, rubric.item_labels(item)) for item in items)
        self._store_spec()
        if rubric.kind == "spans" and self.max_tokens < 32:
            print(f"{term(self.judge)}: max_tokens {self.max_tokens} leaves a span judge little room to quote "
                  "(quotes cut short end up unaligned); try --max-tokens 128", file=sys.stderr, flush=True)
        for item in items:
            item_orders = orders if item.task == "pairwise" and rubric.kind not in ("spans", "labels") else ("AB",)
            if rubric.kind == "spans":
                self._texts[item.item_id] = item.candidates[0].text
            labels = self._label_sets[item.item_id].labels if rubric.kind == "labels" else None
            for order in item_orders:
                for s in range(samples):
                    msgs = rubric.messages(item, order)
                    req = Request(tuple((m["role"], m["content"]) for m in msgs), self.max_tokens,
                                  self.temperature, seed + s, self.logprobs, self.top_logprobs, labels)
                    key = cache_key(self.backend.name, model, req, item.item_id, order, mutation, labels)
                    calls.append(Call(key, item.item_id, order, s, seed + s, mutation, req))
        return calls

    def follow_up(self, item: Item, order: str, reply: str, text: str, *, seed: int) -> Call:
        """The call that continues a conversation: the rubric's messages for ``item`` shown in ``order``, the
        judge's ``reply`` to them as its turn, then ``text`` as the next user turn (a pairwise rubric only). Every
        turn is in the request, so the cache key holds the whole conversation; the verdict is read as any."""
        if self.rubric.kind != "pairwise":
            raise RubricError(f"a {self.rubric.kind} rubric: a follow-up turn continues a pairwise verdict")
        self._store_spec()
        msgs = [(m["role"], m["content"]) for m in self.rubric.messages(item, order)]
        req = Request((*msgs, ("assistant", reply), ("user", text)), self.max_tokens, self.temperature, seed,
                      self.logprobs, self.top_logprobs)
        key = cache_key(self.backend.name, self.spec.call_identity(), req, item.item_id, order)
        return Call(key, item.item_id, order, 0, seed, "none", req)

    def _store_spec(self) -> None:
        """The spec goes into the workspace once, before its first judgment."""
        if not self._spec_stored:
            self.ws.judgments_repo.add_judge_specs([(self.spec_hash, self.judge, self.spec.to_dict())])
            self._spec_stored = True

    # -- turning a response into a judgment -----------------------------------------------------
    def _cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """:meth:`Prices.cost` of this engine's model, its price looked up once (a glob scan per call
        showed in the engine's profile)."""
        if self._rates is None or (prompt_tokens is None and completion_tokens is None):
            return None
        inp, out = self._rates
        return ((prompt_tokens or 0) * inp + (completion_tokens or 0) * out) / 1e6

    def to_judgment(self, call: Call, resp: Response | None, latency: float, error: str | None = None) -> Judgment:
        self._store_spec()
        now = time.time()
        # time: the live call's stamp (UTC ISO 8601), read by `judgecal monitor --by day|week|month`; a report
        # groups by it only when asked (judgecal.audit.monitor.default_by)
        j = Judgment(key=call.key, item_id=call.item_id, judge=self.judge, spec_hash=self.spec_hash,
                     order=call.order, mutation=call.mutation, sample=call.sample, seed=call.seed,
                     rubric_version=self.rubric.version, latency_s=round(latency, 6), env=self.env,
                     created_at=now, time=datetime.fromtimestamp(now, UTC).isoformat())
        if resp is None:
            j.status, j.raw = "error", error or "error"
            return j
        j.raw, j.prompt_tokens, j.completion_tokens = resp.text, resp.prompt_tokens, resp.completion_tokens
        j.cost_usd = self._cost(resp.prompt_tokens, resp.completion_tokens)
        if resp.status != "ok":
            j.status = resp.status
            j.verdict = "invalid" if self.rubric.kind in ("pairwise", "labels") else None
            return j
        if self.rubric.kind == "spans":
            self._span_judgment(j)
        elif self.rubric.kind == "labels":
            labels = self._label_set(j.item_id).labels
            label = parse_label(resp.text, labels)
            j.verdict, j.status = (label, "ok") if label is not None else ("invalid", "invalid")
            p = label_set_probs(resp.top_logprobs, labels, resp.text) if resp.top_logprobs else None
            if p is not None:
                j.p_labels = json.dumps(p, ensure_ascii=False)
        elif self.rubric.kind == "pairwise":
            shown = parse_verdict(resp.text)
            j.verdict = to_item_orientation(shown, call.order) if shown else "invalid"
            j.status = "ok" if shown else "invalid"
            probs = label_probs(resp.top_logprobs) if resp.top_logprobs else None
            if probs is not None:
                first, second = (probs["A"], probs["B"]) if call.order == "AB" else (probs["B"], probs["A"])
                j.p_a, j.p_b, j.p_tie = first, second, probs["tie"]
        else:
            j.score = parse_score(resp.text, self.rubric.scale_min, self.rubric.scale_max)
            j.status = "ok" if j.score is not None else "invalid"
            if resp.top_logprobs:
                j.expected_score = expected_score(resp.top_logprobs, self.rubric.scale_min, self.rubric.scale_max)
        return j

    def _label_set(self, item_id: str) -> LabelSet:
        """The label set of an item a labels rubric judges (planned here, else read from the workspace, as
        when batch results are imported)."""
        if item_id not in self._label_sets:
            found = self.ws.items_repo.items(ids=[item_id])
            if not found:
                raise RubricError(f"item {item_id!r} is not in the workspace; its label set is unknown")
            self._label_sets[item_id] = self.rubric.item_labels(found[0])
        return self._label_sets[item_id]

    def _span_judgment(self, j: Judgment) -> None:
        """A spans rubric's answer: quotes aligned to the candidate's text become judge spans (stored with
        the judgment by :meth:`store`), a coverage label becomes the score; nothing readable is ``invalid``."""
        from judgecal.judges.quotes import judge_spans, read_span_answer

        text = self._texts.get(j.item_id)
        if text is None:
            text = self._texts[j.item_id] = self.ws.items_repo.items(ids=[j.item_id])[0].candidates[0].text
        j.status, j.score, aligned = read_span_answer(j.raw, text, self.rubric.coverage)
        if j.status == "ok":
            self._spans[j.key] = judge_spans(j.item_id, self.judge, j.key, aligned, self.rubric.span_label)

    def store(self, judgments: Sequence[Judgment]) -> None:
        """Judgments (replacing stored ones of the same key) and, for a spans rubric, their spans, at once."""
        if self.rubric.kind != "spans":
            self.ws.judgments_repo.add_judgments(judgments, replace=True)
            return
        spans = [sp for j in judgments for sp in self._spans.pop(j.key, [])]
        with self.ws.transaction() as tx:
            self.ws.judgments_repo.add_judgments(judgments, conn=tx, replace=True)
            self.ws.spans_repo.replace_judge_spans([j.key for j in judgments], spans, conn=tx)

    # -- running -------------------------------------------------------------------------------
    def notice(self, kind: str, message: str, stats: RunStats) -> None:
        """Say ``message`` on stderr once per run and ``kind``; every notice is kept in ``stats``."""
        if not any(n.startswith(f"[{kind}]") for n in stats.notices):
            print(term(f"{self.judge}: {message}"), file=sys.stderr, flush=True)
        stats.notices.append(f"[{kind}] {message}")

    @property
    def policy(self) -> RetryPolicy:
        """The engine's retry policy (:mod:`judgecal.judges.retry`), the one a Ray worker is given too."""
        return RetryPolicy(self.max_retries, self.timeout_s, self.backoff_base, self.backoff_cap, self.max_retry_after)

    async def _call(self, call: Call, stats: RunStats) -> Judgment:
        def on_retry(attempt: int, exc: BaseException, hinted: float | None) -> None:
            stats.retries += 1
            if hinted is not None and hinted > self.max_retry_after:
                self.notice("retry-after", f"the server asked to wait {hinted:.0f} s (Retry-After); waiting "
                            f"{self.max_retry_after:g} s instead (--max-retry-after)", stats)

        resp, latency, error = await call_with_retries(lambda: self.backend.generate(call.request), self.policy,
                                                       on_retry=on_retry, secrets=getattr(self.backend, "secrets", ()))
        return self.to_judgment(call, resp, latency, error)

    async def _heartbeat(self, owner: RunOwner) -> None:
        while True:
            await asyncio.sleep(max(0.05, min(5.0, self.stale_claim_s / 4)))
            with contextlib.suppress(sqlite3.OperationalError):  # busy: the next beat will do
                self.ws.claims_repo.heartbeat(owner)

    async def arun(self, calls: Sequence[Call]) -> RunStats:
        """Run every call not yet answered. Keys are claimed first; keys another live run holds are
        waited for (polled) and taken over only if that run dies or ends without an answer."""
        stats = RunStats(planned=len(calls))
        t0 = time.perf_counter()
        first: dict[str, Call] = {}
        for c in calls:
            first.setdefault(c.key, c)
        pending = list(first.values())
        owner = RunOwner.here()
        beat = asyncio.ensure_future(self._heartbeat(owner))
        try:
            t_claim = time.perf_counter()
            claims = self.ws.claims_repo.claim([c.key for c in pending], owner, self.stale_claim_s)
            t_claim = time.perf_counter() - t_claim
            total = len(claims.mine) + len(claims.held)
            with Bar(self.judge, total, enabled=self.progress, unit="calls", transient=False) as advance:
                while True:
                    mine = [c for c in pending if c.key in claims.mine]
                    waiting = [c for c in pending if c.key in claims.held]
                    if mine:
                        await self._run_calls(mine, stats, advance)
                    if not waiting:
                        break
                    if not mine:
                        self.notice("claims", f"{len(waiting)} calls are being made by another judge run on this "
                                    f"workspace ({', '.join(claims.holders) or 'ending'}); waiting for its answers "
                                    "instead of calling again", stats)
                        # poll, but leave the database to the other run most of the time
                        await asyncio.sleep(max(min(1.0, self.stale_claim_s / 4), 4 * t_claim))
                    pending = waiting
                    t_claim = time.perf_counter()
                    claims = self.ws.claims_repo.claim([c.key for c in pending], owner, self.stale_claim_s)
                    t_claim = time.perf_counter() - t_claim
                    for _ in range(len(pending) - len(claims.mine) - len(claims.held)):
                        advance()  # answered by the other run
        finally:
            beat.cancel()
            self.ws.claims_repo.release(owner)
            close = getattr(self.backend, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # closing the connection pool is best effort
                    await close()
        stats.cached = stats.planned - stats.done
        stats.seconds = time.perf_counter() - t0
        return stats

    async def _run_calls(self, todo: Sequence[Call], stats: RunStats, advance: Callable[[], None]) -> None:
        """``concurrency`` workers take the next call from one iterator until none is left (one task per
        worker, not per call); finished judgments are written in batches of ``flush_every`` or every
        ``flush_seconds``, and whatever is buffered when the run ends or is cancelled."""
        buffer: list[Judgment] = []
        last_flush = time.monotonic()
        queue = iter(todo)

        async def worker() -> None:
            nonlocal buffer, last_flush
            for c in queue:
                j = await self._call(c, stats)
                buffer.append(j)
                stats.count(j)
                advance()
                if len(buffer) >= self.flush_every or time.monotonic() - last_flush > self.flush_seconds:
                    batch, buffer, last_flush = buffer, [], time.monotonic()
                    self.store(batch)

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(self.concurrency, len(todo)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            if buffer:
                self.store(buffer)

    def run(self, calls: Sequence[Call]) -> RunStats:
        return asyncio.run(self.arun(calls))
