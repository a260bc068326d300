"""Judge-human alignment: accuracy, macro-F1, Cohen's kappa, position metrics, invalid rate.

Every figure is computed over judgments (each presentation order and sample counts once) and
gets an item-level cluster-bootstrap percentile CI (see :mod:`judgecal.stats.bootstrap`). All judges
of one audit share the same bootstrap resamples of the consensus items, so their intervals are
paired.

- ``accuracy``: share of judgments whose verdict equals the human consensus (with both orders
  recorded, this is LLMBar's ``correct_average``); ``accuracy_AB``/``accuracy_BA`` per order,
  ``accuracy_both``: (item, sample) pairs right in both orders.
- ``position_consistency``: share of (item, sample) pairs whose two orders give the same verdict.
- ``first_position_rate``: among decisive verdicts on pairs judged in both orders, the share that
  picked the response shown first (0.5 = no position bias).
- ``flip_rate``: among pairs decisive in both orders, the share whose verdict flips with the order.
- ``invalid_rate``: share of judgments with no parsable verdict (status other than ``ok``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from judgecal.stats import bootstrap as stats

LABELS = ("A", "B", "tie")
Stat = Callable[[NDArray[np.float64]], NDArray[np.float64]]


# The per-item sum columns of :func:`judge_sums`, followed by the K x K confusion cells (true * K + predicted).
SUM_COLUMNS = ("correct", "one", "invalid", "correct_ab", "n_ab", "correct_ba", "n_ba", "same", "pair",
               "both_correct", "first", "decisive", "flip", "dec_pair")


@dataclass
class JudgeSums:
    """Per-item sums of one judge over the audit's items, and how to turn them into metrics;
    ``classes`` labels the rows and columns of the confusion cells."""

    sums: NDArray[np.float64]
    spec: list[tuple[str, Stat, int]] = field(default_factory=list)
    classes: tuple[str, ...] = ()


def _coded(column: pd.Series, rows: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.object_]]:
    """``column``'s values at ``rows`` as codes into its distinct values (-1: missing) and those values."""
    codes, values = pd.factorize(column.iloc[rows], use_na_sentinel=True)
    return np.asarray(codes, dtype=np.intp), np.asarray(values, dtype=object)


@dataclass
class SumsShape:
    """What :func:`judge_sums` will write, known before it runs: the rows kept, the confusion classes, the
    number of columns, and the most rows of one item (every column is a count of rows, so this bounds them)."""

    rows: NDArray[np.intp]
    classes: pd.Index
    width: int
    most_per_item: int


def sums_shape(judgments: pd.DataFrame, codes: NDArray[np.int64], truth: NDArray[Any],
               invalid_as: str = "tie") -> SumsShape | None:
    """:class:`SumsShape` of one judge's :func:`judge_sums` (``None``: no judgment to sum)."""
    keep = (codes >= 0) & judgments["verdict"].notna().to_numpy()
    if not keep.any():
        return None
    rows = np.flatnonzero(keep)
    code = codes[rows]
    verdict, v_values = _coded(judgments["verdict"], rows)
    pred_values = np.where(v_values == "invalid", "tie" if invalid_as == "tie" else "invalid", v_values)
    true_all = np.asarray(truth, dtype=object)
    classes = pd.Index(sorted({str(c) for c in (*LABELS, *pred_values[np.unique(verdict)],
                                                 *pd.unique(true_all[np.unique(code)]))}))
    return SumsShape(rows, classes, len(SUM_COLUMNS) + len(classes) ** 2, int(np.bincount(code).max()))


