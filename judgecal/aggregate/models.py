"""Aggregators: settings in ``__init__``, ``fit(df) -> self``, learned values end in ``_``.

Input frames have columns ``item_id, annotator, label`` and are never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from judgecal.errors import InputError


def _codes(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.Index, pd.Index, pd.Index]:
    for col in ("item_id", "annotator", "label"):
        if col not in df.columns:
            raise InputError(f"annotations need a {col!r} column")
    # order of first appearance: annotations grouped by item stay grouped, which crowd-kit's
    # pandas joins and groupbys run fastest on (lexicographic codes cost ~20% on 1M rows)
    t_codes, tasks = pd.factorize(df["item_id"], sort=False)
    w_codes, workers = pd.factorize(df["annotator"], sort=False)
    l_codes, labels = pd.factorize(df["label"].astype(str), sort=True)
    coded = pd.DataFrame({"task": t_codes, "worker": w_codes, "label": l_codes})
    return coded, pd.Index(tasks), pd.Index(workers), pd.Index(labels)


class MajorityVote:
    """The most frequent label per item, with posteriors = vote shares.

    Ties are broken deterministically, never by column order: an even split between ``A`` and
    ``B`` is ``tie`` (pairwise verdicts; ``ab_tie=False`` for items with a declared label set, where
    ``tie`` is not a label and ``A``/``B`` may be ordinary labels); any other tie takes the first tied
    label in ``tie_break``, then sorted order.
    """

    def __init__(self, tie_break: Sequence[str] = ("tie", "A", "B"), ab_tie: bool = True) -> None:
        self.tie_break = tuple(tie_break)
        self.ab_tie = ab_tie

    def fit(self, df: pd.DataFrame) -> MajorityVote:
        coded, tasks, _, labels = _codes(df)
        counts = np.zeros((len(tasks), len(labels)))
        np.add.at(counts, (coded["task"].to_numpy(), coded["label"].to_numpy()), 1.0)
        self.probas_ = pd.DataFrame(counts / counts.sum(1, keepdims=True), index=tasks, columns=labels)
        top = counts == counts.max(1, keepdims=True)
        rank = {lab: i for i, lab in enumerate(self.tie_break)}
        order = sorted(range(len(labels)), key=lambda j: (rank.get(str(labels[j]), len(rank)), str(labels[j])))
        out = []
        lab_list = [str(x) for x in labels]
        for row in top:
            tied = [lab_list[j] for j in np.flatnonzero(row)]
            if len(tied) == 1:
                out.append(tied[0])
            elif self.ab_tie and set(tied) == {"A", "B"}:
                out.append("tie")
            else:
                out.append(next(lab_list[j] for j in order if row[j]))
        self.labels_ = pd.Series(out, index=tasks, name="label")
        return self


class DawidSkene:
    """Dawid & Skene (1979): EM over per-annotator confusion matrices ``pi[w, true, observed]``.

    E-step: ``P(z_i = k) ∝ p_k * prod_{(i,w,l)} pi[w, k, l]``; M-step re-estimates ``p`` and
    ``pi`` from the posteriors. Runs crowd-kit's implementation on integer-coded ids.
    """

    def __init__(self, n_iter: int = 100, tol: float = 1e-5) -> None:
        self.n_iter, self.tol = n_iter, tol

    def fit(self, df: pd.DataFrame) -> DawidSkene:
        from crowdkit.aggregation import DawidSkene as CKDawidSkene

        coded, tasks, workers, labels = _codes(df)
        model: Any = CKDawidSkene(n_iter=self.n_iter, tol=self.tol).fit(coded)
        probas = model.probas_.sort_index().reindex(columns=range(len(labels)), fill_value=0.0)
        self.probas_ = pd.DataFrame(probas.to_numpy(), index=tasks[probas.index.to_numpy()],
                                    columns=[str(x) for x in labels])
        self.labels_ = pd.Series(self.probas_.columns[self.probas_.to_numpy().argmax(1)],
                                 index=self.probas_.index, name="label")
        priors: Any = model.priors_
        errors: Any = model.errors_
        pri = priors.sort_index()
        self.priors_ = pd.Series(pri.to_numpy(), index=[str(labels[i]) for i in pri.index], name="prior")
        err = errors.reset_index()
        err.columns = ["worker", "label", *[str(labels[int(c)]) for c in err.columns[2:]]]
        err["worker"] = workers[err["worker"].to_numpy()]
        err["label"] = labels[err["label"].to_numpy()].astype(str)
        self.errors_ = err.set_index(["worker", "label"]).sort_index()
        return self


class _CrowdKitPosterior:
    """Shared fit for crowd-kit models that expose ``probas_`` (labels = argmax posterior)."""

    def _model(self) -> Any:
        raise NotImplementedError

    def fit(self, df: pd.DataFrame) -> Any:
        coded, tasks, _, labels = _codes(df)
        model: Any = self._model().fit(coded)
        probas = model.probas_.sort_index().reindex(columns=range(len(labels)), fill_value=0.0)
        self.probas_ = pd.DataFrame(probas.to_numpy(), index=tasks[probas.index.to_numpy()],
                                    columns=[str(x) for x in labels])
        self.labels_ = pd.Series(self.probas_.columns[self.probas_.to_numpy().argmax(1)],
                                 index=self.probas_.index, name="label")
        self.model_ = model
        return self


class OneCoinDawidSkene(_CrowdKitPosterior):
    """One-coin Dawid-Skene: each annotator has a single accuracy ``s_w``; errors are spread
    uniformly, ``pi[w, k, l] = s_w if k == l else (1 - s_w) / (K - 1)`` (crowd-kit)."""

    def __init__(self, n_iter: int = 100, tol: float = 1e-5) -> None:
        self.n_iter, self.tol = n_iter, tol

    def _model(self) -> Any:
        from crowdkit.aggregation import OneCoinDawidSkene as CK

        return CK(n_iter=self.n_iter, tol=self.tol)


class GLAD(_CrowdKitPosterior):
    """GLAD (Whitehill et al., 2009): ``P(correct) = sigma(alpha_w * beta_i)`` with annotator skill
    ``alpha_w`` and item easiness ``beta_i`` (crowd-kit). Slow: meant for small sets."""

    def __init__(self, n_iter: int = 100, tol: float = 1e-5, seed: int = 0) -> None:
        self.n_iter, self.tol, self.seed = n_iter, tol, seed

    def _model(self) -> Any:
        from crowdkit.aggregation import GLAD as CK

        np.random.seed(self.seed)
        return CK(n_iter=self.n_iter, tol=self.tol, silent=True)


AGGREGATORS: dict[str, Any] = {"ds": DawidSkene, "mv": MajorityVote, "onecoin": OneCoinDawidSkene, "glad": GLAD}
