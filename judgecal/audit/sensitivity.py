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
from numpy.typing import NDArray

from judgecal.audit.alignment import truth_codes
from judgecal.stats import bootstrap as stats
from judgecal.stats.agreement import fleiss_kappa


def prompt_sensitivity(judgments: pd.DataFrame, truth: pd.Series | None = None, *, n_boot: int = 2000,
                       seed: int = 0) -> dict[str, Any]:
    j = judgments[judgments["verdict"].notna()]
    if j.empty or "none" not in set(j["mutation"]) or j["mutation"].nunique() < 2:
        return {}
    # integer codes throughout: unit = (item, order, sample); one verdict per (unit, mutation)
    unit: NDArray[Any] = j.groupby(["item_id", "order", "sample"], observed=True, sort=False).ngroup().to_numpy()
    codes, uniques = pd.factorize(j["mutation"])
    mut_names = np.asarray(uniques, dtype=object)
    mut: NDArray[Any] = np.asarray(codes)
    # only the units (item, order, sample) judged under some mutation
    mutated = np.zeros(int(unit.max()) + 1, dtype=bool)
    mutated[unit[mut_names[mut] != "none"]] = True
    j, unit, mut = j[mutated[unit]], unit[mutated[unit]], mut[mutated[unit]]
    verdict: NDArray[Any] = np.asarray(pd.factorize(j["verdict"])[0])
    item: NDArray[Any] = np.asarray(pd.factorize(j["item_id"])[0])
    none = int(np.flatnonzero(mut_names == "none")[0])
    first = np.unique(unit.astype(np.int64) * len(mut_names) + mut, return_index=True)[1]
    unit, mut, verdict, item = (np.asarray(a)[first] for a in (unit, mut, verdict, item))
    base = np.full(int(unit.max()) + 1, -1)
    base[unit[mut == none]] = verdict[mut == none]
    out: dict[str, Any] = {"mutations": {}}
    for m, name in enumerate(mut_names):
        rows = np.flatnonzero((mut == m) & (base[unit] >= 0)) if m != none else np.zeros(0, dtype=np.int64)
        if not len(rows):
            continue
        flips = (verdict[rows] != base[unit[rows]]).astype(np.float64)
        _, codes = np.unique(item[rows], return_inverse=True)
        sums = np.column_stack([np.bincount(codes, weights=flips), np.bincount(codes)]).astype(np.float64)
        est, lo, hi = stats.estimate_with_ci(lambda x: stats.safe_ratio(x[:, 0], x[:, 1]), sums,
                                             stats.bootstrap_sums(sums, n_boot, seed))
        out["mutations"][str(name)] = {"flip_rate": {"estimate": est, "ci_low": lo, "ci_high": hi,
                                                     "n": int(len(rows))}}
    out["fleiss_kappa_across_templates"] = fleiss_kappa(
        pd.DataFrame({"item_id": unit, "annotator": mut, "label": verdict}), n_boot, seed)
    if truth is not None and len(truth):
        t = truth_codes(j["item_id"], truth)[first]
        known = t >= 0
        pred = j["verdict"].to_numpy(dtype=object)[first]
        pred = np.where(pred == "invalid", "tie", pred)
        hit = pred[known] == truth.to_numpy(dtype=str)[t[known]]
        acc = {str(name): float(hit[mut[known] == m].mean()) for m, name in enumerate(mut_names)
               if (mut[known] == m).any()}
        out["accuracy_by_template"] = acc
        out["accuracy_range"] = float(max(acc.values()) - min(acc.values())) if acc else None
    return out
