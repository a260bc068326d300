"""Inter-annotator agreement with item-bootstrap CIs: Fleiss' kappa, Krippendorff's alpha (nominal),
pairwise Cohen's kappa. Pure functions of label arrays.

Each statistic is a function of per-item sums, so the bootstrap is one matrix product
(:func:`judgecal.stats.bootstrap.bootstrap_sums`). Lives in the bottom package: the audit (instability,
prompt sensitivity) and the human aggregation both use it.

- Fleiss (1971): ``p_j = sum_i n_ij / (N n)``, ``P_i = (sum_j n_ij^2 - n) / (n (n - 1))``,
  ``kappa = (mean P_i - sum_j p_j^2) / (1 - sum_j p_j^2)``; items need the same number of raters
  ``n`` (items with another count are left out).
- Krippendorff (2004), nominal: coincidences ``o_ck = sum_u sum_{i != j in u} [c_i = c, c_j = k] /
  (m_u - 1)`` over units with ``m_u >= 2`` values; ``alpha = 1 - (n - 1) sum_{c != k} o_ck /
  sum_{c != k} n_c n_k``.
- Cohen (1960) for each pair of annotators over the items both labelled.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from judgecal.stats import bootstrap as stats


def count_matrix(df: pd.DataFrame) -> tuple[NDArray[np.float64], pd.Index, pd.Index]:
    """Items x labels matrix of how many annotators gave each label."""
    i_codes, items = pd.factorize(df["item_id"], sort=True)
    l_codes, labels = pd.factorize(df["label"], sort=True)
    k = len(labels)
    counts = np.bincount(i_codes * k + l_codes, minlength=len(items) * k).reshape(len(items), k).astype(np.float64)
    return counts, pd.Index(items), pd.Index(labels)


def fleiss_kappa_from_sums(s: NDArray[np.float64], n: int, k: int) -> NDArray[np.float64]:
    """Fleiss' kappa from summed ``[n_i1..n_iK, P_i, 1]`` columns (rows: replicates)."""
    s = np.atleast_2d(s)
    n_items = s[:, k + 1]
    p = stats.safe_ratio(s[:, :k], (n_items * n)[:, None])
    p_bar = stats.safe_ratio(s[:, k], n_items)
    pe = (p**2).sum(1)
    return stats.safe_ratio(p_bar - pe, 1 - pe)


def fleiss_kappa(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict[str, Any]:
    counts, _, _ = count_matrix(df)
    n_per = counts.sum(1)
    if len(n_per) == 0:
        return stats.metric(float("nan"), float("nan"), float("nan"), 0)
    n = int(np.bincount(n_per.astype(int)).argmax())
    counts = counts[n_per == n]
    if n < 2 or len(counts) == 0:
        return stats.metric(float("nan"), float("nan"), float("nan"), 0)
    k = counts.shape[1]
    p_i = ((counts**2).sum(1) - n) / (n * (n - 1))
    sums = np.column_stack([counts, p_i, np.ones(len(counts))])
    boot = stats.bootstrap_sums(sums, n_boot, seed)
    est, lo, hi = stats.estimate_with_ci(lambda m: fleiss_kappa_from_sums(m, n, k), sums, boot)
    return stats.metric(est, lo, hi, len(counts))


def _coincidence_rows(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-unit coincidence contributions (units x K*K), nominal data."""
    m = counts.sum(1)
    ok = m >= 2
    c = counts[ok]
    outer = c[:, :, None] * c[:, None, :]
    idx = np.arange(c.shape[1])
    outer[:, idx, idx] -= c
    return (outer / (m[ok] - 1)[:, None, None]).reshape(len(c), -1)


def ordinal_delta2(n_c: NDArray[np.float64]) -> NDArray[np.float64]:
    """Krippendorff's ordinal distance ``δ²_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2`` from the level
    totals ``n_c`` (rows: replicates; levels in their order), as ``(replicates, K, K)``."""
    cum = np.cumsum(n_c, axis=1)
    lo = np.minimum.outer(np.arange(n_c.shape[1]), np.arange(n_c.shape[1]))
    hi = np.maximum.outer(np.arange(n_c.shape[1]), np.arange(n_c.shape[1]))
    between = cum[:, hi] - cum[:, lo] + n_c[:, lo]  # sum of n_g for g from min(c, k) to max(c, k)
    return (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2


def krippendorff_alpha_from_sums(o: NDArray[np.float64], k: int, ordinal: bool = False) -> NDArray[np.float64]:
    """``1 - (n - 1) sum o_ck δ²_ck / sum n_c n_k δ²_ck``: nominal ``δ² = [c != k]``, or :func:`ordinal_delta2`."""
    o = np.atleast_2d(o).reshape(-1, k, k)
    n_c = o.sum(2)
    n = n_c.sum(1)
    delta = ordinal_delta2(n_c) if ordinal else (~np.eye(k, dtype=bool)).astype(np.float64)[None]
    d_o = (o * delta).sum((1, 2))
    d_e = ((n_c[:, :, None] * n_c[:, None, :]) * delta).sum((1, 2))
    return 1 - stats.safe_ratio((n - 1) * d_o, d_e)


def krippendorff_alpha(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0, ordinal: bool = False) -> dict[str, Any]:
    """Krippendorff's α of the long frame ``item_id, label`` (nominal; ``ordinal``: the labels sort in their
    order, e.g. codes 0..K-1), with an item-bootstrap interval."""
    counts, _, labels = count_matrix(df)
    rows = _coincidence_rows(counts)
    k = len(labels)
    if len(rows) == 0:
        return stats.metric(float("nan"), float("nan"), float("nan"), 0)
    boot = stats.bootstrap_sums(rows, n_boot, seed)
    est, lo, hi = stats.estimate_with_ci(lambda m: krippendorff_alpha_from_sums(m, k, ordinal), rows, boot)
    return stats.metric(est, lo, hi, len(rows))


def pairwise_cohen(df: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Cohen's kappa for each pair of annotators (key ``"a|b"``) over the items both labelled."""
    wide = df.pivot_table(index="item_id", columns="annotator", values="label", aggfunc="first")
    labels = np.unique(df["label"].to_numpy(dtype=str))
    k = len(labels)
    out = {}
    for a, b in combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        if both.empty:
            continue
        ta = np.searchsorted(labels, both[a].to_numpy(dtype=str))
        tb = np.searchsorted(labels, both[b].to_numpy(dtype=str))
        cells = np.zeros((len(both), k * k))
        cells[np.arange(len(both)), ta * k + tb] = 1.0
        boot = stats.bootstrap_sums(cells, n_boot, seed)
        est, lo, hi = stats.estimate_with_ci(
            lambda m: stats.cohen_kappa_from_confusion(m.reshape(-1, k, k)), cells, boot)
        out[f"{a}|{b}"] = stats.metric(est, lo, hi, len(both))
    return out
