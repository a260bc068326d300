"""Figures for binary and categorical (label) judges against a human truth, with cluster-bootstrap CIs.

Each row is one judgment of an item that has a human truth: the human's code ``t`` and the judge's code
``p`` in ``0..k-1`` (``p = -1``: the judge gave no usable answer; counted in ``n_invalid``, left out of
every other figure). From the ``k x k`` confusion ``C`` (rows: truth, columns: judge), with
``tp_c = C_cc``, ``fn_c = sum_j C_cj - tp_c``, ``fp_c = sum_i C_ic - tp_c`` and ``n = sum C``:

- ``accuracy = trace C / n``;
- ``cohen_kappa = (p_o - p_e) / (1 - p_e)``, ``p_e = sum_c C_c. C_.c / n^2`` (Cohen, 1960); with
  ``ordinal=True`` the quadratic-weighted ``1 - sum w C / sum w E``, ``w_ij = (i - j)^2 / (k - 1)^2`` on the
  codes, ``E`` the product of the margins (Cohen, 1968; scikit-learn's ``weights="quadratic"`` with
  ``labels=range(k)``);
- ``recall_by_label[c] = tp_c / (tp_c + fn_c)``, ``precision_by_label[c] = tp_c / (tp_c + fp_c)``;
  undefined (``None``) when the label is never the truth / never predicted;
- ``macro_f1 = (1/k) sum_c 2 tp_c / (2 tp_c + fp_c + fn_c)`` over all ``k`` labels, a label used by nobody
  counting 0: scikit-learn's ``f1_score(average="macro", labels=range(k), zero_division=0)`` (unlike
  :func:`judgecal.stats.bootstrap.macro_f1_from_confusion`, which leaves such labels out);
- the trivial reference beside them: ``majority_accuracy = max_c C_c. / n`` and ``majority_macro_f1 =
  2 max_c C_c. / (k (n + max_c C_c.))``, what a rater that always answers the commonest human label gets.

Binary judges (``positive`` given): ``tpr`` and ``tnr`` (recall of the positive and negative label),
``precision`` and ``f1`` of the positive label, ``balanced_accuracy = (tpr + tnr) / 2``,
``judge_positive_rate = (tp + fp) / n`` and ``human_positive_rate = (tp + fn) / n``.

Every figure is a function of the confusion, so the bootstrap is one matrix product of per-cluster
confusion counts (:func:`judgecal.stats.bootstrap.bootstrap_sums`; rows sharing a ``groups`` label are
resampled together, Field & Welsh, 2007) with percentile intervals.

Pass rates. A judge that passes a share ``q`` of outputs reports ``q``; the real rate ``pi`` satisfies
``q = tpr pi + (1 - tnr)(1 - pi)``, hence ``pi = (q + tnr - 1) / (tpr + tnr - 1)`` clipped to ``[0, 1]``
(Rogan & Gladen, 1978, Am J Epidemiol 107:71-76), with ``tpr``/``tnr`` measured on human-labelled items;
it is undefined when ``tpr + tnr <= 1`` (a judge no better than chance carries no information). PPI++
(:func:`judgecal.stats.ppi.ppi_mean`) is the other correction; :func:`pass_rate_plan` says how many
human labels an interval of a given half-width needs with and without the judge.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import (
    accuracy_from_confusion,
    bootstrap_sums,
    cohen_kappa_from_confusion,
    metric,
    percentile_ci,
    safe_ratio,
)
from judgecal.stats.ordinal import quadratic_weights, weighted_kappa_from_confusion
from judgecal.stats.ppi import plan_from_data, ppi_mean

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
NAN = float("nan")


def _codes(values: ArrayLike, name: str) -> IntArray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise StatsError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        try:
            f = a.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise StatsError(f"{name} must hold integer codes") from exc
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise StatsError(f"{name} must hold integer codes")
        return f.astype(np.int64)
    return a.astype(np.int64)


def _binary(values: ArrayLike, name: str) -> FloatArray:
    a = _codes(values, name)
    if np.any((a != 0) & (a != 1)):
        raise StatsError(f"{name} must hold only 0 and 1")
    return a.astype(np.float64)


def _clusters(groups: ArrayLike | None, n: int, name: str) -> tuple[IntArray, int]:
    """Each row's cluster index ``0..G-1`` (default: one cluster per row) and ``G``."""
    if groups is None:
        return np.arange(n, dtype=np.int64), n
    g_all = np.asarray(groups, dtype=object)
    if g_all.shape != (n,):
        raise StatsError(f"{name} must have one label per row ({n}), got shape {g_all.shape}")
    codes, uniques = pd.factorize(g_all, use_na_sentinel=False)  # a missing label is a cluster too
    return np.asarray(codes, dtype=np.int64), len(uniques)


