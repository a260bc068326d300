"""Stability statistics against hand-computed values, scikit-learn and a per-replicate loop."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from judgecal.stats import stability as st


def test_sigma_and_score_hand_computed():
    # mean 0.52, deviations -2, 0, +2 pp: sum of squares 8, / (3 - 1) = 4, sigma = 2 pp -> score 0
    assert st.sigma_pp([0.50, 0.52, 0.54]) == pytest.approx(2.0)
    assert st.stability_score(2.0) == 0.0
    # deviations +-0.5 pp four times: 1 / 3 -> sigma 0.57735 pp -> score 100 - 28.8675 = 71.1325
    sig = st.sigma_pp([0.70, 0.71, 0.70, 0.71])
    assert sig == pytest.approx(np.sqrt(1 / 3))
    assert st.stability_score(sig) == pytest.approx(100 - 50 * np.sqrt(1 / 3))
    assert st.stability_score(0.0) == 100.0 and st.stability_score(5.0) == 0.0
    x = np.array([[0.1, 0.2, np.nan, 0.4], [0.5, 0.5, 0.5, 0.5]])
    np.testing.assert_allclose(st.sigma_pp(x, axis=1), [100 * np.std([0.1, 0.2, 0.4], ddof=1), 0.0])
    assert np.isnan(st.sigma_pp([0.3])) and np.isnan(st.stability_score(np.nan))
    assert np.isnan(st.sigma_pp(np.empty(0)))


def test_accuracy_kappa_and_winrate_sums():
    truth = np.array(["A", "B", "A", "tie", None], dtype=object)
    v = np.array([["A", "A"], ["B", "A"], ["B", "A"], ["tie", "invalid"], ["A", "A"]], dtype=object)
    acc = st.ratio_stat(st.accuracy_sums(v, truth).sum(0))
    np.testing.assert_allclose(acc, [3 / 4, 2 / 4])  # the item without truth counts for nothing
    kap = st.kappa_stat(st.confusion_sums(v, truth).sum(0))
    assert kap[0] == pytest.approx(cohen_kappa_score(truth[:4].tolist(), v[:4, 0].tolist()))
    ma = np.array(["x", "y", "x", "y", "x"], dtype=object)
    mb = np.array(["y", "x", "y", "x", "y"], dtype=object)
    # variant 0: x wins items 0 (A), 1 (B), loses 2 (B), tie on 3, wins 4 -> (3 + 0.5) / 5
    wr = st.ratio_stat(st.winrate_sums(v, ma, mb, "x").sum(0))
    assert wr[0] == pytest.approx(3.5 / 5)
    # variant 1: A, A, A, invalid, A -> x wins 0, 2, 4, loses 1; invalid is no comparison -> 3 / 4
    assert wr[1] == pytest.approx(3 / 4)


def _naive_sigmas(sums, n_boot, seed):
    """The same replicates as bootstrap_weights draws them, one index vector at a time."""
    n = sums.shape[0]
    rng = np.random.default_rng(seed)
    chunk = max(1, min(200, 1_000_000 // n))
    out, done = [], 0
    while done < n_boot:
        c = min(chunk, n_boot - done)
        idx = rng.integers(0, n, size=(c, n))
        for row in idx:
            tot = sums[row].sum(0)
            out.append(np.std(tot[:, 0] / tot[:, 1], ddof=1) * 100)
        done += c
    return np.array(out)


def test_bootstrap_ci_matches_a_per_replicate_loop():
    rng = np.random.default_rng(3)
    truth = rng.choice(["A", "B"], size=120).astype(object)
    noise = rng.random((120, 4)) < np.array([0.2, 0.25, 0.3, 0.2])
    v = np.where(noise, np.where(truth[:, None] == "A", "B", "A"), truth[:, None]).astype(object)
    sums = st.accuracy_sums(v, truth)
    res = st.stability(sums, n_boot=500, seed=11)
    naive = _naive_sigmas(sums, 500, 11)
    lo, hi = np.quantile(naive, [0.025, 0.975])
    assert res["sigma_ci"] == [pytest.approx(lo), pytest.approx(hi)]
    fig = (v == truth[:, None]).mean(0)
    np.testing.assert_allclose(res["figures"], fig)
    assert res["sigma_pp"] == pytest.approx(100 * np.std(fig, ddof=1))
    assert res["score"] == pytest.approx(max(0, 100 - 50 * res["sigma_pp"]))
    assert res["score_ci"] == [pytest.approx(max(0, 100 - 50 * hi)), pytest.approx(max(0, 100 - 50 * lo))]
    assert res["n_items"] == 120 and res["n_variants"] == 4 and res["n_boot"] == 500


def test_stability_edge_cases():
    one = st.stability(np.ones((10, 1, 2)), n_boot=50)
    assert one["sigma_pp"] is None and one["score"] is None and one["sigma_ci"] == [None, None]
    empty = st.stability(np.empty((0, 3, 2)), n_boot=50)
    assert empty["n_items"] == 0 and empty["sigma_pp"] is None
    same = st.stability(np.tile([[[1.0, 1.0]], [[0.0, 1.0]]], (5, 3, 1)), n_boot=50)
    assert same["sigma_pp"] == 0.0 and same["score"] == 100.0 and same["score_ci"] == [100.0, 100.0]


def test_decomposition_guard_and_threshold_hand_computed():
    figures = [0.60, 0.61, 0.59, 0.65]
    axes = ["base", "seed", "seed", "temperature"]
    d = st.decompose_by_axis(figures, axes)
    # shifts +1, -1, +5 pp: total 27 pp^2, seed 2 / 27, temperature 25 / 27
    assert d["total_sum_sq_pp2"] == pytest.approx(27)
    assert d["axes"]["seed"]["share"] == pytest.approx(2 / 27)
    assert d["axes"]["temperature"]["share"] == pytest.approx(25 / 27)
    assert d["top_axis"] == "temperature"
    assert d["largest_shift"] == {"variant": 3, "axis": "temperature", "shift_pp": pytest.approx(5.0)}
    assert st.guard(figures, 1.4) == [{"variant": 3, "shift_pp": pytest.approx(5.0)}]
    assert st.guard(figures, 5.5) == []
    assert st.threshold_from_business(0.7, 0.5) == pytest.approx(1.4)
    with pytest.raises(ValueError):
        st.threshold_from_business(1.0, 0.0)
    flat = st.decompose_by_axis([0.5, 0.5], ["base", "seed"])
    assert flat["top_axis"] is None and flat["axes"]["seed"]["share"] is None


def test_cross_backend_and_required_repeats():
    a = np.array(["A", "B", "A", "tie"], dtype=object)
    b = np.array(["A", "B", "B", "tie"], dtype=object)
    out = st.cross_backend(0.700, 0.705, a, b)
    assert out["difference_pp"] == pytest.approx(0.5) and out["within_tolerance"] is True
    assert out["item_agreement"] == pytest.approx(0.75) and out["n"] == 4
    assert out["kappa"] == pytest.approx(cohen_kappa_score(a.tolist(), b.tolist()))
    assert st.cross_backend(0.70, 0.71)["within_tolerance"] is False
    # (1.96 * 0.5 / 0.1)^2 = 96.04 -> 97; s = 0 -> 1
    np.testing.assert_array_equal(st.required_repeats([0.5, 0.0], 0.1, z=1.96), [97, 1])


def test_binary_spread_and_worst_case_epsilon():
    # k = 8 of n = 8: p = 8.5 / 9, s = sqrt(p (1 - p)) = 0.2291
    assert st.binary_spread(8, 8) == pytest.approx(np.sqrt(8.5 / 9 * 0.5 / 9))
    assert st.binary_spread(0, 0) == pytest.approx(0.5) and st.binary_spread(4, 8) == pytest.approx(0.5)
    eps = st.worst_case_epsilon(32, z=1.96)
    assert eps == pytest.approx(1.96 * 0.5 / np.sqrt(32))
    # at that epsilon the largest spread needs exactly 32 repeats, a unanimous 8 of 8 needs 7
    assert st.required_repeats(0.5, eps, z=1.96) == 32
    assert st.required_repeats(st.binary_spread(8, 8), eps, z=1.96) == 7


def test_replayed_adaptive_rule_hand_computed():
    from judgecal.stability.adaptive import replay_adaptive

    eps = st.worst_case_epsilon(32, z=1.96)
    units = {"unanimous": [1.0] * 32, "even": [1.0, 0.0] * 16, "late": [1.0] * 8 + [0.0] * 24}
    old = {"spread": "smoothed", "growth": "jump"}  # the per-unit rule, N at once
    n = replay_adaptive(units, epsilon=eps, z=1.96, n0=8, n_max=32, **old)
    # 8 of 8: s = 0.229 asks for 7 -> stop at 8; 4 of 8: s = 0.5 asks for 32
    assert n == {"unanimous": 8, "even": 32, "late": 8}
    plain = replay_adaptive(units, epsilon=eps, z=1.96, n0=8, n_max=32, spread="plain", growth="jump")
    assert plain == {"unanimous": 8, "even": 32, "late": 8}
    # 7 of 8: s = sqrt(7.5/9 * 1.5/9) = 0.3727 -> (1.96 s / eps)^2 = 17.8 -> 18; 7 of 18: s = 0.4888 -> 30.6
    # -> 31; 7 of 31: s = 0.4236 -> 23.0 -> 23 <= 31: stop at 31
    mixed = {"u": [1.0] * 7 + [0.0] * 25}
    assert replay_adaptive(mixed, epsilon=eps, z=1.96, n0=8, **old)["u"] == 31


def test_pooled_variance_hand_computed():
    from judgecal.stability.adaptive import pooled_variance

    k, n = np.array([0, 4, 0, 0, 1]), np.array([4, 4, 4, 4, 4])
    v = pooled_variance(k, n, ["AB", "AB", "BA", "BA", "BA"])
    # AB: mu = 4.5/9 = 0.5, tau2 = var(0, 1) - 0.25/4 = 0.4375 -> strength 0.25/0.4375 - 1 < 1 -> 1:
    # Beta(0.5, 4.5) -> ab/((a+b)(a+b+1)) = 2.25/30; the unit with k = 4 mirrors it
    assert v[:2] == pytest.approx([2.25 / 30, 2.25 / 30])
    # BA: mu = 1.5/13; the observed spread is below binomial noise -> tau2 floor -> strength capped at n = 4
    mu = 1.5 / 13
    for kk, got in ((0, v[2]), (0, v[3]), (1, v[4])):
        a, b = kk + 4 * mu, 4 - kk + 4 * (1 - mu)
        assert got == pytest.approx(a * b / ((a + b) * (a + b + 1)))
    assert v[2] == pytest.approx(0.4615385 * 7.5384615 / 72)  # the numbers, written out
    # a lone unit: its own rate, the weight of one observation
    [lone] = pooled_variance([0], [4], ["x"])
    a = 0.5 / 5
    assert lone == pytest.approx(a * (5 - a) / (5 * 6))


def test_pooled_rule_doubles_and_stops_a_unanimous_group_at_the_pilot():
    from judgecal.stability.adaptive import next_n, replay_adaptive

    eps = st.worst_case_epsilon(32, z=1.96)
    units = {("i1", "AB"): [1.0, 0.0] * 16, ("i2", "AB"): [0.0, 1.0] * 16,
             ("i1", "BA"): [0.0] * 32, ("i2", "BA"): [0.0] * 32}
    # BA: Beta(0.222, 7.778) -> s = sqrt(1.728 / 72) = 0.155 -> N = 3.07 -> 4: the pilot stands.
    # AB: 2 of 4 each -> Beta(4, 4) -> s = 0.471 -> N = 29, capped at double: 8; then Beta(8, 8) -> N = 31 -> 16;
    # then Beta(16, 16) -> N = 32 -> 32; at 32 the cap: stop
    assert replay_adaptive(units, epsilon=eps, z=1.96, n0=4, n_max=32) == {
        ("i1", "AB"): 32, ("i2", "AB"): 32, ("i1", "BA"): 4, ("i2", "BA"): 4}
    step = next_n([2, 2, 0, 0], [4, 4, 4, 4], ["AB", "AB", "BA", "BA"], epsilon=eps, z=1.96)
    assert step.tolist() == [8, 8, 4, 4]
    jump = next_n([2, 2, 0, 0], [4, 4, 4, 4], ["AB", "AB", "BA", "BA"], epsilon=eps, z=1.96, growth="jump")
    assert jump.tolist() == [29, 29, 4, 4]
    with pytest.raises(ValueError, match="spread must be"):
        next_n([1], [4], ["x"], epsilon=eps, spread="wide")


def test_adaptive_rule_hand_computed_spread_and_a_bad_rule_refused_before_any_call():
    from judgecal.stability.adaptive import adaptive_repeats, pooled_variance, replay_adaptive

    # the unanimous BA group above: Beta(4 mu, 4 (2 - mu)) with mu = 0.5 / 9
    mu = 0.5 / 9
    a, b = 4 * mu, 4 + 4 * (1 - mu)
    assert np.sqrt(pooled_variance([0, 0], [4, 4], ["BA", "BA"])) == pytest.approx(
        np.sqrt(a * b / (8 * 9)), abs=1e-12)
    assert np.sqrt(a * b / (8 * 9)) == pytest.approx(0.1549, abs=1e-4)
    eps = st.worst_case_epsilon(32, z=1.96)
    for bad, match in (({"growth": "triple"}, "growth must be"), ({"spread": "wide"}, "spread must be"),
                       ({"n0": 0}, "n0"), ({"n0": 40}, "n0"), ({"epsilon": 0.0}, "epsilon")):
        kw = {"epsilon": eps, **bad}
        with pytest.raises(ValueError, match=match):
            adaptive_repeats(None, [], **kw)  # refused before the engine is touched
        with pytest.raises(ValueError, match=match):
            replay_adaptive({"u": [1.0] * 8}, **kw)
    # a unit with no recorded answer: no division by zero, it ends with what it has and leaves the others'
    # rule as it was
    b = {("b", "AB"): [1.0, 0.0] * 16}
    with np.errstate(all="raise"):
        got = replay_adaptive({("a", "AB"): [], **b}, epsilon=eps, z=1.96)
        alone = replay_adaptive(b, epsilon=eps, z=1.96)
        [empty] = pooled_variance([0], [0], ["AB"])
    assert got == {("a", "AB"): 0, **alone} and empty == pytest.approx(0.25 / 2)  # Beta(½, ½): ¼ / 2
