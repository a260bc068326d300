"""The audit's stability section: Stability Scores of the stored stability runs, recomputed from the workspace.

Per judge and headline figure: σ (pp) and the half-width ``1.96 σ`` a report states ("stable within ±x points
at 95% confidence"), the Stability Score with its bootstrap CI, the per-axis
decomposition, the largest single-variant shift, cross-backend agreement against its tolerance, the guard's
status and what changed in the environment fingerprint (:func:`summarise_run`); the audit attaches them at
``judges.<judge>.stability`` (:func:`attach_stability`). Runs are made by :mod:`judgecal.stability.runs`
(or imported, :mod:`judgecal.stability.io`); this module only reads them, so the audit needs nothing above it.

Two kinds of run: ``verdicts`` (pairwise verdicts per variant against the human consensus: accuracy, κ,
each model's win rate) and ``scores`` (repeated pointwise scores of a recorded judge, each repeat a variant:
the mean score on the 0-1 scale overall and per model), e.g. the three GPT-4 scores Prometheus recorded for
every MT-Bench response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.records import Item
from judgecal.errors import InputError
from judgecal.judges import fingerprint as fp
from judgecal.stats import stability as st

GUARD_THRESHOLD_PP = 1.4  # the default gate (business-loss backcalculation of the seed documents)
CROSS_BACKEND_TOLERANCE_PP = 0.8
Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


class StabilityError(InputError):
    """A stability run that cannot be planned (an axis that does not apply, no consensus, no items)."""


def truth_labels(ws: Any, consensus: str) -> dict[str, str]:
    """item -> consensus label (A, B or tie) of the stored consensus ``consensus``."""
    labels = ws.annotations_repo.consensus_labels(consensus)
    if labels.empty:
        raise StabilityError(f"no stored consensus {consensus!r}: run `judgecal aggregate` first")
    return dict(zip(labels.index, labels, strict=True))


def figures(verdicts: pd.DataFrame, items: Sequence[Item],
            truth: dict[str, str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """Headline figure names and per-item sums ``(n, V, K)`` per figure: accuracy, kappa, then
    ``winrate:<model>`` for every model among the items. ``verdicts`` is items × variants."""
    ids = [it.item_id for it in items]
    v = verdicts.reindex(ids).to_numpy(dtype=object)
    t = np.array([truth.get(i) for i in ids], dtype=object)
    ma = np.array([it.candidates[0].model if it.candidates else None for it in items], dtype=object)
    mb = np.array([it.candidates[1].model if len(it.candidates) > 1 else None for it in items], dtype=object)
    parts = {"accuracy": st.accuracy_sums(v, t), "kappa": st.confusion_sums(v, t)}
    for m in sorted({x for x in (*ma, *mb) if x}):
        parts[f"winrate:{m}"] = st.winrate_sums(v, ma, mb, m)
    return list(parts), parts


def stat_for(name: str) -> Any:
    return st.kappa_stat if name == "kappa" else st.ratio_stat


def point_figures(sums: dict[str, np.ndarray]) -> list[dict[str, float | None]]:
    """Each variant's figures from the per-item sums."""
    n_var = next(iter(sums.values())).shape[1]
    vals = {k: stat_for(k)(s.sum(axis=0)) for k, s in sums.items()}
    return [{k: (None if not np.isfinite(vals[k][j]) else round(float(vals[k][j]), 10)) for k in vals}
            for j in range(n_var)]


def run_sums(ws: Any, run: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, np.ndarray], pd.DataFrame]:
    """The run's variants, per-item sums per headline figure ``(n, V, K)``, and its items × variants verdicts."""
    variants = ws.stability_repo.stability_variants(run["run_id"])
    vf = ws.stability_repo.stability_verdicts(run["run_id"])
    frame = vf.pivot(index="item_id", columns="variant", values="verdict").reindex(columns=range(len(variants)))
    cfg = run["config"]
    if cfg.get("kind") == "scores":
        lo, hi = cfg["scale"]
        scores = frame.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        norm = (scores - lo) / (hi - lo)
        has = np.isfinite(norm)
        one = np.stack([np.where(has, norm, 0.0), has.astype(np.float64)], axis=-1)
        sums: dict[str, np.ndarray] = {"mean_score": one}
        models = pd.Series(cfg.get("models") or {}).reindex(frame.index)
        for m in sorted(models.dropna().unique()):
            sums[f"mean_score:{m}"] = one * (models.to_numpy() == m)[:, None, None]
        return variants, sums, frame
    items = ws.items_repo.items(ids=list(frame.index))
    by_id = {it.item_id: it for it in items}
    missing = [i for i in frame.index if i not in by_id]
    if missing:
        raise StabilityError(f"stability run {run['run_id']}: item {missing[0]!r} is not in this workspace")
    ordered = [by_id[i] for i in frame.index]
    truth = truth_labels(ws, cfg.get("consensus", "ds"))
    _, sums = figures(frame, ordered, truth)
    return variants, sums, frame


