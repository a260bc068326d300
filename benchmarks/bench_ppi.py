"""PPI++ on PandaLM testset-v1: how much narrower is each model's win-rate interval with 100 human
labels per model plus GPT-3.5's recorded verdicts on the remaining items, than with the same 100
human labels alone? Repeated over random draws of the labelled items; the humans' label is the
majority of the three annotators, GPT-3.5's unparsable outputs count as ties (the authors' rule).
Beside the ratio: the judge's accuracy against the humans, the judge-human correlation of the
per-item scores, the ratio theory predicts, sqrt(1 - rho^2 N / (n + N)), and how often each interval
covers the win rate from all 999 human labels. Prints JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.stats.ppi import CEILING_NOTE, plan_from_data, ppi_mean  # noqa: E402
from judgecal.stats.winrate import outcome_scores, win_rates  # noqa: E402

N_LABELS, DRAWS = 100, 500
ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("JUDGECAL_DATA_MIRROR") or ROOT.parent / "shared" / "datasets")


def load() -> tuple[np.ndarray, ...]:
    data = MIRROR / "WeOpenML" / "PandaLM" / "data"
    items = json.loads((data / "testset-v1.json").read_text())
    gpt = {r["idx"]: r["gpt_result"] for r in json.loads((data / "gpt-3.5-turbo-testset-v1.json").read_text())}
    names = {0: "tie", 1: "A", 2: "B"}
    human = []
    for r in items:
        votes = [r[f"annotator{k}"] for k in (1, 2, 3)]
        top = max(set(votes), key=votes.count)
        human.append(names[top] if votes.count(top) >= 2 else "tie")
    a = np.array([r["cmp_key"].split("_")[0] for r in items], dtype=object)
    b = np.array([r["cmp_key"].split("_")[1] for r in items], dtype=object)
    judge = np.array([{"1": "A", "2": "B", "Tie": "tie"}.get(gpt[r["idx"]], "tie") for r in items], dtype=object)
    return a, b, np.array(human, dtype=object), judge


def main() -> None:
    a, b, human, judge = load()
    t0 = time.perf_counter()
    truth = win_rates(a, b, human, n_boot=0)["estimate"]
    h_s, j_s = outcome_scores(human), outcome_scores(judge)
    rng = np.random.default_rng(0)
    per_model = {}
    for m in truth.index:
        idx = np.flatnonzero((a == m) | (b == m))
        y_all = np.where(a[idx] == m, h_s[idx], 1 - h_s[idx])
        f_all = np.where(a[idx] == m, j_s[idx], 1 - j_s[idx])
        rho = float(np.corrcoef(y_all, f_all)[0, 1])
        ratios, lams, cover_ppi, cover_h, half_ppi, half_h = [], [], 0, 0, [], []
        for _ in range(DRAWS):
            lab = np.zeros(len(idx), dtype=bool)
            lab[rng.choice(len(idx), N_LABELS, replace=False)] = True
            r = ppi_mean(y_all[lab], f_all[lab], f_all[~lab])
            ratios.append(r.width_ratio)
            lams.append(r.lam)
            cover_ppi += r.ci_low <= truth[m] <= r.ci_high
            cover_h += r.classical_ci_low <= truth[m] <= r.classical_ci_high
            half_ppi.append((r.ci_high - r.ci_low) / 2)
            half_h.append((r.classical_ci_high - r.classical_ci_low) / 2)
        big_n = len(idx) - N_LABELS
        plan = plan_from_data(y_all, f_all, 0.03)
        per_model[m] = {
            "items": int(len(idx)), "win_rate_all_humans": round(float(truth[m]), 4),
            "judge_accuracy": round(float(np.mean(human[idx] == judge[idx])), 4),
            "judge_human_score_correlation": round(rho, 4),
            "width_ratio_mean": round(float(np.mean(ratios)), 4),
            "width_ratio_median": round(float(np.median(ratios)), 4),
            "width_ratio_theory": round(float(np.sqrt(1 - rho**2 * big_n / (N_LABELS + big_n))), 4),
            "halfwidth_ppi_mean": round(float(np.mean(half_ppi)), 4),
            "halfwidth_human_only_mean": round(float(np.mean(half_h)), 4),
            "lambda_mean": round(float(np.mean(lams)), 4),
            "coverage_ppi": round(cover_ppi / DRAWS, 4), "coverage_human_only": round(cover_h / DRAWS, 4),
            "labels_for_halfwidth_0.03": {"human_only": plan["n_human_only"], "ppi": plan["n_ppi"],
                                          "gain": round(plan["gain"], 3), "exceeds_ceiling": plan["exceeds_ceiling"]},
        }
    ratios_all = [v["width_ratio_mean"] for v in per_model.values()]
    out = {
        "benchmark": "ppi_pandalm",
        "machine": machine(),
        "data": "PandaLM testset-v1 (999 items, 5 models); humans: majority of 3 annotators; judge: GPT-3.5 recorded",
        "labels_per_model": N_LABELS, "draws": DRAWS, "level": 0.95,
        "judge_accuracy": round(float(np.mean(human == judge)), 4),
        "width_ratio_mean_over_models": round(float(np.mean(ratios_all)), 4),
        "label_saving_equivalent": round(float(1 / np.mean(ratios_all) ** 2), 3),
        "models": per_model,
        "coverage_note": ("coverage is of the win rate from all of the model's items, a finite population the "
                          "100 labels are drawn from without replacement, so both intervals run conservative"),
        "ceiling_note": CEILING_NOTE,
        "seconds": round(time.perf_counter() - t0, 2), "peak_rss_mb": peak_rss_mb(),
    }
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
