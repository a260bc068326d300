"""Span metrics: pure, vectorised functions of interval arrays (no per-character Python loops).

A span set is three integer arrays ``(item, start, end)``: half-open character (or token) intervals
``[start, end)`` of item ``item`` (a code ``0..n_items-1``). Overlapping spans of one side count once.
Lengths come from a sweep over the sorted boundaries (``+1`` at each start, ``-1`` at each end,
cumulative sum), so nothing is materialised per character unless a mask is asked for
(:func:`char_counts`, built with ``np.add.at`` on the boundaries and a cumulative sum).

Per item, with ``|P|`` the characters a prediction marks, ``|R|`` those the reference marks and
``|P & R|`` both: precision ``|P & R| / |P|``, recall ``|P & R| / |R|``, F1 ``2|P & R| / (|P| + |R|)``,
IoU ``|P & R| / |P | R|`` (Da San Martino et al., 2019; SemEval-2025 Task 3, Vázquez et al., 2025).
An item where neither side marks anything scores 1 on all four; one where exactly one side marks
something scores 0. Item-level figures are means over items with item-bootstrap percentile CIs
(:mod:`judgecal.stats.bootstrap`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import bootstrap_sums, metric, percentile_ci, safe_ratio

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Intervals:
    """Half-open intervals ``[start, end)`` of items ``item`` (codes ``0..n_items-1``); unpacks as
    ``item, start, end``."""

    item: IntArray
    start: IntArray
    end: IntArray

    def __len__(self) -> int:
        return int(self.item.shape[0])

    def __iter__(self) -> Iterator[IntArray]:
        return iter((self.item, self.start, self.end))

    def take(self, mask: ArrayLike) -> Intervals:
        m = np.asarray(mask)
        return Intervals(self.item[m], self.start[m], self.end[m])


def intervals(item: ArrayLike, start: ArrayLike, end: ArrayLike) -> Intervals:
    """Validated :class:`Intervals` (``0 <= start <= end``; equal lengths)."""
    i, s, e = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (item, start, end))
    if not (i.shape == s.shape == e.shape):
        raise StatsError("item, start and end must have the same length")
    if i.size and (s.min() < 0 or (e < s).any() or i.min() < 0):
        raise StatsError("spans need 0 <= start <= end and item codes >= 0")
    return Intervals(i, s, e)


def _empty() -> Intervals:
    z = np.zeros(0, dtype=np.int64)
    return Intervals(z, z, z)


# -- sweeps ---------------------------------------------------------------------------------------
def _events(sp: Intervals, weight: FloatArray | None = None) -> tuple[IntArray, IntArray, FloatArray]:
    w = np.ones(len(sp)) if weight is None else np.asarray(weight, dtype=np.float64)
    return (np.concatenate([sp.item, sp.item]), np.concatenate([sp.start, sp.end]), np.concatenate([w, -w]))


def merge(sp: Intervals) -> Intervals:
    """The union of each item's intervals as disjoint, sorted, non-touching intervals (empties dropped)."""
    sp = sp.take(sp.end > sp.start)
    if not len(sp):
        return _empty()
    item, pos, delta = _events(sp)
    order = np.lexsort((-delta, pos, item))  # at one position, openings before closings: touching merge
    item, pos, delta = item[order], pos[order], delta[order]
    depth = np.cumsum(delta)
    opens = (delta > 0) & (depth == 1)
    closes = (delta < 0) & (depth == 0)
    return Intervals(item[opens], pos[opens], pos[closes])


def _segments(item: IntArray, pos: IntArray, deltas: Sequence[FloatArray]) -> tuple[
        IntArray, IntArray, IntArray, list[FloatArray]]:
    """Elementary segments between consecutive boundaries of one item: (item, start, end, levels)."""
    order = np.lexsort((pos, item))
    item, pos = item[order], pos[order]
    levels = [np.cumsum(d[order])[:-1] for d in deltas]
    same = item[1:] == item[:-1]
    return item[:-1][same], pos[:-1][same], pos[1:][same], [lv[same] for lv in levels]


