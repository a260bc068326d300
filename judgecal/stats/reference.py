"""Like with like: a judge's agreement with people beside the people's agreement with each other,
measured the same way on the same items. Pure, vectorised functions of label matrices.

A consensus of several people is less noisy than one person, so a judge scored against the consensus
and the humans scored against each other are not comparable. Two definitions that are:

- **pairwise**: the judge's mean Cohen's κ (and raw agreement) with each annotator, beside the
  annotators' mean Cohen's κ (and agreement) with each other; ``κ_J = mean_j κ(J, h_j)``,
  ``κ_H = mean_{a<b} κ(h_a, h_b)`` (the Judge's Verdict benchmark's pair of figures, Han et al., 2025).
- **leave-one-out**: for each annotator ``j``, the consensus ``c_{-j}`` of the *other* annotators (their
  unique most frequent label; items where the others tie are left out) and, on those items, the judge
  against ``c_{-j}`` beside annotator ``j`` against ``c_{-j}``, averaged over ``j``. The judge and the
  annotator face the very same aggregator built from the very same people.

Both sides use the same items: those the judge labelled with at least two annotators. Chance is on the
same basis: a block's chance agreement is Cohen's ``p_e = sum_k p_k q_k`` from its two raters' label
shares, averaged like the agreement. Beside them, the trivial rater that always gives the annotators'
most frequent label (κ 0 by construction; its agreement is the mean share of that label).

Every figure is ``{estimate, ci_low, ci_high, n}`` with an item-bootstrap percentile CI; all blocks share
one set of resampled items, so the difference judge − humans has a paired interval. Each block is a
``K x K`` confusion of per-item counts, bootstrapped as sums (:func:`judgecal.stats.bootstrap.bootstrap_sums`)
in chunks of blocks, so many annotators (hundreds of pairs) stay within bounded memory.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import bootstrap_sums, metric, percentile_ci, safe_ratio

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

DEFINITIONS = {
    "pairwise": "the judge's mean Cohen's κ (and agreement) with each annotator, beside the annotators' mean "
                "κ (and agreement) with each other, on the same items",
    "leave_one_out": "the judge against the majority of the other annotators, beside each annotator against "
                     "the majority of the others (the same aggregator, the same items), averaged over annotators",
}
CHUNK_CELLS = 20_000  # columns bootstrapped at once


def encode(humans: ArrayLike, judge: ArrayLike) -> tuple[IntArray, IntArray, list[str]]:
    """Integer codes (``-1`` missing) of an items x annotators matrix and a judge vector, one label set."""
    h = np.asarray(humans.to_numpy(dtype=object) if isinstance(humans, pd.DataFrame) else humans, dtype=object)
    if h.ndim != 2:
        raise StatsError("humans must be an items x annotators matrix")
    f = np.asarray(pd.Series(judge, dtype=object).to_numpy(dtype=object), dtype=object)
    if len(f) != h.shape[0]:
        raise StatsError(f"humans has {h.shape[0]} items but judge has {len(f)}")
    hp, fp = pd.notna(h), pd.notna(f)
    labels = sorted({str(v) for v in h[hp]} | {str(v) for v in f[fp]})
    index = pd.Index(labels)
    hc = np.full(h.shape, -1, dtype=np.int64)
    hc[hp] = index.get_indexer(pd.Index([str(v) for v in h[hp]]))
    fc = np.full(len(f), -1, dtype=np.int64)
    fc[fp] = index.get_indexer(pd.Index([str(v) for v in f[fp]]))
    return hc, fc, labels


def others_majority(h: IntArray, k: int) -> IntArray:
    """``c[i, j]``: the unique most frequent label of the annotators other than ``j`` on item ``i``
    (``-1`` when they tie or none of them labelled it)."""
    n, m = h.shape
    counts = np.zeros((n, k), dtype=np.int64)
    for lab in range(k):
        counts[:, lab] = (h == lab).sum(1)
    own = (h[:, :, None] == np.arange(k)[None, None, :]).astype(np.int64)  # n x m x k
    others = counts[:, None, :] - own
    top = others.max(2)
    unique = (others == top[:, :, None]).sum(2) == 1
    return np.where(unique & (top > 0), others.argmax(2), -1)


def _cells(a: IntArray, b: IntArray, k: int) -> FloatArray:
    """Per-item one-hot confusion cells ``a * k + b`` of columns of code pairs (n x blocks*k*k); a row
    with either side missing adds nothing."""
    n, blocks = a.shape
    ok = (a >= 0) & (b >= 0)
    out = np.zeros((n, blocks * k * k))
    rows, cols = np.nonzero(ok)
    out[rows, cols * k * k + a[rows, cols] * k + b[rows, cols]] = 1.0
    return out


def block_stats(conf: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cohen's κ, agreement ``p_o`` and chance agreement ``p_e`` of confusion blocks ``(..., K, K)``
    (NaN for an empty block; κ NaN when ``p_e = 1``)."""
    total = conf.sum((-2, -1))
    po = safe_ratio(np.trace(conf, axis1=-2, axis2=-1), total)
    pe = safe_ratio((conf.sum(-1) * conf.sum(-2)).sum(-1), total**2)
    return safe_ratio(po - pe, 1 - pe), po, pe


def _nanmean(x: FloatArray) -> FloatArray:
    ok = np.isfinite(x)
    return safe_ratio(np.where(ok, x, 0.0).sum(-1), ok.sum(-1))


