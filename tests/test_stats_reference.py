"""Like-for-like references (judgecal.stats.reference) against hand-computed values and scikit-learn."""

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from judgecal.stats.reference import like_for_like, others_majority

# item -> annotators a, b, c and the judge; None: not labelled
ROWS = {
    "i1": ("A", "A", "A", "A"), "i2": ("A", "B", "A", "A"), "i3": ("B", "B", "B", "A"),
    "i4": ("B", "A", None, "B"), "i5": ("tie", "tie", "A", "tie"), "i6": ("A", None, None, "B"),
    "i7": ("B", "B", "A", None),
}


def _frame() -> tuple[pd.DataFrame, np.ndarray]:
    humans = pd.DataFrame([r[:3] for r in ROWS.values()], index=list(ROWS), columns=["a", "b", "c"])
    return humans, np.array([r[3] for r in ROWS.values()], dtype=object)


def test_pairwise_matches_scikit_learn_on_the_same_items():
    humans, judge = _frame()
    res = like_for_like(humans, judge, n_boot=200)
    # basis: the judge labelled it and two or more annotators did: i1..i5 (i6 has one, i7 no judge)
    assert res["n_items"] == 5 and res["n_annotators"] == 3
    basis = humans.loc[["i1", "i2", "i3", "i4", "i5"]]
    j = pd.Series(judge[:5], index=basis.index)
    kj, aj, kh, ah = [], [], [], []
    for col in basis:
        ok = basis[col].notna()
        kj.append(cohen_kappa_score(j[ok], basis[col][ok]))
        aj.append(float((j[ok] == basis[col][ok]).mean()))
    for x, y in combinations(basis.columns, 2):
        ok = basis[x].notna() & basis[y].notna()
        kh.append(cohen_kappa_score(basis[x][ok], basis[y][ok]))
        ah.append(float((basis[x][ok] == basis[y][ok]).mean()))
    pw = res["pairwise"]
    assert pw["judge"]["kappa"]["estimate"] == pytest.approx(np.mean(kj))
    assert pw["judge"]["accuracy"]["estimate"] == pytest.approx(np.mean(aj))
    assert pw["humans"]["kappa"]["estimate"] == pytest.approx(np.mean(kh))
    assert pw["humans"]["accuracy"]["estimate"] == pytest.approx(np.mean(ah))
    assert pw["difference"]["kappa"]["estimate"] == pytest.approx(np.mean(kj) - np.mean(kh))
    lo, hi = pw["difference"]["kappa"]["ci_low"], pw["difference"]["kappa"]["ci_high"]
    assert lo <= pw["difference"]["kappa"]["estimate"] <= hi
    assert pw["humans"]["chance_accuracy"] < pw["humans"]["accuracy"]["estimate"]
    # the trivial rater: always "A", the annotators' most frequent label on the basis (7 of 13 labels)
    assert res["trivial"]["label"] == "A" and res["trivial"]["kappa"] == 0.0
    share = [float((basis[c].dropna() == "A").mean()) for c in basis]
    assert res["trivial"]["accuracy"] == pytest.approx(np.mean(share))


def test_chance_agreement_by_hand():
    # two annotators, four items: a = A A B tie, b = A A B A; judge = b
    humans = pd.DataFrame({"a": ["A", "A", "B", "tie"], "b": ["A", "A", "B", "A"]})
    res = like_for_like(humans, ["A", "A", "B", "A"], n_boot=100)
    pw = res["pairwise"]
    # p_e(a, b) = (2/4)(3/4) + (1/4)(1/4) + (1/4)(0) = 7/16; p_o = 3/4
    assert pw["humans"]["chance_accuracy"] == pytest.approx(7 / 16)
    assert pw["humans"]["accuracy"]["estimate"] == pytest.approx(3 / 4)
    assert pw["humans"]["kappa"]["estimate"] == pytest.approx((3 / 4 - 7 / 16) / (1 - 7 / 16))
    # the judge equals b: κ 1 with b, κ(a, b) with a; its chance is the mean of the two blocks' p_e
    assert pw["judge"]["kappa"]["estimate"] == pytest.approx((1 + (3 / 4 - 7 / 16) / (9 / 16)) / 2)
    p_e_bb = (3 / 4) ** 2 + (1 / 4) ** 2
    assert pw["judge"]["chance_accuracy"] == pytest.approx((7 / 16 + p_e_bb) / 2)


def test_leave_one_out_majority_and_definition():
    h = np.array([[0, 0, 1], [0, 1, 2], [1, 1, -1], [2, -1, -1]])
    c = others_majority(h, 3)
    # item 0: without a -> b, c tie (0 vs 1): none; without b -> a, c tie; without c -> both 0
    # item 1: every pair of the others ties; item 2: without c -> 1 1 -> 1, without a -> b -> 1
    # item 3: only a labelled: without a nobody; without b or c (who did not label it), a's label
    assert c.tolist() == [[-1, -1, 0], [-1, -1, -1], [1, 1, 1], [-1, 2, 2]]
    humans, judge = _frame()
    res = like_for_like(humans, judge, n_boot=100)
    loo = res["leave_one_out"]
    assert "majority of the other annotators" in loo["definition"]
    # by hand over (item, held-out annotator) with a unique majority of the others, judge vs annotator
    basis = humans.loc[["i1", "i2", "i3", "i4", "i5"]]
    j = judge[:5]
    rows_j, rows_h = [], []
    for col in basis:
        for i, (_item, row) in enumerate(basis.iterrows()):
            others = row.drop(col).dropna()
            if row[col] is None or others.empty:
                continue
            counts = others.value_counts()
            if (counts == counts.max()).sum() > 1:
                continue
            rows_j.append((col, j[i], counts.idxmax()))
            rows_h.append((col, row[col], counts.idxmax()))
    acc_j = np.mean([np.mean([x == y for c2, x, y in rows_j if c2 == col]) for col in basis
                     if any(c2 == col for c2, _, _ in rows_j)])
    acc_h = np.mean([np.mean([x == y for c2, x, y in rows_h if c2 == col]) for col in basis
                     if any(c2 == col for c2, _, _ in rows_h)])
    assert loo["judge"]["accuracy"]["estimate"] == pytest.approx(acc_j)
    assert loo["humans"]["accuracy"]["estimate"] == pytest.approx(acc_h)


def test_one_annotator_has_no_reference_and_many_stay_bounded():
    res = like_for_like(pd.DataFrame({"a": ["A", "B"]}), ["A", "B"], n_boot=50)
    assert res["pairwise"] is None and res["leave_one_out"] is None and res["n_items"] == 0
    # 40 annotators (780 pairs), chunked: the same answer as pairs taken one by one
    rng = np.random.default_rng(0)
    truth = rng.choice(["Yes", "No"], 120)
    h = np.where(rng.random((120, 40)) < 0.6, truth[:, None], rng.choice(["Yes", "No"], (120, 40)))
    res = like_for_like(h, h[:, 0], n_boot=50)
    kh = np.mean([cohen_kappa_score(h[:, a], h[:, b]) for a, b in combinations(range(40), 2)])
    assert res["pairwise"]["humans"]["kappa"]["estimate"] == pytest.approx(kh)