def overlap_counts(pred: Intervals, ref: Intervals, n_items: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per item: characters marked by ``pred``, by ``ref`` and by both (``|P|``, ``|R|``, ``|P & R|``)."""
    n = len(pred)
    item = np.concatenate([pred.item, pred.item, ref.item, ref.item])
    pos = np.concatenate([pred.start, pred.end, ref.start, ref.end])
    one_p, one_r = np.ones(n), np.ones(len(ref))
    d_p = np.concatenate([one_p, -one_p, 0 * one_r, 0 * one_r])
    d_r = np.concatenate([0 * one_p, 0 * one_p, one_r, -one_r])
    if item.size == 0:
        z = np.zeros(n_items)
        return z, z.copy(), z.copy()
    it, s, e, (lp, lr) = _segments(item, pos, [d_p, d_r])
    length = (e - s).astype(np.float64)
    on_p, on_r = lp > 0.5, lr > 0.5
    def count(m: NDArray[np.bool_]) -> FloatArray:
        return np.bincount(it, weights=length * m, minlength=n_items)[:n_items].astype(np.float64)

    return count(on_p), count(on_r), count(on_p & on_r)


def scores_from_counts(len_p: ArrayLike, len_r: ArrayLike, inter: ArrayLike) -> dict[str, FloatArray]:
    """Per-item precision, recall, F1 and IoU; both sides empty -> 1, exactly one empty -> 0."""
    p, r, i = (np.asarray(a, dtype=np.float64) for a in (len_p, len_r, inter))
    both_empty = (p == 0) & (r == 0)
    out = {
        "precision": np.nan_to_num(safe_ratio(i, p)),
        "recall": np.nan_to_num(safe_ratio(i, r)),
        "f1": np.nan_to_num(safe_ratio(2 * i, p + r)),
        "iou": np.nan_to_num(safe_ratio(i, p + r - i)),
    }
    for v in out.values():
        v[both_empty] = 1.0
    return out


# -- intervals for a mean over items ----------------------------------------------------------------
def mean_ci(values: ArrayLike, groups: ArrayLike | None = None, n_boot: int = 2000, seed: int = 0,
            level: float = 0.95) -> dict[str, object]:
    """Mean of ``values`` with an item-bootstrap percentile CI; ``groups`` (item codes) makes the
    resampling unit the item when there are several values per item (e.g. rater pairs)."""
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    v = v[ok]
    if groups is None:
        sums = np.column_stack([v, np.ones_like(v)])
    else:
        _, g = np.unique(np.asarray(groups)[ok], return_inverse=True)
        sums = np.column_stack([np.bincount(g, weights=v), np.bincount(g).astype(np.float64)]) if v.size else (
            np.zeros((0, 2)))
    if sums.shape[0] == 0:
        return metric(float("nan"), float("nan"), float("nan"), 0)
    boot = bootstrap_sums(sums, n_boot, seed)
    lo, hi = percentile_ci(safe_ratio(boot[:, 0], boot[:, 1]), level)
    return metric(float(v.mean()), lo, hi, int(v.size))


def span_scores(pred: Intervals, ref: Intervals, n_items: int, n_boot: int = 2000, seed: int = 0,
                level: float = 0.95) -> dict[str, dict[str, object]]:
    """Mean per-item precision, recall, F1 and IoU of ``pred`` against ``ref`` over ``n_items`` items,
    plus micro F1 (``2 sum|P & R| / (sum|P| + sum|R|)``), each ``{estimate, ci_low, ci_high, n}``; one
    item-bootstrap draw serves all five."""
    lp, lr, li = overlap_counts(pred, ref, n_items)
    per = scores_from_counts(lp, lr, li)
    names = [*per, "micro_f1"]
    if not n_items:
        return {k: metric(float("nan"), float("nan"), float("nan"), 0) for k in names}
    sums = np.column_stack([*per.values(), 2 * li, lp + lr, np.ones(n_items)])
    boot = bootstrap_sums(sums, n_boot, seed)
    total = sums.sum(0)
    out = {}
    for k, name in enumerate(per):
        lo, hi = percentile_ci(safe_ratio(boot[:, k], boot[:, -1]), level)
        out[name] = metric(float(total[k] / n_items), lo, hi, n_items)
    lo, hi = percentile_ci(safe_ratio(boot[:, -3], boot[:, -2]), level)
    out["micro_f1"] = metric(float(safe_ratio(total[-3], total[-2])), lo, hi, n_items)
    return out


def by_label(pred: Intervals, pred_label: ArrayLike, ref: Intervals, ref_label: ArrayLike, n_items: int,
             labels: Sequence[Any] | None = None, **kw: Any) -> dict[str, dict[str, dict[str, object]]]:
    """:func:`span_scores` for each label on its own (spans of other labels left out on both sides)."""
    pl, rl = np.asarray(pred_label), np.asarray(ref_label)
    names = list(labels) if labels is not None else sorted(set(pl.tolist()) | set(rl.tolist()))
    return {str(lab): span_scores(pred.take(pl == lab), ref.take(rl == lab), n_items, **kw) for lab in names}


# -- tokens -----------------------------------------------------------------------------------------
TOKEN = re.compile(r"\w+|[^\w\s]")


def token_bounds(texts: Sequence[str], pattern: re.Pattern[str] = TOKEN) -> Intervals:
    """Every token of every text as a character interval (words and single punctuation marks)."""
    items, starts, ends = [], [], []
    for k, t in enumerate(texts):
        b = np.array([m.span() for m in pattern.finditer(t)], dtype=np.int64).reshape(-1, 2)
        items.append(np.full(len(b), k, dtype=np.int64))
        starts.append(b[:, 0])
        ends.append(b[:, 1])
    if not items:
        return _empty()
    return Intervals(np.concatenate(items), np.concatenate(starts), np.concatenate(ends))


def to_tokens(sp: Intervals, tokens: Intervals, n_items: int) -> Intervals:
    """Character spans as token-index spans: a token is marked when any of its characters is.

    ``tokens`` must be sorted by item, then position (as :func:`token_bounds` returns them).
    """
    span = int(max(tokens.end.max(initial=0), sp.end.max(initial=0))) + 1
    key_s = tokens.item * span + tokens.start
    key_e = tokens.item * span + tokens.end
    first = np.searchsorted(key_e, sp.item * span + sp.start, side="right")
    stop = np.searchsorted(key_s, sp.item * span + sp.end, side="left")
    offset = np.concatenate([[0], np.cumsum(np.bincount(tokens.item, minlength=n_items))])[:n_items]
    first = first - offset[sp.item]
    stop = np.maximum(stop - offset[sp.item], first)
    stop[sp.end <= sp.start] = first[sp.end <= sp.start]
    return Intervals(sp.item, first, stop)


# -- masks and soft labels --------------------------------------------------------------------------
def char_counts(sp: Intervals, lengths: ArrayLike, weight: ArrayLike | None = None) -> tuple[FloatArray, IntArray]:
    """Per character of every item (concatenated), the summed ``weight`` of the spans covering it
    (``np.add.at`` on the boundaries, then a cumulative sum); returns the values and item offsets."""
    n = np.asarray(lengths, dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(n)])
    if len(sp) and (sp.end > n[sp.item]).any():
        raise StatsError("a span ends beyond its item's text")
    w = np.ones(len(sp)) if weight is None else np.asarray(weight, dtype=np.float64)
    diff = np.zeros(int(off[-1]) + 1)
    np.add.at(diff, off[sp.item] + sp.start, w)
    np.add.at(diff, off[sp.item] + sp.end, -w)
    return np.round(np.cumsum(diff)[:-1], 9), off


def _group_ranks(values: FloatArray, group: IntArray) -> FloatArray:
    """Average ranks (1-based, ties averaged) of ``values`` within each group."""
    order = np.lexsort((values, group))
    v, g = values[order], group[order]
    n = v.size
    new = np.r_[True, (v[1:] != v[:-1]) | (g[1:] != g[:-1])]
    run = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.r_[first[1:], n] - 1
    gstart = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    start_of = np.repeat(gstart, np.diff(np.r_[gstart, n]))
    ranks = np.empty(n)
    ranks[order] = (first[run] + last[run]) / 2 - start_of + 1
    return ranks


def soft_spearman(pred_soft: ArrayLike, ref_soft: ArrayLike, offsets: ArrayLike,
                  chunk_chars: int = 1_000_000) -> FloatArray:
    """Per item, Spearman's rho between two per-character soft labels (concatenated, split at
    ``offsets`` as :func:`char_counts` returns them). Both constant -> 1, one constant -> 0 (the
    SemEval-2025 Mu-SHROOM convention); an empty text -> NaN. Items are ranked in blocks of about
    ``chunk_chars`` characters, which bounds the memory."""
    x, y = np.asarray(pred_soft, dtype=np.float64), np.asarray(ref_soft, dtype=np.float64)
    off = np.asarray(offsets, dtype=np.int64)
    cuts = np.unique(np.r_[0, np.searchsorted(off, np.arange(0, off[-1], max(chunk_chars, 1)), side="right") - 1,
                           off.size - 1])
    parts = [_soft_spearman_block(x[off[a]:off[b]], y[off[a]:off[b]], off[a:b + 1] - off[a])
             for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    return np.concatenate(parts) if parts else np.zeros(0)


def _soft_spearman_block(x: FloatArray, y: FloatArray, off: IntArray) -> FloatArray:
    lengths = np.diff(off)
    k = lengths.size
    g = np.repeat(np.arange(k), lengths)
    rx, ry = _group_ranks(x, g), _group_ranks(y, g)
    cnt = np.bincount(g, minlength=k).astype(np.float64)
    mx = safe_ratio(np.bincount(g, rx, k).astype(np.float64), cnt)
    my = safe_ratio(np.bincount(g, ry, k).astype(np.float64), cnt)
    dx, dy = rx - mx[g], ry - my[g]
    sxy, sxx, syy = (np.bincount(g, a * b, k).astype(np.float64) for a, b in ((dx, dy), (dx, dx), (dy, dy)))
    rho = np.clip(safe_ratio(sxy, np.sqrt(sxx * syy)), -1.0, 1.0)
    const_x, const_y = sxx <= 1e-12, syy <= 1e-12
    rho = np.where(const_x & const_y, 1.0, np.where(const_x | const_y, 0.0, rho))
    return np.where(lengths > 0, rho, np.nan)


# -- span-level matching ----------------------------------------------------------------------------
def join_pairs(key_a: IntArray, key_b: IntArray, n_keys: int) -> tuple[IntArray, IntArray]:
    """All index pairs ``(i, j)`` with ``key_a[i] == key_b[j]`` (vectorised join on a small key)."""
    oa, ob = np.argsort(key_a, kind="stable"), np.argsort(key_b, kind="stable")
    cb = np.bincount(key_b, minlength=n_keys)
    sb = np.concatenate([[0], np.cumsum(cb)])[:-1]
    ka = key_a[oa]
    reps = cb[ka]
    a_pos = np.repeat(np.arange(oa.size), reps)
    ends = np.cumsum(reps)
    k = np.arange(int(ends[-1]) if ends.size else 0) - np.repeat(ends - reps, reps)
    return oa[a_pos], ob[sb[ka][a_pos] + k]


def span_matches(pred: Intervals, ref: Intervals, n_items: int, threshold: float = 0.5,
                 pred_label: ArrayLike | None = None, ref_label: ArrayLike | None = None,
                 n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, dict[str, object]]:
    """Span-level precision, recall and F1: a span is found when a span of the other side in the same
    item (and of the same label, when labels are given) overlaps it with IoU >= ``threshold``.
    Empty spans are left out. Pooled over items; the CI resamples items."""
    keep_p, keep_r = pred.end > pred.start, ref.end > ref.start
    pred, ref = pred.take(keep_p), ref.take(keep_r)
    i, j = join_pairs(pred.item, ref.item, n_items)
    inter = np.clip(np.minimum(pred.end[i], ref.end[j]) - np.maximum(pred.start[i], ref.start[j]), 0, None)
    union = (pred.end[i] - pred.start[i]) + (ref.end[j] - ref.start[j]) - inter
    hit = inter / np.maximum(union, 1) >= threshold
    hit &= inter > 0
    if pred_label is not None and ref_label is not None:
        hit &= np.asarray(pred_label)[keep_p][i] == np.asarray(ref_label)[keep_r][j]
    found_p = np.bincount(i[hit], minlength=len(pred)) > 0
    found_r = np.bincount(j[hit], minlength=len(ref)) > 0
    def per(idx: IntArray, w: NDArray[Any]) -> FloatArray:
        return np.bincount(idx, weights=w.astype(np.float64), minlength=n_items).astype(np.float64)

    sums = np.column_stack([per(pred.item, found_p), per(pred.item, np.ones(len(pred))),
                            per(ref.item, found_r), per(ref.item, np.ones(len(ref)))]).astype(np.float64)

    def stats(s: FloatArray) -> FloatArray:
        p, r = safe_ratio(s[:, 0], s[:, 1]), safe_ratio(s[:, 2], s[:, 3])
        f1 = np.where((p == 0) & (r == 0), 0.0, safe_ratio(2 * p * r, p + r))
        return np.column_stack([p, r, f1])

    est = stats(sums.sum(0)[None, :])[0]
    boot = stats(bootstrap_sums(sums, n_boot, seed)) if n_items else np.zeros((0, 3))
    names = ("precision", "recall", "f1")
    ns = (len(pred), len(ref), len(pred) + len(ref))
    return {nm: metric(float(est[k]), *percentile_ci(boot[:, k], level), ns[k]) for k, nm in enumerate(names)}


# -- response-level detection -----------------------------------------------------------------------
def detection(pred: ArrayLike, truth: ArrayLike, n_boot: int = 2000, seed: int = 0,
              level: float = 0.95) -> dict[str, dict[str, object]]:
    """Binary detection against the truth: balanced accuracy ``(TPR + TNR) / 2`` (Brodersen et al.,
    2010), TPR, TNR and accuracy, with item-bootstrap CIs. ``True`` is the positive class."""
    p, t = np.asarray(pred, dtype=bool), np.asarray(truth, dtype=bool)
    sums = np.column_stack([p & t, t, ~p & ~t, ~t]).astype(np.float64)

    def stats(s: FloatArray) -> FloatArray:
        tpr, tnr = safe_ratio(s[:, 0], s[:, 1]), safe_ratio(s[:, 2], s[:, 3])
        return np.column_stack([(tpr + tnr) / 2, tpr, tnr, safe_ratio(s[:, 0] + s[:, 2], s[:, 1] + s[:, 3])])

    est = stats(sums.sum(0)[None, :])[0]
    boot = stats(bootstrap_sums(sums, n_boot, seed)) if p.size else np.zeros((0, 4))
    names = ("balanced_accuracy", "tpr", "tnr", "accuracy")
    ns = (p.size, int(t.sum()), int((~t).sum()), p.size)
    return {nm: metric(float(est[k]), *percentile_ci(boot[:, k], level), ns[k]) for k, nm in enumerate(names)}


def marked(sp: Intervals, n_items: int) -> NDArray[np.bool_]:
    """Whether each item has at least one non-empty span (response-level detection from spans)."""
    return np.bincount(sp.item[sp.end > sp.start], minlength=n_items)[:n_items] > 0


# -- several raters ---------------------------------------------------------------------------------
def _presence(item: IntArray, rater: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Distinct (item, rater) groups, sorted: their items, raters, and each row's group code."""
    key = np.column_stack([item, rater])
    uniq, code = np.unique(key, axis=0, return_inverse=True)
    return uniq[:, 0], uniq[:, 1], code.reshape(-1)


