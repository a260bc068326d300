"""Label-judge figures against scikit-learn and hand counts; Rogan-Gladen and PPI++ pass rates against
hand-computed values, ppi-python, statsmodels and a simulation with a known prevalence; the label planner
against its closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from judgecal.stats.classification import corrected_pass_rate, label_agreement, pass_rate_plan, rogan_gladen
from judgecal.stats.ppi import plan_from_data


def _est(fig: dict) -> float:
    """A figure's estimate, ``None`` (undefined) as NaN."""
    return float("nan") if fig["estimate"] is None else fig["estimate"]


def _labels(k: int, n: int, seed: int, never_predicted: int | None, never_true: int | None,
            n_invalid: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    choices = [c for c in range(k) if c != never_true]
    truth = rng.choice(choices, n)
    pred = np.where(rng.random(n) < 0.6, truth, rng.integers(0, k, n))
    if never_predicted is not None:
        pred = np.where(pred == never_predicted, (never_predicted + 1) % k, pred)
    pred[rng.choice(n, n_invalid, replace=False)] = -1
    return truth, pred


CASES = [  # k, seed, label never predicted, label never true
    (2, 0, None, None), (2, 1, 1, None), (3, 2, None, None), (3, 3, 2, None),
    (4, 4, None, None), (4, 5, 1, None), (4, 6, 3, 3),
]


@pytest.mark.parametrize(("k", "seed", "never_predicted", "never_true"), CASES)
def test_point_estimates_equal_scikit_learn(k: int, seed: int, never_predicted: int | None,
                                            never_true: int | None) -> None:
    truth, pred = _labels(k, 240, seed, never_predicted, never_true, n_invalid=17)
    ok = pred >= 0
    t, p = truth[ok], pred[ok]
    labels = list(range(k))
    r = label_agreement(truth, pred, k, n_boot=200)
    assert r["n_invalid"]["estimate"] == 17 and r["n_invalid"]["n"] == 240
    assert r["accuracy"]["n"] == 240 - 17
    assert r["confusion"] == confusion_matrix(t, p, labels=labels).tolist()
    assert _est(r["accuracy"]) == pytest.approx(accuracy_score(t, p), abs=1e-9)
    assert _est(r["cohen_kappa"]) == pytest.approx(cohen_kappa_score(t, p, labels=labels), abs=1e-9)
    macro = f1_score(t, p, average="macro", labels=labels, zero_division=0)
    assert _est(r["macro_f1"]) == pytest.approx(macro, abs=1e-9)
    rec = recall_score(t, p, average=None, labels=labels, zero_division=np.nan)
    prec = precision_score(t, p, average=None, labels=labels, zero_division=np.nan)
    got_rec = [_est(f) for f in r["recall_by_label"]]
    got_prec = [_est(f) for f in r["precision_by_label"]]
    assert got_rec == pytest.approx(list(rec), abs=1e-9, nan_ok=True)
    assert got_prec == pytest.approx(list(prec), abs=1e-9, nan_ok=True)
    assert [f["n"] for f in r["recall_by_label"]] == [int((t == c).sum()) for c in labels]
    assert [f["n"] for f in r["precision_by_label"]] == [int((p == c).sum()) for c in labels]
    if never_predicted is not None:
        assert r["precision_by_label"][never_predicted]["estimate"] is None
    if never_true is not None:
        assert r["recall_by_label"][never_true]["estimate"] is None
    # the trivial rater: always the commonest human label
    top = int(np.bincount(t, minlength=k).argmax())
    always = np.full_like(t, top)
    assert _est(r["majority_accuracy"]) == pytest.approx(accuracy_score(t, always), abs=1e-9)
    assert _est(r["majority_macro_f1"]) == pytest.approx(
        f1_score(t, always, average="macro", labels=labels, zero_division=0), abs=1e-9)
    ordinal = label_agreement(truth, pred, k, ordinal=True, n_boot=200)
    qwk = cohen_kappa_score(t, p, labels=labels, weights="quadratic")
    assert _est(ordinal["cohen_kappa"]) == pytest.approx(qwk, abs=1e-9)
    assert _est(ordinal["accuracy"]) == _est(r["accuracy"])


@pytest.mark.parametrize("positive", [0, 1])
@pytest.mark.parametrize("seed", [0, 1])
def test_binary_figures_equal_scikit_learn(positive: int, seed: int) -> None:
    truth, pred = _labels(2, 300, seed, None, None, n_invalid=9)
    ok = pred >= 0
    t, p = truth[ok], pred[ok]
    neg = 1 - positive
    r = label_agreement(truth, pred, 2, positive=positive, n_boot=200)
    assert _est(r["tpr"]) == pytest.approx(recall_score(t, p, pos_label=positive))
    assert _est(r["tnr"]) == pytest.approx(recall_score(t, p, pos_label=neg))
    assert _est(r["precision"]) == pytest.approx(precision_score(t, p, pos_label=positive))
    assert _est(r["f1"]) == pytest.approx(f1_score(t, p, pos_label=positive))
    assert _est(r["balanced_accuracy"]) == pytest.approx(balanced_accuracy_score(t, p))
    assert _est(r["judge_positive_rate"]) == pytest.approx(np.mean(p == positive))
    assert _est(r["human_positive_rate"]) == pytest.approx(np.mean(t == positive))
    assert r["tpr"]["n"] == int((t == positive).sum()) and r["precision"]["n"] == int((p == positive).sum())


def _rows(tp: int, fn: int, fp: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a 2x2 table, positive code 1."""
    truth = np.repeat([1, 1, 0, 0], [tp, fn, fp, tn])
    pred = np.repeat([1, 0, 1, 0], [tp, fn, fp, tn])
    return truth, pred


def test_binary_hand_computed() -> None:
    # tp = 30, fn = 10, fp = 20, tn = 40 (100 rows; 40 human positives, 50 judge positives)
    truth, pred = _rows(30, 10, 20, 40)
    pred = np.r_[pred, -1, -1, -1]  # three rows without a usable answer
    truth = np.r_[truth, 1, 0, 1]
    r = label_agreement(truth, pred, 2, positive=1, n_boot=200)
    assert r["confusion"] == [[40, 20], [10, 30]]  # rows truth 0/1, columns judge 0/1
    assert r["n_invalid"]["estimate"] == 3
    assert _est(r["tpr"]) == pytest.approx(0.75)  # 30 / (30 + 10)
    assert _est(r["tnr"]) == pytest.approx(40 / 60)  # 40 / (40 + 20)
    assert _est(r["precision"]) == pytest.approx(0.6)  # 30 / (30 + 20)
    assert _est(r["f1"]) == pytest.approx(2 / 3)  # 2 * 30 / (2 * 30 + 20 + 10) = 60 / 90
    assert _est(r["balanced_accuracy"]) == pytest.approx((0.75 + 40 / 60) / 2)  # 0.7083
    assert _est(r["judge_positive_rate"]) == pytest.approx(0.5)  # 50 / 100
    assert _est(r["human_positive_rate"]) == pytest.approx(0.4)  # 40 / 100
    assert _est(r["accuracy"]) == pytest.approx(0.7)  # (30 + 40) / 100
    # p_e = (60 * 50 + 40 * 50) / 100^2 = 0.5, kappa = (0.7 - 0.5) / 0.5
    assert _est(r["cohen_kappa"]) == pytest.approx(0.4)
    # the other label as positive swaps the roles: tpr = 40/60, precision = 40/50, f1 = 80/110
    s = label_agreement(truth, pred, 2, positive=0, n_boot=200)
    assert (_est(s["tpr"]), _est(s["tnr"]), _est(s["precision"]), _est(s["f1"])) == pytest.approx(
        (40 / 60, 0.75, 0.8, 80 / 110))


def test_undefined_and_refused_inputs() -> None:
    r = label_agreement([0, 1, 1], [-1, -1, -1], 2, positive=1, n_boot=50)
    assert r["accuracy"]["estimate"] is None and r["accuracy"]["n"] == 0
    assert r["tpr"]["estimate"] is None and r["n_invalid"]["estimate"] == 3
    assert r["confusion"] == [[0, 0], [0, 0]]
    with pytest.raises(ValueError, match="truth"):
        label_agreement([0, 3], [0, 1], 3)
    with pytest.raises(ValueError, match="pred"):
        label_agreement([0, 1], [0, -2], 3)
    with pytest.raises(ValueError, match="positive"):
        label_agreement([0, 1], [0, 1], 3, positive=1)
    with pytest.raises(ValueError, match="integer"):
        label_agreement([0, 1], [0, 0.5], 2)


def test_bootstrap_interval_contains_estimate_is_seeded_and_positive() -> None:
    truth, pred = _labels(3, 400, 11, None, None, n_invalid=10)
    a = label_agreement(truth, pred, 3, n_boot=400, seed=5)
    b = label_agreement(truth, pred, 3, n_boot=400, seed=5)
    c = label_agreement(truth, pred, 3, n_boot=400, seed=6)
    assert a == b
    ci = [(x["accuracy"]["ci_low"], x["accuracy"]["ci_high"]) for x in (a, c)]
    assert ci[0] != ci[1]
    for name in ("accuracy", "cohen_kappa", "macro_f1"):
        f = a[name]
        assert f["ci_low"] < f["estimate"] < f["ci_high"], name
        assert f["ci_high"] - f["ci_low"] > 0.02, name
    for f in a["recall_by_label"] + a["precision_by_label"]:
        assert f["ci_low"] <= f["estimate"] <= f["ci_high"]
    # singleton clusters are the row bootstrap, draw for draw
    assert label_agreement(truth, pred, 3, groups=np.arange(400) * 7, n_boot=400, seed=5) == a


def test_clusters_of_duplicates_widen_the_interval() -> None:
    # 80 items, each judged 6 times with the same (truth, verdict): rows within an item are copies
    base_t, base_p = _labels(2, 80, 3, None, None, n_invalid=0)
    truth, pred, item = np.repeat(base_t, 6), np.repeat(base_p, 6), np.repeat(np.arange(80), 6)
    rows = label_agreement(truth, pred, 2, positive=1, n_boot=600, seed=1)
    clustered = label_agreement(truth, pred, 2, positive=1, groups=item, n_boot=600, seed=1)
    assert clustered["n_clusters"] == 80 and rows["n_clusters"] == 480
    for name in ("accuracy", "cohen_kappa", "tpr", "balanced_accuracy"):
        w_rows = rows[name]["ci_high"] - rows[name]["ci_low"]
        w_clu = clustered[name]["ci_high"] - clustered[name]["ci_low"]
        assert clustered[name]["estimate"] == rows[name]["estimate"]
        assert w_clu > 1.6 * w_rows, name  # sqrt(6) = 2.45 in theory
    # invalid rows drop out of their cluster, not the cluster itself
    pred2 = pred.copy()
    pred2[0] = -1
    assert label_agreement(truth, pred2, 2, groups=item, n_boot=50)["n_clusters"] == 80


def test_rogan_gladen_hand_computed_clipped_and_undefined() -> None:
    assert float(rogan_gladen(0.82, 0.95, 0.60)) == pytest.approx(0.42 / 0.55)  # (0.82 + 0.60 - 1) / 0.55
    assert float(rogan_gladen(0.30, 0.80, 0.90)) == pytest.approx(0.20 / 0.70)  # (0.30 + 0.90 - 1) / 0.70
    # a perfect judge reports the truth
    assert float(rogan_gladen(0.37, 1.0, 1.0)) == pytest.approx(0.37)
    # (0.05 + 0.9 - 1) / 0.8 < 0 -> 0 ; (0.99 + 0.9 - 1) / 0.8 = 1.11 -> 1
    out = rogan_gladen([0.05, 0.99, 0.5, 0.5, np.nan], [0.9, 0.9, 0.3, 0.5, 0.9], [0.9, 0.9, 0.6, 0.5, 0.9])
    assert out.shape == (5,)
    assert out[0] == 0.0 and out[1] == 1.0
    assert np.isnan(out[2]) and np.isnan(out[3]) and np.isnan(out[4])  # tpr + tnr <= 1, missing q
    grid = rogan_gladen(np.array([0.2, 0.4])[:, None], np.array([0.8, 0.9, 0.95]), 0.85)
    assert grid.shape == (2, 3)
    assert grid[1, 2] == pytest.approx((0.4 + 0.85 - 1) / (0.95 + 0.85 - 1))


def _simulate(seed: int, n_all: int = 10_000, n_lab: int = 500, prevalence: float = 0.3, tpr: float = 0.9,
              tnr: float = 0.7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_all) < prevalence).astype(int)
    judge = np.where(truth == 1, rng.random(n_all) < tpr, rng.random(n_all) >= tnr).astype(int)
    lab = np.zeros(n_all, dtype=bool)
    lab[rng.choice(n_all, n_lab, replace=False)] = True
    return truth, judge, lab


def test_corrected_pass_rate_recovers_a_known_prevalence() -> None:
    truth, judge, lab = _simulate(7)
    r = corrected_pass_rate(truth[lab], judge[lab], judge, n_boot=800, seed=3)
    assert (r["n_labelled"], r["n_all"]) == (500, 10_000)
    # the judge reports 0.3 * 0.9 + 0.7 * 0.3 = 0.48
    rep = r["judge_reported"]
    assert rep["estimate"] == pytest.approx(judge.mean())
    assert rep["ci_low"] > 0.42 and rep["n"] == 10_000
    for name in ("rogan_gladen", "ppi", "human_only"):
        f = r[name]
        assert f["ci_low"] < 0.3 < f["ci_high"], name
        assert f["ci_low"] < truth.mean() < f["ci_high"], name
        assert f["n"] == 500
    assert r["rogan_gladen"]["n_undefined"] == 0
    # Rogan-Gladen point estimate from the counts
    yl, hl = truth[lab], judge[lab]
    q = judge.mean()
    se, sp = hl[yl == 1].mean(), 1 - hl[yl == 0].mean()
    assert r["rogan_gladen"]["estimate"] == pytest.approx((q + sp - 1) / (se + sp - 1), abs=1e-9)


def test_ppi_part_matches_ppi_python_with_the_real_unlabelled_verdicts() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    for seed, level in ((1, 0.95), (2, 0.9)):
        truth, judge, lab = _simulate(seed, n_all=3000, n_lab=300)
        r = corrected_pass_rate(truth[lab], judge[lab], judge, n_boot=300, level=level)["ppi"]
        y, yh, yu = (v.astype(float) for v in (truth[lab], judge[lab], judge[~lab]))
        est = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yh, yu))[0])
        lo, hi = ppi_py.ppi_mean_ci(y, yh, yu, alpha=1 - level)
        assert r["estimate"] == pytest.approx(est, abs=1e-8)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((float(np.ravel(lo)[0]), float(np.ravel(hi)[0])),
                                                           abs=1e-8)
        assert 0 <= r["lam"] <= 1


def test_human_only_against_numpy_and_statsmodels() -> None:
    proportion_confint = pytest.importorskip("statsmodels.stats.proportion").proportion_confint
    truth, judge, lab = _simulate(4, n_all=4000, n_lab=600)
    r = corrected_pass_rate(truth[lab], judge[lab], judge, n_boot=1000)["human_only"]
    assert r["estimate"] == pytest.approx(truth[lab].mean())
    lo, hi = proportion_confint(int(truth[lab].sum()), 600, alpha=0.05, method="normal")
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo, hi), abs=0.012)


def test_corrected_pass_rate_clusters_and_chance_judges() -> None:
    truth, judge, lab = _simulate(5, n_all=2000, n_lab=200)
    y, yh = truth[lab], judge[lab]
    # each labelled item counted 5 times, the copies one cluster: wider than as 1000 independent items
    rows = corrected_pass_rate(np.repeat(y, 5), np.repeat(yh, 5), np.r_[np.repeat(yh, 5), judge[~lab]],
                               n_boot=500)
    clu = corrected_pass_rate(np.repeat(y, 5), np.repeat(yh, 5), np.r_[np.repeat(yh, 5), judge[~lab]],
                              groups_labelled=np.repeat(np.arange(200), 5), n_boot=500)
    width = {k: [f[k]["ci_high"] - f[k]["ci_low"] for f in (rows, clu)]
             for k in ("human_only", "rogan_gladen")}
    for name, (w_rows, w_clu) in width.items():
        assert w_clu > 1.6 * w_rows, name
    # a judge that is always wrong on the labelled items: tpr + tnr - 1 = -1, no correction possible
    bad = corrected_pass_rate([1, 1, 0, 0, 1, 0], [0, 0, 1, 1, 0, 1], [0, 0, 1, 1, 0, 1, 1, 0], n_boot=100)
    assert bad["rogan_gladen"]["estimate"] is None and bad["rogan_gladen"]["ci_low"] is None
    assert bad["rogan_gladen"]["n_undefined"] == 100
    assert bad["human_only"]["estimate"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="labelled"):  # 3 judge passes cannot hold 4 labelled ones
        corrected_pass_rate([1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="0 and 1"):
        corrected_pass_rate([1, 2], [1, 1], [1, 1])


def test_pass_rate_plan_closed_forms() -> None:
    rng = np.random.default_rng(9)
    y = (rng.random(300) < 0.35).astype(int)
    good = np.where(rng.random(300) < 0.96, y, 1 - y)
    z = sps.norm.ppf(0.975)
    p = y.mean()
    plan = pass_rate_plan(y, good, n_all=20_000, halfwidth=0.02)
    assert plan["n_human_only"] == math.ceil(z**2 * p * (1 - p) * len(y) / (len(y) - 1) / 0.02**2 - 1e-9)
    assert plan["pass_rate"] == pytest.approx(p) and plan["n_labelled"] == 300
    assert plan["n_ppi"] <= plan["n_human_only"] / 2
    # the planned labels come out of the 20 000 items: N = n_all - n_ppi, a fixed point of plan_from_data
    assert plan["n_unlabelled"] == 20_000 - plan["n_ppi"]
    assert plan_from_data(y, good, 0.02, n_unlabelled=plan["n_unlabelled"])["n_ppi"] == plan["n_ppi"]
    # closed form with n + N = n_all: h^2/z^2 = s^2/n (1 - r^2 (n_all - n)/n_all)
    s2, rho = np.var(y, ddof=1), np.corrcoef(y, good)[0, 1]
    v = (0.02 / z) ** 2
    n_closed = s2 * (1 - rho**2) / (v - s2 * rho**2 / 20_000)
    assert abs(plan["n_ppi"] - n_closed) <= 1
    assert plan["more_ppi"] == max(plan["n_ppi"] - 300, 0) and plan["enough_items"]
    # a judge that knows nothing saves nothing
    noise = rng.integers(0, 2, 300)
    weak = pass_rate_plan(y, noise, n_all=20_000, halfwidth=0.02, level=0.9)
    z90 = sps.norm.ppf(0.95)
    assert weak["n_human_only"] == math.ceil(z90**2 * p * (1 - p) * len(y) / (len(y) - 1) / 0.02**2 - 1e-9)
    assert weak["n_ppi"] >= 0.9 * weak["n_human_only"]
    with pytest.raises(ValueError, match="halfwidth"):
        pass_rate_plan(y, good, n_all=1000, halfwidth=0)
    with pytest.raises(ValueError, match="n_all"):
        pass_rate_plan(y, good, n_all=100, halfwidth=0.05)
