"""Prompt sensitivity: how much a judge's verdicts move under meaning-preserving prompt mutations.

For each mutation, ``flip_rate`` is the share of (item, order, sample) whose verdict differs from
the unmutated prompt's (item-bootstrap CI); across all templates, Fleiss' kappa of the verdicts
(each template a rater), and the accuracy of each template against the human consensus with the
range (max - min) of those accuracies.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.aggregate.agreement import fleiss_kappa
from judgecal.audit import stats


def prompt_sensitivity(judgments: pd.DataFrame, truth: pd.Series | None = None, *, n_boot: int = 2000,
                       seed: int = 0) -> dict[str, Any]:
    j = judgments[judgments["verdict"].notna()]
    if j.empty or "none" not in set(j["mutation"]) or j["mutation"].nunique() < 2:
        return {}
    key = ["item_id", "order", "sample"]
    base = j[j["mutation"] == "none"].drop_duplicates(key).set_index(key)["verdict"]
    out: dict[str, Any] = {"mutations": {}}
    for mut, grp in j[j["mutation"] != "none"].groupby("mutation"):
        verdicts = grp.drop_duplicates(key).set_index(key)["verdict"]
        both = verdicts.index.intersection(base.index)
        if not len(both):
            continue
        flips = (verdicts.reindex(both) != base.reindex(both)).to_numpy(dtype=float)
        items, codes = np.unique(both.get_level_values("item_id").to_numpy(dtype=str), return_inverse=True)
        sums = np.column_stack([np.bincount(codes, weights=flips, minlength=len(items)),
                                np.bincount(codes, minlength=len(items))]).astype(np.float64)
        est, lo, hi = stats.estimate_with_ci(lambda m: stats.safe_ratio(m[:, 0], m[:, 1]), sums,
                                             stats.bootstrap_sums(sums, n_boot, seed))
        out["mutations"][str(mut)] = {"flip_rate": {"estimate": est, "ci_low": lo, "ci_high": hi, "n": int(len(both))}}
    mutated_units = j.loc[j["mutation"] != "none", key].drop_duplicates()
    raters = j.merge(mutated_units, on=key).drop_duplicates([*key, "mutation"]).assign(
        unit=lambda d: d["item_id"] + "|" + d["order"] + "|" + d["sample"].astype(str))
    out["fleiss_kappa_across_templates"] = fleiss_kappa(
        raters.rename(columns={"mutation": "annotator", "verdict": "label"})[["unit", "annotator", "label"]]
        .rename(columns={"unit": "item_id"}), n_boot, seed)
    if truth is not None and len(truth):
        acc = {}
        for mut, grp in j.groupby("mutation"):
            known = grp[grp["item_id"].isin(truth.index)]
            if len(known):
                pred = known["verdict"].replace({"invalid": "tie"}).to_numpy(dtype=str)
                acc[str(mut)] = float((pred == truth.reindex(known["item_id"]).to_numpy(dtype=str)).mean())
        out["accuracy_by_template"] = acc
        out["accuracy_range"] = float(max(acc.values()) - min(acc.values())) if acc else None
    return out