def pairwise_f1(sp: Intervals, rater: ArrayLike) -> dict[str, NDArray[Any]]:
    """Character F1 between every two raters of the same item (a rater is present on an item when it
    has any span there, an empty one included). Returns per pair: item, rater_a, rater_b, f1, iou
    and whether each marked anything."""
    r = np.asarray(rater, dtype=np.int64)
    g_item, g_rater, code = _presence(sp.item, r)
    ng = g_item.size
    a, b = join_pairs(g_item, g_item, int(g_item.max(initial=-1)) + 1)
    keep = a < b
    a, b = a[keep], b[keep]
    npair = a.size
    pa, sa = join_pairs(a, code, ng)  # pair index, span index of its first rater
    pb, sb = join_pairs(b, code, ng)
    side_a = Intervals(pa, sp.start[sa], sp.end[sa])
    side_b = Intervals(pb, sp.start[sb], sp.end[sb])
    la, lb, li = overlap_counts(side_a, side_b, npair)
    s = scores_from_counts(la, lb, li)
    return {"item": g_item[a], "rater_a": g_rater[a], "rater_b": g_rater[b], "f1": s["f1"], "iou": s["iou"],
            "marked_a": la > 0, "marked_b": lb > 0}


def human_ceiling(sp: Intervals, rater: ArrayLike, both_marked: bool = False, n_boot: int = 2000, seed: int = 0,
                  level: float = 0.95) -> dict[str, object]:
    """Mean pairwise character F1 between raters of the same item, CI by item bootstrap — the
    agreement a judge can hope to reach. ``both_marked`` keeps pairs where both marked something."""
    pw = pairwise_f1(sp, rater)
    keep = np.ones(pw["f1"].shape, dtype=bool)
    if both_marked:
        keep = np.asarray(pw["marked_a"]) & np.asarray(pw["marked_b"])
    return mean_ci(np.asarray(pw["f1"])[keep], np.asarray(pw["item"])[keep], n_boot, seed, level)