def judge_sums(judgments: pd.DataFrame, codes: NDArray[np.int64], truth: NDArray[Any], n_items: int,
               invalid_as: str = "tie", shape: SumsShape | None = None,
               out: NDArray[np.floating[Any]] | None = None) -> JudgeSums | None:
    """Sums for one pairwise judge; ``codes`` gives each row's index into ``truth`` (-1: no consensus).
    ``shape``: :func:`sums_shape` when already found; ``out``: the ``n_items x shape.width`` array (a view
    of a larger one; single precision is exact while ``shape.most_per_item`` times the items is below 2**24,
    every column being a count of rows) to write them into instead of a new one."""
    shape = shape or sums_shape(judgments, codes, truth, invalid_as)
    if shape is None:
        return None
    rows, classes = shape.rows, shape.classes
    code = codes[rows]
    # each text column factorised once: a test against a label is one over its few distinct values, then looked
    # up per row (the missing value, code -1, reads the entry appended last)
    verdict, v_values = _coded(judgments["verdict"], rows)  # no missing verdict is kept
    pred_values = np.where(v_values == "invalid", "tie" if invalid_as == "tie" else "invalid", v_values)
    true_all = np.asarray(truth, dtype=object)
    k = len(classes)
    t_code = classes.get_indexer(pd.Index(true_all))[code]
    p_code = classes.get_indexer(pd.Index(pred_values))[verdict]
    order, o_values = _coded(judgments["order"], rows)
    is_ab, is_ba = np.append(o_values == "AB", False)[order], np.append(o_values == "BA", False)[order]
    correct = (t_code == p_code).astype(float)
    status, s_values = _coded(judgments["status"], rows)
    invalid = np.append(s_values != "ok", True)[status].astype(float)

    # Pair the two orders of the same (item, sample, mutation) by an integer key.
    mut = pd.factorize(judgments["mutation"].iloc[rows])[0]
    sample = judgments["sample"].to_numpy(dtype=np.int64)[rows]
    key = (code.astype(np.int64) * (sample.max() + 1) + sample) * (mut.max() + 1) + mut
    first_ab = pd.Series(np.flatnonzero(is_ab), index=key[is_ab])
    first_ab = first_ab[~first_ab.index.duplicated()]
    first_ba = pd.Series(np.flatnonzero(is_ba), index=key[is_ba])
    first_ba = first_ba[~first_ba.index.duplicated()]
    both = first_ab.index.intersection(first_ba.index)
    rows_ab, rows_ba = first_ab.reindex(both).to_numpy(), first_ba.reindex(both).to_numpy()
    n = len(rows)
    same, pair, both_correct = np.zeros(n), np.zeros(n), np.zeros(n)
    same[rows_ab] = verdict[rows_ab] == verdict[rows_ba]  # equal codes: equal verdicts
    pair[rows_ab] = 1.0
    dec_pair, flip = np.zeros(n), np.zeros(n)
    is_decisive = np.isin(v_values, ("A", "B"))[verdict]
    both_dec = is_decisive[rows_ab] & is_decisive[rows_ba]
    dec_pair[rows_ab] = both_dec
    flip[rows_ab] = both_dec & (verdict[rows_ab] != verdict[rows_ba])
    both_correct[rows_ab] = correct[rows_ab] * correct[rows_ba]
    in_pair = np.isin(key, both.to_numpy())
    decisive = is_decisive & in_pair
    picked_first = ((v_values == "A")[verdict] & is_ab) | ((v_values == "B")[verdict] & is_ba)

    cols = {"correct": lambda: correct, "one": lambda: None, "invalid": lambda: invalid,
            "correct_ab": lambda: correct * is_ab, "n_ab": lambda: is_ab, "correct_ba": lambda: correct * is_ba,
            "n_ba": lambda: is_ba, "same": lambda: same, "pair": lambda: pair, "both_correct": lambda: both_correct,
            "first": lambda: picked_first & decisive, "decisive": lambda: decisive, "flip": lambda: flip,
            "dec_pair": lambda: dec_pair}
    names = list(cols)
    assert tuple(names) == SUM_COLUMNS
    sums: NDArray[np.float64] = np.zeros((n_items, len(names) + k * k)) if out is None else out  # type: ignore[assignment]
    for c, values in enumerate(cols.values()):  # one weight vector alive at a time
        sums[:, c] = np.bincount(code, weights=values(), minlength=n_items)
    cell = t_code * k + p_code
    conf = np.bincount(code * (k * k) + cell, minlength=n_items * k * k).reshape(n_items, k * k)
    sums[:, len(names):] = conf
    return JudgeSums(sums, sums_spec(sums, k), tuple(classes))


