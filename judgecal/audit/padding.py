"""Padding probe: a response against a meaning-preserving, longer copy of itself.

Each pairwise item yields a probe pair (source ``probe:padding``): candidate A is the item's first
response, candidate B the same text followed by a restatement that adds no information. Judged in
both orders, a judge free of verbosity bias splits its decisive verdicts evenly (or says tie), so

- ``pad_pick_rate`` = share of decisive verdicts that pick the padded copy (null 0.5, item-bootstrap
  CI; the p-value and minimum detectable effect are read off that interval, so the two orders of
  an item are not taken for independent evidence);
- ``pad_tie_rate`` = share of valid verdicts that call the two equal.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.records import Candidate, Item
from judgecal.stats import bootstrap as stats
from judgecal.stats.inference import ci_p_value, mde_from_ci

SOURCE = "probe:padding"
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def pad_text(text: str) -> str:
    """``text`` followed by a restatement of its own sentences (about twice as long, no new claims)."""
    sentences = [s.strip() for s in _SENTENCE.findall(text) if s.strip()]
    if not sentences:
        return text
    recap = " ".join(f"({i}) {s.rstrip('.!?')}." for i, s in enumerate(sentences, 1))
    return f"{text}\n\nTo restate the answer above point by point, so that nothing is missed: {recap}"


def padded_items(items: list[Item]) -> list[Item]:
    """Probe pairs: each pairwise item's first response against its padded copy."""
    out = []
    for it in items:
        if it.task != "pairwise" or len(it.candidates) != 2 or it.source == SOURCE:
            continue
        c = it.candidates[0]
        padded = pad_text(c.text)
        if padded == c.text:
            continue
        out.append(replace(it, item_id=f"{it.item_id}#pad", candidates=[c, Candidate(padded, c.model, c.family)],
                           source=SOURCE, metadata={**it.metadata, "base_item": it.item_id, "padded": "B"}))
    return out


def padding_preference(judgments: pd.DataFrame, probe_ids: set[str] | frozenset[str] | pd.Index, *, n_boot: int = 2000,
                       seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """``pad_pick_rate`` and ``pad_tie_rate`` of one judge over the probe pairs it judged."""
    j = judgments[judgments["item_id"].isin(probe_ids) & judgments["verdict"].isin(["A", "B", "tie"])]
    if j.empty:
        return {}
    codes, items = stats.item_codes(j["item_id"])
    v = j["verdict"].to_numpy(dtype=object)
    cols = [(v == "B"), np.isin(v, ["A", "B"]), (v == "tie"), np.ones(len(v), dtype=bool)]
    sums = np.column_stack([np.bincount(codes, weights=c.astype(np.float64), minlength=len(items))
                            for c in cols]).astype(np.float64)
    boot = stats.bootstrap_sums(sums, n_boot, seed)
    est, lo, hi = stats.estimate_with_ci(lambda m: stats.safe_ratio(m[:, 0], m[:, 1]), sums, boot, level)
    pick = {**stats.metric(est, lo, hi, int(sums[:, 1].sum())),
            "p": ci_p_value({"estimate": est - 0.5, "ci_low": lo - 0.5, "ci_high": hi - 0.5}),
            "mde": mde_from_ci(lo, hi)}
    est, lo, hi = stats.estimate_with_ci(lambda m: stats.safe_ratio(m[:, 2], m[:, 3]), sums, boot, level)
    return {"pad_pick_rate": pick, "pad_tie_rate": stats.metric(est, lo, hi, len(v)), "n_pairs": int(len(items))}
