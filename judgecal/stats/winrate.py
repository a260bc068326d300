"""Model-level results from pairwise verdicts: win rates, the win-rate matrix, Bradley–Terry, and how
closely a judge's model ranking follows the humans'.

Inputs are item-oriented: per item the two candidates ``model_a``/``model_b`` and a label ``A``
(``model_a`` better), ``B`` or ``tie``; anything else (``invalid``, ``None``, NaN) is no comparison.

- Win rate of model ``m``: ``(wins + ties / 2) / comparisons`` over the items where ``m`` is a candidate.
- A judge run in both orders is scored by its swap-debiased verdict: the common verdict when both
  orders agree, else ``tie`` (Zheng et al., 2023; Wang et al., 2023).
- Intervals: item bootstrap; per-item sums ``S`` go through ``W @ S`` for all replicates at once
  (:func:`judgecal.stats.bootstrap.bootstrap_sums`), percentile intervals.
- Bradley & Terry (1952) strengths by evalica's iteration (Newman, 2023; Ustalov, 2024), ties counted as
  half a win to each side, with evalica's bootstrap over comparisons, every replicate fitted at once.
- System-level alignment: Spearman's rho and Kendall's tau-b between two raters' model win rates
  (e.g. humans and a judge) with bootstrap CIs over items, and the model pairs the judge orders the
  other way round; a reversal is *significant* when the humans' bootstrap CI of the difference
  excludes 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import bootstrap_sums, percentile_ci, safe_ratio
from judgecal.stats.inference import average_ranks, kendall_tau_b, spearman

FloatArray = NDArray[np.float64]
LABELS = ("A", "B", "tie")
_COLUMNS = ["estimate", "ci_low", "ci_high", "n"]


def swap_debiased(verdict_ab: ArrayLike, verdict_ba: ArrayLike) -> NDArray[np.object_]:
    """Swap-debiased item-oriented verdict from the two presentation orders.

    Both orders given: their common verdict when they agree, else ``tie`` (an ``invalid`` order that
    the other does not share therefore gives ``tie``). An order that was not run (``None``/NaN)
    leaves the other order's verdict.
    """
    ab, ba = as_objects(verdict_ab), as_objects(verdict_ba)
    if ab.shape != ba.shape:
        raise StatsError(f"verdict_ab has {ab.size} entries but verdict_ba has {ba.size}")
    has_ab, has_ba = pd.notna(ab), pd.notna(ba)
    out = np.where(ab == ba, ab, "tie").astype(object)
    out[has_ab & ~has_ba] = ab[has_ab & ~has_ba]
    out[~has_ab & has_ba] = ba[~has_ab & has_ba]
    out[~has_ab & ~has_ba] = None
    return out


def as_objects(x: ArrayLike) -> NDArray[np.object_]:
    """1-D object array with ``None`` for missing values."""
    arr = np.array(pd.Series(x, dtype=object).to_numpy(dtype=object), dtype=object)
    if pd.api.types.infer_dtype(arr, skipna=False) != "string":  # else every entry a string: none missing
        arr[pd.isna(arr)] = None
    return arr


def outcome_scores(labels: ArrayLike) -> FloatArray:
    """Score of ``model_a`` per item: 1 for ``A``, 0 for ``B``, 0.5 for ``tie``, NaN otherwise."""
    lab = as_objects(labels)
    return np.select([lab == "A", lab == "B", lab == "tie"], [1.0, 0.0, 0.5], default=np.nan)


def model_index(model_a: ArrayLike, model_b: ArrayLike
                ) -> tuple[NDArray[np.int64], NDArray[np.int64], list[str]]:
    a = as_objects(model_a)
    b = as_objects(model_b)
    if a.shape != b.shape:
        raise StatsError(f"model_a has {a.size} entries but model_b has {b.size}")
    same = np.flatnonzero(a == b)
    if same.size:
        raise StatsError(f"item {int(same[0])}: model_a and model_b are both {a[same[0]]!r}")
    codes, uniques = pd.factorize(np.concatenate([a, b]), sort=True)
    if (codes < 0).any():
        raise StatsError(f"item {int(np.flatnonzero(codes < 0)[0] % len(a))}: missing model name")
    return codes[: len(a)].astype(np.int64), codes[len(a):].astype(np.int64), [str(u) for u in uniques]


def model_sums(ia: NDArray[np.int64], ib: NDArray[np.int64], score: FloatArray, m: int) -> FloatArray:
    """Per-item sums ``(n, 2m)``: each model's score on the item, then whether it took part."""
    ok = np.isfinite(score)
    rows = np.flatnonzero(ok)
    s = np.zeros((len(score), 2 * m))
    s[rows, ia[ok]] = score[ok]
    s[rows, ib[ok]] = 1.0 - score[ok]
    s[rows, m + ia[ok]] = 1.0
    s[rows, m + ib[ok]] = 1.0
    return s


