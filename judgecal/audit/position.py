"""Position bias from the two presentation orders of the same (item, sample, mutation).

- ``flip_rate``: among pairs decisive in both orders, the share whose item-level verdict flips.
- McNemar on ``[verdict is A]`` in order AB vs order BA: without position bias the two orders pick
  the item's first candidate equally often; ``b`` (A only when shown first) much larger than ``c``
  means a first-position bias, the reverse a second-position bias.
- A swap-debiased verdict per pair: the common verdict when both orders agree, else ``tie``; with
  token probabilities, the argmax of the two orders' averaged P(A), P(B), P(tie) (Zheng et al., 2023;
  Wang et al., 2023, "Large Language Models are not Fair Evaluators").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.alignment import truth_codes
from judgecal.stats import bootstrap as stats
from judgecal.stats.inference import mcnemar, mde_proportion


def paired_orders(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per (item, sample, mutation) judged in both orders: verdicts and probabilities of each."""
    cols = ["item_id", "sample", "mutation"]
    j = judgments.drop_duplicates([*cols, "order"])
    ab = j[j["order"] == "AB"].set_index(cols)
    ba = j[j["order"] == "BA"].set_index(cols)
    keep = [c for c in ("verdict", "p_a", "p_b", "p_tie") if c in j.columns]
    ab = ab[keep].add_suffix("_ab")
    ba = ba[keep].add_suffix("_ba")
    return ab.join(ba, how="inner").reset_index()


def debiased_verdicts(pairs: pd.DataFrame) -> pd.Series:
    """Swap-debiased verdict per pair (index aligned with ``pairs``)."""
    v = np.where(pairs["verdict_ab"] == pairs["verdict_ba"], pairs["verdict_ab"], "tie")
    if {"p_a_ab", "p_a_ba"} <= set(pairs.columns):
        probs = pairs[["p_a_ab", "p_b_ab", "p_tie_ab", "p_a_ba", "p_b_ba", "p_tie_ba"]].to_numpy(dtype=float)
        ok = np.isfinite(probs).all(1)
        avg = (probs[:, :3] + probs[:, 3:]) / 2
        v = np.where(ok, np.array(["A", "B", "tie"])[np.nan_to_num(avg).argmax(1)], v)
    return pd.Series(v, index=pairs.index, name="debiased")


def position_tests(judgments: pd.DataFrame, pairs: pd.DataFrame | None = None) -> dict[str, Any]:
    """Flip rate, McNemar (exact and mid-p) and the MDE of the first-position rate at this sample size;
    ``pairs``: :func:`paired_orders` of ``judgments`` when already made."""
    pairs = paired_orders(judgments) if pairs is None else pairs
    if pairs.empty:
        return {}
    decisive = pairs["verdict_ab"].isin(["A", "B"]) & pairs["verdict_ba"].isin(["A", "B"])
    flips = int((pairs.loc[decisive, "verdict_ab"] != pairs.loc[decisive, "verdict_ba"]).sum())
    a_ab, a_ba = pairs["verdict_ab"] == "A", pairs["verdict_ba"] == "A"
    b, c = int((a_ab & ~a_ba).sum()), int((~a_ab & a_ba).sum())
    n_dec = int(decisive.sum())
    return {
        "pairs": int(len(pairs)), "decisive_pairs": n_dec, "flips": flips,
        "flip_rate": flips / n_dec if n_dec else float("nan"),
        "mcnemar_b": b, "mcnemar_c": c, "mcnemar_p": mcnemar(b, c), "mcnemar_midp": mcnemar(b, c, midp=True),
        "direction": "first" if b > c else "second" if c > b else "none",
        "first_position_mde": mde_proportion(n_dec),
    }


def debiased_sums(judgments: pd.DataFrame, truth: pd.Series, invalid_as: str = "tie",
                  pairs: pd.DataFrame | None = None) -> tuple[np.ndarray, int]:
    """Per-item sums over ``truth``'s items (rows in its order): swap-debiased verdict right, the mean of
    the two single-order verdicts right, pairs; and the number of pairs with a consensus. ``pairs``:
    :func:`paired_orders` of ``judgments`` when already made."""
    pairs = paired_orders(judgments) if pairs is None else pairs
    code = truth_codes(pairs["item_id"], truth)
    pairs, code = pairs[code >= 0], code[code >= 0]
    deb = debiased_verdicts(pairs).to_numpy(dtype=object)
    true = truth.to_numpy(dtype=object)[code]

    def right(v: Any) -> np.ndarray:
        pred = np.where(v == "invalid", "tie" if invalid_as == "tie" else "invalid", v)
        return np.asarray(pred == true, dtype=np.float64)

    cols = [right(deb), right(pairs["verdict_ab"].to_numpy(dtype=object)) / 2
            + right(pairs["verdict_ba"].to_numpy(dtype=object)) / 2, np.ones(len(pairs))]
    sums = np.column_stack([np.bincount(code, weights=c, minlength=len(truth)) for c in cols]).astype(np.float64)
    return sums, int(len(pairs))


def debiased_from(sums: np.ndarray, boot: np.ndarray, n_pairs: int, level: float = 0.95) -> dict[str, Any]:
    """``debiased_accuracy`` and ``paired_single_order_accuracy`` from :func:`debiased_sums` and their
    bootstrap replicates."""
    out = {}
    sums = sums.sum(0, keepdims=True)  # the totals, once
    for name, k in (("debiased_accuracy", 0), ("paired_single_order_accuracy", 1)):
        def acc(m: Any, k: int = k) -> Any:
            return stats.safe_ratio(m[:, k], m[:, 2])
        est, lo, hi = stats.estimate_with_ci(acc, sums, boot, level)
        out[name] = stats.metric(est, lo, hi, n_pairs)
    return out


def debiased_accuracy(judgments: pd.DataFrame, truth: pd.Series, *, invalid_as: str = "tie", n_boot: int = 2000,
                      seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Accuracy of the swap-debiased verdicts against the human consensus (item-bootstrap CI over the
    consensus items) beside the accuracy of the same pairs' single-order verdicts, so the gain from
    debiasing reads off directly."""
    sums, n_pairs = debiased_sums(judgments, truth, invalid_as)
    if not n_pairs:
        return {}
    return debiased_from(sums, stats.bootstrap_sums(sums, n_boot, seed), n_pairs, level)
