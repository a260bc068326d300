"""Model-level statistics: win rates, the win-rate matrix, Bradley–Terry, system-level alignment."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pandalm_raw import load
from scipy import stats as sps

from judgecal.stats import winrate as wr
from judgecal.stats.bootstrap import bootstrap_weights, percentile_ci
from judgecal.stats.inference import kendall_tau_b, logistic_glm, spearman

# item: (model_a, model_b, label)
TOY = [("x", "y", "A"), ("x", "y", "tie"), ("y", "z", "B"), ("x", "z", "B"), ("x", "y", "invalid")]


def _toy() -> tuple[list[str], list[str], list[str]]:
    a, b, lab = zip(*TOY, strict=True)
    return list(a), list(b), list(lab)


def test_swap_debiased_keeps_agreement_and_ties_disagreement() -> None:
    ab = ["A", "B", "A", None, "invalid", None, "tie", "A"]
    ba = ["A", "A", None, "B", "invalid", np.nan, "tie", "invalid"]
    assert list(wr.swap_debiased(ab, ba)) == ["A", "tie", "A", "B", "invalid", None, "tie", "tie"]
    with pytest.raises(ValueError, match="verdict_ab has 1 entries"):
        wr.swap_debiased(["A"], ["A", "B"])


def test_win_rates_hand_computed() -> None:
    a, b, lab = _toy()
    f = wr.win_rates(a, b, lab, n_boot=500)
    # x: A (1) + tie (0.5) + loses to z (0) over 3; y: 0 + 0.5 + 0 over 3; z: 2 wins over 2
    assert f.loc["x", "estimate"] == pytest.approx(0.5)
    assert f.loc["y", "estimate"] == pytest.approx(0.5 / 3)
    assert f.loc["z", "estimate"] == pytest.approx(1.0)
    assert f["n"].to_dict() == {"x": 3, "y": 3, "z": 2}
    assert (f["ci_low"] <= f["estimate"] + 1e-12).all() and (f["estimate"] <= f["ci_high"] + 1e-12).all()


def test_win_rates_bootstrap_equals_explicit_resampling() -> None:
    rng = np.random.default_rng(3)
    n = 300
    a = rng.choice(["m1", "m2", "m3"], n)
    b = np.where(a == "m1", "m2", np.where(a == "m2", "m3", "m1"))
    lab = rng.choice(["A", "B", "tie", "invalid"], n, p=[0.45, 0.35, 0.15, 0.05])
    f = wr.win_rates(a, b, lab, n_boot=400, seed=11)
    # the same replicate weights, applied one replicate at a time by expanding the resampled items
    score = wr.outcome_scores(lab)
    weights = np.vstack(list(bootstrap_weights(n, 400, np.random.default_rng(11))))
    for m in ("m1", "m2", "m3"):
        reps = []
        for w in weights:
            idx = np.repeat(np.arange(n), w.astype(int))
            s_a, s_b = (a[idx] == m) & np.isfinite(score[idx]), (b[idx] == m) & np.isfinite(score[idx])
            reps.append((score[idx][s_a].sum() + (1 - score[idx][s_b]).sum()) / (s_a.sum() + s_b.sum()))
        lo, hi = percentile_ci(np.array(reps))
        assert f.loc[m, "ci_low"] == pytest.approx(lo) and f.loc[m, "ci_high"] == pytest.approx(hi)


def test_win_rate_ci_matches_normal_approximation_on_a_large_sample() -> None:
    rng = np.random.default_rng(5)
    n = 4000
    lab = rng.choice(["A", "B"], n, p=[0.6, 0.4])
    f = wr.win_rates(["p"] * n, ["q"] * n, lab, n_boot=2000)
    p = f.loc["p", "estimate"]
    se = math.sqrt(p * (1 - p) / n)
    assert f.loc["p", "ci_low"] == pytest.approx(p - 1.96 * se, abs=0.004)
    assert f.loc["p", "ci_high"] == pytest.approx(p + 1.96 * se, abs=0.004)
    assert f.loc["q", "estimate"] == pytest.approx(1 - p)


def test_win_rates_reject_self_comparison_and_length_mismatch() -> None:
    with pytest.raises(ValueError, match="item 1: model_a and model_b are both 'x'"):
        wr.win_rates(["x", "x"], ["y", "x"], ["A", "B"])
    with pytest.raises(ValueError, match="model_a has 2 entries but model_b has 1"):
        wr.win_rates(["x", "y"], ["y"], ["A", "B"])


def test_win_rate_matrix_hand_computed_and_mirrored() -> None:
    a, b, lab = _toy()
    m = wr.win_rate_matrix(a, b, lab, n_boot=300)
    est, n = m["estimate"], m["n"]
    assert est.loc["x", "y"] == pytest.approx(0.75) and est.loc["y", "x"] == pytest.approx(0.25)
    assert est.loc["x", "z"] == 0.0 and est.loc["z", "y"] == 1.0
    assert np.isnan(est.loc["x", "x"])
    assert n.loc["x", "y"] == n.loc["y", "x"] == 2 and n.loc["x", "z"] == 1
    assert m["ci_low"].loc["y", "x"] == pytest.approx(1 - m["ci_high"].loc["x", "y"])


def test_win_rates_by_category_equal_the_subsets() -> None:
    rng = np.random.default_rng(1)
    n = 200
    a = rng.choice(["m1", "m2"], n)
    b = np.where(a == "m1", "m2", "m1")
    lab = rng.choice(["A", "B", "tie"], n)
    cat = rng.choice(["math", "code"], n)
    f = wr.win_rates_by_category(a, b, lab, cat, n_boot=100)
    sub = wr.win_rates(a[cat == "math"], b[cat == "math"], lab[cat == "math"], n_boot=100)
    assert f.loc[("math", "m1"), "estimate"] == pytest.approx(sub.loc["m1", "estimate"])
    assert f.loc[("math", "m1"), "n"] == sub.loc["m1", "n"]
    assert set(f.index.get_level_values("category")) == {"math", "code"}


def test_bradley_terry_matches_the_logistic_mle() -> None:
    rng = np.random.default_rng(0)
    models = np.array(["m0", "m1", "m2", "m3"])
    strength = np.array([0.0, 0.5, 1.0, -0.7])
    n = 1500
    ia = rng.integers(0, 4, n)
    ib = (ia + rng.integers(1, 4, n)) % 4
    p = 1 / (1 + np.exp(-(strength[ia] - strength[ib])))
    u = rng.random(n)
    lab = np.where(u < 0.1, "tie", np.where(u < 0.1 + 0.9 * p, "A", "B"))
    bt = wr.bradley_terry(models[ia], models[ib], lab, n_boot=200, seed=1)
    # the same likelihood (ties as half a win each) through IRLS: logit P(a beats b) = beta_a - beta_b
    x = np.zeros((n, 3))
    for k in range(1, 4):
        x[:, k - 1] = (ia == k).astype(float) - (ib == k).astype(float)
    beta, _ = logistic_glm(x, wr.outcome_scores(lab))
    logs = np.log(bt["score"].reindex(models).to_numpy())
    assert logs[1:] - logs[0] == pytest.approx(beta, abs=2e-3)
    assert list(bt.index) == ["m2", "m1", "m0", "m3"] and list(bt["rank"]) == [1, 2, 3, 4]
    assert (bt["ci_low"] < bt["score"]).all() and (bt["score"] < bt["ci_high"]).all()
    assert (bt["rank_low"] <= bt["rank"]).all() and (bt["rank"] <= bt["rank_high"]).all()


def test_row_correlations_match_scipy_and_inference() -> None:
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, (50, 6)).astype(float)  # with ties
    y = x + rng.integers(-2, 3, (50, 6))
    sp, kd = wr.spearman_rows(x, y), wr.kendall_rows(x, y)
    for r in range(50):
        if np.ptp(x[r]) == 0 or np.ptp(y[r]) == 0:
            continue
        assert sp[r] == pytest.approx(sps.spearmanr(x[r], y[r]).statistic)
        assert sp[r] == pytest.approx(spearman(x[r], y[r])[0])
        assert kd[r] == pytest.approx(sps.kendalltau(x[r], y[r]).statistic)
        assert kd[r] == pytest.approx(kendall_tau_b(x[r], y[r])[0])


def _planted(seed: int, swap: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    models = np.array(["m0", "m1", "m2", "m3", "m4"])
    strength = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    n = 3000
    ia = rng.integers(0, 5, n)
    ib = (ia + rng.integers(1, 5, n)) % 5
    human = np.where(rng.random(n) < 1 / (1 + np.exp(-(strength[ia] - strength[ib]))), "A", "B")
    judge_strength = strength.copy()
    if swap:
        judge_strength[[0, 4]] = judge_strength[[4, 0]]
    judge = np.where(rng.random(n) < 1 / (1 + np.exp(-(judge_strength[ia] - judge_strength[ib]))), "A", "B")
    return models[ia], models[ib], human, judge


def test_system_alignment_identical_raters_agree_perfectly() -> None:
    a, b, h, _ = _planted(0, swap=False)
    out = wr.system_alignment(a, b, h, h, n_boot=300)
    assert out["spearman"]["estimate"] == 1.0 and out["kendall"]["estimate"] == 1.0
    assert out["n_reversed"] == 0 and out["n_pairs"] == 10


def test_system_alignment_finds_a_planted_reversal() -> None:
    a, b, h, j = _planted(1, swap=True)
    out = wr.system_alignment(a, b, h, j, n_boot=500)
    pairs = out["pairs"].set_index(["model_1", "model_2"])
    assert pairs.loc[("m0", "m4"), "reversed"] and pairs.loc[("m0", "m4"), "significant"]
    assert out["n_reversed_significant"] >= 1
    # the point estimates are scipy's on the two raters' win rates
    w = out["win_rates"]
    assert out["spearman"]["estimate"] == pytest.approx(sps.spearmanr(w["reference"], w["judge"]).statistic)
    assert out["kendall"]["estimate"] == pytest.approx(sps.kendalltau(w["reference"], w["judge"]).statistic)
    assert out["spearman"]["ci_low"] <= out["spearman"]["estimate"] <= out["spearman"]["ci_high"]


def test_pandalm_win_rates_from_the_humans_and_gpt35(mirror) -> None:  # type: ignore[no-untyped-def]
    d = load(mirror)
    assert float(np.mean(d.humans == d.gpt35)) == pytest.approx(0.7107, abs=5e-5)  # the authors' README
    f = wr.win_rates(d.model_a, d.model_b, d.humans)
    # independent count for every model
    for m in f.index:
        as_a, as_b = d.model_a == m, d.model_b == m
        wins = (d.humans[as_a] == "A").sum() + (d.humans[as_b] == "B").sum()
        ties = (d.humans[as_a | as_b] == "tie").sum()
        assert f.loc[m, "estimate"] == pytest.approx((wins + ties / 2) / (as_a.sum() + as_b.sum()))
    assert f["estimate"].idxmax() == "llama-7b"  # the strongest foundation model in the PandaLM paper
    judge = wr.win_rates(d.model_a, d.model_b, d.gpt35)
    sa = wr.system_alignment(d.model_a, d.model_b, d.humans, d.gpt35)
    assert sa["spearman"]["estimate"] == pytest.approx(
        sps.spearmanr(f["estimate"], judge.loc[f.index, "estimate"]).statistic)
    bt = wr.bradley_terry(d.model_a, d.model_b, d.humans, n_boot=200)
    assert bt.index[0] == "llama-7b"
    print("\nPandaLM humans:\n", f.round(3), "\nGPT-3.5:\n", judge.round(3),
          f"\nSpearman {sa['spearman']}, Kendall {sa['kendall']}, reversed pairs {sa['n_reversed']} "
          f"(significant {sa['n_reversed_significant']})")
    assert isinstance(sa["pairs"], pd.DataFrame) and sa["n_pairs"] == 10


def test_empty_and_constant_inputs() -> None:
    assert wr.win_rates([], [], []).empty and wr.bradley_terry([], [], []).empty
    assert wr.win_rate_matrix([], [], [])["estimate"].empty
    none = wr.win_rates(["x"], ["y"], ["invalid"])
    assert none["n"].tolist() == [0, 0] and none["estimate"].isna().all()
    empty = wr.system_alignment([], [], [], [])
    assert empty["n_items"] == 0 and math.isnan(empty["spearman"]["estimate"]) and empty["n_pairs"] == 0
    # a rater that calls every comparison a tie gives every model 0.5: rank correlations are undefined
    a, b, h, _ = _planted(4, swap=False)
    flat = wr.system_alignment(a, b, h, np.full(len(h), "tie"), n_boot=50)
    assert math.isnan(flat["spearman"]["estimate"]) and flat["n_reversed"] == 0


def test_win_rate_intervals_cover_the_true_rate_over_seeds() -> None:
    """Two models, P(m1 wins) = 0.55, P(tie) = 0.1: m1's true win rate is 0.55 + 0.05 = 0.6."""
    hits = 0
    for seed in range(200):
        rng = np.random.default_rng(1000 + seed)
        lab = rng.choice(["A", "B", "tie"], 150, p=[0.55, 0.35, 0.1])
        f = wr.win_rates(["m1"] * 150, ["m2"] * 150, lab, n_boot=500, seed=seed)
        hits += f.loc["m1", "ci_low"] <= 0.6 <= f.loc["m1", "ci_high"]
    assert 0.92 <= hits / 200 <= 0.98


