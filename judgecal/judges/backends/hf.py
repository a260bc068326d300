"""``hf/<model>``: transformers + torch. ``hf/smollm2`` and ``hf/gemma3`` load the embedded models'
GGUF files (see :mod:`judgecal.judges.backends.local`; transformers dequantises them, Q4_1 and Q4_K_M
alike, with the ``gguf`` package); any other name is passed to ``from_pretrained`` (a local folder or a
hub id). A model whose tokenizer has no chat template (Gemma 3 270M is the pretrained model) is
prompted with the same plain-text document as on llama.cpp.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from judgecal.judges.base import Request, Response


class HFBackend:
    name = "hf"
    max_concurrency = 1

    def __init__(self, model: str, device: str | None = None, n_ctx: int = 4096, dtype: str = "float32",
                 deterministic: bool = False) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model = model
        self.n_ctx = n_ctx
        self.deterministic = deterministic
        if deterministic:
            from judgecal.judges.determinism import enable

            enable(0, torch=True)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        from judgecal.judges.backends.local import MODELS, model_path

        if model in MODELS or model.endswith(".gguf"):
            path = model_path(model)
            kw: dict[str, Any] = {"gguf_file": path.name}
            src = str(path.parent)
        else:
            kw, src = {}, model
        self.tok: Any = AutoTokenizer.from_pretrained(src, **kw)
        lm: Any = AutoModelForCausalLM.from_pretrained(src, dtype=getattr(torch, dtype), **kw)
        self.lm: Any = lm.to(self.device)
        self.lm.eval()
        self.completion = not getattr(self.tok, "chat_template", None)
        self._lock = threading.Lock()

    def _generate(self, req: Request) -> Response:
        import torch

        ids: Any
        if self.completion:
            from judgecal.judges.backends.local import completion_prompt

            ids = self.tok(completion_prompt(req.messages), return_tensors="pt")
        else:
            ids = self.tok.apply_chat_template(req.message_dicts(), add_generation_prompt=True,
                                               return_tensors="pt", return_dict=True)
        input_ids = ids["input_ids"].to(self.device)
        n_prompt = int(input_ids.shape[1])
        if n_prompt + req.max_tokens > self.n_ctx:
            return Response("", status="too_long", prompt_tokens=n_prompt)
        with self._lock, torch.no_grad():
            if req.seed is not None:
                torch.manual_seed(req.seed)
            sample = req.temperature > 0
            out = self.lm.generate(
                input_ids, attention_mask=ids["attention_mask"].to(self.device), max_new_tokens=req.max_tokens,
                do_sample=sample, temperature=req.temperature if sample else None, top_p=None, top_k=None,
                output_scores=True, return_dict_in_generate=True, pad_token_id=self.tok.eos_token_id,
            )
        new = out.sequences[0, n_prompt:]
        text = self.tok.decode(new, skip_special_tokens=True)
        if self.completion:  # a base model continues the document: its reply ends where llama.cpp's stops
            from judgecal.judges.backends.local import COMPLETION_STOP

            cut = min((i for i in (text.find(s) for s in COMPLETION_STOP) if i >= 0), default=len(text))
            text = text[:cut].strip()
        top = None
        if req.logprobs and out.scores:
            logp = torch.log_softmax(out.scores[0][0].float(), dim=-1)
            vals, idx = torch.topk(logp, req.top_logprobs)
            top = [(self.tok.decode([int(i)]), float(v)) for v, i in zip(vals, idx, strict=True)]
        return Response(text, top, n_prompt, int(new.shape[0]))

    async def generate(self, request: Request) -> Response:
        return await asyncio.to_thread(self._generate, request)
