"""How much a judge's headline figures move across run variants: σ, the Stability Score, a bootstrap
CI, the per-axis decomposition, the guard, cross-backend agreement and the adaptive number of repeats.

Figures are proportions in [0, 1] (accuracy, win rate) or κ; shifts and σ are reported in percentage
points (pp, 100 × the proportion).

- σ: the sample standard deviation (ddof = 1) of one figure across the variants of a stability run.
- Stability Score = max(0, 100 − 50 σ) with σ in pp (the trust-dashboard rule this project was started
  from: σ = 0 scores 100, σ = 2 pp scores 0).
- Bootstrap CI: items are resampled once per replicate for every variant together (a paired item
  bootstrap, Efron & Tibshirani 1993): each variant's figure is a function of per-item sums
  ``S[i, v, :]``, evaluated on ``W @ S`` for all replicates at once; σ and the score are recomputed per
  replicate and the percentile interval reported.
- Decomposition by axis: in a one-axis-at-a-time design every variant changes one axis from the base
  run; the total squared shift ``Σ_v (f_v − f_base)²`` splits exactly into one part per axis, and each
  axis's share says how much of the movement it causes.
- Guard: a variant fails when ``|f_v − f_base|`` exceeds the threshold (pp). The threshold can be
  back-calculated from business loss: ``threshold = Δε_tolerated / (error-rate increase per point)``.
- Adaptive repeats (Wang et al., 2025, arXiv 2506.04734): ``N = ⌈(z s / ε)²⌉`` runs estimate a mean to
  within ±ε at confidence ``1 − α`` (z its normal quantile) given the sample standard deviation s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import bootstrap_weights, cohen_kappa_from_confusion, percentile_ci, safe_ratio

FloatArray = NDArray[np.float64]
LABELS = ("A", "B", "tie")


def sigma_pp(figures: ArrayLike, axis: int = -1) -> FloatArray:
    """σ in percentage points: ``100 × std(figures, ddof=1)`` along ``axis``, ignoring NaN.
    Fewer than two finite figures: NaN (a spread of one run is undefined)."""
    x = np.asarray(figures, dtype=np.float64)
    ok = np.isfinite(x)
    n = ok.sum(axis=axis)
    mean = safe_ratio(np.where(ok, x, 0.0).sum(axis=axis, keepdims=True), np.expand_dims(n, axis))
    ss = np.where(ok, (x - mean) ** 2, 0.0).sum(axis=axis)
    var = safe_ratio(ss, np.maximum(n - 1.0, 0.0))
    return np.asarray(100.0 * np.sqrt(np.where(n >= 2, var, np.nan)), dtype=np.float64)


def stability_score(sigma: ArrayLike) -> FloatArray:
    """``max(0, 100 − 50 σ)`` with σ in pp (NaN stays NaN)."""
    s = np.asarray(sigma, dtype=np.float64)
    return np.asarray(np.where(np.isnan(s), np.nan, np.maximum(0.0, 100.0 - 50.0 * s)), dtype=np.float64)


def ratio_stat(sums: FloatArray) -> FloatArray:
    """A figure that is a ratio of two per-item sums, ``sums[..., 0] / sums[..., 1]`` (accuracy, win rate)."""
    return safe_ratio(sums[..., 0], sums[..., 1])


def kappa_stat(sums: FloatArray) -> FloatArray:
    """Cohen's κ from per-item one-hot confusion cells, ``sums[..., 9]`` = a 3 × 3 (truth × verdict) table."""
    return cohen_kappa_from_confusion(sums.reshape(*sums.shape[:-1], 3, 3))


def accuracy_sums(verdicts: ArrayLike, truth: ArrayLike) -> FloatArray:
    """Per-item sums ``(correct, counted)`` for accuracy against the truth; shape ``(n, V, 2)`` from
    verdicts ``(n, V)`` and truth ``(n,)``. Items without a truth label (None/NaN) count for nothing;
    a missing verdict (None) counts as wrong (invalid output is a wrong answer, never dropped)."""
    v = np.asarray(verdicts, dtype=object)
    t = np.asarray(truth, dtype=object)[:, None]
    has = np.array([x in LABELS for x in t[:, 0]])[:, None] & np.ones(v.shape, dtype=bool)
    correct = (v == t) & has
    return np.stack([correct.astype(np.float64), has.astype(np.float64)], axis=-1)


