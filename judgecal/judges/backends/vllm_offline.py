"""``vllm/<model>``: offline ``vllm.LLM`` with SamplingParams (seed, logprobs), batched.

Requests arriving within a short window are sent to ``LLM.chat`` as one batch in a worker thread.
The translation is kept in two pure functions, :func:`sampling_kwargs` and :func:`to_response`.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from judgecal.judges.base import Request, Response


def sampling_kwargs(req: Request) -> dict[str, Any]:
    """``vllm.SamplingParams`` keyword arguments for one request."""
    kw: dict[str, Any] = {"max_tokens": req.max_tokens, "temperature": req.temperature}
    if req.seed is not None:
        kw["seed"] = req.seed
    if req.logprobs:
        kw["logprobs"] = req.top_logprobs
    return kw


def to_response(output: Any) -> Response:
    """A ``vllm.RequestOutput`` as a :class:`Response` (first token's top log-probabilities)."""
    comp = output.outputs[0]
    top = None
    if getattr(comp, "logprobs", None):
        first = comp.logprobs[0]
        top = [(lp.decoded_token or "", float(lp.logprob)) for lp in first.values()
               if lp.logprob is not None and math.isfinite(lp.logprob)]
    return Response(comp.text, top, len(output.prompt_token_ids or []), len(comp.token_ids or []))


class VLLMBackend:
    name = "vllm"
    max_concurrency = 1024

    def __init__(self, model: str, batch_window_s: float = 0.02, **llm_kwargs: Any) -> None:
        from vllm import LLM

        self.model = model
        self.llm = LLM(model=model, **llm_kwargs)
        self.window = batch_window_s
        self._pending: list[tuple[Request, asyncio.Future[Response]]] = []
        self._flusher: asyncio.Task[None] | None = None

    def _run_batch(self, reqs: list[Request]) -> list[Response]:
        from vllm import SamplingParams

        params = [SamplingParams(**sampling_kwargs(r)) for r in reqs]
        outs = self.llm.chat([r.message_dicts() for r in reqs], params, use_tqdm=False)
        return [to_response(o) for o in outs]

    async def _flush(self) -> None:
        await asyncio.sleep(self.window)
        batch, self._pending, self._flusher = self._pending, [], None
        try:
            results = await asyncio.to_thread(self._run_batch, [r for r, _ in batch])
        except Exception as exc:
            for _, fut in batch:
                fut.set_exception(exc)
            return
        for (_, fut), res in zip(batch, results, strict=True):
            fut.set_result(res)

    async def generate(self, request: Request) -> Response:
        fut: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._pending.append((request, fut))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        return await fut
