"""The audit's models, humans, reference, confidence and verdict sections.

On PandaLM (three annotators, two recorded judges): model win rates by the humans and by each judge
counted here from the workspace's tables, system-level Spearman/Kendall against scipy, the humans'
Fleiss' κ of 0.864 and their leave-one-out accuracy counted by hand, κ per annotator against
scikit-learn, PPI++ on 100 human labels against ppi-python's formulas in judgecal.stats, the planner
against ppi.plan_labels, and the verdicts of both judges. On the example files in data/: the whole
path through the CLI (import, audit, plan, escalation).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from judgecal.audit import models
from judgecal.audit.decision import STATUSES
from judgecal.audit.metric import Metric
from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.audit.probe import AuditConfig
from judgecal.audit.probes import PositionProbe, VerbosityProbe
from judgecal.audit.run import judge_inputs
from judgecal.audit.truth import resolve_truth
from judgecal.cli import main
from judgecal.errors import InputError
from judgecal.stats import ppi

REPO = Path(__file__).resolve().parents[1]
GPT, PANDA = "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"
N_BOOT = 300


@pytest.fixture(scope="module")
def report(pandalm_ws):  # type: ignore[no-untyped-def]
    return audit_workspace(pandalm_ws, AuditOptions(consensus="ds", n_boot=N_BOOT)).to_json()


@pytest.fixture(scope="module")
def tables(pandalm_ws):  # type: ignore[no-untyped-def]
    facts = pandalm_ws.items_repo.item_facts()
    truth = pandalm_ws.annotations_repo.consensus_frame("ds").set_index("item_id")["label"]
    j = pandalm_ws.judgments_repo.judgments_frame()
    return facts, truth, j


def _hand_win_rates(facts: pd.DataFrame, labels: pd.Series) -> pd.Series:
    """(wins + ties/2) / comparisons per model, counted with pandas."""
    f = facts.loc[labels.index]
    score_a = labels.map({"A": 1.0, "B": 0.0, "tie": 0.5})
    rows = pd.concat([pd.DataFrame({"model": f["model_a"], "s": score_a}),
                      pd.DataFrame({"model": f["model_b"], "s": 1 - score_a})])
    return rows.groupby("model")["s"].mean()


def test_model_win_rates_by_humans_and_judges(report, tables):  # type: ignore[no-untyped-def]
    facts, truth, j = tables
    wr = report["models"]["win_rate"]
    assert set(wr) == {"humans", GPT, PANDA}
    hand = {"humans": _hand_win_rates(facts, truth)}
    for judge in (GPT, PANDA):
        mine = j[j["judge"] == judge].set_index("item_id")["verdict"]
        assert set(j.loc[j["judge"] == judge, "order"]) == {"AB"}  # one order: the verdict as recorded
        hand[judge] = _hand_win_rates(facts, mine.where(mine.isin(["A", "B", "tie"]), "tie"))
    for rater, expected in hand.items():
        assert set(wr[rater]) == set(expected.index) == set(report["models"]["models"])
        for model, value in expected.items():
            got = wr[rater][model]
            assert got["estimate"] == pytest.approx(value, abs=1e-12), (rater, model)
            assert got["ci_low"] < got["estimate"] < got["ci_high"]
            assert got["ci_high"] - got["ci_low"] < 0.15
    n_llama = int(((facts["model_a"] == "llama-7b") | (facts["model_b"] == "llama-7b")).sum())
    assert wr["humans"]["llama-7b"]["n"] == n_llama
    # the humans' matrix is antisymmetric and its mean over opponents weighs back to the win rate
    mx = report["models"]["matrix"]["humans"]
    est = np.array([[np.nan if v is None else v for v in row] for row in mx["estimate"]], dtype=float)
    n = np.array(mx["n"], dtype=float)
    off = ~np.eye(len(est), dtype=bool) & np.isfinite(est)
    assert off.sum() == 20 and np.allclose((est + est.T)[off], 1.0)
    k = mx["models"].index("llama-7b")
    assert np.nansum(est[k] * n[k]) / n[k].sum() == pytest.approx(hand["humans"]["llama-7b"])
    bt = report["models"]["bradley_terry"]["humans"]
    ranking = report["models"]["ranking"]["humans"]
    assert sorted(ranking) == sorted(report["models"]["models"])
    assert [bt[m]["score"] for m in ranking] == sorted((bt[m]["score"] for m in ranking), reverse=True)
    assert ranking[0] == hand["humans"].idxmax()  # the best win rate also has the best strength here


def test_system_level_alignment_against_scipy(report):  # type: ignore[no-untyped-def]
    wr = report["models"]["win_rate"]
    names = report["models"]["models"]
    x = [wr["humans"][m]["estimate"] for m in names]
    for judge in (GPT, PANDA):
        y = [wr[judge][m]["estimate"] for m in names]
        sa = report["models"]["system_alignment"][judge]
        rho, tau = sps.spearmanr(x, y), sps.kendalltau(x, y)
        assert sa["spearman"]["estimate"] == pytest.approx(rho.statistic)
        assert sa["kendall"]["estimate"] == pytest.approx(tau.statistic)
        assert sa["spearman"]["ci_low"] <= sa["spearman"]["estimate"] <= sa["spearman"]["ci_high"]
        assert sa["n_pairs"] == 10
        # pairs ordered the other way round, counted here
        rev = sum((x[a] - x[b]) * (y[a] - y[b]) < 0 for a in range(5) for b in range(a + 1, 5))
        assert sa["n_reversed"] == rev == len(sa["reversed_pairs"])
        assert 0 <= sa["n_reversed_significant"] <= rev


def test_humans_reference_and_replace_annotator(report, pandalm_ws, tables):  # type: ignore[no-untyped-def]
    facts, truth, j = tables
    h = report["humans"]
    assert h["n_annotators"] == 3 and h["source"] == "pandalm"
    assert h["fleiss_kappa"]["estimate"] == pytest.approx(0.864, abs=5e-4)  # the published agreement
    # leave-one-out accuracy by hand: each label against the unique majority of the other two
    wide = pandalm_ws.annotations_repo.annotations_frame().pivot(index="item_id", columns="annotator", values="label")
    right = total = 0
    for row in wide.itertuples(index=False):
        for k, lab in enumerate(row):
            others = [v for i, v in enumerate(row) if i != k]
            if others[0] == others[1]:
                total += 1
                right += lab == others[0]
    assert h["loo_accuracy"]["n"] == total
    assert h["loo_accuracy"]["estimate"] == pytest.approx(right / total)
    for judge in (GPT, PANDA):
        e = report["judges"][judge]
        ref = e["reference"]
        v = j[j["judge"] == judge].set_index("item_id")["verdict"].replace({"invalid": "tie"})
        assert ref["accuracy"] == pytest.approx(float((v.reindex(truth.index) == truth).mean()))
        assert ref["base_rate"] == pytest.approx(truth.value_counts(normalize=True).max())
        assert ref["chance_accuracy"] == pytest.approx(float((truth.value_counts(normalize=True) ** 2).sum()))
        assert ref["human_kappa"] == h["fleiss_kappa"]["estimate"]
        alt = e["replace_annotator"]
        assert alt["n_annotators"] == 3 and alt["epsilon"] == 0.2
        kz = alt["kappa_z"]
        for k, ann in enumerate(wide.columns):
            assert kz["kappa_judge_per_annotator"][k] == pytest.approx(
                cohen_kappa_score(v.reindex(wide.index).to_numpy(dtype=str), wide[ann].to_numpy(dtype=str)))
        assert kz["z"] < -1 and kz["pattern"] == "below the humans"  # κ about 0.45 against the humans' 0.86
        assert alt["passed"] is False


def test_verdicts_of_the_recorded_judges(report):  # type: ignore[no-untyped-def]
    for judge in (GPT, PANDA):
        v = report["judges"][judge]["verdict"]
        assert v["status"] in STATUSES and v["reasons"]
        # like with like: the judge's mean κ with each annotator beside the annotators' with each other
        kz = report["judges"][judge]["replace_annotator"]["kappa_z"]
        pw = report["judges"][judge]["reference"]["like_for_like"]["pairwise"]
        assert pw["judge"]["kappa"]["estimate"] == pytest.approx(np.mean(kz["kappa_judge_per_annotator"]))
        assert pw["humans"]["kappa"]["estimate"] == pytest.approx(kz["kappa_human_mean"])
        assert report["judges"][judge]["metrics"]["pairwise_kappa"]["estimate"] == pw["judge"]["kappa"]["estimate"]
        assert any("with each annotator beside the annotators' 0.86 with each other (pairwise, the same 999 items)"
                   in r for r in v["reasons"])
        assert v["status"] == "not aligned" and v["human_likeness"]["class"] == "below the humans"
        # one presentation order: position bias is "not tested", never a dash or "no bias"
        assert any(s.startswith("position: not tested") for s in v["not_tested"])
        assert "first_position_rate" not in report["judges"][judge]["metrics"]
    # GPT-3.5's verbosity excess is significant and, though its estimate is below the effect of interest, its
    # interval reaches it: flagged (the rule that finds a bias planted at the effect of interest)
    m = report["judges"][GPT]["metrics"]["verbosity_excess"]
    eoi = report["settings"]["effect_of_interest"]
    assert m["q"] < 0.05 and abs(m["estimate"]) < eoi
    reaches = max(abs(m["ci_low"]), abs(m["ci_high"])) >= eoi
    assert reaches == any(f.startswith("verbosity_bias") for f in report["judges"][GPT]["flags"])
    assert report["settings"]["thresholds"]["version"] == 1


def test_flag_needs_significance_and_the_effect_of_interest():
    cfg = AuditConfig(effect_of_interest=0.05)
    # significant, but the interval stops short of the effect of interest: negligible, no flag
    small = {"verbosity_excess": Metric(-0.035, -0.045, -0.025, 900, null_value=0.0, p=1e-4, q=1e-3, mde=0.02)}
    # significant, and the interval reaches the effect of interest (a true effect of 0.05 looks like this)
    near = {"verbosity_excess": Metric(-0.049, -0.07, -0.03, 900, null_value=0.0, p=1e-4, q=1e-3, mde=0.02)}
    big = {"verbosity_excess": Metric(-0.06, -0.08, -0.04, 900, null_value=0.0, p=1e-4, q=1e-3, mde=0.02)}
    assert VerbosityProbe().flags(small, cfg) == []
    assert VerbosityProbe().flags(near, cfg) == ["verbosity_bias:less_than_humans"]
    assert VerbosityProbe().flags(big, cfg) == ["verbosity_bias:less_than_humans"]
    # not significant: underpowered only while the interval still holds an effect of interest
    wide = {"verbosity_excess": Metric(0.01, -0.06, 0.08, 90, null_value=0.0, p=0.7, q=0.7, mde=0.09)}
    tight = {"verbosity_excess": Metric(0.0, -0.03, 0.03, 4000, null_value=0.0, p=0.9, q=0.9, mde=0.09)}
    assert VerbosityProbe().flags(wide, cfg) == ["verbosity_bias:underpowered"]
    assert VerbosityProbe().flags(tight, cfg) == []  # an MDE above 0.05 alone is no longer a false alarm
    pos = {"first_position_rate": Metric(0.53, 0.52, 0.54, 5000, null_value=0.5, p=1e-6, q=1e-5, mde=0.01)}
    assert PositionProbe().flags(pos, cfg) == []
    pos["first_position_rate"] = Metric(0.56, 0.55, 0.57, 5000, null_value=0.5, p=1e-6, q=1e-5, mde=0.01)
    assert PositionProbe().flags(pos, cfg) == ["position_bias:first"]


def test_ppi_on_100_human_labels_and_the_planner(pandalm_ws, tables):  # type: ignore[no-untyped-def]
    facts, truth_all, j = tables
    truth, _ = resolve_truth(pandalm_ws, "ds", n_boot=10)
    rng = np.random.default_rng(0)
    labelled = truth.iloc[np.sort(rng.choice(len(truth), 100, replace=False))]
    inputs = judge_inputs(pandalm_ws, labelled, [GPT])
    items = models.item_models(pandalm_ws)
    sec = models.models_section(items, labelled, inputs, AuditConfig(n_boot=200))
    p = sec["ppi"][GPT]
    assert p["n_labelled"] == 100 and p["n_unlabelled"] == 899
    v = j[j["judge"] == GPT].set_index("item_id")["verdict"].replace({"invalid": "tie"}).reindex(items.index)
    human = labelled.reindex(items.index).astype(object)
    direct = ppi.ppi_win_rates(items["model_a"], items["model_b"], human.where(human.notna(), None), v)
    for model, row in direct.iterrows():
        got = p["win_rate"][model]
        for key in ("estimate", "ci_low", "ci_high", "classical_estimate", "width_ratio"):
            assert got[key] == pytest.approx(row[key]), (model, key)
    assert np.mean([r["width_ratio"] for r in p["win_rate"].values()]) < 1  # the judge's verdicts buy precision
    # the planner from the same labelled items, by hand
    y = labelled.map({"A": 1.0, "B": 0.0, "tie": 0.5}).to_numpy()
    yhat = v.reindex(labelled.index).map({"A": 1.0, "B": 0.0, "tie": 0.5}).to_numpy()
    expected = ppi.plan_labels(0.03, float(np.var(y, ddof=1)), float(np.corrcoef(y, yhat)[0, 1]))
    for key in ("n_human_only", "n_ppi", "n_ppi_if_judge_not_better", "exceeds_ceiling"):
        assert sec["plan"][GPT][key] == expected[key]


def test_example_files_end_to_end(tmp_path, capsys):  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    assert main(["import", str(REPO / "data" / "items.jsonl"), "-w", str(ws)]) == 0
    for name in ("families.yaml", "thresholds.yaml"):
        shutil.copy(REPO / "data" / name, ws / name)
    assert main(["import", str(REPO / "data" / "verdicts.jsonl"), "--as", "judgments", "--spec",
                 str(REPO / "data" / "judge.yaml"), "-w", str(ws)]) == 0
    capsys.readouterr()
    assert main(["audit", "--details", "--consensus", "mv", "--n-boot", "200", "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "example/acme-judge: NOT ALIGNED" in out and "  - picks the response shown first 81% of the time" in out
    report = json.loads((ws / "reports" / "audit.json").read_text("utf-8"))
    m = report["models"]
    items = [json.loads(line) for line in (REPO / "data" / "items.jsonl").read_text("utf-8").splitlines()]
    assert set(m["models"]) == {it["model_a"] for it in items} | {it["model_b"] for it in items}
    assert set(m["by_category"]["humans"]) == {it["metadata"]["category"] for it in items}
    assert set(m["win_rate"]) == {"humans", "example/acme-judge"}
    judge = report["judges"]["example/acme-judge"]
    assert judge["verdict"]["status"] == "not aligned"
    cal = judge["calibration"]
    assert cal["confidence"] == "token probabilities" and cal["n"] == 20
    assert 0 <= cal["ece"]["ci_low"] <= cal["ece"]["estimate"] <= cal["ece"]["ci_high"]
    assert sum(b["n"] for b in cal["reliability"]) == 20
    sel = judge["selective"]
    assert sel["target"] == 0.9 and sel["delta"] == 0.1 and sel["n_items"] == 20
    html = (ws / "reports" / "audit.html").read_text("utf-8")
    assert "picks the response shown first 81% of the time" in html  # the verdict's reasons in the report
    # the planner through the CLI equals ppi.plan_labels on the measured figures
    assert main(["plan", "--consensus", "mv", "--json", "-w", str(ws)]) == 0
    plan = json.loads(capsys.readouterr().out)["judges"]["example/acme-judge"]
    assert plan["n_labelled_measured"] == 20
    for key in ("rho", "sigma2", "n_human_only", "n_ppi"):
        assert plan[key] == pytest.approx(m["plan"]["example/acme-judge"][key])
    expected = ppi.plan_labels(0.03, plan["sigma2"], plan["rho"])
    assert (plan["n_human_only"], plan["n_ppi"]) == (expected["n_human_only"], expected["n_ppi"])
    assert main(["plan", "--judge", "nobody", "-w", str(ws), "--consensus", "mv"]) == 2
    assert "no judge 'nobody'" in capsys.readouterr().err
    # escalation: the items below the audit's threshold, and nothing else
    from judgecal.annotation.select import select
    from judgecal.data.store import Workspace

    with Workspace(ws, create=False) as w:
        chosen = select(w, "escalate", 50, judge="example/acme-judge")
        assert len(chosen) == sel["n_escalated"]
        with pytest.raises(InputError, match="needs a judge"):
            select(w, "escalate", 5)