def test_bradley_terry_cell_bootstrap_matches_evalica_resampling() -> None:
    import evalica

    rng = np.random.default_rng(3)
    models = np.array(["m0", "m1", "m2"])
    ia = rng.integers(0, 3, 600)
    ib = (ia + rng.integers(1, 3, 600)) % 3
    lab = np.where(rng.random(600) < 0.6, "A", np.where(rng.random(600) < 0.8, "B", "tie"))
    bt = wr.bradley_terry(models[ia], models[ib], lab, n_boot=600, seed=0)
    win = {"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    ref = evalica.bootstrap(evalica.bradley_terry, list(models[ia]), list(models[ib]), [win[v] for v in lab],
                            n_resamples=600, confidence_level=0.95, bootstrap_method="percentile",
                            random_state=np.random.default_rng(0))
    for m in models:
        assert bt.loc[m, "score"] == pytest.approx(ref.result.scores[m], rel=1e-4)
        assert bt.loc[m, "ci_low"] == pytest.approx(ref.low[m], rel=0.08)
        assert bt.loc[m, "ci_high"] == pytest.approx(ref.high[m], rel=0.08)


@pytest.mark.parametrize("case", ["random", "one_never_loses", "disconnected", "ties_only", "two_models"])
def test_bradley_terry_scores_equal_evalicas_fit(case: str) -> None:
    """The stacked fit takes evalica's steps and stopping rule: the same strengths, also where the maximum
    likelihood does not exist (a model that never loses, two groups that never met)."""
    import evalica

    rng = np.random.default_rng(7)
    m = 2 if case == "two_models" else 5
    models = np.array([f"m{k}" for k in range(m)])
    ia = rng.integers(0, m, 300)
    ib = (ia + rng.integers(1, m, 300)) % m
    lab = rng.choice(["A", "B", "tie"], 300, p=[0.5, 0.3, 0.2])
    if case == "one_never_loses":
        lab = np.where(ia == 0, "A", np.where(ib == 0, "B", lab))
    elif case == "disconnected":
        keep = (ia < 2) == (ib < 2)
        ia, ib, lab = ia[keep], ib[keep], lab[keep]
    elif case == "ties_only":
        lab = np.full(len(ia), "tie")
    win = {"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    weights = rng.integers(1, 4, len(ia)).astype(float)
    ref = evalica.bradley_terry(list(models[ia]), list(models[ib]), [win[v] for v in lab],
                                index=pd.Index(models), weights=list(weights)).scores.reindex(models)
    wins = np.zeros((m, m))
    np.add.at(wins, (ia, ib), weights * wr.outcome_scores(lab))
    np.add.at(wins, (ib, ia), weights * (1 - wr.outcome_scores(lab)))
    ours = wr.bradley_terry_scores(np.stack([wins, wins.T]))
    assert ours[0] == pytest.approx(ref.to_numpy(), rel=1e-9)
    # the transposed matrix (every result reversed) is fitted beside it, to its own convergence
    flipped = evalica.bradley_terry(list(models[ib]), list(models[ia]), [win[v] for v in lab],
                                    index=pd.Index(models), weights=list(weights)).scores.reindex(models)
    assert ours[1] == pytest.approx(flipped.to_numpy(), rel=1e-9)
