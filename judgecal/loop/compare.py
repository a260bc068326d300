"""Two judges on the same human-labelled items: paired differences of κ, accuracy and each bias.

Both judges are read as the audit reads them (unmutated prompts, probe copies left out) and restricted
to the items both judged that have the truth. Each judge's per-item sums are those of the audit
(:func:`judgecal.audit.alignment.judge_sums`; verbosity and self-preference as in
:mod:`judgecal.audit.verbosity` and :mod:`judgecal.audit.self_preference`), and one item bootstrap
resamples both judges' sums at once (:mod:`judgecal.stats.paired`), so every interval is of a paired
difference on the same items.

Metrics and their good direction: ``accuracy``, ``macro_f1``, ``cohen_kappa``,
``position_consistency`` (higher); ``invalid_rate`` (lower); the biases ``first_position_rate`` (null
0.5), ``verbosity_excess`` and ``self_preference_excess`` (null 0: the judge prefers the longer or its
own response as often as the humans do).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from judgecal.audit.alignment import judge_sums, truth_codes
from judgecal.audit.run import own_candidates
from judgecal.data.families import load_families
from judgecal.data.store import Workspace
from judgecal.loop import LoopError
from judgecal.stats import bootstrap as stats
from judgecal.stats.paired import Stat, paired_difference, paired_replicates

COLUMNS = ("item_id", "judge", "order", "sample", "mutation", "verdict", "status", "p_a", "p_b", "p_tie",
           "cost_usd")
WIN = {"A": 1.0, "B": 0.0, "tie": 0.5}
# metric -> (good direction, null value, the tolerance key in thresholds.yaml's ``gate``)
METRICS: dict[str, tuple[str, float, str]] = {
    "cohen_kappa": ("higher", 0.0, "kappa_tolerance"),
    "accuracy": ("higher", 0.0, "accuracy_tolerance"),
    "macro_f1": ("higher", 0.0, "accuracy_tolerance"),
    "invalid_rate": ("lower", 0.0, "invalid_rate_tolerance"),
    "position_consistency": ("higher", 0.0, "accuracy_tolerance"),
    "first_position_rate": ("null", 0.5, "bias_tolerance"),
    "verbosity_excess": ("null", 0.0, "bias_tolerance"),
    "self_preference_excess": ("null", 0.0, "bias_tolerance"),
}


@dataclass
class Block:
    """One judge's per-item sums over the compared items and the metrics read off them."""

    sums: NDArray[np.float64]
    metrics: dict[str, Stat]


def judge_frame(ws: Workspace, judge: str) -> pd.DataFrame:
    """A judge's judgments as the audit reads them: unmutated prompts, probe copies left out."""
    if judge not in ws.judgments_repo.judges():
        raise LoopError(f"no judge {judge!r} in this workspace (judges there: {', '.join(ws.judgments_repo.judges()) or 'none'})")
    frame = ws.judgments_repo.judgments_frame(judge=judge, columns=COLUMNS)
    facts = ws.items_repo.item_facts()
    probes = set(facts.index[facts["source"].str.startswith("probe:")])
    frame = frame[(frame["mutation"] == "none") & ~frame["item_id"].isin(probes)]
    return frame.assign(item_id=frame["item_id"].astype(str)).reset_index(drop=True)


def _verbosity_sums(j: pd.DataFrame, truth: pd.Series, lens: pd.DataFrame) -> tuple[NDArray[np.float64], Stat]:
    items = truth.index
    codes = items.get_indexer(pd.Index(j["item_id"]))
    ln = lens.reindex(items)
    diff = (ln["len_a"] - ln["len_b"]).to_numpy(dtype=float)
    differs, longer_a = np.nan_to_num(diff) != 0, diff > 0
    v = j["verdict"].to_numpy(dtype=object)
    dec = np.isin(v, ("A", "B")) & differs[codes]
    longer = dec & ((v == "A") == longer_a[codes])
    h = truth.to_numpy(dtype=object)
    h_dec = np.isin(h, ("A", "B")) & differs
    h_longer = h_dec & ((h == "A") == longer_a)
    n = len(items)
    sums = np.column_stack([np.bincount(codes, weights=longer, minlength=n), np.bincount(codes, weights=dec, minlength=n),
                            h_longer.astype(float), h_dec.astype(float)])

    def excess(m: NDArray[np.float64]) -> NDArray[np.float64]:
        return stats.safe_ratio(m[:, 0], m[:, 1]) - stats.safe_ratio(m[:, 2], m[:, 3])
    return sums, excess


