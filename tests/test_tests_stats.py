"""Tests, intervals and power against statsmodels / scipy and hand-computed values."""

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from judgecal.audit import stats
from judgecal.audit.tests_stats import (
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