def confusion_sums(verdicts: ArrayLike, truth: ArrayLike) -> FloatArray:
    """Per-item one-hot confusion cells ``(n, V, 9)`` (truth row × verdict column over A, B, tie); an
    item without truth or with a verdict outside A/B/tie adds nothing."""
    v = np.asarray(verdicts, dtype=object)
    t = np.asarray(truth, dtype=object)
    out = np.zeros((*v.shape, 9))
    for i, a in enumerate(LABELS):
        for j, b in enumerate(LABELS):
            out[..., 3 * i + j] = ((t[:, None] == a) & (v == b)).astype(np.float64)
    return out


def winrate_sums(verdicts: ArrayLike, model_a: ArrayLike, model_b: ArrayLike, model: str) -> FloatArray:
    """Per-item sums ``(wins + ties/2, comparisons)`` of ``model`` for verdicts ``(n, V)`` in item
    orientation (A means ``model_a`` won); shape ``(n, V, 2)``."""
    v = np.asarray(verdicts, dtype=object)
    ma, mb = np.asarray(model_a, dtype=object)[:, None], np.asarray(model_b, dtype=object)[:, None]
    as_a, as_b = ma == model, mb == model
    valid = np.isin(v, LABELS)
    win = (as_a & (v == "A")) | (as_b & (v == "B"))
    score = win.astype(np.float64) + 0.5 * ((as_a | as_b) & (v == "tie"))
    comp = ((as_a | as_b) & valid).astype(np.float64)
    return np.stack([score * comp, comp], axis=-1)


