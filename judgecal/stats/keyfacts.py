"""Key-fact scoring of outputs, deterministic: token F1 against reference facts or fields.

Tokens are lower-cased word tokens (``\\w+``). For a prediction ``p`` and a reference ``g`` as
bags of tokens, ``overlap = sum_t min(p_t, g_t)``, precision ``overlap / |p|``, recall
``overlap / |g|``, F1 their harmonic mean (the SQuAD answer F1, Rajpurkar et al., 2016); both empty
-> 1, one empty -> 0. A key fact is matched to the best unit (bullet or sentence) of the output it
is scored against; its coverage is ``full`` when that unit's score reaches ``full``, ``partial``
when it reaches ``partial``, ``none`` otherwise (Laban et al., 2024, label coverage the same way).
Everything is computed on sparse token-count matrices, never token by token.

Agreement with people (:func:`agreement`): accuracy, Cohen's kappa and quadratic-weighted kappa
(Cohen, 1968) on the ``none < partial < full`` scale, and Pearson's r of the scores 0 / 0.5 / 1, each
with an item-bootstrap percentile CI.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

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
from judgecal.stats.spans import join_pairs

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
WORD = re.compile(r"\w+")
COVERAGE: tuple[str, ...] = ("none", "partial", "full")  # codes 0, 1, 2; scores 0, 0.5, 1
DEFAULT_FULL, DEFAULT_PARTIAL = 0.5, 0.25


def tokenize(text: str) -> list[str]:
    return WORD.findall(text.lower())


def count_matrices(*groups: Sequence[str]) -> list[sparse.csr_matrix]:
    """Token-count matrices (one row per text) over one shared vocabulary."""
    vocab: dict[str, int] = {}
    out = []
    for texts in groups:
        rows, cols = [], []
        for k, t in enumerate(texts):
            ids = [vocab.setdefault(w, len(vocab)) for w in tokenize(t)]
            rows.extend([k] * len(ids))
            cols.extend(ids)
        out.append((np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), len(texts)))
    n_vocab = max(len(vocab), 1)
    return [sparse.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n_vocab)) for r, c, n in out]


def _prf(overlap: FloatArray, n_pred: FloatArray, n_gold: FloatArray) -> dict[str, FloatArray]:
    both_empty = (n_pred == 0) & (n_gold == 0)
    out = {"precision": np.nan_to_num(safe_ratio(overlap, n_pred)),
           "recall": np.nan_to_num(safe_ratio(overlap, n_gold)),
           "f1": np.nan_to_num(safe_ratio(2 * overlap, n_pred + n_gold))}
    for v in out.values():
        v[both_empty] = 1.0
    return out


def _rowsum(m: sparse.spmatrix) -> FloatArray:
    return np.asarray(m.sum(axis=1), dtype=np.float64).reshape(-1)


def token_f1(pred: Sequence[str], gold: Sequence[str]) -> dict[str, FloatArray]:
    """Token precision, recall and F1 of each ``pred[k]`` against ``gold[k]`` (e.g. one extracted field)."""
    if len(pred) != len(gold):
        raise StatsError("pred and gold must have the same length")
    p, g = count_matrices(pred, gold)
    return _prf(_rowsum(p.minimum(g)), _rowsum(p), _rowsum(g))


def field_f1(pred: Sequence[dict[str, str]], gold: Sequence[dict[str, str]]) -> dict[str, FloatArray]:
    """Per field, the token F1 of each output's value against the reference's (a missing value is empty)."""
    fields = sorted({k for d in gold for k in d} | {k for d in pred for k in d})
    return {f: token_f1([str(d.get(f) or "") for d in pred], [str(d.get(f) or "") for d in gold])["f1"]
            for f in fields}


def best_units(facts: Sequence[str], fact_group: ArrayLike, units: Sequence[str], unit_group: ArrayLike,
               measure: str = "f1") -> tuple[IntArray, FloatArray]:
    """For each fact, the unit of its own group (output) with the highest token ``measure`` (f1,
    recall or precision of the unit against the fact) and that score; ``-1`` and 0 when the group has
    no unit. Ties go to the earlier unit."""
    fg, ug = np.asarray(fact_group, dtype=np.int64), np.asarray(unit_group, dtype=np.int64)
    best, score = np.full(len(facts), -1, dtype=np.int64), np.zeros(len(facts))
    if not len(facts) or not len(units):
        return best, score
    fm, um = count_matrices(facts, units)
    i, j = join_pairs(fg, ug, int(max(fg.max(), ug.max())) + 1)
    s = _prf(_rowsum(um[j].minimum(fm[i])), _rowsum(um[j]), _rowsum(fm[i]))[measure]
    order = np.lexsort((j, -s, i))
    first = np.r_[True, i[order][1:] != i[order][:-1]]
    best[i[order][first]] = j[order][first]
    score[i[order][first]] = s[order][first]
    return best, score


def coverage_codes(score: ArrayLike, full: float = DEFAULT_FULL, partial: float = DEFAULT_PARTIAL) -> IntArray:
    """0 (none), 1 (partial) or 2 (full) from a best-unit score."""
    s = np.asarray(score, dtype=np.float64)
    return np.where(s >= full, 2, np.where(s >= partial, 1, 0)).astype(np.int64)


UNIT = re.compile(r"[^\n]+")
SENTENCE = re.compile(r"[^\s][^\n]*?(?:[.!?](?=\s|$)|(?=\n)|$)")


def units(text: str, split: str = "lines") -> list[tuple[int, int]]:
    """Character spans of the output's units: non-empty ``lines`` (bullets) or ``sentences``."""
    pattern = UNIT if split == "lines" else SENTENCE
    return [m.span() for m in pattern.finditer(text) if m.group().strip()]