def _self_sums(j: pd.DataFrame, truth: pd.Series, own_a: pd.Series) -> tuple[NDArray[np.float64], Stat]:
    items = truth.index
    n = len(items)
    own = own_a.reindex(items)
    has = own.notna().to_numpy()
    own_is_a = own.fillna(False).to_numpy(dtype=bool)
    keep = j["verdict"].isin(list(WIN)).to_numpy().copy()
    codes = items.get_indexer(pd.Index(j["item_id"]))
    keep &= has[codes]
    jc = codes[keep]
    win_a = j["verdict"][keep].map(WIN).to_numpy(dtype=float)
    judge_win = np.where(own_is_a[jc], win_a, 1 - win_a)
    h_a = truth.map(WIN).to_numpy(dtype=float)
    h_win = np.where(own_is_a, h_a, 1 - h_a)
    sums = np.column_stack([np.bincount(jc, weights=judge_win, minlength=n), np.bincount(jc, minlength=n),
                            np.where(has, h_win, 0.0), has.astype(float)])

    def excess(m: NDArray[np.float64]) -> NDArray[np.float64]:
        return stats.safe_ratio(m[:, 0], m[:, 1]) - stats.safe_ratio(m[:, 2], m[:, 3])
    return sums, excess


def _columns(fn: Stat, lo: int, hi: int) -> Stat:
    """``fn`` read on columns ``lo:hi`` of a block's sums."""
    return lambda m: fn(m[:, lo:hi])


def judge_block(j: pd.DataFrame, truth: pd.Series, lens: pd.DataFrame, own_a: pd.Series,
                invalid_as: str = "tie") -> Block:
    """Per-item sums (rows: ``truth``'s items) and the metrics of :data:`METRICS` they define."""
    js = judge_sums(j, truth_codes(j["item_id"], truth), truth.to_numpy(), len(truth), invalid_as)
    if js is None:
        raise LoopError("no judgment with a verdict on the compared items")
    start = js.sums.shape[1]
    parts, metrics = [js.sums], {}  # type: list[NDArray[np.float64]], dict[str, Stat]
    for name, fn, _ in js.spec:  # each reads the confusion cells up to the last of its own columns
        if name in METRICS:
            metrics[name] = _columns(fn, 0, start)
    for name, (sums, fn) in (("verbosity_excess", _verbosity_sums(j, truth, lens)),
                             ("self_preference_excess", _self_sums(j, truth, own_a))):
        if sums[:, 1].sum() == 0 or sums[:, 3].sum() == 0:
            continue
        parts.append(sums)
        metrics[name] = _columns(fn, start, start + 4)
        start += 4
    return Block(np.hstack(parts), metrics)


def compare_judges(ws: Workspace, baseline: str, candidate: str, truth: pd.Series, *,
                   items: Iterable[str] | None = None, invalid_as: str = "tie", n_boot: int = 2000, seed: int = 0,
                   level: float = 0.95, alpha: float = 0.05,
                   frames: dict[str, pd.DataFrame] | None = None) -> dict[str, Any]:
    """Paired differences (candidate − baseline) on the items both judged that have the truth (and are in
    ``items`` when given): ``{n_items, metrics: {name: paired_difference(...)}, alpha_each}``; each metric
    is tested at ``alpha / m`` (Bonferroni over the ``m`` metrics both judges have)."""
    if baseline == candidate:
        raise LoopError(f"baseline and candidate are the same judge {baseline!r}")
    got = frames or {}
    fa = got[baseline] if baseline in got else judge_frame(ws, baseline)
    fb = got[candidate] if candidate in got else judge_frame(ws, candidate)
    common = set(fa.loc[fa["verdict"].notna(), "item_id"]) & set(fb.loc[fb["verdict"].notna(), "item_id"])
    common &= set(truth.index.astype(str))
    if items is not None:
        common &= {str(i) for i in items}
    if not common:
        raise LoopError(f"{baseline} and {candidate} share no judged item with a human label")
    t = truth.copy()
    t.index = t.index.astype(str)
    t = t.reindex(sorted(common))
    facts = ws.items_repo.item_facts()
    pairs = facts[(facts["task"] == "pairwise") & (facts["n_candidates"] == 2)]
    families = load_families(ws.path)
    lens = pairs[["len_a", "len_b"]]
    a = judge_block(fa[fa["item_id"].isin(common)], t, lens, own_candidates(pairs, baseline, families), invalid_as)
    b = judge_block(fb[fb["item_id"].isin(common)], t, lens, own_candidates(pairs, candidate, families), invalid_as)
    names = [m for m in METRICS if m in a.metrics and m in b.metrics]
    boot_a, boot_b = paired_replicates(a.sums, b.sums, n_boot, seed)
    alpha_each = alpha / max(1, len(names))
    out = {}
    for name in names:
        direction, null, _ = METRICS[name]
        out[name] = paired_difference(a.metrics[name], b.metrics[name], a.sums, b.sums, boot_a, boot_b,
                                      direction=direction, null=null, level=level, alpha=alpha_each)
    return {"baseline": baseline, "candidate": candidate, "n_items": len(common), "alpha": alpha,
            "alpha_each": alpha_each, "ci_level": level, "n_boot": n_boot, "seed": seed, "invalid_as": invalid_as,
            "metrics": out,
            "not_compared": [m for m in METRICS if m not in names]}
