"""Judge-human alignment: accuracy, macro-F1, Cohen's kappa, position metrics, invalid rate.

Every figure is computed over judgments (each presentation order and sample counts once) and
gets an item-level cluster-bootstrap percentile CI (see :mod:`judgecal.audit.stats`).

- ``accuracy``: share of judgments whose verdict equals the human consensus (with both orders
  recorded, this is LLMBar's ``correct_average``); ``accuracy_AB``/``accuracy_BA`` per order,
  ``accuracy_both``: items right in both orders.
- ``position_consistency``: share of (item, sample) pairs whose two orders give the same verdict.
- ``first_position_rate``: among decisive verdicts on items judged in both orders, the share that
  picked the response shown first (0.5 = no position bias).
- ``invalid_rate``: share of judgments with no parsable verdict (status other than ``ok``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit import stats

LABELS = ("A", "B", "tie")


def _metric(est: float, lo: float, hi: float, n: int) -> dict[str, Any]:
    clean = [None if not np.isfinite(v) else round(float(v), 10) for v in (est, lo, hi)]
    return {"estimate": clean[0], "ci_low": clean[1], "ci_high": clean[2], "n": int(n)}


def judge_metrics(
    judgments: pd.DataFrame, truth: pd.Series, *, invalid_as: str = "tie", n_boot: int = 2000,
    seed: int = 0, level: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Alignment metrics of one pairwise judge against ``truth`` (item_id -> label).

    ``judgments`` needs ``item_id, order, sample, mutation, verdict, status``. ``invalid_as`` maps
    unparsable verdicts for the agreement metrics: ``"tie"`` (as PandaLM's authors did) or
    ``"wrong"`` (its own class, never equal to a human label).
    """
    j = judgments[judgments["item_id"].isin(truth.index)]
    j = j[j["verdict"].notna()]
    out: dict[str, dict[str, Any]] = {}
    if j.empty:
        return out
    item_codes, items = pd.factorize(j["item_id"])
    n_items = len(items)
    verdict = j["verdict"].astype(str).to_numpy()
    pred = np.where(verdict == "invalid", "tie" if invalid_as == "tie" else "invalid", verdict)
    true = truth.reindex(j["item_id"]).astype(str).to_numpy()
    classes = sorted(set(LABELS) | set(np.unique(pred)) | set(np.unique(true)))
    k = len(classes)
    cidx = {c: i for i, c in enumerate(classes)}
    t_code = np.array([cidx[x] for x in true])
    p_code = np.array([cidx[x] for x in pred])
    order = j["order"].to_numpy()
    correct = (pred == true).astype(float)
    invalid = (j["status"].to_numpy() != "ok").astype(float)

    # Pairs of orders on the same (item, sample, mutation).
    key = j["item_id"].astype(str) + "\x00" + j["sample"].astype(str) + "\x00" + j["mutation"].astype(str)
    ab = pd.Series(verdict[order == "AB"], index=key[order == "AB"].to_numpy())
    ba = pd.Series(verdict[order == "BA"], index=key[order == "BA"].to_numpy())
    ab, ba = ab[~ab.index.duplicated()], ba[~ba.index.duplicated()]
    both = ab.index.intersection(ba.index)
    in_pair = key.isin(both).to_numpy()
    pair_first = pd.Series(range(len(key)), index=key.to_numpy())
    pair_rows = pair_first[~pair_first.index.duplicated()].reindex(both).to_numpy()
    same = np.zeros(len(j))
    is_pair_row = np.zeros(len(j))
    if len(both):
        same[pair_rows] = (ab.reindex(both).to_numpy() == ba.reindex(both).to_numpy()).astype(float)
        is_pair_row[pair_rows] = 1.0
        t_ab = truth.reindex([b.split("\x00")[0] for b in both]).astype(str).to_numpy()

        def map_inv(v: np.ndarray) -> np.ndarray:
            return np.where(v == "invalid", "tie" if invalid_as == "tie" else "invalid", v)

        both_right = (map_inv(ab.reindex(both).to_numpy()) == t_ab) & (map_inv(ba.reindex(both).to_numpy()) == t_ab)
        both_correct = np.zeros(len(j))
        both_correct[pair_rows] = both_right.astype(float)
    else:
        both_correct = np.zeros(len(j))
    decisive = np.isin(verdict, ("A", "B")) & in_pair
    picked_first = ((verdict == "A") & (order == "AB")) | ((verdict == "B") & (order == "BA"))

    conf_cells = np.zeros((len(j), k * k))
    conf_cells[np.arange(len(j)), t_code * k + p_code] = 1.0
    cols = {
        "correct": correct, "one": np.ones(len(j)), "invalid": invalid,
        "correct_ab": correct * (order == "AB"), "n_ab": (order == "AB").astype(float),
        "correct_ba": correct * (order == "BA"), "n_ba": (order == "BA").astype(float),
        "same": same, "pair": is_pair_row, "both_correct": both_correct,
        "first": (picked_first & decisive).astype(float), "decisive": decisive.astype(float),
    }
    names = list(cols)
    values = np.column_stack([cols[c] for c in names] + [conf_cells])
    sums = stats.per_item_sums(item_codes, values, n_items)
    boot = stats.bootstrap_sums(sums, n_boot, seed)
    at = {c: i for i, c in enumerate(names)}
    conf0 = len(names)

    def ratio(a: str, b: str) -> Callable[[np.ndarray], np.ndarray]:
        return lambda m: stats.safe_ratio(m[:, at[a]], m[:, at[b]])

    def conf(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
        return lambda m: fn(m[:, conf0:].reshape(-1, k, k))

    total = sums.sum(0)
    spec: list[tuple[str, Callable[[np.ndarray], np.ndarray], float]] = [
        ("accuracy", ratio("correct", "one"), total[at["one"]]),
        ("macro_f1", conf(stats.macro_f1_from_confusion), total[at["one"]]),
        ("cohen_kappa", conf(stats.cohen_kappa_from_confusion), total[at["one"]]),
        ("invalid_rate", ratio("invalid", "one"), total[at["one"]]),
    ]
    if total[at["pair"]] > 0:
        spec += [
            ("position_consistency", ratio("same", "pair"), total[at["pair"]]),
            ("first_position_rate", ratio("first", "decisive"), total[at["decisive"]]),
            ("accuracy_AB", ratio("correct_ab", "n_ab"), total[at["n_ab"]]),
            ("accuracy_BA", ratio("correct_ba", "n_ba"), total[at["n_ba"]]),
            ("accuracy_both", ratio("both_correct", "pair"), total[at["pair"]]),
        ]
    for name, fn, n in spec:
        est, lo, hi = stats.estimate_with_ci(fn, sums, boot, level)
        out[name] = _metric(est, lo, hi, int(n))
    return out


def usage_metrics(judgments: pd.DataFrame) -> dict[str, float | int | None]:
    """Tokens, latency and cost per 1,000 judgments (``None`` where nothing was recorded)."""
    n = len(judgments)

    def per_k(col: str) -> float | None:
        s = judgments[col].dropna() if col in judgments else pd.Series(dtype=float)
        return None if s.empty or n == 0 else round(float(s.sum()) / n * 1000, 6)

    lat = judgments["latency_s"].dropna() if "latency_s" in judgments else pd.Series(dtype=float)
    return {
        "judgments": n,
        "prompt_tokens_per_1k": per_k("prompt_tokens"),
        "completion_tokens_per_1k": per_k("completion_tokens"),
        "cost_usd_per_1k": per_k("cost_usd"),
        "latency_s_mean": None if lat.empty else round(float(lat.mean()), 6),
        "latency_s_p95": None if lat.empty else round(float(lat.quantile(0.95)), 6),
    }