def _frame(est: FloatArray, boot: FloatArray, n: FloatArray, index: list[Any], level: float) -> pd.DataFrame:
    ci = [percentile_ci(boot[:, k], level) for k in range(len(index))]
    return pd.DataFrame({"estimate": est, "ci_low": [c[0] for c in ci], "ci_high": [c[1] for c in ci],
                         "n": n.astype(np.int64)}, index=pd.Index(index, name="model"))


def win_rates(model_a: ArrayLike, model_b: ArrayLike, labels: ArrayLike, *, n_boot: int = 2000, seed: int = 0,
              level: float = 0.95) -> pd.DataFrame:
    """Each model's win rate ``(wins + ties/2) / n`` with an item-bootstrap percentile CI.

    Returns a frame indexed by model with ``estimate, ci_low, ci_high, n`` (``n`` = comparisons);
    empty input gives an empty frame.
    """
    s, finish = win_rates_deferred(model_a, model_b, labels, level=level)
    return finish(bootstrap_sums(s, n_boot, seed))


def win_rates_deferred(model_a: ArrayLike, model_b: ArrayLike, labels: ArrayLike, *, level: float = 0.95
                       ) -> tuple[FloatArray, Callable[[FloatArray], pd.DataFrame]]:
    """:func:`win_rates` in two steps: its per-item sums, and the function of their bootstrap replicates
    (``W @ sums``) that gives the frame (:class:`judgecal.stats.bootstrap.Replicates` runs many together)."""
    ia, ib, models = model_index(model_a, model_b)
    m = len(models)
    s = model_sums(ia, ib, outcome_scores(labels), m)
    if len(ia) != len(s):
        raise StatsError(f"labels has {len(s)} entries but model_a has {len(ia)}")
    return s, rates_finish(s.sum(0), m, models, level)


def rates_finish(tot: FloatArray, m: int, models: list[str], level: float) -> Callable[[FloatArray], pd.DataFrame]:
    """The win-rate frame of :func:`model_sums` totals ``tot`` and their replicates."""
    def finish(boot: FloatArray) -> pd.DataFrame:
        return _frame(safe_ratio(tot[:m], tot[m:]), safe_ratio(boot[:, :m], boot[:, m:]) if boot.size
                      else np.empty((0, m)), tot[m:], models, level)
    return finish


def win_rate_matrix(model_a: ArrayLike, model_b: ArrayLike, labels: ArrayLike, *, n_boot: int = 2000,
                    seed: int = 0, level: float = 0.95) -> dict[str, pd.DataFrame]:
    """Head-to-head win rates: entry ``[r, c]`` is row model ``r``'s win rate against column model ``c``.

    Returns ``{estimate, ci_low, ci_high, n}`` as model x model frames (NaN where two models never
    met, and on the diagonal); ``[c, r] = 1 - [r, c]`` and its interval is the mirror image.
    """
    s, finish = win_rate_matrix_deferred(model_a, model_b, labels, level=level)
    return finish(bootstrap_sums(s, n_boot, seed))


def win_rate_matrix_deferred(model_a: ArrayLike, model_b: ArrayLike, labels: ArrayLike, *, level: float = 0.95
                             ) -> tuple[FloatArray, Callable[[FloatArray], dict[str, pd.DataFrame]]]:
    """:func:`win_rate_matrix` in two steps (see :func:`win_rates_deferred`)."""
    ia, ib, models = model_index(model_a, model_b)
    m = len(models)
    score = outcome_scores(labels)
    lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
    score_lo = np.where(ia == lo, score, 1.0 - score)
    pair = lo * m + hi
    pairs, pcode = np.unique(pair, return_inverse=True)
    p = len(pairs)
    ok = np.isfinite(score_lo)
    s = np.zeros((len(score), 2 * p))
    rows = np.flatnonzero(ok)
    s[rows, pcode[ok]] = score_lo[ok]
    s[rows, p + pcode[ok]] = 1.0
    tot = s.sum(0)

    def finish(boot: FloatArray) -> dict[str, pd.DataFrame]:
        est = safe_ratio(tot[:p], tot[p:])
        reps = safe_ratio(boot[:, :p], boot[:, p:]) if boot.size else np.empty((0, p))
        out = {k: np.full((m, m), np.nan) for k in _COLUMNS}
        out["n"] = np.zeros((m, m))
        for k, code in enumerate(pairs):
            r, c = divmod(int(code), m)
            cl, ch = percentile_ci(reps[:, k], level)
            out["estimate"][r, c], out["estimate"][c, r] = est[k], 1 - est[k]
            out["ci_low"][r, c], out["ci_high"][r, c] = cl, ch
            out["ci_low"][c, r], out["ci_high"][c, r] = 1 - ch, 1 - cl
            out["n"][r, c] = out["n"][c, r] = tot[p + k]
        idx = pd.Index(models, name="model")
        frames = {k: pd.DataFrame(v, index=idx, columns=idx) for k, v in out.items()}
        frames["n"] = frames["n"].astype(np.int64)
        return frames
    return s, finish