def stability(sums: ArrayLike, stat: Callable[[FloatArray], FloatArray] = ratio_stat, *, n_boot: int = 2000,
              seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Each variant's figure, σ (pp), the Stability Score and their bootstrap CIs.

    ``sums`` is ``(n items, V variants, K)``: per-item contributions whose column totals give each
    variant's figure through ``stat`` (``(..., K) -> (...)``). Replicates resample the items of every
    variant together. Empty input or one variant: σ and score are None.
    """
    s = np.asarray(sums, dtype=np.float64)
    n, n_var = s.shape[0], s.shape[1]
    figures = stat(s.sum(axis=0)) if n else np.full(n_var, np.nan)
    sig = float(sigma_pp(figures))
    sig_b = []
    rng = np.random.default_rng(seed)
    flat = s.reshape(n, n_var * s.shape[2])
    for w in bootstrap_weights(n, n_boot, rng):
        sig_b.append(sigma_pp(stat((w @ flat).reshape(w.shape[0], n_var, -1)), axis=1))
    sb = np.concatenate(sig_b) if sig_b else np.empty(0)
    lo, hi = percentile_ci(sb, level) if n_var >= 2 else (float("nan"), float("nan"))
    score = float(stability_score(sig))
    return {
        "figures": [_num(f) for f in figures],
        "sigma_pp": _num(sig), "sigma_ci": [_num(lo), _num(hi)],
        "score": _num(score),
        # the score falls as σ rises: its interval is the mapped σ interval, upper σ to lower score
        "score_ci": [_num(float(stability_score(hi))), _num(float(stability_score(lo)))],
        "n_items": int(n), "n_variants": int(n_var), "n_boot": int(sb.size),
    }


def decompose_by_axis(figures: ArrayLike, axes: Sequence[str], base: int = 0) -> dict[str, Any]:
    """Split the squared shifts from the base variant by axis (one-axis-at-a-time design).

    ``figures[v]`` is variant v's figure (proportion), ``axes[v]`` the axis it changes (the base's own
    entry is ignored). Returns per axis ``{sum_sq_pp2, share, max_shift_pp, variant}`` (``variant`` the
    index of its largest shift), the axis with the largest share, and the largest single-variant shift.
    """
    f = np.asarray(figures, dtype=np.float64)
    shift = 100.0 * (f - f[base])
    idx = [v for v in range(f.size) if v != base and np.isfinite(shift[v])]
    total = float(np.sum(shift[idx] ** 2)) if idx else 0.0
    per: dict[str, dict[str, Any]] = {}
    for ax in dict.fromkeys(axes[v] for v in idx):
        vs = [v for v in idx if axes[v] == ax]
        ss = float(np.sum(shift[vs] ** 2))
        top = max(vs, key=lambda v: abs(shift[v]))
        per[ax] = {"sum_sq_pp2": round(ss, 10), "share": round(ss / total, 10) if total > 0 else None,
                   "max_shift_pp": round(float(shift[top]), 10), "variant": int(top), "n_variants": len(vs)}
    top_v = max(idx, key=lambda v: abs(shift[v])) if idx else None
    return {
        "axes": per, "total_sum_sq_pp2": round(total, 10),
        "top_axis": max(per, key=lambda a: per[a]["sum_sq_pp2"]) if total > 0 else None,
        "largest_shift": None if top_v is None else {"variant": int(top_v), "axis": axes[top_v],
                                                      "shift_pp": round(float(shift[top_v]), 10)},
    }


def guard(figures: ArrayLike, threshold_pp: float, base: int = 0) -> list[dict[str, Any]]:
    """Variants whose figure moves more than ``threshold_pp`` from the base: ``[{variant, shift_pp}]``."""
    f = np.asarray(figures, dtype=np.float64)
    shift = 100.0 * (f - f[base])
    return [{"variant": int(v), "shift_pp": round(float(shift[v]), 10)}
            for v in range(f.size) if v != base and np.isfinite(shift[v]) and abs(shift[v]) > threshold_pp]


def threshold_from_business(tolerated_error_increase: float, error_per_point: float) -> float:
    """Guard threshold in pp: the tolerated increase of the downstream error rate divided by the error-rate
    increase one point of the figure causes (both in the same unit)."""
    if error_per_point <= 0 or tolerated_error_increase < 0:
        raise StatsError("the error increase per point must be > 0 and the tolerated increase >= 0")
    return tolerated_error_increase / error_per_point


def cross_backend(figure_a: float, figure_b: float, verdicts_a: ArrayLike | None = None,
                  verdicts_b: ArrayLike | None = None, tolerance_pp: float = 0.8) -> dict[str, Any]:
    """The same model on two backends: the figure's difference (pp) against the tolerance, and, given
    per-item verdicts, the share of items on which the two agree and Cohen's κ between them."""
    d = 100.0 * (figure_b - figure_a)
    out: dict[str, Any] = {"difference_pp": _num(d), "tolerance_pp": tolerance_pp,
                           "within_tolerance": bool(np.isfinite(d) and abs(d) <= tolerance_pp)}
    if verdicts_a is not None and verdicts_b is not None:
        a, b = np.asarray(verdicts_a, dtype=object), np.asarray(verdicts_b, dtype=object)
        both = np.isin(a, LABELS) & np.isin(b, LABELS)
        out["item_agreement"] = _num(float(np.mean(a[both] == b[both]))) if both.any() else None
        conf = confusion_sums(b[both][:, None], a[both]).sum(axis=0)[0]
        out["kappa"] = _num(float(kappa_stat(conf))) if both.any() else None
        out["n"] = int(both.sum())
    return out


def required_repeats(s: ArrayLike, epsilon: float, z: float = 1.959963984540054) -> NDArray[np.int64]:
    """``⌈(z s / ε)²⌉``, at least 1: repeats that estimate a mean to ±ε given the spread s."""
    if epsilon <= 0:
        raise StatsError("epsilon must be > 0")
    x = np.asarray(s, dtype=np.float64)
    n = np.ceil((z * np.nan_to_num(x) / epsilon) ** 2 - 1e-9)
    return np.maximum(1, n).astype(np.int64)


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 10)


def binary_spread(k: ArrayLike, n: ArrayLike) -> FloatArray:
    """Spread of a 0/1 outcome seen ``k`` times in ``n`` draws, smoothed so a unanimous start is not taken
    for certainty: ``s = sqrt(p̃ (1 − p̃))`` with ``p̃ = (k + ½) / (n + 1)`` (the Jeffreys prior's posterior
    mean). ``n = 0``: 0.5, the largest spread."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    p = (k + 0.5) / (n + 1.0)
    return np.asarray(np.sqrt(p * (1.0 - p)), dtype=np.float64)


def worst_case_epsilon(n: int, z: float = 1.959963984540054) -> float:
    """The half-width ``z · 0.5 / √n`` that ``n`` repeats guarantee for any 0/1 outcome (largest spread 0.5)."""
    return float(z * 0.5 / np.sqrt(n))