def consensus(sp: Intervals, rater: ArrayLike, weights: ArrayLike | None = None) -> Intervals:
    """The characters marked by more than half of an item's raters: ``sum_r w_r [c in S_r] > W_i / 2``
    with ``W_i`` the total weight of the raters present on item ``i`` (an empty span counts a rater as
    present). ``weights`` is indexed by rater code (annotator quality, e.g. Dawid–Skene accuracy);
    unweighted by default. Each rater's own overlapping spans count once."""
    r = np.asarray(rater, dtype=np.int64)
    if not len(sp):
        return _empty()
    w_r = np.ones(int(r.max()) + 1) if weights is None else np.asarray(weights, dtype=np.float64)
    g_item, g_rater, code = _presence(sp.item, r)
    n_items = int(sp.item.max()) + 1
    total = np.bincount(g_item, weights=w_r[g_rater], minlength=n_items)
    u = merge(Intervals(code, sp.start, sp.end))  # per (item, rater) union, item = group code
    if not len(u):
        return _empty()
    item = g_item[u.item]
    ev_item, ev_pos, ev_w = _events(Intervals(item, u.start, u.end), w_r[g_rater[u.item]])
    it, s, e, (level,) = _segments(ev_item, ev_pos, [ev_w])
    on = (level > total[it] / 2 + 1e-9) & (e > s)
    return merge(Intervals(it[on], s[on], e[on]))


