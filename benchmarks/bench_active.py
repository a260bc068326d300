"""Active labelling on real sets: the human labels a ±0.03 interval (95%) needs with a uniform draw and with
an active draw (judgecal.stats.active), and the coverage of the active intervals over 1,000 simulated draws.

For each quantity (a model's win rate, a pass rate) over a set's N items, with the real human label ``Y`` and
the judge's score ``f`` on every item and the judge's own uncertainty ``u`` (known before any label):

- labels needed: the smallest budget whose design variance, computed with the real labels,
  ``(1/N^2) sum (Y - lam f)^2 (1 - pi) / pi`` (``lam`` the variance-minimising one), reaches ``(0.03 / z)^2``:
  human labels alone (uniform, ``lam = 0``), uniform with the judge (``lam = 1``), and active (``lam = 1``,
  ``pi`` from ``u``, tau 0.5, and the best of a few tau, chosen here with the labels: an upper bound on the
  saving); the saving is active against uniform with the judge;
- planned: what ``judgecal plan --strategy active`` would say from the uncertainty shifted to the observed error;
- coverage: 1,000 seeded Poisson draws at the active budget, each estimated with ``lam = 1`` and with the
  default cross-fitted ``lam``, and how often the interval holds the all-labels value (the mean over the N items).

Sets: PandaLM testset-v1 (humans: the majority of its 3 annotators; judge: GPT-3.5's recorded verdicts, unparsable
as tie; uncertainty: how far PandaLM-7B's recorded verdict sits from GPT-3.5's, as `plan` measures it with other
judges counted); DICES-990 (pass = the reply is safe; no judge verdicts are recorded, so a panel of the first 5
crowd raters stands in the judge's place: its vote share is ``f`` and ``f (1 - f)`` its uncertainty; humans: the
majority of the other raters); Summary of a Haystack (each summary and reference insight an item, coverage 1 /
0.5 / 0 by the person and by GPT-4o's recorded prediction; uncertainty: the six recorded judges' spread around
GPT-4o's); ToxicChat is listed as not measured (no judge verdicts and no individual labels in
the mirror). Prints JSON (kept in benchmarks/results/active.json) with the machine.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.stats.active import active_mean, draw, inclusion_probabilities, plan_active  # noqa: E402
from judgecal.stats.winrate import outcome_scores  # noqa: E402

H, Z, DRAWS, TAU = 0.03, 1.959963984540054, 1000, 0.5
TAUS = (0.25, 0.5, 0.75, 0.9)
ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("JUDGECAL_DATA_MIRROR") or ROOT.parent / "shared" / "datasets")


def design_var(y: np.ndarray, f: np.ndarray, pi: np.ndarray, lam: float | None) -> float:
    w = (1 - pi) / pi
    if lam is None:
        den = float(np.sum(f * f * w))
        lam = float(np.clip(np.sum(y * f * w) / den, 0, 1)) if den > 0 else 0.0
    return float(np.sum((y - lam * f) ** 2 * w)) / len(y) ** 2


def needed(y: np.ndarray, f: np.ndarray, u: np.ndarray, tau: float, lam: float | None) -> tuple[int, float]:
    """Smallest budget (bisection; up to N / (1 - tau), where every pi is 1) and its expected labels sum(pi)."""
    v = (H / Z) ** 2
    lo, hi = 0, int(np.ceil(len(y) / (1 - tau)))
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if design_var(y, f, inclusion_probabilities(u, mid, tau=tau), lam) <= v:
            hi = mid
        else:
            lo = mid
    return hi, float(inclusion_probabilities(u, hi, tau=tau).sum())


def coverage(y: np.ndarray, f: np.ndarray, pi: np.ndarray, seed: int, lam: float | None) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    truth, hits, halves, labelled = float(y.mean()), 0, [], []
    for _ in range(DRAWS):
        xi = draw(pi, rng)
        r = active_mean(np.where(xi, y, np.nan), f, pi, xi, lam=lam)
        hits += r.ci_low <= truth <= r.ci_high
        halves.append((r.ci_high - r.ci_low) / 2)
        labelled.append(int(xi.sum()))
    return {"coverage_95": round(hits / DRAWS, 3), "halfwidth_mean": round(float(np.mean(halves)), 4),
            "labelled_per_draw_mean": round(float(np.mean(labelled)), 1)}


def measure(y: np.ndarray, f: np.ndarray, u: np.ndarray, seed: int) -> dict[str, Any]:
    zero = np.zeros(len(y))
    n_h, _ = needed(y, f, zero, 0.0, 0.0)
    n_u, _ = needed(y, f, zero, 0.0, 1.0)
    b_a, e_a = needed(y, f, u, TAU, 1.0)
    by_tau = {t: needed(y, f, u, t, 1.0) for t in TAUS}
    best_tau = min(by_tau, key=lambda t: by_tau[t][1])
    shift = float(np.mean((y - f) ** 2) - np.mean(u**2))
    planned = plan_active(np.clip(u**2 + shift, 0, None), H, tau=TAU)
    pi = inclusion_probabilities(u, b_a, tau=TAU)
    return {"items": int(len(y)), "value_all_labels": round(float(y.mean()), 4),
            "judge_mse": round(float(np.mean((y - f) ** 2)), 4),
            "labels_needed": {"human_only_uniform": n_h, "uniform_with_judge": n_u,
                              "active_tau_0.5": round(e_a, 1), "active_budget_tau_0.5": b_a,
                              "active_by_tau": {str(t): round(e, 1) for t, (_, e) in by_tau.items()}},
            "saving_vs_uniform_with_judge": round(1 - e_a / n_u, 3),
            "best_tau": best_tau, "saving_best_tau": round(1 - by_tau[best_tau][1] / n_u, 3),
            "saving_vs_human_only": round(1 - e_a / n_h, 3),
            "planned_from_uncertainty": {"uniform": planned["n_uniform"],
                                         "active": round(planned["expected_labels_active"], 1)},
            "active_draws_lambda_1": coverage(y, f, pi, seed, 1.0),
            "active_draws_lambda_tuned": coverage(y, f, pi, seed, None)}


def pandalm() -> dict[str, Any]:
    data = MIRROR / "WeOpenML" / "PandaLM" / "data"
    items = json.loads((data / "testset-v1.json").read_text())
    names = {0: "tie", 1: "A", 2: "B"}
    conv = {"1": "A", "2": "B", "Tie": "tie"}
    gpt = {r["idx"]: conv.get(str(r["gpt_result"]), "tie")
           for r in json.loads((data / "gpt-3.5-turbo-testset-v1.json").read_text())}
    p7 = {r["idx"]: conv.get(str(r["pandalm_result"]), "tie")
          for r in json.loads((data / "pandalm-7b-testset-v1.json").read_text())}
    human = []
    for r in items:
        votes = [r[f"annotator{k}"] for k in (1, 2, 3)]
        top = max(set(votes), key=votes.count)
        human.append(names[top] if votes.count(top) >= 2 else "tie")
    h = outcome_scores(np.array(human, dtype=object))
    j = outcome_scores(np.array([gpt[r["idx"]] for r in items], dtype=object))
    o = outcome_scores(np.array([p7[r["idx"]] for r in items], dtype=object))
    err2 = ((j - o) ** 2) / 2  # the two judges' spread around GPT-3.5's score (judgecal.audit.uncertainty)
    a = np.array([r["cmp_key"].split("_")[0] for r in items])
    b = np.array([r["cmp_key"].split("_")[1] for r in items])
    out = {}
    for k, m in enumerate(sorted(set(a) | set(b))):
        g = (a == m) | (b == m)
        y, f = np.where(a[g] == m, h[g], 1 - h[g]), np.where(a[g] == m, j[g], 1 - j[g])
        out[f"win rate of {m}"] = measure(y, f, np.sqrt(err2[g]), seed=k)
    return out


def dices(panel: int = 5) -> dict[str, Any]:
    inst = json.loads((MIRROR / "dmg-illc/JUDGE-BENCH/data/dices/dices_990.json").read_text())["instances"]
    scores = [r["annotations"]["safety"]["individual_human_scores"] for r in inst]
    f = np.array([np.mean([s == "Yes" for s in row[:panel]]) for row in scores])
    rest = [row[panel:] for row in scores]
    y = np.array([float(sum(s == "Yes" for s in row) > len(row) / 2) for row in rest])
    return {"pass rate (safe)": measure(y, f, np.sqrt(f * (1 - f)), seed=99)}


def haystack(judge: str = "prompted_gpt-4o") -> dict[str, Any]:
    """Summary of a Haystack: each (summary, reference insight) an item, the person's coverage scored 1 / 0.5 / 0;
    the judge's recorded coverage the same way; its uncertainty the six recorded judges' spread around it."""
    rows = json.loads((MIRROR / "salesforce/summary-of-a-haystack/data/eval_benchmark_data.json").read_text())
    human_s = {"fully_covered": 1.0, "partially_covered": 0.5, "not_covered": 0.0}
    judge_s = {"FULL_COVERAGE": 1.0, "PARTIAL_COVERAGE": 0.5, "NO_COVERAGE": 0.0}
    judges = [k[len("predictions_"):] for k in rows[0] if k.startswith("predictions_")]
    y, f, err2 = [], [], []
    for r in rows:
        preds = {j: {p["insight_id"]: judge_s.get(str(p["coverage"])) for p in r[f"predictions_{j}"]} for j in judges}
        for a in r["annotation"]:
            i = a["insight_id"]
            mine = preds[judge].get(i)
            votes = [v for v in (preds[j].get(i) for j in judges) if v is not None]
            if a["coverage"] not in human_s or mine is None:
                continue
            y.append(human_s[a["coverage"]])
            f.append(mine)
            err2.append(float(np.mean([(v - mine) ** 2 for v in votes])))
    return {f"coverage rate ({judge})": measure(np.array(y), np.array(f), np.sqrt(np.array(err2)), seed=7)}


def main() -> None:
    t0 = time.perf_counter()
    sets = {"PandaLM": pandalm(), "DICES-990": dices(), "Summary of a Haystack": haystack()}
    goal = {}
    for name, qs in sets.items():
        s = [q["saving_vs_uniform_with_judge"] for q in qs.values()]
        best = [q["saving_best_tau"] for q in qs.values()]
        cov = [q["active_draws_lambda_1"]["coverage_95"] for q in qs.values()]
        tuned = [q["active_draws_lambda_tuned"]["coverage_95"] for q in qs.values()]
        goal[name] = {"saving_tau_0.5": [min(s), max(s)], "saving_best_tau": [min(best), max(best)],
                      "goal_40pct_met": bool(min(best) >= 0.40),
                      "coverage_lambda_1_default": [min(cov), max(cov)], "coverage_94pct_met": bool(min(cov) >= 0.94),
                      "coverage_lambda_tuned": [min(tuned), max(tuned)]}
    print(json.dumps({
        "benchmark": "active_labelling", "target_halfwidth": H, "level": 0.95, "draws": DRAWS, "tau": TAU,
        "sets": sets, "goal": goal,
        "not_measured": {"ToxicChat": "the mirror holds one majority label per prompt and no judge verdicts; "
                         "the embedded SmolLM2 labels nearly every prompt toxic (κ 0.02, label_judge_smollm2.json), "
                         "so it gives no uncertainty to draw by"},
        "judges": {"PandaLM": "GPT-3.5 recorded verdicts; uncertainty from PandaLM-7B's recorded verdicts",
                   "Summary of a Haystack": "GPT-4o (prompted) recorded coverage; uncertainty from the six recorded "
                   "judges' spread around it",
                   "DICES-990": "no recorded judge: the first 5 crowd raters' vote share stands in for one"},
        "seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": peak_rss_mb(), "machine": machine()},
        indent=1))


if __name__ == "__main__":
    main()
