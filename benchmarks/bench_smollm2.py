"""Embedded-judge verdicts per second on this machine (SmolLM2 target on 2 cores: >= 5 per second).

Three sets: a bare one-line prompt without a rubric (the model alone), short pairs through the
shipped pairwise rubric (both orders) and PandaLM items (long real responses).
``python benchmarks/bench_smollm2.py gemma3`` measures the second embedded judge (Gemma 3 270M, kept as
shipped in Q4_K_M) on the same sets, with how often it answers at all and how often it picks the response shown first.
Prints JSON.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.data.datasets import load_pandalm  # noqa: E402
from judgecal.data.records import Candidate, Item  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402
from judgecal.judges.backends.local import LocalBackend  # noqa: E402
from judgecal.judges.engine import Engine  # noqa: E402
from judgecal.judges.rubric import load_rubric  # noqa: E402


def run(items: list[Item], backend: LocalBackend, verdicts: dict[str, list[str]] | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.items_repo.add_items(items)
        eng = Engine(ws, backend, load_rubric("pairwise"), judge=f"local/{backend.model}", progress=False)
        calls = eng.plan(items)
        t0 = time.perf_counter()
        st = eng.run(calls)
        dt = time.perf_counter() - t0
        df = ws.judgments_repo.judgments_frame()
        if verdicts is not None:
            verdicts[backend.weights] = df.sort_values(["item_id", "order"])["verdict"].astype(str).tolist()
        return {"verdicts": st.done, "seconds": round(dt, 2), "verdicts_per_s": round(st.done / dt, 2),
                "s_per_verdict": round(dt / st.done, 3),
                "mean_prompt_tokens": round(float(df["prompt_tokens"].mean()), 1),
                "invalid_rate": round(float((df["status"] != "ok").mean()), 3),
                "unparsed_rate": round(float((df["verdict"] == "invalid").mean()), 3),
                # position bias: verdicts for whichever response was shown first (verdicts are stored per item)
                "first_shown_rate": round(float(((df["order"] == "AB") & (df["verdict"] == "A")
                                                 | (df["order"] == "BA") & (df["verdict"] == "B")).mean()), 3)}


def bare(backend: LocalBackend, n: int = 50) -> dict[str, float]:
    """The model alone on a minimal one-line prompt (no rubric), for comparison."""
    import asyncio

    from judgecal.judges.base import Request

    async def go() -> float:
        reqs = [Request((("user", f"{a}+{a}={2 * a}? Answer A for yes, B for no."),), 2, 0.0, 0, False)
                for a in range(n)]
        t0 = time.perf_counter()
        await asyncio.gather(*(backend.generate(r) for r in reqs))
        return time.perf_counter() - t0

    dt = asyncio.run(go())
    return {"verdicts": n, "seconds": round(dt, 2), "verdicts_per_s": round(n / dt, 2)}


def other_model(model: str, short: list[Item], pandalm: list[Item]) -> None:
    t0 = time.perf_counter()
    backend = LocalBackend(model)
    load_s = time.perf_counter() - t0
    res = {"short_pairs": run(short, backend), "pandalm_pairs": run(pandalm, backend)}
    print(json.dumps({"benchmark": model, "machine": machine(), "workers": backend.max_concurrency,
                      "weights": backend.weights, "load_s": round(load_s, 2), "bare_prompt": bare(backend), **res,
                      "peak_rss_mb": peak_rss_mb()}, indent=1))


def main() -> None:
    os.environ.setdefault("JUDGECAL_DATA_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "datasets"))
    short = [Item(f"s{a}_{b}", f"What is {a} + {b}?", [Candidate(str(a + b)), Candidate(str(a + b + 1))])
             for a in range(1, 11) for b in range(1, 6)]
    if len(sys.argv) > 1 and sys.argv[1] != "smollm2":
        return other_model(sys.argv[1], short, load_pandalm().items[:50])
    t0 = time.perf_counter()
    backend = LocalBackend("smollm2")
    load_s = time.perf_counter() - t0
    pandalm = load_pandalm().items[:50]
    # the shipped Q4_1 weights beside the Q8_0 re-encoding the backend uses, in the same run
    original = LocalBackend("smollm2", weights="original")
    short_v: dict[str, list[str]] = {}
    pandalm_v: dict[str, list[str]] = {}
    res = {"short_pairs": run(short, backend, short_v), "short_pairs_original_weights": run(short, original, short_v),
           "pandalm_pairs": run(pandalm, backend, pandalm_v),
           "pandalm_pairs_original_weights": run(pandalm, original, pandalm_v)}

    def agree(v: dict[str, list[str]]) -> float:
        return round(sum(a == b for a, b in zip(v["q8_0"], v["original"], strict=True)) / len(v["q8_0"]), 3)

    print(json.dumps({
        "benchmark": "smollm2", "machine": machine(), "workers": backend.max_concurrency, "weights": backend.weights,
        "load_s": round(load_s, 2), "bare_prompt": bare(backend), **res,
        "speedup_vs_original_weights": {
            "short_pairs": round(res["short_pairs"]["verdicts_per_s"]
                                 / res["short_pairs_original_weights"]["verdicts_per_s"], 2),
            "pandalm_pairs": round(res["pandalm_pairs"]["verdicts_per_s"]
                                   / res["pandalm_pairs_original_weights"]["verdicts_per_s"], 2)},
        "same_verdict_as_original_weights": {"short_pairs": agree(short_v), "pandalm_pairs": agree(pandalm_v)},
        "peak_rss_mb": peak_rss_mb(), "targets": {"short_pairs.verdicts_per_s": ">= 5 on 2 cores"},
    }, indent=1))


if __name__ == "__main__":
    main()
