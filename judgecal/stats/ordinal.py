"""Agreement of per-item labels or scores with people's (pointwise judges), with item-bootstrap CIs.

Each row is one rating of one item: the person's code ``t`` and the rater's code ``p`` on one scale of
``k`` levels (``0..k-1``, in the scale's order when it is ordinal), and the levels' values (``x``, ``y``;
the codes themselves when no value is given). Over the rows:

- ``accuracy``: share with ``p == t`` (exact agreement);
- ``cohen_kappa``: ``(p_o - p_e) / (1 - p_e)`` from the ``k x k`` confusion (Cohen, 1960);
- ``weighted_kappa``: ``1 - sum w O / sum w E`` with quadratic weights ``w_ij = (v_i - v_j)^2 /
  (v_max - v_min)^2`` on the levels' values (the codes unless ``level_values`` says otherwise), ``E`` the
  product of the margins (Cohen, 1968; on an equally spaced scale, scikit-learn's ``weights="quadratic"``
  over all its levels, a level nobody used included);
- ``spearman_rho``: Pearson's r of the midranks of ``x`` and ``y`` (Spearman, 1904; ties get their mean
  rank, as :func:`scipy.stats.spearmanr`);
- ``mae``: mean ``|y - x|``.

Rows belong to groups (items; several ratings of one item are one cluster). Replicate ``b`` of the
bootstrap weights every row of group ``g`` by ``W[b, g] ~ Multinomial(n, 1/n)``
(:func:`judgecal.stats.bootstrap.bootstrap_weights`); the confusion and error sums are ``W @ S``, and the
ranks are recomputed from the replicate's weighted level counts (the midrank of level ``l`` is
``sum_{m<l} w_m + (w_l + 1) / 2``), so a replicate's ρ is Spearman's ρ of the resampled rows.
Undefined figures (a constant side, no rows) are ``None``.
"""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import (
    accuracy_from_confusion,
    bootstrap_weights,
    cohen_kappa_from_confusion,
    metric,
    percentile_ci,
    safe_ratio,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
NOMINAL: tuple[str, ...] = ("accuracy", "cohen_kappa")
ORDINAL: tuple[str, ...] = ("accuracy", "cohen_kappa", "weighted_kappa", "spearman_rho", "mae")
CELLS = 4096  # joint level tables up to this size; beyond, ranks are gathered row by row


def quadratic_weights(k: int, values: ArrayLike | None = None) -> FloatArray:
    """``w_ij = (v_i - v_j)^2 / (v_max - v_min)^2`` for level values ``v`` (default ``0..k-1``: Cohen's
    ``(i - j)^2 / (k - 1)^2``); all zero for a single value."""
    v = np.arange(k, dtype=np.float64) if values is None else np.asarray(values, dtype=np.float64)
    span = float(v.max() - v.min()) if v.size else 0.0
    return (v[:, None] - v[None, :]) ** 2 / (span**2 if span > 0 else 1.0)


def weighted_kappa_from_confusion(conf: FloatArray, weights: FloatArray) -> FloatArray:
    """Cohen's weighted κ of confusion matrices ``(..., K, K)``: ``1 - sum w O / sum w E``."""
    conf = np.asarray(conf, dtype=np.float64)
    n = conf.sum(axis=(-2, -1))
    expect = conf.sum(-1)[..., :, None] * conf.sum(-2)[..., None, :] / np.where(n > 0, n, 1)[..., None, None]
    return 1 - safe_ratio((conf * weights).sum(axis=(-2, -1)), (expect * weights).sum(axis=(-2, -1)))


def _midranks(level_w: FloatArray) -> FloatArray:
    return np.cumsum(level_w, axis=1) - level_w + (level_w + 1) / 2


def _weighted_r(w: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    sw = w.sum(1)
    mx = safe_ratio((w * x).sum(1), sw)[:, None]
    my = safe_ratio((w * y).sum(1), sw)[:, None]
    dx, dy = x - mx, y - my
    cov, vx, vy = (w * dx * dy).sum(1), (w * dx * dx).sum(1), (w * dy * dy).sum(1)
    den = np.sqrt(vx * vy)
    return safe_ratio(cov, np.where(den > 1e-12 * np.maximum(sw, 1) ** 2, den, 0.0))


class _Rows:
    """The rows' sums per group, and each replicate's figures from its group weights."""

    def __init__(self, t: IntArray, p: IntArray, x: FloatArray, y: FloatArray, g: IntArray, n_groups: int,
                 k: int, ordinal: bool, level_values: ArrayLike | None = None) -> None:
        self.k, self.g, self.ordinal = k, g, ordinal
        kk = k * k
        self.sums = np.zeros((n_groups, kk + 2))
        self.sums[:, :kk] = np.bincount(g * kk + t * k + p, minlength=n_groups * kk).reshape(n_groups, kk)
        self.sums[:, kk] = np.bincount(g, weights=np.abs(y - x), minlength=n_groups)
        self.sums[:, kk + 1] = np.bincount(g, minlength=n_groups)
        self.w = quadratic_weights(k, level_values)
        _, self.xl = np.unique(x, return_inverse=True)
        _, self.yl = np.unique(y, return_inverse=True)
        self.nx, self.ny = int(self.xl.max(initial=-1)) + 1, int(self.yl.max(initial=-1)) + 1
        ones = np.ones(g.size)
        if self.nx * self.ny <= CELLS:  # few levels: ranks from the joint level table, never row by row
            self.cxy = sparse.csr_matrix((ones, (g, self.xl * self.ny + self.yl)), shape=(n_groups, self.nx * self.ny))
        else:
            self.cx = sparse.csr_matrix((ones, (g, self.xl)), shape=(n_groups, self.nx))
            self.cy = sparse.csr_matrix((ones, (g, self.yl)), shape=(n_groups, self.ny))

    def spearman(self, weights: FloatArray) -> FloatArray:
        if self.nx * self.ny == 0:  # no rows
            return np.full(weights.shape[0], np.nan)
        if self.nx * self.ny > CELLS:
            rx = _midranks(np.asarray((self.cx.T @ weights.T).T))
            ry = _midranks(np.asarray((self.cy.T @ weights.T).T))
            return _weighted_r(weights[:, self.g], rx[:, self.xl], ry[:, self.yl])
        cw = np.asarray((self.cxy.T @ weights.T).T).reshape(-1, self.nx, self.ny)
        wx, wy = cw.sum(2), cw.sum(1)
        rx, ry = _midranks(wx), _midranks(wy)
        sw = wx.sum(1)
        mx, my = safe_ratio((wx * rx).sum(1), sw), safe_ratio((wy * ry).sum(1), sw)
        dx, dy = rx - mx[:, None], ry - my[:, None]
        cov = (cw * dx[:, :, None] * dy[:, None, :]).sum(axis=(1, 2))
        vx, vy = (wx * dx * dx).sum(1), (wy * dy * dy).sum(1)
        den = np.sqrt(vx * vy)
        return safe_ratio(cov, np.where(den > 1e-12 * np.maximum(sw, 1) ** 2, den, 0.0))

    def figures(self, weights: FloatArray) -> FloatArray:
        """``(replicates, 5)``: accuracy, κ, weighted κ, ρ, MAE under group weights ``(replicates, groups)``."""
        kk = self.k * self.k
        s = weights @ self.sums
        conf = s[:, :kk].reshape(-1, self.k, self.k)
        out = np.full((s.shape[0], 5), np.nan)
        out[:, 0] = accuracy_from_confusion(conf)
        out[:, 1] = cohen_kappa_from_confusion(conf)
        if self.ordinal:
            out[:, 2] = weighted_kappa_from_confusion(conf, self.w)
            out[:, 3] = self.spearman(weights)
            out[:, 4] = safe_ratio(s[:, kk], s[:, kk + 1])
        return out


def pointwise_agreement(truth: ArrayLike, pred: ArrayLike, k: int, *, truth_value: ArrayLike | None = None,
                        pred_value: ArrayLike | None = None, ordinal: bool = True, groups: ArrayLike | None = None,
                        level_values: ArrayLike | None = None, n_boot: int = 2000, seed: int = 0,
                        level: float = 0.95) -> dict[str, dict[str, object]]:
    """Agreement of codes ``pred`` with ``truth`` (``0..k-1``; a negative code or a non-finite value is a
    missing rating, left out and counted in ``n_invalid``), each ``{estimate, ci_low, ci_high, n}`` with
    an item-bootstrap percentile CI; ``groups`` (default: one per row) are resampled whole.
    Nominal scales (``ordinal=False``) get :data:`NOMINAL`, ordinal ones :data:`ORDINAL`; ``level_values``
    (the value of each code) sets the weighted κ's distances."""
    t, p = np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    if t.shape != p.shape:
        raise StatsError("truth and pred must have the same length")
    if k < 1:
        raise StatsError(f"k, the number of levels, must be at least 1, got {k}")
    x = t.astype(np.float64) if truth_value is None else np.asarray(truth_value, dtype=np.float64)
    y = p.astype(np.float64) if pred_value is None else np.asarray(pred_value, dtype=np.float64)
    ok = (t >= 0) & (p >= 0) & (t < k) & (p < k) & np.isfinite(x) & np.isfinite(y)
    g_all = np.arange(t.size) if groups is None else np.asarray(groups)
    g, _ = pd.factorize(g_all[ok], use_na_sentinel=False)  # a missing group label is a group too
    g = np.asarray(g, dtype=np.int64)
    n_groups = int(g.max(initial=-1)) + 1
    rows = _Rows(t[ok], p[ok], x[ok], y[ok], g, n_groups, k, ordinal, level_values)
    est = rows.figures(np.ones((1, n_groups)))[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, 1_000_000 // max(int(ok.sum()) if rows.nx * rows.ny > CELLS else rows.nx * rows.ny, 1))
    parts = [rows.figures(w) for w in bootstrap_weights(n_groups, n_boot, rng, chunk=chunk)]
    boot = np.vstack(parts) if parts else np.empty((0, 5))
    names = ORDINAL if ordinal else NOMINAL
    out = {}
    for c, name in enumerate(ORDINAL):
        if name in names:
            lo, hi = percentile_ci(boot[:, c], level)
            out[name] = metric(float(est[c]), lo, hi, int(ok.sum()))
    out["n_invalid"] = {"estimate": int((~ok).sum()), "ci_low": None, "ci_high": None, "n": int(ok.size)}
    return out


def rater_pairs(codes: ArrayLike) -> tuple[IntArray, IntArray, IntArray]:
    """Every ordered pair of two different raters on one item, from an items x raters code matrix
    (``-1``: not rated): ``(first rater's code, second rater's code, item)``. Both orders of a pair are
    kept, so the pooled table is symmetric and no rater is "the truth"."""
    m = np.asarray(codes, dtype=np.int64)
    a, b, item = [], [], []
    for i, j in permutations(range(m.shape[1] if m.ndim == 2 else 0), 2):
        both = (m[:, i] >= 0) & (m[:, j] >= 0)
        a.append(m[both, i])
        b.append(m[both, j])
        item.append(np.flatnonzero(both))
    if not a:
        return (np.zeros(0, dtype=np.int64),) * 3  # type: ignore[return-value]
    return np.concatenate(a), np.concatenate(b), np.concatenate(item).astype(np.int64)


def rater_agreement(codes: ArrayLike, k: int, values: ArrayLike | None = None, ordinal: bool = True,
                    groups: ArrayLike | None = None, n_boot: int = 2000, seed: int = 0,
                    level: float = 0.95) -> dict[str, dict[str, object]]:
    """The raters' agreement with each other, the ceiling beside a judge: :func:`pointwise_agreement` over
    :func:`rater_pairs` (items resampled whole, or each item's ``groups`` label whole; ``values[c]`` is the
    value of level ``c``)."""
    a, b, item = rater_pairs(codes)
    v = None if values is None else np.asarray(values, dtype=np.float64)
    return pointwise_agreement(a, b, k, truth_value=None if v is None else v[a],
                               pred_value=None if v is None else v[b], ordinal=ordinal,
                               groups=item if groups is None else np.asarray(groups, dtype=object)[item],
                               level_values=v, n_boot=n_boot, seed=seed, level=level)


__all__ = ["NOMINAL", "ORDINAL", "pointwise_agreement", "quadratic_weights", "rater_agreement", "rater_pairs",
           "weighted_kappa_from_confusion"]