def _side(a: IntArray, b: IntArray, k: int, n_boot: int, seed: int) -> dict[str, Any]:
    """Mean κ, agreement and chance over the blocks (columns) of ``a`` against ``b``: the point values
    and the bootstrap replicates of each mean (``n_boot`` rows)."""
    n, blocks = a.shape
    per = max(1, CHUNK_CELLS // (k * k))
    point = {key: np.full(blocks, np.nan) for key in ("kappa", "po", "pe")}
    reps = {key: np.zeros(n_boot) for key in ("kappa", "po", "pe")}
    counted = {key: np.zeros(n_boot) for key in ("kappa", "po", "pe")}
    n_rows = 0
    for s in range(0, blocks, per):
        cells = _cells(a[:, s:s + per], b[:, s:s + per], k)
        width = cells.shape[1] // (k * k)
        n_rows += int(cells.sum())
        kap, po, pe = block_stats(cells.sum(0).reshape(width, k, k))
        for key, v in (("kappa", kap), ("po", po), ("pe", pe)):
            point[key][s:s + width] = v
        if n_boot and n:
            boot = bootstrap_sums(cells, n_boot, seed).reshape(n_boot, width, k, k)
            for key, v in zip(("kappa", "po", "pe"), block_stats(boot), strict=True):
                ok = np.isfinite(v)
                reps[key] += np.where(ok, v, 0.0).sum(1)
                counted[key] += ok.sum(1)
    return {"point": {key: float(_nanmean(v)) if v.size else float("nan") for key, v in point.items()},
            "boot": {key: safe_ratio(reps[key], counted[key]) for key in reps}, "n": n_rows,
            "blocks": int(np.isfinite(point["po"]).sum())}


def _figure(est: float, boot: FloatArray, n: int, level: float) -> dict[str, object]:
    lo, hi = percentile_ci(boot, level) if boot.size else (float("nan"), float("nan"))
    return metric(est, lo, hi, n)


def _compare(judge: dict[str, Any], humans: dict[str, Any], n_items: int, level: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, side in (("judge", judge), ("humans", humans)):
        out[name] = {"kappa": _figure(side["point"]["kappa"], side["boot"]["kappa"], side["n"], level),
                     "accuracy": _figure(side["point"]["po"], side["boot"]["po"], side["n"], level),
                     "chance_accuracy": metric(side["point"]["pe"], float("nan"), float("nan"), side["n"])[
                         "estimate"], "blocks": side["blocks"]}
    out["difference"] = {
        key: _figure(judge["point"][stat] - humans["point"][stat], judge["boot"][stat] - humans["boot"][stat],
                     n_items, level) for key, stat in (("kappa", "kappa"), ("accuracy", "po"))}
    return out


def like_for_like(humans: ArrayLike, judge: ArrayLike, *, n_boot: int = 2000, seed: int = 0,
                  level: float = 0.95) -> dict[str, Any]:
    """The judge beside the humans under both definitions (module docstring).

    ``humans``: items x annotators labels (``None``/NaN where an annotator did not label the item);
    ``judge``: its label per item (``None`` leaves the item out). Returns ``{n_items, n_annotators,
    labels, trivial, pairwise, leave_one_out}``; a definition is ``None`` when it cannot be computed
    (fewer than two annotators on any item the judge labelled). Each definition holds ``judge`` and
    ``humans`` (``kappa``, ``accuracy``, ``chance_accuracy``, ``blocks``), ``difference`` (judge −
    humans, paired CIs) and ``definition`` in words.
    """
    hc, fc, labels = encode(humans, judge)
    k = max(len(labels), 1)
    basis = (fc >= 0) & ((hc >= 0).sum(1) >= 2)
    h, f = hc[basis], fc[basis]
    n, m = h.shape
    out: dict[str, Any] = {"n_items": int(n), "n_annotators": int(m), "labels": labels, "trivial": None,
                           "pairwise": None, "leave_one_out": None}
    if n == 0 or m < 2:
        return out
    present = h >= 0
    shares = np.bincount(h[present], minlength=k) / present.sum()
    mode = int(shares.argmax())
    per_ann = safe_ratio(((h == mode) & present).sum(0), present.sum(0))
    out["trivial"] = {"label": labels[mode], "accuracy": float(_nanmean(per_ann)), "kappa": 0.0,
                      "words": f"always answering {labels[mode]!r}, the annotators' most frequent label"}
    fj = np.repeat(f[:, None], m, axis=1)
    pairs = np.array(list(combinations(range(m), 2)), dtype=np.int64)
    judge_pw = _side(fj, h, k, n_boot, seed)
    human_pw = _side(h[:, pairs[:, 0]], h[:, pairs[:, 1]], k, n_boot, seed)
    out["pairwise"] = {"definition": DEFINITIONS["pairwise"], **_compare(judge_pw, human_pw, n, level)}
    c = others_majority(h, k)
    scored = (c >= 0) & present
    if scored.any():
        judge_loo = _side(np.where(scored, fj, -1), c, k, n_boot, seed)
        human_loo = _side(np.where(scored, h, -1), c, k, n_boot, seed)
        out["leave_one_out"] = {"definition": DEFINITIONS["leave_one_out"],
                                **_compare(judge_loo, human_loo, n, level)}
    return out


__all__ = ["DEFINITIONS", "block_stats", "encode", "like_for_like", "others_majority"]
