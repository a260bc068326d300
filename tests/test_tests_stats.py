"""Tests, intervals and power against statsmodels / scipy and hand-computed values."""

import numpy as np
import pytest
import scipy.stats
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from judgecal.stats import bootstrap as stats
from judgecal.stats import inference as tests_stats
from judgecal.stats.inference import (
    bca_ci,
    benjamini_hochberg,
    logistic_glm,
    mcnemar,
    mde_proportion,
    wilson,
)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (37, 50), (50, 50), (512, 1000)])
def test_wilson(k, n):
    assert wilson(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (3, 9), (10, 10), (25, 5), (1, 0)])
def test_mcnemar_exact_and_midp(b, c):
    ref = sm_mcnemar(np.array([[50, b], [c, 50]]), exact=True).pvalue if b + c else 1.0
    assert mcnemar(b, c) == pytest.approx(ref, abs=1e-12)
    # mid-p by hand: exact p minus the probability of the observed table
    from scipy.stats import binom

    if b + c and b != c:
        k, n = min(b, c), b + c
        assert mcnemar(b, c, midp=True) == pytest.approx(2 * binom.cdf(k, n, 0.5) - binom.pmf(k, n, 0.5))
    assert mcnemar(b, c, midp=True) <= mcnemar(b, c) + 1e-12


def test_benjamini_hochberg():
    rng = np.random.default_rng(0)
    p = np.concatenate([rng.random(20), rng.random(5) * 1e-3])
    assert benjamini_hochberg(p) == pytest.approx(multipletests(p, method="fdr_bh")[1], abs=1e-12)
    assert np.isnan(benjamini_hochberg([np.nan, 0.01])[0])
    assert benjamini_hochberg([0.01, np.nan])[0] == pytest.approx(0.01)
    assert benjamini_hochberg([]).size == 0


def test_mde_hand_computed():
    # (1.959964 + 0.841621) * sqrt(0.25 / 400) = 0.070040
    assert mde_proportion(400) == pytest.approx(0.0700396, abs=1e-6)
    assert np.isnan(mde_proportion(0))


def test_bca_close_to_percentile_for_a_symmetric_statistic_and_covers():
    rng = np.random.default_rng(2)
    x = (rng.random(800) < 0.4).astype(float)
    sums = np.column_stack([x, np.ones_like(x)])
    boot = stats.bootstrap_sums(sums, 4000, 1)

    def fn(m):
        return stats.safe_ratio(m[:, 0], m[:, 1])

    lo, hi = bca_ci(fn, sums, boot)
    plo, phi = stats.percentile_ci(fn(boot))
    assert lo < x.mean() < hi
    assert lo == pytest.approx(plo, abs=0.01) and hi == pytest.approx(phi, abs=0.01)


def test_logistic_glm_matches_statsmodels():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(500), rng.normal(size=500), np.tanh(rng.normal(size=500))])
    y = (rng.random(500) < 1 / (1 + np.exp(-(x @ [0.3, -0.8, 1.2])))).astype(float)
    beta, cov = logistic_glm(x, y)
    ref = sm.GLM(y, x, family=sm.families.Binomial()).fit()
    assert beta == pytest.approx(ref.params, abs=1e-8)
    assert np.sqrt(np.diag(cov)) == pytest.approx(ref.bse, abs=1e-8)


def test_rank_correlations_hand_computed():
    # ranks agree except the last two: sum d^2 = 2 -> rho = 1 - 6*2 / (3*8) = 0.5; S = 1 - ... = 1 of 3 pairs
    rho, _ = tests_stats.spearman([1, 2, 3], [1, 3, 2])
    tau, _ = tests_stats.kendall_tau_b([1, 2, 3], [1, 3, 2])
    assert rho == pytest.approx(0.5)
    assert tau == pytest.approx(1 / 3)
    assert tests_stats.spearman([1, 2, 3, 4], [4, 3, 2, 1])[0] == pytest.approx(-1.0)


@pytest.mark.parametrize("n", [5, 40, 700])
def test_rank_correlations_match_scipy_with_ties(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 5, n).astype(float)
    y = x + rng.integers(0, 4, n)
    rho, p = tests_stats.spearman(x, y)
    ref = scipy.stats.spearmanr(x, y)
    assert rho == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    tau, p = tests_stats.kendall_tau_b(x, y, chunk=7)
    ref = scipy.stats.kendalltau(x, y, method="asymptotic")
    assert tau == pytest.approx(ref.statistic, abs=1e-12)
    assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)


def test_rank_correlations_edge_cases():
    for fn in (tests_stats.spearman, tests_stats.kendall_tau_b):
        assert all(np.isnan(v) for v in fn([], []))
        assert all(np.isnan(v) for v in fn([1, 1, 1, 1], [1, 2, 3, 4]))  # constant: undefined, not 0
    assert np.isnan(tests_stats.spearman([1, 2], [2, 1])[0])  # n < 3
    assert tests_stats.kendall_tau_b([1, 2], [2, 1])[0] == pytest.approx(-1.0)


@pytest.mark.parametrize("shape", [(1,), (7,), (40,), (30, 6), (5, 2, 9), (3, 0)])
def test_average_ranks_equal_scipys_rankdata(shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(0, 4, shape).astype(float)  # many ties
    x[..., :1] = -np.inf if x.size else x[..., :1]  # an infinite value ranks first
    got = tests_stats.average_ranks(x)
    assert got.shape == x.shape
    np.testing.assert_array_equal(got, scipy.stats.rankdata(x, axis=-1))
    assert tests_stats.average_ranks([3.0, 1.0, 3.0, 2.0]).tolist() == [3.5, 1.0, 3.5, 2.0]  # by hand
