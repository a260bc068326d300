"""Item by item: a pairwise judge against the humans, and judges against each other.

Every figure here reads one verdict per item and judge, :func:`judgecal.audit.models.item_verdicts` (the
two orders swap-debiased: their common verdict, a tie when they part; the first sample; an unreadable
answer as the report's ``invalid_as`` says), against the truth's label of the item.

- ``breakdown.confusion``: counts of (humans' label, judge's verdict) over ``A``, ``B``, ``tie`` (and
  ``invalid`` when an unreadable answer is kept as such); rows are the humans.
- ``breakdown.by_category`` / ``breakdown.by_model``: accuracy per item category (``metadata.category``) and per
  candidate model (an item counts for both of its models), each with Wilson's interval
  (:func:`judgecal.stats.proportion.wilson_interval`): a group's items are independent trials.
- ``comparisons`` (report level): for each two judges, accuracy of X minus Y on the items both judged,
  with a paired item bootstrap over the items a judge of pairs judged (the same resampled items for both, one
  weight matrix for every pair, :func:`judgecal.stats.bootstrap.bootstrap_sums`; Efron & Tibshirani, 1993,
  ch. 6) and its two-sided bootstrap p-value ``min(1, 2 min(P*(d <= 0), P*(d >= 0)))``. Judges of the same
  items share their columns: K judges cost K + 1 columns, not three per pair.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.models import take
from judgecal.stats.bootstrap import bootstrap_sums, metric, percentile_ci
from judgecal.stats.proportion import wilson_interval

LABELS = ("A", "B", "tie")
MAX_COMPARED = 12  # judges: 66 pairs, three bootstrap columns each; beyond it the report says so


def _index(values: Any) -> pd.Index:
    """Item ids as a plain object index: hashed lookups, where a pyarrow-backed index would scan per value. An
    object index is used as it is, so its hash table (built on the first lookup) serves every later one."""
    if isinstance(values, pd.Index) and values.dtype == object:
        return values
    return pd.Index(np.asarray(values, dtype=object))


def _judged(verdicts: pd.Series, truth: pd.Series) -> tuple[pd.Index, np.ndarray, np.ndarray, np.ndarray]:
    """The judge's items (``ids``), which of them carry a human label (``keep``), their places in ``truth``,
    its verdict on each (``invalid`` for none) and whether it is right."""
    ids = _index(verdicts.index)
    pos = _index(truth.index).get_indexer(ids)
    keep = pos >= 0
    v = verdicts.to_numpy(dtype=object)[keep]
    v = np.where(pd.isna(v), "invalid", v)
    return ids[keep], pos[keep], v, (v == truth.to_numpy(dtype=object)[pos[keep]]).astype(float)


def _coded(shared: dict[str, Any], name: str, values: Any, truth: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``values`` (item_id -> a group's name) as a code per item of ``truth`` (-1: none) and the names in
    order, found once for every judge (kept in ``shared``)."""
    if name not in shared:
        g = pd.Series(np.asarray(values, dtype=object), index=_index(values.index))
        g = g[~g.index.duplicated()]
        at = g.index.get_indexer(_index(truth.index))
        codes, names = pd.factorize(g.to_numpy(dtype=object), sort=True)
        shared[name] = (take(codes, at), pd.Index(names, dtype=object))
    return shared[name]  # type: ignore[no-any-return]


def _groups(right: np.ndarray, codes: np.ndarray, names: pd.Index, level: float) -> list[dict[str, Any]]:
    """Accuracy per group (``codes``: each item's group among ``names``, -1 none) with Wilson's interval,
    groups in order of their names."""
    got = codes >= 0
    size = np.bincount(codes[got], minlength=len(names))
    hits = np.bincount(codes[got], weights=right[got], minlength=len(names))
    present = np.flatnonzero(size)
    if not len(present):
        return []
    lo, hi = wilson_interval(hits[present], size[present], level)
    return [{"value": str(names[k]), "n": int(size[k]), "accuracy": metric(hits[k] / size[k], lo[i], hi[i], int(size[k]))}
            for i, k in enumerate(present)]


