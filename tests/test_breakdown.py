"""The item-by-item section of a judge of pairs and the paired comparison of judges (judgecal.audit.breakdown),
checked against statsmodels' Wilson interval, hand counts and a direct paired bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from judgecal.audit.breakdown import comparisons, judge_items
from judgecal.stats.bootstrap import bootstrap_sums, percentile_ci
from judgecal.stats.proportion import wilson_interval


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_wilson_equals_statsmodels(level: float) -> None:
    k = np.array([0, 1, 5, 9, 10, 37, 0])
    n = np.array([10, 10, 10, 10, 10, 50, 1])
    lo, hi = wilson_interval(k, n, level)
    ref_lo, ref_hi = proportion_confint(k, n, alpha=1 - level, method="wilson")
    np.testing.assert_allclose(lo, ref_lo, atol=1e-12)
    np.testing.assert_allclose(hi, ref_hi, atol=1e-12)


def test_wilson_of_no_trials_is_undefined() -> None:
    lo, hi = wilson_interval([0, 3], [0, 4])
    assert np.isnan(lo[0]) and np.isnan(hi[0]) and 0 < lo[1] < 0.75 < hi[1] < 1


def test_judge_items_counts_by_hand() -> None:
    truth = pd.Series(["A", "A", "B", "tie", "B", "A"], index=[f"i{k}" for k in range(6)])
    verdicts = pd.Series(["A", "B", "B", "tie", None, "A", "B"], index=[*truth.index, "unlabelled"], dtype=object)
    category = pd.Series({"i0": "maths", "i1": "maths", "i2": "code", "i3": "code", "i4": "code"})
    models = pd.DataFrame({"model_a": ["m1", "m1", "m2"], "model_b": ["m2", "m3", "m3"]}, index=["i0", "i1", "i2"])
    out = judge_items(verdicts, truth, category, models)
    assert out["n_items"] == 6  # the unlabelled item is not counted; the unreadable one is
    assert out["judge"] == ["A", "B", "tie", "invalid"]
    #                 judge: A  B  tie invalid
    assert out["confusion"] == [[2, 1, 0, 0],   # humans A: i0 A, i1 B, i5 A
                                [0, 1, 0, 1],   # humans B: i2 B, i4 unreadable
                                [0, 0, 1, 0]]   # humans tie: i3
    cats = {g["value"]: g for g in out["by_category"]}
    assert set(cats) == {"maths", "code"}  # i5 has no category: in no group
    assert cats["maths"]["n"] == 2 and cats["maths"]["accuracy"]["estimate"] == 0.5
    assert cats["code"]["n"] == 3 and cats["code"]["accuracy"]["estimate"] == pytest.approx(2 / 3)
    lo, hi = proportion_confint(2, 3, method="wilson")
    assert cats["code"]["accuracy"]["ci_low"] == pytest.approx(lo) and cats["code"]["accuracy"]["ci_high"] == pytest.approx(hi)
    mods = {g["value"]: (g["n"], g["accuracy"]["estimate"]) for g in out["by_model"]}
    # an item counts for both its models: m1 on i0 (right), i1 (wrong); m2 on i0, i2 (right); m3 on i1, i2
    assert mods == {"m1": (2, 0.5), "m2": (2, 1.0), "m3": (2, 0.5)}


def test_judge_items_of_many_judges_equal_a_direct_count_each() -> None:
    # judges of different items sharing one cache of the category and model codes: each judge's groups are the
    # direct pandas count of its own items, and the order of the judges does not matter
    rng = np.random.default_rng(8)
    ids = [f"i{k}" for k in range(400)]
    truth = pd.Series(rng.choice(["A", "B", "tie"], 400), index=ids)
    category = pd.Series(rng.choice(["code", "maths", "chat", None], 400), index=ids).dropna()
    models = pd.DataFrame({"model_a": rng.choice(["m1", "m2", "m3"], 300), "model_b": rng.choice(["m3", "m4"], 300)},
                          index=rng.choice(ids, 300, replace=False))
    judges = {name: pd.Series(rng.choice(["A", "B", "tie", None], len(got)), index=got, dtype=object)
              for name, got in (("all", ids), ("half", ids[:200]), ("odd", ids[1::2] + ["unlabelled"]))}
    shared: dict = {}
    for name in ("odd", "all", "half"):
        out = judge_items(judges[name], truth, category, models, shared=shared)
        v = judges[name].reindex(truth.index).dropna().index.union(judges[name].index.intersection(truth.index))
        right = (judges[name].reindex(v).fillna("invalid") == truth.reindex(v)).astype(float)
        by_cat = right.groupby(category.reindex(v)).agg(["sum", "size"])
        assert [(g["value"], g["n"], g["accuracy"]["estimate"]) for g in out["by_category"]] == [
            (k, int(n), pytest.approx(s / n, abs=1e-9)) for k, (s, n) in by_cat.iterrows()]
        on = models.index.intersection(v)
        twice = pd.DataFrame({"model": pd.concat([models.loc[on, "model_a"], models.loc[on, "model_b"]]).to_numpy(),
                              "right": pd.concat([right[on]] * 2).to_numpy()})
        by_model = twice.groupby("model")["right"].agg(["sum", "size"])
        assert [(g["value"], g["n"], g["accuracy"]["estimate"]) for g in out["by_model"]] == [
            (k, int(n), pytest.approx(s / n, abs=1e-9)) for k, (s, n) in by_model.iterrows()]
        assert out["n_items"] == len(v) and sum(map(sum, out["confusion"])) == int(
            judges[name].reindex(v).isin(["A", "B", "tie"]).sum() + judges[name].reindex(v).isna().sum())


def test_comparisons_equal_a_direct_paired_bootstrap() -> None:
    rng = np.random.default_rng(3)
    ids = [f"i{k}" for k in range(300)]
    truth = pd.Series(rng.choice(["A", "B", "tie"], 300), index=ids)
    good = truth.where(rng.random(300) < 0.8, "tie")
    bad = truth.where(rng.random(300) < 0.55, "A")
    out = comparisons({"x/good": good, "y/bad": bad}, truth, n_boot=500, seed=7)
    (pair,) = out["pairs"]
    ra = (good == truth).to_numpy(float)
    rb = (bad == truth).to_numpy(float)
    boot = bootstrap_sums(np.column_stack([ra, rb, np.ones(300)]), 500, 7)
    d = (boot[:, 0] - boot[:, 1]) / boot[:, 2]
    lo, hi = percentile_ci(d)
    assert (pair["x"], pair["y"], pair["n_items"]) == ("x/good", "y/bad", 300)
    assert pair["difference"]["estimate"] == pytest.approx(ra.mean() - rb.mean())
    assert pair["difference"]["ci_low"] == pytest.approx(lo) and pair["difference"]["ci_high"] == pytest.approx(hi)
    assert pair["p"] == pytest.approx(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())))
    assert pair["significant"] is (lo > 0)


def test_comparisons_read_only_the_items_both_judged() -> None:
    truth = pd.Series(["A", "B", "A", "B"], index=["a", "b", "c", "d"])
    out = comparisons({"j1": pd.Series(["A", "B", "B"], index=["a", "b", "c"]),
                       "j2": pd.Series(["B", "A", "B"], index=["b", "c", "d"])}, truth, n_boot=50)
    (pair,) = out["pairs"]
    assert pair["n_items"] == 2  # b and c
    assert (pair["accuracy_x"], pair["accuracy_y"]) == (0.5, 1.0)
    assert comparisons({"only": truth}, truth)["pairs"] == []


def test_a_judge_with_no_labelled_item_is_compared_with_nothing_and_breaks_nothing() -> None:
    truth = pd.Series(["A", "B"], index=["a", "b"])
    out = comparisons({"labelled": pd.Series(["A", "A"], index=["a", "b"]),
                       "elsewhere": pd.Series(["B"], index=["unlabelled"])}, truth, n_boot=50)
    assert [(p["x"], p["y"], p["n_items"]) for p in out["pairs"]] == [("elsewhere", "labelled", 0)]
    empty = judge_items(pd.Series(["B"], index=["unlabelled"], dtype=object), truth, pd.Series(dtype=object),
                        pd.DataFrame(columns=["model_a", "model_b"]))
    assert empty["n_items"] == 0 and empty["confusion"] == [[0, 0, 0]] * 3
    assert empty["by_category"] == [] and empty["by_model"] == []