def rater_quality(sp: Intervals, rater: ArrayLike) -> tuple[FloatArray, IntArray]:
    """Each rater's mean per-item character F1 against the majority consensus of the *other* raters
    of the item (leave-one-out), over the items it shares with at least one other; returns the F1 and
    the item count per rater code (NaN and 0 for a rater who never shares an item). A weight for
    :func:`consensus` that needs no gold spans."""
    r = np.asarray(rater, dtype=np.int64)
    n_r = int(r.max(initial=-1)) + 1
    quality, count = np.full(n_r, np.nan), np.zeros(n_r, dtype=np.int64)
    g_item, g_rater, _ = _presence(sp.item, r)
    per_item = np.bincount(g_item, minlength=int(sp.item.max(initial=-1)) + 1)
    for k in range(n_r):  # one pass per rater (raters are few; everything inside is vectorised)
        shared = np.zeros(per_item.size, dtype=bool)
        shared[g_item[g_rater == k]] = True
        shared &= per_item >= 2
        if not shared.any():
            continue
        items = np.flatnonzero(shared)
        remap = np.full(per_item.size, -1)
        remap[items] = np.arange(items.size)
        mine, others = (r == k) & shared[sp.item], (r != k) & shared[sp.item]
        mine_iv = Intervals(remap[sp.item[mine]], sp.start[mine], sp.end[mine])
        others_iv = Intervals(remap[sp.item[others]], sp.start[others], sp.end[others])
        cons = consensus(others_iv, r[others])
        lp, lr, li = overlap_counts(mine_iv, cons, items.size)
        quality[k] = float(scores_from_counts(lp, lr, li)["f1"].mean())
        count[k] = items.size
    return quality, count