def _cluster_sums(cols: FloatArray, g: IntArray, n_groups: int) -> FloatArray:
    """Per-cluster column totals (``G x m``) of per-row columns (``rows x m``)."""
    m = cols.shape[1]
    idx = (g[:, None] * m + np.arange(m)[None, :]).ravel()
    sums = np.bincount(idx, weights=cols.ravel(), minlength=n_groups * m)
    return np.asarray(sums, dtype=np.float64).reshape(n_groups, m)


def _figures(conf: FloatArray, ordinal: bool, positive: int | None) -> dict[str, FloatArray]:
    """Every figure of confusion matrices ``(B, k, k)``: arrays ``(B,)`` or, per label, ``(B, k)``."""
    k = conf.shape[-1]
    tp = np.diagonal(conf, axis1=-2, axis2=-1)
    true_tot, pred_tot = conf.sum(-1), conf.sum(-2)
    n = true_tot.sum(-1)
    kappa = (weighted_kappa_from_confusion(conf, quadratic_weights(k)) if ordinal
             else cohen_kappa_from_confusion(conf))
    f1 = safe_ratio(2 * tp, true_tot + pred_tot)
    recall, precision = safe_ratio(tp, true_tot), safe_ratio(tp, pred_tot)
    top = true_tot.max(-1)
    out = {
        "accuracy": accuracy_from_confusion(conf),
        "cohen_kappa": kappa,
        "macro_f1": np.where(n > 0, np.nan_to_num(f1).sum(-1) / max(k, 1), np.nan),
        "majority_accuracy": safe_ratio(top, n),
        "majority_macro_f1": safe_ratio(2 * top, k * (n + top)),
        "recall_by_label": recall,
        "precision_by_label": precision,
    }
    if positive is not None:
        neg = 1 - positive
        tpr, tnr = recall[:, positive], recall[:, neg]
        out |= {
            "tpr": tpr,
            "tnr": tnr,
            "precision": precision[:, positive],
            "f1": f1[:, positive],
            "balanced_accuracy": (tpr + tnr) / 2,
            "judge_positive_rate": safe_ratio(pred_tot[:, positive], n),
            "human_positive_rate": safe_ratio(true_tot[:, positive], n),
        }
    return out