def win_rates_by_category(model_a: ArrayLike, model_b: ArrayLike, labels: ArrayLike, category: ArrayLike, *,
                          n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """:func:`win_rates` within each category; rows indexed by ``(category, model)``."""
    a = as_objects(model_a)
    b = as_objects(model_b)
    lab = as_objects(labels)
    cat = as_objects(category)
    if not (len(a) == len(b) == len(lab) == len(cat)):
        raise StatsError("model_a, model_b, labels and category must have the same length")
    parts = []
    for k, c in enumerate(pd.unique(cat[pd.notna(cat)])):
        sel = cat == c
        f = win_rates(a[sel], b[sel], lab[sel], n_boot=n_boot, seed=seed + k, level=level)
        f = f.assign(category=c).set_index("category", append=True)
        parts.append(f.reorder_levels(["category", "model"]))
    if not parts:
        empty = pd.MultiIndex.from_arrays([[], []], names=["category", "model"])
        return pd.DataFrame(columns=_COLUMNS, index=empty)
    return pd.concat(parts).sort_index()


def bradley_terry_scores(wins: FloatArray, *, tolerance: float = 1e-6, limit: int = 100) -> FloatArray:
    """Bradley–Terry strengths of each stacked comparison matrix ``wins[r, i, j]`` (``i``'s wins over ``j``,
    a tie counting half to each side), all fits at once.

    Newman's (2023, JMLR 24) iteration, a sweep over the models updating in place,
    ``pi_i <- sum_j w_ij pi_j / (pi_i + pi_j) / sum_j w_ji / (pi_i + pi_j)``, then the strengths divided by
    their geometric mean; a fit stops when a sweep moves its strengths by less than ``tolerance`` (Euclidean
    norm) or after ``limit`` sweeps. These are evalica's (Ustalov, 2024) steps and stopping rule, so its
    ``bradley_terry`` gives the same strengths; here the replicates of a bootstrap are fitted together, and
    the audit does not import evalica's dependencies (scipy.stats, about 1 s and 60 MB).
    """
    w = np.asarray(wins, dtype=np.float64)
    s = np.ones(w.shape[:2])
    active = np.arange(len(w))
    with np.errstate(all="ignore"):
        for _ in range(limit):
            if not active.size:
                break
            wa, new = w[active], s[active].copy()
            for i in range(w.shape[1]):
                sums = new[:, i:i + 1] + new
                new[:, i] = (wa[:, i, :] * new / sums).sum(1) / (wa[:, :, i] / sums).sum(1)
            new /= np.exp(np.log(new).mean(1, keepdims=True))
            new = np.nan_to_num(new, nan=tolerance)
            moved = np.linalg.norm(new - s[active], axis=1) < tolerance
            s[active] = new
            active = active[~moved]
    return s


def bradley_terry(model_a: ArrayLike, model_b: ArrayLike, labels: ArrayLike, *, n_boot: int = 1000,
                  seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Bradley–Terry strengths ``pi`` with ``P(i beats j) = pi_i / (pi_i + pi_j)``
    (:func:`bradley_terry_scores`), ties as half a win each, bootstrap percentile CIs over comparisons
    (multinomial draws of the cell counts, the same resampling as ``evalica.bootstrap``, at a cost
    independent of the number of comparisons), and the ranking.

    Returns a frame indexed by model, best first: ``score, ci_low, ci_high, rank`` (1 = best) and the
    95% range of the rank over the bootstrap replicates (``rank_low``, ``rank_high``).
    """
    a = as_objects(model_a)
    b = as_objects(model_b)
    lab = as_objects(labels)
    ok = np.isin(lab, LABELS)
    if not ok.any():
        return pd.DataFrame(columns=["score", "ci_low", "ci_high", "rank", "rank_low", "rank_high"])
    model_index(a, b)  # validates names
    # Bradley-Terry depends on the comparisons only through the counts of each (A, B, outcome) cell, and
    # resampling comparisons with replacement draws those counts from a multinomial: each replicate is
    # one weighted fit over at most models^2 x 3 cells, whatever the number of comparisons.
    cells = pd.DataFrame({"a": a[ok], "b": b[ok], "w": lab[ok]}).value_counts().reset_index(name="n")
    index = pd.Index(sorted(set(cells["a"]) | set(cells["b"])))
    m = len(index)
    ia, ib = index.get_indexer(cells["a"]), index.get_indexer(cells["b"])
    outcome = cells["w"].to_numpy(dtype=object)
    # each cell's contribution to the wins matrix: a win (A or B) counts 1, a tie half to each side
    into = np.zeros((len(cells), m * m))
    rows = np.arange(len(cells))
    into[rows, ia * m + ib] += np.select([outcome == "A", outcome == "tie"], [1.0, 0.5], 0.0)
    into[rows, ib * m + ia] += np.select([outcome == "B", outcome == "tie"], [1.0, 0.5], 0.0)
    counts = cells["n"].to_numpy(dtype=np.float64)
    fit = bradley_terry_scores((counts @ into).reshape(1, m, m))[0]
    scores = pd.Series(fit, index=index).sort_values(ascending=False, kind="stable")
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(int(counts.sum()), counts / counts.sum(), size=n_boot).astype(np.float64)
    dist = (bradley_terry_scores((draws @ into).reshape(n_boot, m, m))[:, index.get_indexer(scores.index)]
            if n_boot else np.empty((0, m)))
    a_lo, a_hi = (1 - level) / 2, (1 + level) / 2
    lo, hi = (np.quantile(dist, [a_lo, a_hi], axis=0) if len(dist) else np.full((2, m), np.nan))
    ranks = pd.DataFrame(-dist).rank(axis=1, method="min").to_numpy()
    out = pd.DataFrame({"score": scores.to_numpy(dtype=np.float64), "ci_low": lo, "ci_high": hi,
                        "rank": (-scores).rank(method="min").to_numpy().astype(np.int64),
                        "rank_low": np.floor(np.quantile(ranks, a_lo, axis=0)).astype(np.int64),
                        "rank_high": np.ceil(np.quantile(ranks, a_hi, axis=0)).astype(np.int64)},
                       index=pd.Index([str(x) for x in scores.index], name="model"))
    return out.sort_values(["rank", "score"], ascending=[True, False], kind="stable")


def spearman_rows(x: FloatArray, y: FloatArray) -> FloatArray:
    """Spearman's rho of each row pair (average ranks); NaN for a constant row."""
    rx = average_ranks(x)
    ry = average_ranks(y)
    rx -= rx.mean(1, keepdims=True)
    ry -= ry.mean(1, keepdims=True)
    return safe_ratio((rx * ry).sum(1), np.sqrt((rx * rx).sum(1) * (ry * ry).sum(1)))


def kendall_rows(x: FloatArray, y: FloatArray) -> FloatArray:
    """Kendall's tau-b of each row pair: ``S / sqrt((n0 - n1)(n0 - n2))`` over the column pairs."""
    i, j = np.triu_indices(x.shape[1], 1)
    sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    n0 = float(len(i))
    return safe_ratio((sx * sy).sum(1), np.sqrt((n0 - (sx == 0).sum(1)) * (n0 - (sy == 0).sum(1))))


def system_alignment(model_a: ArrayLike, model_b: ArrayLike, reference: ArrayLike, judge: ArrayLike, *,
                     n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """How closely a judge's model win rates follow a reference rater's (the humans'), on the items
    both labelled.

    Returns ``spearman`` and ``kendall`` as ``{estimate, ci_low, ci_high, p_value}`` (p from
    :func:`judgecal.stats.inference.spearman` / ``kendall_tau_b``; CI from the joint item bootstrap),
    per-model win rates of both raters, and ``pairs``: for each model pair the two raters' win-rate
    differences with CIs, ``reversed`` (opposite non-zero signs) and ``significant`` (reversed and the
    reference's CI of its difference excludes 0), with the counts ``n_reversed`` and
    ``n_reversed_significant``.
    """
    s, finish = system_alignment_deferred(model_a, model_b, reference, judge, level=level)
    return finish(bootstrap_sums(s, n_boot, seed))


def system_alignment_deferred(model_a: ArrayLike, model_b: ArrayLike, reference: ArrayLike, judge: ArrayLike, *,
                              level: float = 0.95) -> tuple[FloatArray, Callable[[FloatArray], dict[str, Any]]]:
    """:func:`system_alignment` in two steps (see :func:`win_rates_deferred`)."""
    ia, ib, models = model_index(model_a, model_b)
    m = len(models)
    ref, jud = outcome_scores(reference), outcome_scores(judge)
    if not (len(ref) == len(jud) == len(ia)):
        raise StatsError("model_a, model_b, reference and judge must have the same length")
    both = np.isfinite(ref) & np.isfinite(jud)
    s_ref = model_sums(ia, ib, np.where(both, ref, np.nan), m)
    s_jud = model_sums(ia, ib, np.where(both, jud, np.nan), m)
    s = np.hstack([s_ref[:, :m], s_jud[:, :m], s_ref[:, m:]])
    return s, lambda boot: _alignment_of(s.sum(0), boot, m, models, int(both.sum()), level)


def _alignment_of(tot: FloatArray, boot: FloatArray, m: int, models: list[str], n_both: int, level: float
                  ) -> dict[str, Any]:
    wr_ref, wr_jud = safe_ratio(tot[:m], tot[2 * m:]), safe_ratio(tot[m:2 * m], tot[2 * m:])
    b_ref, b_jud = safe_ratio(boot[:, :m], boot[:, 2 * m:]), safe_ratio(boot[:, m:2 * m], boot[:, 2 * m:])
    seen = np.isfinite(wr_ref)
    x, y, bx, by = wr_ref[seen], wr_jud[seen], b_ref[:, seen], b_jud[:, seen]
    keep = np.isfinite(bx).all(1) & np.isfinite(by).all(1)
    out: dict[str, Any] = {"n_items": n_both, "n_models": int(seen.sum())}
    nan = float("nan")
    tests = (("spearman", spearman, spearman_rows), ("kendall", kendall_tau_b, kendall_rows))
    for name, point, rows in tests:
        est, p = point(x, y)
        lo, hi = percentile_ci(rows(bx[keep], by[keep]), level) if keep.any() else (nan, nan)
        out[name] = {"estimate": est, "ci_low": lo, "ci_high": hi, "p_value": p}
    names = [mm for mm, k in zip(models, seen, strict=True) if k]
    out["win_rates"] = pd.DataFrame({"reference": x, "judge": y}, index=pd.Index(names, name="model"))
    rows_out = []
    i, j = np.triu_indices(len(names), 1)
    for a_, b_ in zip(i, j, strict=True):
        d_ref, d_jud = x[a_] - x[b_], y[a_] - y[b_]
        r_lo, r_hi = percentile_ci(bx[:, a_] - bx[:, b_], level)
        j_lo, j_hi = percentile_ci(by[:, a_] - by[:, b_], level)
        rev = bool(np.sign(d_ref) * np.sign(d_jud) < 0)
        rows_out.append({"model_1": names[a_], "model_2": names[b_], "diff_reference": d_ref,
                         "diff_reference_ci_low": r_lo, "diff_reference_ci_high": r_hi, "diff_judge": d_jud,
                         "diff_judge_ci_low": j_lo, "diff_judge_ci_high": j_hi, "reversed": rev,
                         "significant": rev and (r_lo > 0 or r_hi < 0)})
    pairs = pd.DataFrame(rows_out, columns=["model_1", "model_2", "diff_reference", "diff_reference_ci_low",
                                            "diff_reference_ci_high", "diff_judge", "diff_judge_ci_low",
                                            "diff_judge_ci_high", "reversed", "significant"])
    out["pairs"] = pairs
    out["n_pairs"] = len(pairs)
    out["n_reversed"] = int(pairs["reversed"].sum()) if len(pairs) else 0
    out["n_reversed_significant"] = int(pairs["significant"].sum()) if len(pairs) else 0
    return out


__all__ = ["bradley_terry", "bradley_terry_scores", "kendall_rows", "model_sums", "outcome_scores", "spearman_rows",
           "swap_debiased", "system_alignment", "win_rate_matrix", "win_rates", "win_rates_by_category"]