def judge_items(verdicts: pd.Series, truth: pd.Series, category: pd.Series, models: pd.DataFrame,
                level: float = 0.95, shared: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pairwise judge's ``breakdown`` section: confusion, accuracy by category and by candidate model;
    ``shared``: a dict kept between judges of the same truth, categories and models (their codes, found once)."""
    shared = {} if shared is None else shared
    if shared.get("for") is None or any(a is not b for a, b in zip(shared["for"], (truth, category, models), strict=True)):
        shared.clear()  # another truth, categories or models: their codes found again
        shared["for"] = (truth, category, models)
    ids, pos, verdict, right = _judged(verdicts, truth)
    labels = [*LABELS, *(["invalid"] if (verdict == "invalid").any() else [])]
    # the confusion: counts of (human label, verdict), each a code into its labels (-1: another label)
    if "humans" not in shared:
        shared["humans"] = pd.Index(list(LABELS), dtype=object).get_indexer(
            pd.Index(truth.to_numpy(dtype=object), dtype=object))
    h = shared["humans"][pos]
    j = pd.Index(labels, dtype=object).get_indexer(pd.Index(verdict, dtype=object))
    both = (h >= 0) & (j >= 0)
    conf = np.bincount(h[both] * len(labels) + j[both], minlength=len(LABELS) * len(labels)).reshape(len(LABELS), -1)
    cat, cat_names = _coded(shared, "category", category, truth)
    model_a, names_a = _coded(shared, "model_a", models["model_a"], truth)
    model_b, names_b = _coded(shared, "model_b", models["model_b"], truth)
    if "models" not in shared:  # the two sides' names as one list (an item counts for both of its models)
        names = names_a.append(names_b).unique().sort_values()
        shared["models"] = (names, names.get_indexer(names_a), names.get_indexer(names_b))
    names, into_a, into_b = shared["models"]
    by_model = _groups(np.concatenate([right, right]),
                       np.concatenate([take(into_a, model_a[pos]), take(into_b, model_b[pos])]), names, level)
    return {"n_items": int(len(ids)), "humans": list(LABELS), "judge": labels,
            "confusion": [[int(x) for x in row] for row in conf],
            "by_category": _groups(right, cat[pos], cat_names, level), "by_model": by_model,
            "interval": "Wilson score interval per group"}


def comparisons(verdicts: dict[str, pd.Series], truth: pd.Series, n_boot: int = 2000, seed: int = 0,
                level: float = 0.95) -> dict[str, Any]:
    """Each two judges' paired accuracy difference (see the module docstring), every pair from one bootstrap."""
    names = sorted(verdicts)
    if len(names) < 2:
        return {"pairs": [], "note": "one judge of pairs only"}
    if len(names) > MAX_COMPARED:
        return {"pairs": [], "note": f"{len(names)} judges of pairs: compared only up to {MAX_COMPARED}"}
    right, judged = {}, {}
    got = {n: _judged(verdicts[n], truth)[1::2] for n in names}  # each judge's items as places in the truth
    items = pd.unique(np.concatenate([got[n][0] for n in names]))  # judged by one at least, in first-seen order
    slot = np.empty(len(truth), dtype=np.intp)
    for n in names:
        places, r = got.pop(n)
        slot.fill(-1)
        slot[places] = np.arange(len(places))
        pos = slot[items]  # -1: not judged, which reads the 0 appended
        right[n] = np.append(r, 0.0)[pos]
        judged[n] = (pos >= 0).astype(float)
    # one bootstrap column per distinct sum: judges of the same items share their mask and their own columns
    cols: list[np.ndarray] = []
    at: dict[Any, int] = {}

    def column(key: Any, values: np.ndarray) -> int:
        if key not in at:
            at[key] = len(cols)
            cols.append(values)
        return at[key]

    pairs, spec = list(combinations(names, 2)), []
    for x, y in pairs:
        if np.array_equal(judged[x], judged[y]):
            m = judged[x]
            spec.append((column(("right", x), m * right[x]), column(("right", y), m * right[y]),
                         column(("mask", m.tobytes()), m)))
        else:
            m = judged[x] * judged[y]
            spec.append((column(("right", x, y), m * right[x]), column(("right", y, x), m * right[y]),
                         column(("mask", m.tobytes()), m)))
    mat = np.column_stack(cols)
    boot = bootstrap_sums(mat, n_boot, seed) if len(items) else np.empty((0, mat.shape[1]))
    total = mat.sum(axis=0)
    out: list[dict[str, Any]] = []
    for (x, y), (cx, cy, cm) in zip(pairs, spec, strict=True):
        n_common = int(total[cm])
        if n_common == 0:
            out.append({"x": x, "y": y, "n_items": 0})
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (boot[:, cx] - boot[:, cy]) / boot[:, cm]
        est = float((total[cx] - total[cy]) / n_common)
        lo, hi = percentile_ci(d, level)
        finite = d[np.isfinite(d)]
        p = float(min(1.0, 2 * min((finite <= 0).mean(), (finite >= 0).mean()))) if finite.size else None
        out.append({"x": x, "y": y, "n_items": n_common, "accuracy_x": round(float(total[cx]) / n_common, 10),
                    "accuracy_y": round(float(total[cy]) / n_common, 10),
                    "difference": metric(est, lo, hi, n_common), "p": p, "significant": bool(lo > 0 or hi < 0)})
    return {"pairs": out, "method": "paired item bootstrap of accuracy X - Y on the items both judged",
            "n_boot": n_boot}