def label_agreement(truth: ArrayLike, pred: ArrayLike, k: int, *, groups: ArrayLike | None = None,
                    positive: int | None = None, ordinal: bool = False, n_boot: int = 2000, seed: int = 0,
                    level: float = 0.95) -> dict[str, Any]:
    """Agreement of a label judge's codes ``pred`` with the human ``truth`` (both ``0..k-1``; ``pred == -1``
    is no usable answer), each figure ``{estimate, ci_low, ci_high, n}`` with a cluster-bootstrap
    percentile CI (``groups``: each row's cluster, default one per row).

    Keys: ``accuracy``, ``cohen_kappa`` (quadratic-weighted when ``ordinal``), ``macro_f1``,
    ``majority_accuracy``, ``majority_macro_f1``, ``recall_by_label`` and ``precision_by_label`` (lists of
    ``k`` figures in code order, ``n`` the label's rows in truth / in the judge's answers), with
    ``positive`` (``k == 2``) also ``tpr``, ``tnr``, ``precision`` (``n``: the denominators' rows),
    ``f1``, ``balanced_accuracy``, ``judge_positive_rate``, ``human_positive_rate``; every other figure's
    ``n`` is the number of valid rows. Undefined values are ``None``. Also ``confusion`` (``k x k`` counts,
    rows human, columns judge), ``n_invalid`` (``{estimate: invalid rows, n: all rows}``, no CI, as
    :func:`judgecal.stats.ordinal.pointwise_agreement`) and ``n_clusters`` (clusters resampled).
    Truth codes outside ``0..k-1`` or judge codes outside ``-1..k-1`` raise
    :class:`~judgecal.errors.StatsError` (a ``ValueError``).
    """
    if k < 1:
        raise StatsError(f"k, the number of labels, must be at least 1, got {k}")
    if positive is not None and (k != 2 or positive not in (0, 1)):
        raise StatsError(f"positive must be 0 or 1 with k == 2, got positive={positive!r}, k={k}")
    t, p = _codes(truth, "truth"), _codes(pred, "pred")
    if t.shape != p.shape:
        raise StatsError(f"truth has {t.size} rows but pred has {p.size}")
    if np.any((t < 0) | (t >= k)):
        raise StatsError(f"truth codes must lie in 0..{k - 1}")
    if np.any((p < -1) | (p >= k)):
        raise StatsError(f"pred codes must lie in 0..{k - 1}, or be -1 for no usable answer")
    ok = p >= 0
    g_all, _ = _clusters(groups, t.size, "groups")
    g, n_groups = _clusters(None if groups is None else g_all[ok], int(ok.sum()), "groups")
    kk = k * k
    cells = np.bincount(g * kk + t[ok] * k + p[ok], minlength=n_groups * kk)
    sums = np.asarray(cells, dtype=np.float64).reshape(n_groups, kk)
    boot = bootstrap_sums(sums, n_boot, seed)
    conf = sums.sum(0).reshape(1, k, k)
    est = _figures(conf, ordinal, positive)
    rep = _figures(boot.reshape(-1, k, k), ordinal, positive)
    n_valid = int(ok.sum())
    true_tot, pred_tot = conf[0].sum(1), conf[0].sum(0)
    sizes = {"tpr": true_tot, "tnr": true_tot, "precision": pred_tot}

    def fig(name: str, col: int | None = None, n: float = n_valid) -> dict[str, object]:
        e, r = (est[name][0], rep[name]) if col is None else (est[name][0, col], rep[name][:, col])
        lo, hi = percentile_ci(r, level)
        return metric(float(e), lo, hi, int(n))

    out: dict[str, Any] = {name: fig(name) for name in ("accuracy", "cohen_kappa", "macro_f1",
                                                         "majority_accuracy", "majority_macro_f1")}
    out["recall_by_label"] = [fig("recall_by_label", c, true_tot[c]) for c in range(k)]
    out["precision_by_label"] = [fig("precision_by_label", c, pred_tot[c]) for c in range(k)]
    if positive is not None:
        neg = 1 - positive
        for name in ("tpr", "tnr", "precision"):
            out[name] = fig(name, n=sizes[name][neg if name == "tnr" else positive])
        for name in ("f1", "balanced_accuracy", "judge_positive_rate", "human_positive_rate"):
            out[name] = fig(name)
    out["confusion"] = conf[0].astype(np.int64).tolist()
    out["n_invalid"] = {"estimate": int((~ok).sum()), "ci_low": None, "ci_high": None, "n": int(ok.size)}
    out["n_clusters"] = n_groups
    return out


def rogan_gladen(apparent: ArrayLike, tpr: ArrayLike, tnr: ArrayLike) -> FloatArray:
    """Corrected prevalence ``pi = (q + tnr - 1) / (tpr + tnr - 1)`` clipped to ``[0, 1]`` (Rogan & Gladen,
    1978), elementwise over broadcast inputs; NaN where ``tpr + tnr - 1 <= 0`` (no better than chance: no
    correction possible) or any input is NaN."""
    q, se, sp = (np.asarray(v, dtype=np.float64) for v in (apparent, tpr, tnr))
    youden = se + sp - 1
    ok = youden > 0  # False for NaN too
    q, se, sp, youden, ok = np.broadcast_arrays(q, se, sp, youden, ok)
    out = np.full(youden.shape, np.nan)
    np.divide(q + sp - 1, youden, out=out, where=ok)
    return np.clip(out, 0.0, 1.0)  # NaN stays NaN


