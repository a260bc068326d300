"""Run-to-run instability: how often repeated samples of the same prompt disagree.

Judgments of one item in one order under the unmutated prompt with several ``sample`` values
(``judgecal judge --samples K`` with seeds ``seed + s``) are repeats. For a group with verdict counts
``c_k`` over ``n`` repeats the disagreeing pairs are ``(n^2 - sum_k c_k^2) / 2`` of ``n (n-1) / 2``;

- ``instability_rate``: disagreeing pairs over all pairs (the chance two repeats differ), pooled
  over groups; 0 for a deterministic judge. Item-bootstrap CI.
- ``unanimity_rate``: the share of groups whose repeats all agree.
- ``fleiss_kappa_across_samples``: Fleiss' kappa with each sample as a rater.

Invalid verdicts are left out; groups with fewer than two valid repeats do not count.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.stats import bootstrap as stats
from judgecal.stats.agreement import fleiss_kappa_from_sums


def repeat_counts(judgments: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Verdict counts per (item, order) group with at least two valid repeats, and each group's item code."""
    sample = judgments["sample"].to_numpy()
    if not len(sample) or (sample == sample[0]).all():  # one sample of each call: no repeats
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    j = judgments[judgments["verdict"].isin(["A", "B", "tie"])]
    j = j.drop_duplicates(["item_id", "order", "sample"])
    if j.empty:
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    group = j.groupby(["item_id", "order"], observed=True, sort=False).ngroup().to_numpy()
    code = pd.Index(["A", "B", "tie"]).get_indexer(pd.Index(j["verdict"].to_numpy(dtype=object))).astype(np.int64)
    counts = np.bincount(group * 3 + code, minlength=(group.max() + 1) * 3).reshape(-1, 3).astype(np.float64)
    item_of_group = np.zeros(len(counts), dtype=np.int64)
    item_of_group[group] = pd.factorize(j["item_id"])[0]
    keep = counts.sum(1) >= 2
    return counts[keep], pd.factorize(item_of_group[keep])[0]


def instability(judgments: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0,
                level: float = 0.95) -> dict[str, Any]:
    counts, items = repeat_counts(judgments)
    if not len(counts):
        return {}
    n = counts.sum(1)
    pairs = n * (n - 1) / 2
    disagree = (n**2 - (counts**2).sum(1)) / 2
    unanimous = (counts.max(1) == n).astype(np.float64)
    n_rep = int(np.bincount(n.astype(np.int64)).argmax())
    same = n == n_rep
    p_i = np.where(same, ((counts**2).sum(1) - n_rep) / max(n_rep * (n_rep - 1), 1), 0.0)
    per_group = np.column_stack([disagree, pairs, unanimous, np.ones(len(n)),
                                 counts * same[:, None], p_i, same.astype(np.float64)])
    n_items = int(items.max()) + 1
    sums = np.zeros((n_items, per_group.shape[1]))
    np.add.at(sums, items, per_group)
    boot = stats.bootstrap_sums(sums, n_boot, seed)
    out: dict[str, Any] = {"repeats_per_group": n_rep, "n_groups": int(len(n))}
    totals = sums.sum(0, keepdims=True)
    for name, fn, size in (
        ("instability_rate", lambda m: stats.safe_ratio(m[:, 0], m[:, 1]), len(n)),
        ("unanimity_rate", lambda m: stats.safe_ratio(m[:, 2], m[:, 3]), len(n)),
        ("fleiss_kappa_across_samples", lambda m: fleiss_kappa_from_sums(m[:, 4:], n_rep, 3), int(same.sum())),
    ):
        est, lo, hi = stats.estimate_with_ci(fn, totals, boot, level)
        out[name] = stats.metric(est, lo, hi, size)
    return out
