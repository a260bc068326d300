"""A judge's confidence in the audit (token probabilities or vote share), selective evaluation, the
humans' leave-one-out accuracy and the item verdict, each against values worked out here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgecal.audit import confidence, human, models
from judgecal.data.store import Workspace
from judgecal.stats import calibration


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item_id", "order", "sample", "verdict", "p_a", "p_b", "p_tie"])


def test_probabilities_are_averaged_over_both_orders():
    j = _frame([("i1", "AB", 0, "A", 0.9, 0.1, 0.0), ("i1", "BA", 0, "B", 0.3, 0.6, 0.1),
                ("i2", "AB", 0, "B", 0.2, 0.8, 0.0), ("i2", "BA", 0, "B", None, None, None)])
    conf, kind = confidence.item_confidence(j)
    assert kind == confidence.PROBS
    # i1: mean (0.6, 0.35, 0.05) -> A with 0.6; i2: only the AB call has probabilities -> B with 0.8
    assert conf.loc["i1", "verdict"] == "A" and conf.loc["i1", "confidence"] == pytest.approx(0.6)
    assert conf.loc["i2", "verdict"] == "B" and conf.loc["i2", "confidence"] == pytest.approx(0.8)


def test_vote_share_over_repeated_samples_and_calibration():
    rng = np.random.default_rng(1)
    rows, truth = [], {}
    for i in range(60):
        truth[f"i{i}"] = "A"
        for s in range(5):
            rows.append((f"i{i}", "AB", s, "A" if rng.random() < 0.7 else "B", None, None, None))
    j = _frame(rows)
    conf, kind = confidence.item_confidence(j)
    assert kind == confidence.VOTES
    share = j.groupby("item_id")["verdict"].agg(lambda v: v.value_counts().max() / len(v))
    assert np.allclose(conf["confidence"].to_numpy(dtype=float), share.reindex(conf.index).to_numpy())
    t = pd.Series(truth)
    sec = confidence.calibration_section(conf, kind, t, n_boot=200)
    agree = (conf["verdict"] == t.reindex(conf.index)).astype(float)
    direct = calibration.ece(conf["confidence"].to_numpy(dtype=float), agree.to_numpy(), n_boot=200)
    assert sec["ece"] == pytest.approx(direct)
    assert sec["n"] == 60 and sum(b["n"] for b in sec["reliability"]) == 60
    assert "recalibrated" in sec
    # one sample per call and no probabilities: no confidence at all
    assert confidence.item_confidence(j[j["sample"] == 0])[1] is None


def test_selective_keeps_the_target_on_an_informative_confidence():
    rng = np.random.default_rng(0)
    n = 2000
    c = rng.uniform(0.5, 1.0, n)
    agree = rng.random(n) < c
    ids = [f"i{k}" for k in range(n)]
    conf = pd.DataFrame({"verdict": np.where(agree, "A", "B"), "confidence": c}, index=ids)
    truth = pd.Series("A", index=ids)
    sel = confidence.selective_section(conf, truth, target=0.9, delta=0.1)
    assert sel["feasible"] and sel["threshold"] >= 0.8  # agreement above l is (1 + l) / 2
    assert sel["held_out"]["agreement"] >= 0.88
    assert sel["n_escalated"] == int((c < sel["threshold"]).sum())
    assert sel["coverage_all_items"] == pytest.approx(1 - sel["n_escalated"] / n)


def test_loo_accuracy_by_hand():
    wide = pd.DataFrame({"a1": ["A", "A", "B", "A"], "a2": ["A", "B", "B", None], "a3": ["A", "B", "A", "A"]},
                        index=["i1", "i2", "i3", "i4"], dtype=object)
    wide = wide.where(wide.notna(), None)
    res = human.loo_accuracy(wide, n_boot=100)
    # i1: 3 right; i2: a1 vs (B,B) wrong, a2 vs (A,B) tie -> out, a3 out; i3: a1 vs (B,A) out, a2 out,
    # a3 vs (B,B) wrong; i4: a1 vs (A) right, a3 vs (A) right
    assert res["n"] == 7 and res["estimate"] == pytest.approx(5 / 7)
    assert res["per_annotator"]["a1"] == {"estimate": pytest.approx(2 / 3), "n": 3}  # i1, i2, i4
    assert human.loo_accuracy(wide.iloc[:0], n_boot=10)["n"] == 0


def test_item_verdict_is_swap_debiased_first_sample():
    j = pd.DataFrame({"item_id": ["i1", "i1", "i2", "i2", "i3", "i3", "i4"],
                      "order": ["AB", "BA", "AB", "BA", "AB", "AB", "AB"], "sample": [0, 0, 0, 0, 1, 0, 0],
                      "verdict": ["A", "A", "A", "B", "B", "A", "invalid"]})
    v = models.item_verdicts(j, "tie")
    assert v.to_dict() == {"i1": "A", "i2": "tie", "i3": "A", "i4": "tie"}
    assert models.item_verdicts(j, "wrong")["i4"] is None


def test_escalation_needs_an_audit(tmp_path):
    with Workspace(tmp_path / "ws") as ws, pytest.raises(ValueError, match="run `judgecal audit` first"):
        confidence.escalated_scores(ws, "some/judge", ["i1"])


def test_one_comparison_gives_win_rates_without_bradley_terry():
    from judgecal.audit.probe import AuditConfig

    items = pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "category": [None]}, index=["i1"])
    res = models.rater_results(items, pd.Series(["A"], index=["i1"]), AuditConfig(n_boot=50))
    assert res["win_rate"]["x"]["estimate"] == 1.0 and res["win_rate"]["y"]["n"] == 1
    assert "bradley_terry" not in res and "by_category" not in res


def test_stratified_ppi_beside_the_plain_one_when_every_item_has_a_category():
    from judgecal.audit.probe import AuditConfig
    from judgecal.audit.validate_stats import simulate_models
    from judgecal.stats import ppi

    sim = simulate_models(3, n_items=1200, n_labelled=300)
    ids = [f"i{k}" for k in range(1200)]
    cat = np.where(np.arange(1200) % 3 == 0, "math", "writing").astype(object)
    items = pd.DataFrame({"model_a": sim["a"], "model_b": sim["b"], "category": cat}, index=ids)
    truth = pd.Series(sim["human"], index=ids)[sim["labelled"]]
    verdict = pd.Series(sim["judge"], index=ids)
    out = models._ppi(items, truth, verdict, AuditConfig())
    human = np.where(sim["labelled"], sim["human"], None)
    direct = ppi.ppi_win_rates(sim["a"], sim["b"], human, sim["judge"], category=cat)
    for model, row in direct.iterrows():
        assert out["win_rate_stratified"][model]["estimate"] == pytest.approx(row["estimate"])
        assert out["win_rate_stratified"][model]["ci_high"] == pytest.approx(row["ci_high"])
    items.loc[ids[0], "category"] = None  # one item without a category: no stratified estimate
    assert "win_rate_stratified" not in models._ppi(items, truth, verdict, AuditConfig())


def test_a_bad_thresholds_file_is_one_line_naming_file_and_key(tmp_path, capsys):
    from pathlib import Path

    from judgecal.cli import main

    ws = tmp_path / "ws"
    assert main(["import", str(Path(__file__).resolve().parents[1] / "data" / "items.jsonl"), "-w", str(ws)]) == 0
    (ws / "thresholds.yaml").write_text("kapa: {not_aligned_below: 0.1}\n")
    capsys.readouterr()
    assert main(["audit", "--consensus", "mv", "--n-boot", "50", "-w", str(ws)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"judgecal audit: {ws / 'thresholds.yaml'}: unknown key 'kapa'; known: accuracy_gap, alpha, " \
                  "business_loss, gate, invalid_rate, kappa, kappa_gap, label_rate_gap, min_items, position, reference, " \
                  "serious_bias, span_f1_ratio, span_score, version"


def test_selective_settings_come_from_the_command_line(tmp_path, capsys):
    from judgecal.cli import main

    data = Path(__file__).resolve().parents[1] / "data"
    ws = str(tmp_path / "ws")
    assert main(["import", str(data / "items.jsonl"), "-w", ws]) == 0
    assert main(["import", str(data / "verdicts.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws]) == 0
    capsys.readouterr()
    assert main(["audit", "--n-boot", "50", "--selective-target", "0.8", "--selective-delta", "0.2",
                 "--json", "-w", ws]) == 0
    import json

    rep = json.loads(capsys.readouterr().out)
    assert rep["settings"]["selective"]["target"] == 0.8 and rep["settings"]["selective"]["delta"] == 0.2
    assert main(["audit", "--selective-delta", "1.5", "-w", ws]) == 2
    assert "between 0 and 1" in capsys.readouterr().err
