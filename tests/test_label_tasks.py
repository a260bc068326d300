"""Binary and categorical judges end to end: ``import --task binary|categorical``, label verdicts, and the
audit's label figures checked against scikit-learn, statsmodels and the krippendorff package on real
JUDGE-BENCH data (DICES-990's crowd safety labels, ToxicChat's binary labels)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from judgecal.cli import main
from judgecal.data.store import Workspace

N_BOOT = "200"
JB = Path(os.environ.get("JUDGECAL_DATA_MIRROR") or "/nonexistent") / "dmg-illc/JUDGE-BENCH/data"


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


# -- import ---------------------------------------------------------------------------------------
def test_binary_import_reads_the_files_own_spelling(tmp_path, capsys):
    f = _jsonl(tmp_path / "pf.jsonl", [
        {"id": 1, "prompt": "2+2?", "response": "4", "human_labels": {"a": "PASS", "b": "Pass"},
         "human_rationales": {"a": "right"}},
        {"id": 2, "prompt": "Capital of France?", "response": "Berlin", "human_labels": {"a": "fail", "b": None}},
        {"id": 3, "prompt": "x", "response": "", "human_labels": {"a": "pass"}}])
    ws = tmp_path / "ws"
    assert main(["import", str(f), "--task", "binary", "--positive", "pass", "-w", str(ws), "--quiet"]) == 0
    assert "1 null label(s) read as skipped" in capsys.readouterr().out
    with Workspace(ws) as w:
        ann = w.annotations_repo.annotations_frame().sort_values(["item_id", "annotator"])
        sets = w.items_repo.label_sets()
    assert list(zip(ann["item_id"], ann["annotator"], ann["label"], strict=True)) == [
        ("1", "a", "pass"), ("1", "b", "pass"), ("2", "a", "fail"), ("3", "a", "pass")]
    assert ann["rationale"].iloc[0] == "right"
    assert {(s.task, s.labels, s.positive) for s in sets} == {("binary", ("pass", "fail"), "pass")}


def test_binary_import_infers_the_usual_negative_and_refuses_a_third_label(tmp_path, capsys):
    only = _jsonl(tmp_path / "yes.jsonl", [{"id": 1, "prompt": "p", "response": "r", "human_labels": {"a": True}}])
    assert main(["import", str(only), "--task", "binary", "--positive", "true", "-w", str(tmp_path / "w1")]) == 0
    with Workspace(tmp_path / "w1") as w:
        assert w.items_repo.label_sets().iloc[0].labels == ("true", "false")  # a JSON boolean is its own word
    three = _jsonl(tmp_path / "three.jsonl", [
        {"id": k, "prompt": "p", "response": "r", "human_labels": {"a": lab}}
        for k, lab in enumerate(["pass", "fail", "meh"])])
    assert main(["import", str(three), "--task", "binary", "--positive", "pass", "-w", str(tmp_path / "w2")]) == 2
    err = _err(capsys)
    assert f"{three}: human_labels: binary task with positive label 'pass': the file gives 3 labels" in err
    assert "nothing imported" in err and not (tmp_path / "w2").exists()
    assert main(["import", str(three), "--task", "binary", "--positive", "pass", "--labels", "pass,fail",
                 "-w", str(tmp_path / "w3")]) == 2
    assert f"{three}:3: human_labels.a: unknown label 'meh'; expected one of 'pass', 'fail'" in _err(capsys)
    assert not (tmp_path / "w3").exists()


@pytest.mark.parametrize("args, words", [
    (["--task", "binary"], "--positive: a binary task needs a positive label"),
    (["--task", "categorical", "--labels", "a"], "two or more labels"),
    (["--task", "categorical", "--labels", "a,b", "--positive", "c"], "--positive: positive label 'c' is not one of"),
    (["--task", "pointwise", "--positive", "x"], "--task: labels, a positive label, an order and criteria apply to"),
    (["--task", "categorical", "--labels", "a,,b"], "an empty name between commas"),
])
def test_label_declarations_that_cannot_make_a_label_set(tmp_path, capsys, args, words):
    f = _jsonl(tmp_path / "f.jsonl", [{"id": 1, "prompt": "p", "response": "r"}])
    assert main(["import", str(f), *args, "-w", str(tmp_path / "ws")]) == 2
    err = _err(capsys)
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "ws").exists()


def test_criteria_split_a_record_into_one_item_per_criterion(tmp_path, capsys):
    f = _jsonl(tmp_path / "mc.jsonl", [
        {"id": "r1", "prompt": "Tell a joke", "response": "Why...", "human_labels": {
            "a": {"helpful": "high", "safe": "low"}, "b": {"helpful": "mid", "safe": None}},
         "human_rationales": {"a": "funny but rude"}},
        {"id": "r2", "prompt": "Hi", "response": "Hello", "human_labels": {"a": {"helpful": "low", "tone": "x"}}}])
    args = ["import", str(f), "--task", "categorical", "--labels", "low,mid,high", "--ordinal",
            "--criteria", "helpful,safe", "-w", str(tmp_path / "ws")]
    assert main(args) == 2
    assert f"{f}:2: human_labels.a.tone: unknown criterion; declared: helpful, safe" in _err(capsys)
    f.write_text(f.read_text("utf-8").replace(', "tone": "x"', ""), "utf-8")
    assert main(args) == 0
    with Workspace(tmp_path / "ws") as w:
        items = {it.item_id: it for it in w.items_repo.items()}
        ann = w.annotations_repo.annotations_frame()
    assert sorted(items) == ["r1/helpful", "r1/safe", "r2/helpful", "r2/safe"]
    assert items["r1/safe"].labels.criterion == "safe" and items["r1/safe"].labels.ordinal
    assert items["r1/safe"].metadata == {"criterion": "safe", "record": "r1"}
    assert items["r1/safe"].candidates[0].text == items["r1/helpful"].candidates[0].text == "Why..."
    got = sorted(zip(ann["item_id"], ann["annotator"], ann["label"], ann["rationale"].fillna(""), strict=True))
    assert got == [("r1/helpful", "a", "high", "funny but rude"), ("r1/helpful", "b", "mid", ""),
                   ("r1/safe", "a", "low", "funny but rude"), ("r2/helpful", "a", "low", "")]


def test_label_verdicts_with_probabilities(tmp_path, capsys):
    items = _jsonl(tmp_path / "i.jsonl", [{"id": k, "prompt": "p", "response": "r", "human_labels": {"a": lab}}
                                          for k, lab in enumerate(["yes", "no", "yes"])])
    ws = tmp_path / "ws"
    assert main(["import", str(items), "--task", "binary", "--positive", "yes", "-w", str(ws)]) == 0
    good = _jsonl(tmp_path / "v.jsonl", [
        {"item_id": 0, "judge": "j", "label": "YES", "p_yes": 0.9, "p_no": 0.1, "raw": "YES: right"},
        {"item_id": 1, "judge": "j", "label": "no"},
        {"item_id": 2, "judge": "j", "verdict": "invalid", "raw": "unsure"}])
    assert main(["import", str(good), "--as", "judgments", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        df = w.judgments_repo.judgments_frame().sort_values("item_id")
    assert df["verdict"].tolist() == ["yes", "no", "invalid"] and df["status"].tolist() == ["ok", "ok", "invalid"]
    assert json.loads(df["p_labels"].iloc[0]) == {"no": 0.1, "yes": 0.9}
    bad = _jsonl(tmp_path / "bad.jsonl", [
        {"item_id": 0, "judge": "k", "label": "maybe"}, {"item_id": 1, "judge": "k", "score": 3},
        {"item_id": 2, "judge": "k", "label": "yes", "p_yes": 0.8, "p_no": 0.5},
        {"item_id": 0, "judge": "k", "label": "yes", "p_perhaps": 0.2, "sample": 1}])
    assert main(["import", str(bad), "--as", "judgments", "-w", str(ws)]) == 2
    err = _err(capsys)
    for words in (f"{bad}:1: label: unknown label 'maybe'; expected one of 'yes', 'no'",
                  f"{bad}:2: score: a binary item takes a label", f"{bad}:3: p_no: the label probabilities sum to 1.3",
                  f"{bad}:4: p_perhaps: not the probability of one label"):
        assert words in err, err


def test_an_older_workspace_gains_the_p_labels_column(tmp_path):
    import sqlite3

    from judgecal.data.records import Judgment
    from judgecal.data.store import SCHEMA_VERSION

    with Workspace(tmp_path / "ws") as ws:
        ws._db.conn.execute("ALTER TABLE judgments DROP COLUMN p_labels")
        ws._db.conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    with Workspace(tmp_path / "ws") as ws:
        ws.judgments_repo.add_judgments([Judgment("k", "i", "j", "h", verdict="pass", p_labels='{"pass": 1.0}')])
        assert ws.judgments_repo.judgments_frame()["p_labels"].tolist() == ['{"pass": 1.0}']
    db = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()


# -- the audit on real data -------------------------------------------------------------------------
def _needs(path: Path) -> Path:
    if not path.exists():
        pytest.skip("the JUDGE-BENCH mirror is not available")
    return path


def _audit(ws: Path, out: Path, verdicts: Path) -> dict[str, Any]:
    assert main(["import", str(verdicts), "--as", "judgments", "-w", str(ws)]) == 0
    assert main(["aggregate", "-w", str(ws)]) == 0
    assert main(["audit", "-w", str(ws), "--n-boot", N_BOOT, "--out", str(out)]) == 0
    return json.loads((out / "audit.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def dices(tmp_path_factory):
    """DICES-990 (crowd safety labels, ~73 raters per item) with an always-'No' judge (the majority label)
    and a judge that gives the raters' majority label 80% of the time."""
    root = tmp_path_factory.mktemp("dices")
    ws = root / "ws"
    assert main(["import", str(_needs(JB / "dices/dices_990.json")), "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        ann = w.annotations_repo.annotations_frame()
    majority = ann.groupby("item_id")["label"].agg(lambda s: s.value_counts().index[0])
    rng = np.random.default_rng(5)
    rows = []
    for i, lab in majority.items():
        rows.append({"item_id": i, "judge": "always-no", "label": "No"})
        rows.append({"item_id": i, "judge": "good", "label": lab if rng.random() < 0.8 else
                     str(rng.choice(["No", "Yes", "Unsure"]))})
    v = _jsonl(root / "v.jsonl", rows)
    report = _audit(ws, root / "out", v)
    return {"ws": ws, "report": report, "ann": ann, "verdicts": pd.DataFrame(rows)}


def test_dices_judge_figures_match_scikit_learn(dices):
    from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

    rep = dices["report"]
    with Workspace(dices["ws"]) as w:
        truth = w.annotations_repo.consensus_frame("ds").set_index("item_id")["label"]
    labels = ["No", "Yes", "Unsure"]
    for judge in ("always-no", "good"):
        v = dices["verdicts"][dices["verdicts"]["judge"] == judge].set_index("item_id")["label"]
        t = truth.reindex(v.index)
        m = rep["judges"][judge]["metrics"]
        assert m["accuracy"]["estimate"] == pytest.approx(accuracy_score(t, v))
        assert m["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(t, v, labels=labels), abs=1e-9)
        assert m["macro_f1"]["estimate"] == pytest.approx(f1_score(t, v, labels=labels, average="macro",
                                                                   zero_division=0))
        rec = recall_score(t, v, labels=labels, average=None, zero_division=0)
        prec = precision_score(t, v, labels=labels, average=None, zero_division=np.nan)
        for k, lab in enumerate(labels):
            assert m[f"recall_by_label.{lab}"]["estimate"] == pytest.approx(rec[k])
            got = m[f"precision_by_label.{lab}"]["estimate"]
            assert (got is None and np.isnan(prec[k])) or got == pytest.approx(prec[k])
        conf = rep["judges"][judge]["labels"]["confusion"]
        assert conf["labels"] == labels
        assert conf["counts"] == pd.crosstab(t, v).reindex(index=labels, columns=labels, fill_value=0).values.tolist()


def test_dices_humans_agreement_matches_krippendorff_and_statsmodels(dices):
    import krippendorff
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    humans = dices["report"]["judges"]["good"]["labels"]["humans"]
    ann = dices["ann"]
    wide = ann.pivot(index="item_id", columns="annotator", values="label")
    codes = wide.apply(lambda col: col.map({"No": 0, "Yes": 1, "Unsure": 2})).to_numpy(dtype=float).T
    alpha = krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal")
    assert humans["krippendorff_alpha"]["estimate"] == pytest.approx(alpha, abs=1e-9)
    assert humans["krippendorff_alpha"]["ci_low"] < alpha < humans["krippendorff_alpha"]["ci_high"]
    # Fleiss' κ needs the same number of raters per item: the audit uses the most common count
    per = (~np.isnan(codes)).sum(0)
    n = np.bincount(per).argmax()
    keep = codes[:, per == n]
    table, _ = aggregate_raters(np.nan_to_num(keep.T[~np.isnan(keep.T)].reshape(-1, n)).astype(int))
    assert humans["fleiss_kappa"]["estimate"] == pytest.approx(fleiss_kappa(table), abs=1e-9)
    assert humans["fleiss_kappa"]["n"] == int((per == n).sum())


def test_a_judge_always_giving_the_majority_label_is_never_aligned(dices):
    rep = dices["report"]
    bad, good = rep["judges"]["always-no"], rep["judges"]["good"]
    assert bad["metrics"]["accuracy"]["estimate"] > 0.5  # a high accuracy on a skewed set ...
    assert bad["verdict"]["status"] == "not aligned"  # ... is not alignment
    assert any("never recognises that label" in r for r in bad["verdict"]["reasons"])
    assert bad["labels"]["like_for_like"]["judge"]["recall_by_label"]["Yes"]["estimate"] == 0
    hum = good["labels"]["like_for_like"]["humans"]["recall_by_label"]["Yes"]["estimate"]
    assert 0 < hum < 1  # the annotators recognise 'Yes' among each other


@pytest.fixture(scope="module")
def toxic(tmp_path_factory):
    """ToxicChat (binary 0/1, toxic positive; two criteria; one majority label): an always-'0' judge and a
    judge right 85% of the time on toxicity and 60% on jailbreaking."""
    root = tmp_path_factory.mktemp("toxic")
    ws = root / "ws"
    assert main(["import", str(_needs(JB / "toxic_chat/toxic_chat_test.json")), "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        ann = w.annotations_repo.annotations_frame()
    rng = np.random.default_rng(3)
    rows = []
    for i, lab in zip(ann["item_id"], ann["label"], strict=True):
        rows.append({"item_id": i, "judge": "always-0", "label": "0"})
        right = 0.85 if i.endswith("/toxicity") else 0.6
        said = lab if rng.random() < right else "01"[lab == "0"]
        p1 = float(rng.uniform(0.5, 1.0) if said == "1" else rng.uniform(0.0, 0.5))
        rows.append({"item_id": i, "judge": "noisy", "label": said, "p_1": p1, "p_0": 1 - p1})
    report = _audit(ws, root / "out", _jsonl(root / "v.jsonl", rows))
    return {"report": report, "ann": ann, "verdicts": pd.DataFrame(rows), "ws": ws}


def test_toxicchat_rates_and_corrected_prevalence(toxic):
    from sklearn.metrics import balanced_accuracy_score, confusion_matrix

    entry = toxic["report"]["judges"]["noisy"]
    assert set(entry["criteria"]) == {"toxicity", "jailbreaking"}
    part = entry["criteria"]["toxicity"]
    v = toxic["verdicts"]
    v = v[(v["judge"] == "noisy") & v["item_id"].str.endswith("/toxicity")].set_index("item_id")["label"]
    t = toxic["ann"].set_index("item_id")["label"].reindex(v.index)
    (tn, fp), (fn, tp) = confusion_matrix(t, v, labels=["0", "1"])
    m = part["metrics"]
    assert m["tpr"]["estimate"] == pytest.approx(tp / (tp + fn)) and m["tnr"]["estimate"] == pytest.approx(tn / (tn + fp))
    assert m["precision"]["estimate"] == pytest.approx(tp / (tp + fp))
    assert m["balanced_accuracy"]["estimate"] == pytest.approx(balanced_accuracy_score(t, v))
    prev = part["labels"]["prevalence"]
    q, tpr, tnr = (v == "1").mean(), tp / (tp + fn), tn / (tn + fp)
    assert prev["judge_reported"]["estimate"] == pytest.approx(q)
    assert prev["rogan_gladen"]["estimate"] == pytest.approx((q + tnr - 1) / (tpr + tnr - 1))
    assert prev["human_only"]["estimate"] == pytest.approx((t == "1").mean())
    lo, hi = prev["rogan_gladen"]["ci_low"], prev["rogan_gladen"]["ci_high"]
    assert lo < (t == "1").mean() < hi < q  # the correction moves the judge's rate back to the humans'
    assert part["labels"]["plan"]["n_ppi"] <= part["labels"]["plan"]["n_human_only"]


def test_toxicchat_verdict_per_criterion(toxic):
    rep = toxic["report"]
    noisy, zero = rep["judges"]["noisy"]["verdict"], rep["judges"]["always-0"]["verdict"]
    assert noisy["criteria"] == {c: rep["judges"]["noisy"]["criteria"][c]["verdict"]["status"]
                                 for c in ("toxicity", "jailbreaking")}
    assert set(noisy["trusted_on"]) | set(noisy["not_trusted_on"]) == {"toxicity", "jailbreaking"}
    assert rep["judges"]["noisy"]["criteria"]["jailbreaking"]["verdict"]["status"] == "not aligned"  # 60% right
    assert zero["status"] == "not aligned" and zero["trusted_on"] == []
    assert any(r.startswith("on toxicity: not aligned") for r in zero["reasons"])


def test_label_judge_calibration_and_selective_evaluation_read_its_label_probabilities(toxic):
    entry = toxic["report"]["judges"]["noisy"]
    v = toxic["verdicts"][toxic["verdicts"]["judge"] == "noisy"]
    conf = np.maximum(v["p_1"], v["p_0"]) / (v["p_1"] + v["p_0"])
    cal = entry["calibration"]
    assert cal["confidence"] == "token probabilities" and cal["n"] == len(v)
    assert cal["mean_confidence"] == pytest.approx(conf.mean())
    truth = toxic["ann"].set_index("item_id")["label"].reindex(v["item_id"]).to_numpy()
    assert cal["agreement"] == pytest.approx((v["label"].to_numpy() == truth).mean())
    assert entry["selective"]["n_items"] == len(v) and 0 <= entry["selective"]["coverage_all_items"] <= 1
    assert "calibration" not in toxic["report"]["judges"]["always-0"]  # no probabilities, one call per item


def test_plan_answers_how_many_labels_a_pass_rate_needs(toxic, capsys):
    from scipy.stats import norm

    capsys.readouterr()
    assert main(["plan", "-w", str(toxic["ws"]), "--target-halfwidth", "0.02", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)["judges"]
    assert {"noisy [toxicity]", "noisy [jailbreaking]"} <= set(res)
    p = res["noisy [toxicity]"]
    t = toxic["ann"][toxic["ann"]["item_id"].str.endswith("/toxicity")]["label"].eq("1").to_numpy(dtype=float)
    z = norm.ppf(0.975)
    assert p["sigma2"] == pytest.approx(t.var(ddof=1)) and p["n_labelled_measured"] == len(t)
    assert p["n_human_only"] == int(np.ceil(z**2 * t.var(ddof=1) / 0.02**2))
    assert p["n_ppi"] < p["n_human_only"] and p["quantity"] == "the pass rate (share '1')"


def test_verdict_reasons_are_structured(dices, toxic):
    """Each reason has a code, a severity and its metric beside the text; the worst severity is the status."""
    for rep in (dices["report"], toxic["report"]):
        for entry in rep["judges"].values():
            v = entry["verdict"]
            assert [d["text"] for d in v["details"]] == v["reasons"]
            assert max(("aligned", "caution", "not aligned").index(d["severity"]) for d in v["details"]) == \
                ("aligned", "caution", "not aligned").index(v["status"])
    never = [d for d in dices["report"]["judges"]["always-no"]["verdict"]["details"] if d["code"] == "label_never"]
    assert len(never) == 1 and never[0]["severity"] == "not aligned"
    crit = [d for d in toxic["report"]["judges"]["always-0"]["verdict"]["details"] if d["code"] == "criterion"]
    assert {d["criterion"] for d in crit} == {"toxicity", "jailbreaking"}


@pytest.mark.parametrize("names", [("A", "B", "C", "D"), ("a", "b", "tie")])
def test_a_label_set_named_like_pairwise_verdicts_is_audited_as_labels(tmp_path, names):
    """Labels called A, B, C, D (or a, b, tie) are a label set like any other: the same data under the names
    W, X, Y, Z gives the same figures, and the judge is never read as a judge of pairs."""
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(11)
    k = len(names)
    truth = rng.integers(0, k, 60)
    people = [np.where(rng.random(60) < 0.85, truth, rng.integers(0, k, 60)) for _ in range(2)]
    judged = np.where(rng.random(60) < 0.6, truth, rng.integers(0, k, 60))
    reports = {}
    for spelled in (names, tuple("WXYZ"[:k])):
        root = tmp_path / "".join(spelled)
        root.mkdir()
        items = _jsonl(root / "i.jsonl", [{"id": i, "prompt": f"p{i}", "response": f"r{i}",
                                           "human_labels": {"ann": spelled[people[0][i]], "bob": spelled[people[1][i]]}}
                                          for i in range(60)])
        ws = root / "ws"
        assert main(["import", str(items), "--task", "categorical", "--labels", ",".join(spelled), "-w", str(ws)]) == 0
        v = _jsonl(root / "v.jsonl", [{"item_id": i, "judge": "j", "label": spelled[judged[i]]} for i in range(60)])
        reports[spelled] = _audit(ws, root / "out", v)
        with Workspace(ws) as w:
            cons = w.annotations_repo.consensus_frame("ds").set_index("item_id")["label"]
        entry = reports[spelled]["judges"]["j"]
        assert entry["kind"] == "pointwise" and entry["labels"]["confusion"]["labels"] == list(spelled)
        t = cons.reindex([str(i) for i in range(60)])
        want = cohen_kappa_score(t, [spelled[x] for x in judged], labels=list(spelled))
        assert entry["metrics"]["cohen_kappa"]["estimate"] == pytest.approx(want, abs=1e-9)
        assert 0 < want < 1
    a, w = (reports[s]["judges"]["j"]["metrics"] for s in reports)
    for name in ("cohen_kappa", "accuracy", "macro_f1"):
        assert a[name]["estimate"] == pytest.approx(w[name]["estimate"]), name
        assert a[name]["ci_low"] == pytest.approx(w[name]["ci_low"]), name