def corrected_pass_rate(truth_pos: ArrayLike, judge_pos_labelled: ArrayLike, judge_pos_all: ArrayLike, *,
                        groups_labelled: ArrayLike | None = None, groups_all: ArrayLike | None = None,
                        n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """The evaluated system's real pass rate, from the judge's verdicts corrected by human labels.

    ``truth_pos``/``judge_pos_labelled``: 0/1 over the human-labelled items (the human's and the judge's
    verdict); ``judge_pos_all``: 0/1 over every item the judge labelled, the labelled ones included (decide
    or drop invalid verdicts before calling). Returns figures ``{estimate, ci_low, ci_high, n}``:

    - ``judge_reported``: ``q``, the judge's pass rate over all items (bootstrap over ``groups_all``;
      ``n = n_all``);
    - ``human_only``: the mean of ``truth_pos`` (bootstrap over ``groups_labelled``; ``n = n_labelled``);
    - ``rogan_gladen``: :func:`rogan_gladen` with ``q`` over *all* items (the whole evaluated set) and
      ``tpr``/``tnr`` from the labelled items; its CI bootstraps the labelled items and all items
      independently (seeds ``seed`` and ``seed + 1``) and takes each replicate's estimate from its own
      ``q``, ``tpr``, ``tnr``; ``n_undefined`` counts the replicates with no correction possible
      (``tpr + tnr <= 1`` or a side without rows). An undefined point estimate leaves the CI undefined
      too. ``n = n_labelled``;
    - ``ppi``: PPI++ (:func:`judgecal.stats.ppi.ppi_mean`, normal-approximation interval for independent
      items, ``groups`` not used) with ``Yhat_u`` the judge's verdicts on the items not labelled, plus
      ``lam`` and ``width_ratio``; ``n = n_labelled``. ``ppi_mean`` depends on ``Yhat_u`` only through its
      count and number of passes, ``sum(judge_pos_all) - sum(judge_pos_labelled)``, so those are all that
      is used (the labelled items' verdicts in ``judge_pos_all`` must be ``judge_pos_labelled``);

    and ``n_labelled``, ``n_all``.
    """
    y, yl, ya = (_binary(v, name) for v, name in ((truth_pos, "truth_pos"),
                                                  (judge_pos_labelled, "judge_pos_labelled"),
                                                  (judge_pos_all, "judge_pos_all")))
    n, n_all = y.size, ya.size
    if yl.size != n:
        raise StatsError(f"truth_pos has {n} items but judge_pos_labelled has {yl.size}")
    n_u, u_pos = n_all - n, int(ya.sum() - yl.sum())
    if n_u < 0 or not 0 <= u_pos <= n_u:
        raise StatsError("judge_pos_all must cover every item the judge labelled, the labelled ones included "
                         f"({n_all} items with {int(ya.sum())} passes cannot contain {n} labelled items with "
                         f"{int(yl.sum())} passes)")
    gl, n_gl = _clusters(groups_labelled, n, "groups_labelled")
    ga, n_ga = _clusters(groups_all, n_all, "groups_all")
    # labelled: [truth pass, 1, tp, fn, tn, fp]; all: [judge pass, 1]
    lab = _cluster_sums(np.column_stack([y, np.ones(n), y * yl, y * (1 - yl), (1 - y) * (1 - yl),
                                         (1 - y) * yl]), gl, n_gl)
    alls = _cluster_sums(np.column_stack([ya, np.ones(n_all)]), ga, n_ga)
    boot_l, boot_a = bootstrap_sums(lab, n_boot, seed), bootstrap_sums(alls, n_boot, seed + 1)

    def rate(s: FloatArray) -> FloatArray:
        return safe_ratio(s[:, 0], s[:, 1])

    def rg(sl: FloatArray, sa: FloatArray) -> FloatArray:
        return rogan_gladen(rate(sa), safe_ratio(sl[:, 2], sl[:, 2] + sl[:, 3]),
                            safe_ratio(sl[:, 4], sl[:, 4] + sl[:, 5]))

    def fig(stat: FloatArray, reps: FloatArray, size: int) -> dict[str, Any]:
        lo, hi = percentile_ci(reps, level)
        return metric(float(stat[0]), lo, hi, size)

    point_l, point_a = lab.sum(0)[None, :], alls.sum(0)[None, :]
    pi, pi_b = rg(point_l, point_a), rg(boot_l, boot_a) if boot_l.size and boot_a.size else np.empty(0)
    corrected = fig(pi, pi_b, n) if np.isfinite(pi[0]) else metric(NAN, NAN, NAN, n)
    corrected["n_undefined"] = int((~np.isfinite(pi_b)).sum()) if pi_b.size else n_boot
    r = ppi_mean(y, yl, np.r_[np.ones(u_pos), np.zeros(n_u - u_pos)], level=level)
    ppi_fig: dict[str, Any] = metric(r.estimate, r.ci_low, r.ci_high, n)
    ppi_fig["lam"] = None if not np.isfinite(r.lam) else float(r.lam)
    ppi_fig["width_ratio"] = None if not np.isfinite(r.width_ratio) else float(r.width_ratio)
    return {"judge_reported": fig(rate(point_a), rate(boot_a), n_all),
            "human_only": fig(rate(point_l), rate(boot_l), n),
            "rogan_gladen": corrected, "ppi": ppi_fig, "n_labelled": n, "n_all": n_all}


def pass_rate_plan(truth_pos: ArrayLike, judge_pos_labelled: ArrayLike, n_all: int, halfwidth: float,
                   level: float = 0.95) -> dict[str, Any]:
    """Human labels a pass-rate interval of half-width ``h`` needs, from a pilot of labelled items.

    Human only: ``n = ceil(z^2 s^2 / h^2)`` with ``s^2 = p (1 - p) n / (n - 1)``, the pilot's variance with
    divisor ``n - 1`` (the normal-approximation interval of a proportion), the same ``sigma^2`` the PPI++
    plan reads, so the two counts are comparable and PPI++ never needs more. With PPI++: :func:`judgecal.stats.ppi.plan_from_data` (``sigma^2`` the
    pilot's ``var(Y)`` with divisor ``n - 1``, ``rho = corr(Y, Yhat)``), where the labels come out of the
    ``n_all`` judged items, so the unlabelled count is ``N = n_all - n_ppi``: solved as the fixed point of
    that equation (the iteration is monotone, so it settles). Returns ``n_human_only``, ``n_ppi`` (each
    a total; ``more_human_only``/``more_ppi`` beyond the pilot), ``enough_items`` (``n_ppi <= n_all``),
    the inputs ``pass_rate``, ``z``, ``halfwidth``, ``level``, ``n_labelled``, ``n_all``,
    ``n_unlabelled``, ``sigma2``, ``rho``, ``rho_defined``, and ``ppi_plan`` (plan_from_data's own dict,
    with its gain and the Dorner et al. ceiling). A constant pilot (``p`` 0 or 1) plans 0 human-only labels:
    read it as "the pilot shows no variance", not as "no labels needed".
    """
    y = _binary(truth_pos, "truth_pos")
    yl = _binary(judge_pos_labelled, "judge_pos_labelled")
    if yl.size != y.size:
        raise StatsError(f"truth_pos has {y.size} items but judge_pos_labelled has {yl.size}")
    if not halfwidth > 0:
        raise StatsError(f"halfwidth must be positive, not {halfwidth}")
    if not 0 < level < 1:
        raise StatsError(f"level must lie in (0, 1), not {level}")
    n = int(y.size)
    if n < 2:
        raise StatsError("planning needs at least 2 labelled items")
    if n_all < n:
        raise StatsError(f"n_all ({n_all}) counts every judged item, so it cannot be below n_labelled ({n})")
    z = float(special.ndtri(0.5 + level / 2))
    p = float(y.mean())
    n_u = n_all - n
    plan = plan_from_data(y, yl, halfwidth, level=level, n_unlabelled=n_u)
    for _ in range(10_000):
        nxt = max(n_all - int(plan["n_ppi"]), 0)
        if nxt == n_u:
            break
        n_u = nxt
        plan = plan_from_data(y, yl, halfwidth, level=level, n_unlabelled=n_u)
    n_p, n_h = int(plan["n_ppi"]), max(0, int(plan["n_human_only"]))
    return {"n_human_only": n_h, "n_ppi": n_p, "more_human_only": max(n_h - n, 0),
            "more_ppi": max(n_p - n, 0), "enough_items": n_p <= n_all, "pass_rate": p, "z": z,
            "halfwidth": halfwidth, "level": level, "n_labelled": n, "n_all": int(n_all), "n_unlabelled": n_u,
            "sigma2": plan["sigma2"], "rho": plan["rho"], "rho_defined": plan["rho_defined"],
            "ppi_plan": plan}


__all__ = ["corrected_pass_rate", "label_agreement", "pass_rate_plan", "rogan_gladen"]