def sums_spec(sums: NDArray[np.float64], k: int) -> list[tuple[str, Stat, int]]:
    """The metrics of :func:`judge_sums`'s columns (``k`` confusion classes) and their sample sizes."""
    at = {c: i for i, c in enumerate(SUM_COLUMNS)}
    c0 = len(SUM_COLUMNS)

    def ratio(a: str, b: str) -> Stat:
        return lambda m: stats.safe_ratio(m[:, at[a]], m[:, at[b]])

    def on_conf(fn: Stat) -> Stat:
        return lambda m: fn(m[:, c0:].reshape(-1, k, k))

    total = sums.sum(0)
    spec: list[tuple[str, Stat, int]] = [
        ("accuracy", ratio("correct", "one"), int(total[at["one"]])),
        ("macro_f1", on_conf(stats.macro_f1_from_confusion), int(total[at["one"]])),
        ("cohen_kappa", on_conf(stats.cohen_kappa_from_confusion), int(total[at["one"]])),
        ("invalid_rate", ratio("invalid", "one"), int(total[at["one"]])),
    ]
    if total[at["pair"]] > 0:
        spec += [
            ("position_consistency", ratio("same", "pair"), int(total[at["pair"]])),
            ("first_position_rate", ratio("first", "decisive"), int(total[at["decisive"]])),
            ("accuracy_AB", ratio("correct_ab", "n_ab"), int(total[at["n_ab"]])),
            ("accuracy_BA", ratio("correct_ba", "n_ba"), int(total[at["n_ba"]])),
            ("accuracy_both", ratio("both_correct", "pair"), int(total[at["pair"]])),
            ("flip_rate", ratio("flip", "dec_pair"), int(total[at["dec_pair"]])),
        ]
    return spec


def metrics_from(js: JudgeSums, boot: NDArray[np.float64], level: float = 0.95) -> dict[str, dict[str, Any]]:
    """Point estimates from the sums, percentile CIs from the replicated sums ``boot``."""
    out = {}
    totals = js.sums.sum(0, keepdims=True)  # once, not once per metric
    for name, fn, n in js.spec:
        est, lo, hi = stats.estimate_with_ci(fn, totals, boot, level)
        out[name] = stats.metric(est, lo, hi, n)
    return out


def truth_codes(item_ids: pd.Series, truth: pd.Series) -> NDArray[np.int64]:
    """Each judgment's index into ``truth`` (-1 for items without a consensus label)."""
    index = truth.index  # the truth's own index: its hash table, built on the first lookup, serves every later one
    if isinstance(item_ids.dtype, pd.CategoricalDtype):  # map the categories once, not every row
        per_category = np.append(index.get_indexer(item_ids.cat.categories), -1)
        return np.asarray(per_category[item_ids.cat.codes.to_numpy()], dtype=np.int64)
    return np.asarray(index.get_indexer(pd.Index(item_ids.to_numpy())), dtype=np.int64)


def judge_metrics(
    judgments: pd.DataFrame, truth: pd.Series, *, invalid_as: str = "tie", n_boot: int = 2000,
    seed: int = 0, level: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Alignment metrics of one pairwise judge against ``truth`` (item_id -> label).

    ``judgments`` needs ``item_id, order, sample, mutation, verdict, status``. ``invalid_as`` maps
    unparsable verdicts for the agreement metrics: ``"tie"`` (as PandaLM's authors did) or
    ``"wrong"`` (its own class, never equal to a human label).
    """
    codes = truth_codes(judgments["item_id"], truth)
    js = judge_sums(judgments, codes, truth.to_numpy(), len(truth), invalid_as)
    if js is None:
        return {}
    return metrics_from(js, stats.bootstrap_sums(js.sums, n_boot, seed), level)


#: the judgments' columns a judge's ``usage`` reads, and only it
USAGE_COLUMNS = ("prompt_tokens", "completion_tokens", "latency_s", "cost_usd")


def usage_metrics(judgments: pd.DataFrame) -> dict[str, float | int | None]:
    """Tokens, latency and cost per 1,000 judgments (``None`` where nothing was recorded)."""
    return usage_of(len(judgments), {c: judgments[c] for c in USAGE_COLUMNS if c in judgments})


def usage_of(n: int, columns: Mapping[str, pd.Series]) -> dict[str, float | int | None]:
    """:func:`usage_metrics` of ``n`` judgments from their :data:`USAGE_COLUMNS` (a column not given: not
    recorded)."""

    def recorded(col: str) -> pd.Series:
        return pd.Series(columns[col]).dropna() if col in columns else pd.Series(dtype=float)

    def per_k(col: str) -> float | None:
        s = recorded(col)
        return None if s.empty or n == 0 else round(float(s.sum()) / n * 1000, 6)

    lat = recorded("latency_s")
    return {
        "judgments": n,
        "prompt_tokens_per_1k": per_k("prompt_tokens"),
        "completion_tokens_per_1k": per_k("completion_tokens"),
        "cost_usd_per_1k": per_k("cost_usd"),
        "latency_s_mean": None if lat.empty else round(float(lat.mean()), 6),
        "latency_s_p95": None if lat.empty else round(float(lat.quantile(0.95)), 6),
    }