def agreement(truth: ArrayLike, pred: ArrayLike, k: int = 3, n_boot: int = 2000, seed: int = 0,
              level: float = 0.95, groups: ArrayLike | None = None) -> dict[str, dict[str, object]]:
    """Agreement of ordinal codes ``pred`` with ``truth`` (``0..k-1``; a negative ``pred`` is an
    invalid answer, left out and counted in ``n_invalid``): accuracy, Cohen's kappa,
    quadratic-weighted kappa and Pearson's r of ``code / (k - 1)``, with item-bootstrap CIs.
    ``groups`` (e.g. the summary a key fact belongs to) resamples whole groups instead of items."""
    t, p = np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    ok = (p >= 0) & (t >= 0)
    t, p = t[ok], p[ok]
    x, y = t / (k - 1), p / (k - 1)
    onehot = np.zeros((t.size, k * k))
    onehot[np.arange(t.size), t * k + p] = 1.0
    sums = np.column_stack([onehot, x, y, x * x, y * y, x * y, np.ones_like(x)])
    if groups is not None:
        g, _ = pd.factorize(np.asarray(groups)[ok])
        grouped = np.zeros((int(g.max(initial=-1)) + 1, sums.shape[1]))
        np.add.at(grouped, g, sums)
        sums = grouped
    w = quadratic_weights(k)

    def stats(s: FloatArray) -> FloatArray:
        conf = s[:, : k * k].reshape(-1, k, k)
        wk = weighted_kappa_from_confusion(conf, w)
        sx, sy, sxx, syy, sxy, m = (s[:, k * k + c] for c in range(6))
        cov = sxy - sx * sy / np.where(m > 0, m, 1)
        r = safe_ratio(cov, np.sqrt((sxx - sx * sx / np.where(m > 0, m, 1)) * (syy - sy * sy / np.where(m > 0, m, 1))))
        return np.column_stack([accuracy_from_confusion(conf), cohen_kappa_from_confusion(conf), wk, r])

    est = stats(sums.sum(0)[None, :])[0]
    boot = stats(bootstrap_sums(sums, n_boot, seed)) if t.size else np.zeros((0, 4))
    names = ("accuracy", "kappa", "weighted_kappa", "pearson_r")
    out = {nm: metric(float(est[c]), *percentile_ci(boot[:, c], level), int(t.size)) for c, nm in enumerate(names)}
    out["n_invalid"] = {"estimate": int((~ok).sum()), "ci_low": None, "ci_high": None, "n": int(ok.size)}
    return out


__all__ = ["COVERAGE", "agreement", "best_units", "count_matrices", "coverage_codes", "field_f1", "token_f1",
           "tokenize", "units"]