# -- like with like, and what a trivial marker gets ---------------------------------------------------
def random_spans(sp: Intervals, rater: ArrayLike, lengths: ArrayLike, items: ArrayLike, seed: int = 0) -> Intervals:
    """One random contiguous span per item in ``items``, its length a share of the text drawn from the
    shares the raters of ``sp`` marked (each (item, rater) once, empty marks included), its start uniform."""
    n = np.asarray(lengths, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    g_item, g_rater, code = _presence(sp.item, r)
    u = merge(Intervals(code, sp.start, sp.end))
    marked_len = np.bincount(u.item, weights=(u.end - u.start).astype(np.float64), minlength=g_item.size)
    share = safe_ratio(np.asarray(marked_len, dtype=np.float64), n[g_item].astype(np.float64))
    share = share[np.isfinite(share)]
    it = np.asarray(items, dtype=np.int64)
    rng = np.random.default_rng(seed)
    draw = share[rng.integers(0, share.size, it.size)] if share.size else np.zeros(it.size)
    length = np.minimum(np.round(draw * n[it]).astype(np.int64), n[it])
    start = np.floor(rng.random(it.size) * (n[it] - length + 1)).astype(np.int64)
    return Intervals(it, start, start + length)


BASELINES = ("mark_everything", "mark_nothing", "random_spans")


def span_reference(human: Intervals, rater: ArrayLike, judge: Intervals, lengths: ArrayLike | None,
                   n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """The judge's mean character F1 with each annotator beside the annotators' mean F1 with each other, on
    the items the judge marked (an empty span counts) with at least two annotators, and what trivial markers
    get on the same items and annotators: ``mark_everything`` (the whole text), ``mark_nothing``,
    ``random_spans`` (:func:`random_spans`); without ``lengths`` (text lengths per item code) only
    ``mark_nothing``. The best baseline ``B`` scales the judge: ``normalised = (J - B) / (H - B)`` (0 = the
    best trivial marker, 1 = the annotators with each other) and ``above_baseline = J - B``, both with paired
    item-bootstrap CIs (one set of resampled items for every figure). F1 pairs are pooled per item."""
    r = np.asarray(rater, dtype=np.int64)
    m = int(r.max(initial=-1)) + 1
    per_item = np.bincount(_presence(human.item, r)[0], minlength=int(human.item.max(initial=-1)) + 1)
    judged = np.unique(judge.item)
    items = judged[(judged < per_item.size)]
    items = items[per_item[items] >= 2]
    nan = metric(float("nan"), float("nan"), float("nan"), 0)
    out: dict[str, Any] = {"definition": "pairwise: the judge's mean character F1 with each annotator, beside the "
                           "annotators' mean F1 with each other and what trivial markers get, on the same items",
                           "n_items": int(items.size), "judge": nan, "humans": nan, "baselines": {},
                           "best_baseline": None, "normalised": nan, "above_baseline": nan}
    if not items.size:
        return out
    keep_h, keep_j = np.isin(human.item, items), np.isin(judge.item, items)
    z = np.zeros(items.size, dtype=np.int64)
    sides: dict[str, Intervals] = {"judge": judge.take(keep_j), "mark_nothing": Intervals(items, z, z.copy())}
    if lengths is not None:
        n = np.asarray(lengths, dtype=np.int64)
        sides["mark_everything"] = Intervals(items, z.copy(), n[items])
        sides["random_spans"] = random_spans(human.take(keep_h), r[keep_h], n, items, seed)
    hs = human.take(keep_h)
    names = list(sides)
    all_item = np.concatenate([hs.item, *(sides[k].item for k in names)])
    all_start = np.concatenate([hs.start, *(sides[k].start for k in names)])
    all_end = np.concatenate([hs.end, *(sides[k].end for k in names)])
    all_rater = np.concatenate([r[keep_h], *(np.full(len(sides[k]), m + c) for c, k in enumerate(names))])
    pw = pairwise_f1(Intervals(all_item, all_start, all_end), all_rater)
    a, b, f1 = np.asarray(pw["rater_a"]), np.asarray(pw["rater_b"]), np.asarray(pw["f1"], dtype=np.float64)
    remap = np.full(int(items.max()) + 1, -1)
    remap[items] = np.arange(items.size)
    code = remap[np.asarray(pw["item"])]
    cols = []
    masks = {"humans": (a < m) & (b < m), **{k: (a < m) & (b == m + c) for c, k in enumerate(names)}}
    for mask in masks.values():
        cols += [np.bincount(code[mask], weights=f1[mask], minlength=items.size),
                 np.bincount(code[mask], minlength=items.size).astype(np.float64)]
    sums = np.column_stack(cols).astype(np.float64)
    boot = bootstrap_sums(sums, n_boot, seed)
    keys = list(masks)

    def means(s: FloatArray) -> dict[str, FloatArray]:
        return {k: safe_ratio(s[:, 2 * c], s[:, 2 * c + 1]) for c, k in enumerate(keys)}

    point, reps = means(sums.sum(0)[None, :]), means(boot)

    def fig(est: FloatArray, rep: FloatArray, count: int) -> dict[str, object]:
        return metric(float(est[0]), *percentile_ci(rep, level), count)

    counts = {k: int(sums[:, 2 * c + 1].sum()) for c, k in enumerate(keys)}
    out["judge"] = fig(point["judge"], reps["judge"], counts["judge"])
    out["humans"] = fig(point["humans"], reps["humans"], counts["humans"])
    base = [k for k in names if k != "judge"]
    out["baselines"] = {k: fig(point[k], reps[k], counts[k]) for k in base}
    best = max(base, key=lambda k: float(np.nan_to_num(point[k][0], nan=-1.0)))
    out["best_baseline"] = best
    diff_p, diff_r = point["judge"] - point[best], reps["judge"] - reps[best]
    out["above_baseline"] = fig(diff_p, diff_r, items.size)
    scale_p, scale_r = point["humans"] - point[best], reps["humans"] - reps[best]
    norm_p = safe_ratio(diff_p, np.where(scale_p > 0, scale_p, 0.0))
    norm_r = safe_ratio(diff_r, np.where(scale_r > 0, scale_r, 0.0))
    out["normalised"] = fig(norm_p, norm_r, items.size)
    return out


__all__ = ["BASELINES", "Intervals", "random_spans", "span_reference", "by_label", "char_counts", "consensus", "detection", "human_ceiling", "intervals", "join_pairs", "marked",
           "mean_ci", "merge", "overlap_counts", "pairwise_f1", "rater_quality", "scores_from_counts", "soft_spearman",
           "span_matches", "span_scores", "to_tokens", "token_bounds"]