def summarise_run(ws: Any, run: dict[str, Any], *, n_boot: int = 2000, seed: int = 0,
                  threshold_pp: float = GUARD_THRESHOLD_PP,
                  tolerance_pp: float = CROSS_BACKEND_TOLERANCE_PP) -> dict[str, Any]:
    """Everything a report shows about one stored run (see the module docstring)."""
    variants, sums, frame = run_sums(ws, run)
    # the judge axis is another judge: its agreement is reported (cross_judge), it is not this judge's stability
    own = [j for j, v in enumerate(variants) if v["axis"] != "judge"]
    axes = [variants[j]["axis"] for j in own]
    out_figs: dict[str, Any] = {}
    for name, s in sums.items():
        res = st.stability(s[:, own], stat_for(name), n_boot=n_boot, seed=seed)
        fig = np.array([np.nan if x is None else x for x in res["figures"]], dtype=np.float64)
        res["decomposition"] = st.decompose_by_axis(fig, axes)
        for part in (res["decomposition"]["largest_shift"], *res["decomposition"]["axes"].values()):
            if part is not None:  # indices of the variants of the run
                part["variant"] = own[part["variant"]]
        res["guard"] = [{**g, "variant": own[g["variant"]], "name": variants[own[g["variant"]]]["name"]}
                        for g in st.guard(fig, threshold_pp)]
        res["figures"] = [_num(f) for f in stat_for(name)(s.sum(axis=0))]  # every variant's, judge axis too
        # "stable within ±x points at 95% confidence": x = z σ
        res["halfwidth_pp"] = None if res["sigma_pp"] is None else Z95 * res["sigma_pp"]
        out_figs[name] = res
    cross_judge = []
    for j, v in enumerate(variants):
        if v["axis"] == "judge":
            f = out_figs.get("accuracy", {}).get("figures") or []
            if len(f) > j and f[0] is not None and f[j] is not None:
                agree = st.cross_backend(f[0], f[j], frame[0].to_numpy(dtype=object), frame[j].to_numpy(dtype=object))
                agree.pop("tolerance_pp"), agree.pop("within_tolerance")  # no tolerance between two judges
                cross_judge.append({"variant": v["name"], "judge": v["level"], "figure": "accuracy", **agree})
    cross = []
    for j, v in enumerate(variants):
        if v["axis"] == "backend":
            base_v, var_v = frame[0].to_numpy(dtype=object), frame[j].to_numpy(dtype=object)
            for name in ("accuracy",):
                f = out_figs.get(name, {}).get("figures") or []
                if len(f) > j and f[0] is not None and f[j] is not None:
                    cross.append({"variant": v["name"], "figure": name,
                                  **st.cross_backend(f[0], f[j], base_v, var_v, tolerance_pp)})
    raws = ws.stability_repo.stability_verdicts(run["run_id"]).pivot(index="item_id", columns="variant", values="raw")
    same = {j: float((raws[j] == raws[0]).mean()) if 0 in raws and j in raws else None for j in range(len(variants))}
    base_env = variants[0]["env"] if variants else None
    envs = [{"variant": v["name"], "changes": fp.diff(base_env, v["env"])} for v in variants[1:]]
    violations = [{"figure": k, **g} for k, r in out_figs.items() for g in r["guard"]]
    return {
        "run_id": run["run_id"], "judge": run["judge"], "origin": run["origin"], "created_at": run["created_at"],
        "kind": run["config"].get("kind", "verdicts"), "n_items": int(frame.shape[0]),
        # identical_outputs: share of items whose raw outputs (both orders) equal the base's, byte for byte
        "variants": [{k: v.get(k) for k in ("variant", "name", "axis", "level", "reused_from", "calls", "paid")}
                     | {"figures": v["figures"], "identical_outputs": same[v["variant"]]} for v in variants],
        "calls": {"planned": int(sum(v["calls"] for v in variants)), "paid": int(sum(v["paid"] for v in variants)),
                  "reused_variants": [v["name"] for v in variants if v["reused_from"] is not None]},
        "figures": out_figs,
        "cross_backend": cross,
        "cross_judge": cross_judge,
        "guard": {"threshold_pp": threshold_pp, "status": "fail" if violations else "pass", "violations": violations},
        "fingerprint_diffs": [e for e in envs if e["changes"]],
        "notes": run["config"].get("notes", {}),
    }


def stability_summary(ws: Any, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """``{judge: {"score": ..., "runs": [...]}}`` for audit.json's ``judges.<judge>.stability``: every stored
    run of the judge (CPU, GPU imports, recorded repeats) summarised, and the headline Stability Score
    (the lowest over its figures) of its latest run."""
    out: dict[str, Any] = {}
    for run in ws.stability_repo.stability_runs():
        s = summarise_run(ws, run, n_boot=n_boot, seed=seed)
        entry = out.setdefault(run["judge"], {"runs": []})
        entry["runs"].append(s)
    for entry in out.values():
        latest = entry["runs"][-1]
        scored = {k: r["score"] for k, r in latest["figures"].items() if r["score"] is not None}
        worst = min(scored, key=lambda k: scored[k]) if scored else None
        entry["score"] = None if worst is None else {"figure": worst, "score": scored[worst],
                                                      "ci": latest["figures"][worst]["score_ci"],
                                                      "run_id": latest["run_id"]}
        entry["guard"] = latest["guard"]["status"]
    return out


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 10)


def attach_stability(ws: Any, report: dict[str, Any], n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Add ``stability`` to every judge of ``report`` that has stored stability runs; returns ``report``."""
    if not ws.stability_repo.stability_runs():
        return report
    for judge, summary in stability_summary(ws, n_boot=n_boot, seed=seed).items():
        if judge in report.get("judges", {}):
            report["judges"][judge]["stability"] = summary
    return report
