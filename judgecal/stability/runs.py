"""Stability runs: one judge over variants of how it is run, each variant one judgment set through the
engine (cached, resumable), with the headline figures of each stored in the workspace.

A variant changes one axis from the base run (the judge as given, seed 0, unmutated prompt):

- ``seed``: other seeds at the judge's temperature. Greedy decoding (temperature 0) on ``local``/``hf``
  ignores the seed, so there the variant reuses the base judgments (marked, not paid).
- ``temperature``: sampling at other temperatures.
- ``mutation``: meaning-preserving prompt mutations the rubric declares (whitespace, instruction_after,
  paraphrase, option_order); ``fewshot``: the rubric's few-shot examples in both orders.
- ``batch_size``: llama.cpp's prompt batch (``n_batch``). It can change how the prompt is evaluated, so
  it is an output-changing option (its own cache key) and measured; batch-size invariance is checked,
  not assumed. On a GPU the batch axis of transformers/vLLM is ``benchmarks/gpu_stability.py``'s.
- ``concurrency``: how many calls run at once never reaches a request. In deterministic mode each call
  is a pure function of its request, so the variant reuses the base judgments (marked, not paid);
  otherwise llama.cpp's per-instance prefix cache makes scheduling matter, and the variant is measured
  (a run tag in its cache key).
- ``backend``: the same model on the other in-process backend (llama.cpp ↔ transformers).
- ``judge``: another model, same backend, rubric and parameters (by default the other embedded judge:
  ``local/smollm2`` ↔ ``local/gemma3``): not a stability axis of one judge but the cross-judge reference,
  how far two judges of different model families agree item by item (:func:`summarise_run`).

Headline figures per variant: the judge's accuracy and Cohen's κ against the stored human consensus
(swap-debiased verdicts; an invalid answer is wrong) and each model's win rate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.stability_section import StabilityError, figures, point_figures, truth_labels
from judgecal.data.records import stable_hash
from judgecal.stats.winrate import swap_debiased

AXES = ("seed", "temperature", "mutation", "fewshot", "batch_size", "concurrency", "backend", "judge")
DEFAULT_LEVELS: dict[str, tuple[Any, ...]] = {
    "seed": (1, 2), "temperature": (0.7, 1.0),
    "mutation": ("whitespace", "instruction_after", "paraphrase", "option_order"),
    "fewshot": ("fewshot_ab", "fewshot_ba"), "batch_size": (8, 64), "concurrency": (1,), "backend": (None,),
    "judge": (None,),
}
STABILITY_AXES = AXES[:-1]  # the default: every axis of one judge (``judge`` is asked for by name)
OTHER_BACKEND = {"local": "hf", "hf": "local"}
OTHER_EMBEDDED = {"smollm2": "gemma3", "gemma3": "smollm2"}  # the two embedded judges, two model families


@dataclass
class Variant:
    name: str
    axis: str
    level: str
    spec: Any  # JudgeSpec
    seed: int = 0
    mutation: str = "none"
    concurrency: int | None = None
    reuse_reason: str | None = None  # set: not run, the base judgments stand for it
    notes: list[str] = field(default_factory=list)


def plan_variants(base: Any, axes: Sequence[str], levels: dict[str, Sequence[Any]] | None = None,
                  deterministic: bool = False) -> list[Variant]:
    """The base variant and one variant per (axis, level); see the module docstring for each axis."""
    from judgecal.judges.mutations import MUTATIONS

    lv = {**DEFAULT_LEVELS, **(levels or {})}
    bad = [a for a in axes if a not in AXES]
    if bad:
        raise StabilityError(f"unknown axis {bad[0]!r}; axes: {', '.join(AXES)}")
    out = [Variant("base", "base", "base", base)]
    greedy = (base.temperature or 0.0) == 0.0
    for ax in axes:
        for level in lv[ax]:
            if ax == "seed":
                v = Variant(f"seed={level}", ax, str(level), base, seed=int(level))
                if greedy and base.backend in ("local", "hf"):
                    v.reuse_reason = "greedy decoding ignores the seed: the base judgments stand for it"
            elif ax == "temperature":
                v = Variant(f"temperature={level}", ax, str(level), replace(base, temperature=float(level)))
            elif ax in ("mutation", "fewshot"):
                if level not in MUTATIONS:
                    raise StabilityError(f"unknown mutation {level!r}; known: {', '.join(MUTATIONS)}")
                v = Variant(f"{ax}={level}", ax, str(level), base, mutation=str(level))
            elif ax == "batch_size":
                if base.backend != "local":
                    raise StabilityError(f"the batch_size axis runs on local/ judges (llama.cpp n_batch); for "
                                         f"{base.backend}/ on a GPU use benchmarks/gpu_stability.py")
                v = Variant(f"batch_size={level}", ax, str(level), _with_option(base, "n_batch", int(level)))
            elif ax == "concurrency":
                v = Variant(f"concurrency={level}", ax, str(level), base, concurrency=int(level))
                if deterministic:
                    v.reuse_reason = ("deterministic mode: each call evaluates its own prompt afresh, so "
                                      "concurrency cannot change an answer; the base judgments stand for it")
                else:
                    v.spec = _with_option(base, "run_tag", f"concurrency={level}")
            elif ax == "judge":
                model = str(level).split("/", 1)[-1] if level else OTHER_EMBEDDED.get(base.model)
                if level and "/" in str(level) and str(level).split("/", 1)[0] != base.backend:
                    raise StabilityError(f"the judge axis keeps the backend ({base.backend}/): {level!r}")
                if not model or model == base.model:
                    raise StabilityError(f"judge axis: name another model for {base.backend}/{base.model} "
                                         "(e.g. local/gemma3)", name="judges")
                keep = tuple((k, x) for k, x in base.options if k == "deterministic")
                v = Variant(f"judge={base.backend}/{model}", ax, f"{base.backend}/{model}",
                            replace(base, model=model, identity="", name="", options=keep))
            else:  # backend
                other = level or OTHER_BACKEND.get(base.backend)
                if other is None:
                    raise StabilityError(f"no other in-process backend for {base.backend}/ (backend axis: local, hf)")
                keep = tuple((k, x) for k, x in base.options if k == "deterministic")  # the rest is per backend
                v = Variant(f"backend={other}", ax, str(other),
                            replace(base, backend=other, identity="", name="", options=keep))
            out.append(v)
    return out


def _with_option(spec: Any, key: str, value: Any) -> Any:
    return replace(spec, options=tuple(sorted({**dict(spec.options), key: value}.items())))


BACKEND_ONLY = frozenset({"run_tag"})  # spec options that name a variant but are not passed to a backend


class _Backends:
    """Backends by (backend, options): each loaded once per run."""

    def __init__(self) -> None:
        self.loaded: dict[str, Any] = {}

    def get(self, spec: Any, concurrency: int | None) -> Any:
        from judgecal.judges.registry import make_backend

        opts = {k: v for k, v in spec.backend_options().items() if k not in BACKEND_ONLY}
        if concurrency is not None and spec.backend == "local":
            opts["workers"] = concurrency
        key = json.dumps([spec.backend, spec.model, opts], sort_keys=True, default=str)
        if key not in self.loaded:
            self.loaded[key] = make_backend(f"{spec.backend}/{spec.model}", **opts)
        return self.loaded[key]


def run_stability(ws: Any, judge: str, axes: Sequence[str], *, items: int | None = None, source: str | None = None,
                  sample_seed: int = 0, consensus: str = "ds", deterministic: bool = False,
                  levels: dict[str, Sequence[Any]] | None = None, concurrency: int = 2, rubric: str = "pairwise",
                  max_tokens: int | None = None, temperature: float = 0.0, progress: bool = False) -> dict[str, Any]:
    """Plan, run (through the engine: cached, resumable) and store one stability run; returns its summary."""
    import random

    from judgecal.judges.engine import Engine
    from judgecal.judges.mutations import MutationError
    from judgecal.judges.rubric import load_rubric
    from judgecal.judges.spec import resolve_judge

    base, rub = resolve_judge(judge, rubric=rubric, temperature=temperature, max_tokens=max_tokens)
    if deterministic:
        from judgecal.judges.determinism import deterministic_spec, enable

        base = deterministic_spec(base)
        enable(0)
    truth = truth_labels(ws, consensus)
    pool = [it for it in ws.items_repo.items(source=source) if it.task == "pairwise" and it.item_id in truth
            and not it.source.startswith("probe:")]
    if not pool:
        raise StabilityError("no pairwise items with a human consensus to run on")
    chosen = sorted(random.Random(sample_seed).sample(pool, min(items or len(pool), len(pool))),
                    key=lambda it: it.item_id)
    variants = plan_variants(base, axes, levels, deterministic)
    backends = _Backends()
    for var in variants:  # every backend first: a level that cannot load is said before any call is paid for
        if var.reuse_reason is None:
            backends.get(var.spec, var.concurrency)
    rows: list[dict[str, Any]] = []
    verdict_rows: list[tuple[int, str, Any, Any]] = []
    per_variant: list[pd.Series] = []
    for j, var in enumerate(variants):
        if var.reuse_reason is not None:
            rows.append({"variant": j, "name": var.name, "axis": var.axis, "level": var.level,
                         "spec_hash": rows[0]["spec_hash"], "reused_from": 0, "calls": rows[0]["calls"], "paid": 0,
                         "env": rows[0]["env"], "prompt": rows[0]["prompt"], "note": var.reuse_reason})
            per_variant.append(per_variant[0])
            continue
        spec_rubric = rub if var.spec.rubric in (rub.name, rubric) else load_rubric(var.spec.rubric)
        backend = backends.get(var.spec, var.concurrency)
        eng = Engine(ws, backend, spec_rubric, spec=var.spec, concurrency=var.concurrency or concurrency,
                     progress=progress)
        try:
            calls = eng.plan(chosen, orders=("AB", "BA"), seed=var.seed, mutation=var.mutation)
        except MutationError as exc:
            raise StabilityError(f"variant {var.name}: {exc}") from None
        stats = eng.run(calls)
        by_key = _judgments(ws, [c.key for c in calls])
        ab = {c.item_id: by_key.get(c.key, {}) for c in calls if c.order == "AB"}
        ba = {c.item_id: by_key.get(c.key, {}) for c in calls if c.order == "BA"}
        ids = [it.item_id for it in chosen]
        deb = swap_debiased(np.array([ab.get(i, {}).get("verdict") for i in ids], dtype=object),
                            np.array([ba.get(i, {}).get("verdict") for i in ids], dtype=object))
        per_variant.append(pd.Series(deb, index=ids))
        for i, d in zip(ids, deb, strict=True):
            verdict_rows.append((j, i, d, json.dumps({"AB": ab.get(i, {}).get("raw"), "BA": ba.get(i, {}).get("raw")})))
        first = next(c for c in calls if c.order == "AB")
        rows.append({"variant": j, "name": var.name, "axis": var.axis, "level": var.level, "spec_hash": eng.spec_hash,
                     "reused_from": None, "calls": len(calls), "paid": int(stats.done), "env": eng.env,
                     "prompt": json.dumps(list(first.request.messages)), "note": None})
    for j, var in enumerate(variants):  # reused variants copy the base's per-item verdicts
        if var.reuse_reason is not None:
            verdict_rows.extend((j, i, d, r) for (v0, i, d, r) in list(verdict_rows) if v0 == 0)
    frame = pd.concat(per_variant, axis=1, keys=range(len(variants)))
    names, sums = figures(frame, chosen, truth)
    for row, figs in zip(rows, point_figures(sums), strict=True):
        row["figures"] = figs
    run_id = stable_hash({"spec": base.spec_hash, "axes": list(axes), "levels": {a: list(map(str, (levels or {})
                          .get(a, DEFAULT_LEVELS[a]))) for a in axes}, "items": [it.item_id for it in chosen],
                          "deterministic": deterministic, "consensus": consensus})
    config = {"axes": list(axes), "items": [it.item_id for it in chosen], "consensus": consensus,
              "deterministic": deterministic, "figures": names, "notes": {r["name"]: r["note"] for r in rows if r["note"]}}
    ws.stability_repo.add_stability_run({"run_id": run_id, "judge": base.base_name, "spec_hash": rows[0]["spec_hash"],
                          "origin": "cpu", "created_at": time.time(), "config": config}, rows, verdict_rows)
    return {"run_id": run_id, "variants": rows}


def _judgments(ws: Any, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    return {key: {"verdict": verdict if status != "error" else None, "raw": raw}
            for key, (verdict, raw, status) in ws.judgments_repo.judgment_fields(keys, ("verdict", "raw", "status")).items()}
