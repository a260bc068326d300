"""Alternative annotator test, kappa z-score against the humans, kappa beside its chance baselines."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pandalm_raw import load
from scipy import stats as sps

from judgecal.stats import alt_test as alt

# Three annotators and a judge that always gives the majority label.
HAND = pd.DataFrame({"h1": list("AAABBB"), "h2": list("AABABB"), "h3": list("ABAABA")})
JUDGE = list("AAAABB")


def test_hand_worked_example() -> None:
    """Leave h1 out: only item 4 differs (others A, A; judge A scores 1, h1's B scores 0), so
    d = W^h - W^f = [0, 0, 0, -1, 0, 0]; likewise h2 on item 3; h3 loses items 2 and 6:
    d = [0, -1, 0, 0, 0, -1]. With epsilon = 0.2: t_h1 = t_h2 = (-1/6 - 0.2) / (sqrt(1/6) / sqrt(6)) = -2.2,
    t_h3 = (-1/3 - 0.2) / (sqrt(4/15) / sqrt(6)) = -2.530; one-sided p = 0.0395, 0.0395, 0.0262 (t, 5 df).
    Benjamini–Yekutieli, m = 3, H_3 = 11/6: thresholds k q / (3 H_3). At q = 0.05 (0.0091, 0.0182,
    0.0273) nothing is rejected (omega = 0, fail); at q = 0.1 (0.0182, 0.0364, 0.0545) the largest p
    0.0395 <= 0.0545 rejects all three (omega = 1, pass). The judge never loses an item: rho^f = 1."""
    r = alt.alt_test(HAND, JUDGE, epsilon=0.2, q=0.05, min_items=2)
    per = r.per_annotator.set_index("annotator")
    assert per["t"].to_numpy() == pytest.approx([-2.2, -2.2, -(1 / 3 + 0.2) / math.sqrt(4 / 15 / 6)])
    assert per["t"]["h3"] == pytest.approx(-2.5298, abs=1e-4)
    assert per["p_value"].to_numpy() == pytest.approx([0.0395, 0.0395, 0.0262], abs=2e-4)
    assert per["mean_diff"].to_numpy() == pytest.approx([-1 / 6, -1 / 6, -1 / 3])
    assert r.winning_rate == 0.0 and not r.passed and r.advantage_probability == 1.0
    loose = alt.alt_test(HAND, JUDGE, epsilon=0.2, q=0.1, min_items=2)
    assert loose.winning_rate == 1.0 and loose.passed
    # at the paper's 30 items per annotator nobody is tested
    assert alt.alt_test(HAND, JUDGE).n_annotators == 0 and not alt.alt_test(HAND, JUDGE).passed


def _reference(humans: pd.DataFrame, judge: list, epsilon: float, q: float, scoring: str) -> tuple[float, list]:
    """The procedure written out item by item, as the paper states it."""
    def score(pred: object, others: list) -> float:
        if scoring == "accuracy":
            return float(np.mean([pred == o for o in others]))
        return -math.sqrt(float(np.mean([(float(pred) - float(o)) ** 2 for o in others])))  # type: ignore[arg-type]

    pvals = []
    for j in humans.columns:
        d = []
        for i in range(len(humans)):
            row = humans.iloc[i]
            if pd.isna(row[j]) or judge[i] is None:
                continue
            others = [row[k] for k in humans.columns if k != j and pd.notna(row[k])]
            if len(others) < 1:
                continue
            sf, sh = score(judge[i], others), score(row[j], others)
            d.append(float(sh >= sf) - float(sf >= sh))
        pvals.append(sps.ttest_1samp(d, epsilon, alternative="less").pvalue)
    from statsmodels.stats.multitest import multipletests

    rejected = multipletests(pvals, alpha=q, method="fdr_by")[0]
    return float(np.mean(rejected)), pvals


@pytest.mark.parametrize("scoring", ["accuracy", "neg_rmse"])
def test_matches_the_item_by_item_procedure(scoring: str) -> None:
    rng = np.random.default_rng(7 if scoring == "accuracy" else 8)
    n, m = 120, 4
    truth = rng.integers(1, 6, n)
    noisy = np.where(rng.random((n, m)) < 0.3, rng.integers(1, 6, (n, m)), truth[:, None]).astype(object)
    noisy[rng.random((n, m)) < 0.15] = None  # not everyone labels everything
    judge = list(np.where(rng.random(n) < 0.2, rng.integers(1, 6, n), truth).astype(object))
    judge[3] = None
    humans = pd.DataFrame(noisy, columns=[f"h{k}" for k in range(m)])
    r = alt.alt_test(humans, judge, epsilon=0.15, q=0.05, scoring=scoring)  # type: ignore[arg-type]
    omega, pvals = _reference(humans, judge, 0.15, 0.05, scoring)
    assert r.per_annotator["p_value"].to_numpy() == pytest.approx(pvals)
    assert r.winning_rate == omega and r.n_annotators == m


def test_benjamini_yekutieli_and_t_test_match_statsmodels_and_scipy() -> None:
    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(0).random(30) ** 3
    assert list(alt.benjamini_yekutieli(p, 0.1)) == list(multipletests(p, alpha=0.1, method="fdr_by")[0])
    d = np.array([0.0, -1, 0, 1, -1, -1, 0, 0])
    t, pv = alt.one_sided_t_less(d, 0.2)
    ref = sps.ttest_1samp(d, 0.2, alternative="less")
    assert (t, pv) == pytest.approx((ref.statistic, ref.pvalue))
    assert alt.one_sided_t_less(np.zeros(5), 0.2) == (-np.inf, 0.0)
    assert alt.one_sided_t_less(np.ones(5), 0.2) == (np.inf, 1.0)


def test_cohen_kappa_matches_sklearn() -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(1)
    x = rng.choice(["A", "B", "tie"], 200)
    y = np.where(rng.random(200) < 0.6, x, rng.choice(["A", "B", "tie"], 200))
    assert alt.cohen_kappa(x, y) == pytest.approx(cohen_kappa_score(x, y))
    assert math.isnan(alt.cohen_kappa([None], ["A"]))


def test_kappa_z_hand_computed() -> None:
    z = alt.kappa_z(HAND, JUDGE)
    kj = [alt.cohen_kappa(JUDGE, HAND[c]) for c in HAND]
    kh = [alt.cohen_kappa(HAND[a], HAND[b]) for a, b in (("h1", "h2"), ("h1", "h3"), ("h2", "h3"))]
    assert z["kappa_judge"] == pytest.approx(np.mean(kj))
    assert z["z"] == pytest.approx((np.mean(kj) - np.mean(kh)) / np.std(kh, ddof=1))
    # h1 vs judge: 5 of 6 agree, both marginals 4 A / 2 B vs 3 / 3 -> kappa = (5/6 - 1/2) / (1 - 1/2) = 2/3
    assert kj[0] == pytest.approx(2 / 3)
    assert z["pattern"] == "super-consistent" and z["n_pairs"] == 3


def test_kappa_beside_base_rate_and_chance() -> None:
    out = alt.kappa_with_baselines(["A", "A", "B", "A"], ["A", "B", "B", "B"])
    assert out["accuracy"] == 0.5 and out["base_rate"] == 0.75 and out["chance_accuracy"] == pytest.approx(0.625)
    assert out["kappa"] == pytest.approx(alt.cohen_kappa(["A", "A", "B", "A"], ["A", "B", "B", "B"]))
    rng = np.random.default_rng(2)
    truth = rng.choice(["A", "B", "tie"], 20000, p=[0.5, 0.4, 0.1])
    chance = rng.choice(["A", "B", "tie"], 20000, p=[0.5, 0.4, 0.1])
    sim = alt.kappa_with_baselines(chance, truth)
    assert sim["kappa"] == pytest.approx(0.0, abs=0.02)
    assert sim["accuracy"] == pytest.approx(sim["chance_accuracy"], abs=0.01)
    assert sim["chance_accuracy"] == pytest.approx(0.25 + 0.16 + 0.01, abs=0.01)


def test_pandalm_judge_against_the_annotators(mirror) -> None:  # type: ignore[no-untyped-def]
    d = load(mirror)
    humans = pd.DataFrame(d.annotators, columns=["annotator1", "annotator2", "annotator3"])
    z = alt.kappa_z(humans, d.gpt35)
    # the annotators agree far more with each other than GPT-3.5 does with them (Fleiss kappa 0.864)
    assert z["kappa_human_mean"] > 0.8 and z["kappa_judge"] < z["kappa_human_mean"] and z["z"] < -1
    r = alt.alt_test(humans, d.gpt35, epsilon=0.2)
    assert r.n_annotators == 3 and 0 <= r.advantage_probability <= 1
    base = alt.kappa_with_baselines(d.gpt35, d.humans)
    assert base["accuracy"] == pytest.approx(0.7107, abs=5e-5) and base["kappa"] > base["chance_kappa"]
    print(f"\nPandaLM GPT-3.5: kappa {z['kappa_judge']:.3f} vs humans {z['kappa_human_mean']:.3f} "
          f"(sd {z['kappa_human_sd']:.3f}), z {z['z']:.1f} ({z['pattern']}); alt-test omega {r.winning_rate:.2f} "
          f"rho {r.advantage_probability:.2f}; base rate {base['base_rate']:.3f}, chance accuracy "
          f"{base['chance_accuracy']:.3f}")
