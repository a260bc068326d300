"""Pointwise judges in the audit: agreement on the humans' scale, checked against scikit-learn and scipy,
the annotators' ceiling beside it, and Summary of a Haystack end to end (the LLM judges and the
deterministic key-fact scorer run as a judge)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from judgecal.catalogue import POINTWISE_SUMMARY_METRICS, SUMMARY_METRICS, fmt_metric, info
from judgecal.stats.ordinal import CELLS, _Rows, pointwise_agreement, rater_agreement, rater_pairs

SH = "salesforce/summary-of-a-haystack/data/eval_benchmark_data.json"


# -- the statistics ---------------------------------------------------------------------------------
def _noisy(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, k, n)
    return t, np.clip(t + rng.integers(-1, 2, n), 0, k - 1)


def test_agreement_matches_sklearn_and_scipy():
    t, p = _noisy(400, 5, 1)
    p[:7] = -1  # missing answers are left out and counted
    got = pointwise_agreement(t, p, 5, n_boot=300)
    ok = p >= 0
    assert got["n_invalid"]["estimate"] == 7 and got["accuracy"]["n"] == 393
    want = {"accuracy": float((t[ok] == p[ok]).mean()), "cohen_kappa": cohen_kappa_score(t[ok], p[ok]),
            "weighted_kappa": cohen_kappa_score(t[ok], p[ok], weights="quadratic", labels=range(5)),
            "spearman_rho": spearmanr(t[ok], p[ok])[0], "mae": float(np.abs(t[ok] - p[ok]).mean())}
    for name, value in want.items():
        m = got[name]
        assert m["estimate"] == pytest.approx(value, abs=1e-9), name
        assert m["ci_low"] < m["estimate"] < m["ci_high"], name
    nominal = pointwise_agreement(t, p, 5, ordinal=False, n_boot=50)
    assert set(nominal) == {"accuracy", "cohen_kappa", "n_invalid"}


def test_weighted_kappa_on_values_counts_an_unused_level():
    """Levels 1, 2, 4, 5 used, 3 never: distances are the values', as scikit-learn with every level."""
    rng = np.random.default_rng(3)
    vals = np.array([1.0, 2.0, 4.0, 5.0])
    t, p = rng.integers(0, 4, 300), rng.integers(0, 4, 300)
    got = pointwise_agreement(t, p, 4, truth_value=vals[t], pred_value=vals[p], level_values=vals, n_boot=10)
    want = cohen_kappa_score(vals[t], vals[p], weights="quadratic", labels=[1, 2, 3, 4, 5])
    assert got["weighted_kappa"]["estimate"] == pytest.approx(want, abs=1e-9)
    assert got["mae"]["estimate"] == pytest.approx(np.abs(vals[t] - vals[p]).mean())


@pytest.mark.parametrize("continuous", [False, True])
def test_a_replicate_is_the_statistic_of_the_resampled_rows(continuous):
    """Both rank paths (the joint level table, and row by row beyond CELLS cells) give, for integer group
    weights, exactly the figures of the rows repeated that often."""
    rng = np.random.default_rng(5)
    n = 1200 if continuous else 300
    t, p = _noisy(n, 5, 7)
    y = p + rng.normal(0, 0.3, n) if continuous else p.astype(float)
    rows = _Rows(t, p, t.astype(float), y, np.arange(n), n, 5, True)
    assert (rows.nx * rows.ny > CELLS) == continuous
    w = rng.multinomial(n, np.full(n, 1 / n)).astype(float)
    acc, kappa, wk, rho, mae = rows.figures(w[None, :])[0]
    rep = np.repeat(np.arange(n), w.astype(int))
    assert rho == pytest.approx(spearmanr(t[rep], y[rep])[0], abs=1e-9)
    assert wk == pytest.approx(cohen_kappa_score(t[rep], p[rep], weights="quadratic", labels=range(5)), abs=1e-9)
    assert kappa == pytest.approx(cohen_kappa_score(t[rep], p[rep]), abs=1e-9)
    assert mae == pytest.approx(np.abs(y[rep] - t[rep]).mean(), abs=1e-9)


def test_rater_ceiling_pools_every_pair_both_ways():
    codes = np.array([[0, 1, -1], [2, 2, 2], [1, -1, 1], [0, 0, 1], [2, 1, -1]])
    a, b, item = rater_pairs(codes)
    assert len(a) == 2 * (1 + 3 + 1 + 3 + 1)  # pairs of raters present on each item, both orders
    got = rater_agreement(codes, 3, n_boot=50)
    assert got["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    assert got["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(b, a), abs=1e-9)  # symmetric
    assert got["accuracy"]["n"] == len(a)
    two = rater_agreement(np.array([[0, 1], [1, 1], [2, 2]]), 3, n_boot=10)
    assert two["accuracy"]["estimate"] == pytest.approx(2 / 3)


def test_no_rows_an_empty_scale_and_missing_group_labels():
    """No rows: every figure undefined, never an exception; a scale needs a level; a missing group label
    is a group of its own, not a crash."""
    empty = pointwise_agreement([], [], 3, n_boot=20)
    assert all(empty[m]["estimate"] is None and empty[m]["n"] == 0 for m in ("accuracy", "weighted_kappa",
                                                                           "spearman_rho", "mae"))
    with pytest.raises(ValueError, match="at least 1"):
        pointwise_agreement([0], [0], 0)
    t, p = [0, 1, 2, 1], [0, 1, 2, 2]
    got = pointwise_agreement(t, p, 3, groups=["a", "a", None, "b"], n_boot=20)
    assert got["accuracy"]["estimate"] == pytest.approx(0.75)
    assert got["spearman_rho"]["estimate"] == pytest.approx(spearmanr(t, p)[0])


def test_scale_of_the_humans_labels():
    from judgecal.audit.pointwise import scale_of

    cov = scale_of(pd.Series(["full", "none", "full"]))
    assert cov is not None and cov.levels == ("none", "partial", "full") and cov.values == (0.0, 0.5, 1.0)
    likert = scale_of(pd.Series(["10", "2", "4"]))
    assert likert is not None and likert.levels == ("2", "4", "10") and likert.ordinal
    nominal = scale_of(pd.Series(["yes", "no"]))
    assert nominal is not None and not nominal.ordinal
    assert scale_of(pd.Series(["A", "tie"])) is None and scale_of(pd.Series([], dtype=object)) is None


# -- a workspace of ratings from three annotators --------------------------------------------------
N_ITEMS = 40


def _write_inputs(folder: Path) -> tuple[Path, Path]:
    """Forty 1-5 rating items, three annotators who mostly agree, and a judge's scores (one of them
    between levels, one unreadable)."""
    rng = np.random.default_rng(11)
    items, verdicts = [], []
    for k in range(N_ITEMS):
        q = int(rng.integers(1, 6))
        labels = {f"rater-{r}": int(np.clip(q + rng.choice([-1, 0, 0, 0, 1]), 1, 5)) for r in range(3)}
        if k % 7 == 0:
            labels.pop("rater-2")  # not every annotator rated every item
        items.append({"id": f"r{k}", "prompt": f"Explain topic {k}.", "response": f"An answer about {k}.",
                      "human_labels": labels})
        score = float(np.clip(q + rng.choice([-2, -1, 0, 0, 1]), 1, 5))
        rec: dict[str, object] = {"item_id": f"r{k}", "judge": "rater-llm", "score": score}
        if k == 3:
            rec["score"] = 3.4
        if k == 5:
            rec = {"item_id": f"r{k}", "judge": "rater-llm", "verdict": "invalid"}
        verdicts.append(rec)
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    (folder / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in verdicts))
    return folder / "items.jsonl", folder / "scores.jsonl"


@pytest.fixture(scope="module")
def ratings(tmp_path_factory):  # type: ignore[no-untyped-def]
    from judgecal.cli import main

    folder = tmp_path_factory.mktemp("ratings")
    items, scores = _write_inputs(folder)
    ws = str(folder / "ws")
    assert main(["import", str(items), "--task", "pointwise", "-w", ws]) == 0
    assert main(["import", str(scores), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", "300"]) == 0
    return folder, json.loads((folder / "ws" / "reports" / "audit.json").read_text())


def test_pointwise_judge_metrics_against_sklearn(ratings):  # type: ignore[no-untyped-def]
    from judgecal.data.store import Workspace

    folder, report = ratings
    entry = report["judges"]["rater-llm"]
    assert entry["kind"] == "pointwise" and entry["pointwise"]["kappa"] == "weighted_kappa"
    with Workspace(folder / "ws") as ws:
        cons = ws.annotations_repo.consensus_frame("mv")
    truth = dict(zip(cons["item_id"], cons["label"].astype(int), strict=True))
    scores = {r["item_id"]: r.get("score") for r in map(json.loads, (folder / "scores.jsonl").read_text().split("\n")[:-1])}
    ids = [i for i in scores if scores[i] is not None and i in truth]
    levels = np.array(entry["pointwise"]["scale"]["values"])
    t = np.array([truth[i] for i in ids], dtype=float)
    y = np.array([scores[i] for i in ids], dtype=float)
    near = levels[np.abs(y[:, None] - levels[None, :]).argmin(1)]  # 3.4 is read as 3 for agreement and κ
    m = entry["metrics"]
    assert m["accuracy"]["estimate"] == pytest.approx(float((near == t).mean()), abs=1e-9)
    assert m["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(t, near), abs=1e-9)
    assert m["weighted_kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score(t, near, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-9)
    assert m["spearman_rho"]["estimate"] == pytest.approx(spearmanr(t, y)[0], abs=1e-9)
    assert m["mae"]["estimate"] == pytest.approx(float(np.abs(y - t).mean()), abs=1e-9)
    assert m["invalid_rate"]["estimate"] == pytest.approx(1 / N_ITEMS) and m["accuracy"]["n"] == N_ITEMS - 1
    for name in ("accuracy", "cohen_kappa", "weighted_kappa", "spearman_rho", "mae"):
        assert m[name]["ci_low"] <= m[name]["estimate"] <= m[name]["ci_high"], name


def test_annotators_ceiling_and_the_verdict(ratings):  # type: ignore[no-untyped-def]
    folder, report = ratings
    entry = report["judges"]["rater-llm"]
    hum = entry["pointwise"]["humans"]
    items = [json.loads(x) for x in (folder / "items.jsonl").read_text().split("\n")[:-1]]
    a, b = [], []
    for it in items:  # every pair of annotators on an item, both ways, by hand
        lab = it["human_labels"]
        for x in lab:
            for y in lab:
                if x != y:
                    a.append(lab[x])
                    b.append(lab[y])
    assert hum["n_annotators"] == 3 and hum["n_items"] == N_ITEMS and hum["accuracy"]["n"] == len(a)
    assert hum["weighted_kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-9)
    assert hum["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    # like with like: the judge paired with each annotator (its score at the nearest level), pooled, by hand
    scores = {r["item_id"]: r.get("score") for r in map(json.loads, (folder / "scores.jsonl").read_text().split("\n")[:-1])}
    ja, jb = [], []
    for it in items:
        s = scores.get(it["id"])
        if s is None or len(it["human_labels"]) < 2:
            continue
        near = int(np.clip(round(s), 1, 5)) if abs(s - round(s)) != 0.5 else None
        for lab in it["human_labels"].values():
            ja.append(lab)
            jb.append(near)
    like = entry["reference"]["like_for_like"]["pairwise"]
    assert like["judge"]["kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score(ja, jb, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-9)
    assert like["judge"]["accuracy"]["estimate"] == pytest.approx(float(np.mean(np.array(ja) == np.array(jb))))
    assert like["humans"]["kappa"] == hum["weighted_kappa"]
    # the verdict reads the judge's weighted κ with each annotator beside the annotators' with each other
    wk, hk = like["judge"]["kappa"]["estimate"], hum["weighted_kappa"]["estimate"]
    reasons = " | ".join(entry["verdict"]["reasons"])
    assert f"weighted κ {wk:.2f} with each annotator beside the annotators' {hk:.2f} with each other" in reasons
    d = like["difference"]["kappa"]
    if hk - wk > 0.10 and d["ci_high"] < 0:
        assert f"{hk - wk:.2f} below the humans' agreement with each other" in reasons


def test_new_metrics_reach_the_report_surfaces(ratings):  # type: ignore[no-untyped-def]
    from rich.console import Console

    from judgecal.catalogue import METRICS, fmt_metric
    from judgecal.report.terminal import print_summary

    folder, report = ratings
    m = report["judges"]["rater-llm"]["metrics"]
    html = (folder / "ws" / "reports" / "audit.html").read_text()
    for name in ("weighted_kappa", "spearman_rho", "mae"):
        assert name in METRICS
        assert METRICS[name].title.replace("'", "&#39;") in html
        row = html[html.index(f'<tr data-metric="{name}">'):]
        row = re.sub(r"<[^>]+>", "", row[: row.index("</tr>")])
        assert fmt_metric(m[name]) in row
    console = Console(width=100, record=True)
    print_summary(report, console, details=True)
    out = console.export_text()
    assert fmt_metric(m["cohen_kappa"]) in out and "weighted κ" in out


def test_explorer_judges_page_shows_the_pointwise_table(ratings):  # type: ignore[no-untyped-def]
    from explorer_browser import Browser, serve

    folder, report = ratings
    m = report["judges"]["rater-llm"]["metrics"]
    hum = report["judges"]["rater-llm"]["pointwise"]["humans"]
    with serve(folder / "ws") as url:
        b = Browser(url)
        try:
            b.open("Judges")
            grid = b.assert_csv_is_grid("judges-pointwise")
        finally:
            b.close()

    def fmt(x):  # type: ignore[no-untyped-def]
        return f"{x['estimate']:.3f} ({x['ci_low']:.3f}–{x['ci_high']:.3f})"

    judge, ceiling = grid.iloc[0], grid.iloc[1]
    assert judge["judge"] == "rater-llm" and judge["weighted κ"] == fmt(m["weighted_kappa"])
    assert judge["Spearman's ρ"] == fmt(m["spearman_rho"]) and judge["mean abs. error"] == fmt(m["mae"])
    assert ceiling["weighted κ"] == fmt(hum["weighted_kappa"])


def _audit_copies(folder: Path, copies: int) -> dict:  # type: ignore[type-arg]
    """Audit 30 rating items, each written ``copies`` times as items that rate the same response (as the key
    facts of one summary do), with the same labels and scores."""
    rng = np.random.default_rng(4)
    items, scores = [], []
    for k in range(30):
        q = int(rng.integers(1, 6))
        labels = {f"rater-{r}": int(np.clip(q + rng.choice([-1, 0, 0, 1]), 1, 5)) for r in range(2)}
        score = float(np.clip(q + rng.choice([-2, -1, 0, 0, 1]), 1, 5))
        for c in range(copies):
            items.append({"id": f"r{k:03d}{c}", "prompt": f"Explain topic {k}.", "response": f"An answer about {k}.",
                          "human_labels": labels})
            scores.append({"item_id": f"r{k:03d}{c}", "judge": "rater-llm", "score": score})
    folder.mkdir()
    return _audit_rows(folder, items, scores, n_boot=300)["judges"]["rater-llm"]


def _audit_rows(folder: Path, items: list, judgments: list, task: str = "pointwise",  # type: ignore[type-arg]
                n_boot: int = 50) -> dict:  # type: ignore[type-arg]
    """Import ``items`` and ``judgments`` into a workspace in ``folder``, aggregate by majority vote and
    audit; audit.json."""
    from judgecal.cli import main

    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    (folder / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judgments))
    ws = str(folder / "ws")
    assert main(["import", str(folder / "items.jsonl"), "--task", task, "-w", ws]) == 0
    assert main(["import", str(folder / "judgments.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", str(n_boot)]) == 0
    return json.loads((folder / "ws" / "reports" / "audit.json").read_text())  # type: ignore[no-any-return]


def test_items_that_rate_one_response_are_resampled_together(tmp_path):  # type: ignore[no-untyped-def]
    """Writing every item twice as two items about the same response adds rows, not evidence: with the
    response as the bootstrap's cluster, every figure and interval is that of the items written once."""
    once, twice = _audit_copies(tmp_path / "once", 1), _audit_copies(tmp_path / "twice", 2)
    assert twice["pointwise"]["n_clusters"] == once["pointwise"]["n_clusters"] == 30
    for name in ("accuracy", "cohen_kappa", "weighted_kappa", "mae"):
        a, b = once["metrics"][name], twice["metrics"][name]
        assert b["n"] == 2 * a["n"], name
        for key in ("estimate", "ci_low", "ci_high"):
            assert b[key] == pytest.approx(a[key], abs=1e-12), (name, key)
        assert a["ci_low"] < a["ci_high"], name
    ha, hb = once["pointwise"]["humans"]["weighted_kappa"], twice["pointwise"]["humans"]["weighted_kappa"]
    assert (hb["ci_low"], hb["ci_high"]) == pytest.approx((ha["ci_low"], ha["ci_high"]), abs=1e-12)


def test_a_score_nobody_gave_is_a_level_of_its_own(tmp_path):  # type: ignore[no-untyped-def]
    """People rated 2-4 only; the judge's 1 and 5 are misses, not read as the nearest level people used."""
    rng = np.random.default_rng(8)
    truth = rng.integers(2, 5, 40)
    pred = truth + rng.integers(-1, 2, 40)
    items = [{"id": f"q{i:02d}", "prompt": f"Rate {i}.", "response": f"Answer {i}.", "human_labels": {"r": int(t)}}
             for i, t in enumerate(truth)]
    scores = [{"item_id": f"q{i:02d}", "judge": "rater-llm", "score": int(x)} for i, x in enumerate(pred)]
    entry = _audit_rows(tmp_path, items, scores)["judges"]["rater-llm"]
    assert {1, 5} <= set(pred.tolist()) and entry["pointwise"]["scale"]["levels"] == ["1", "2", "3", "4", "5"]
    m = entry["metrics"]
    assert m["accuracy"]["estimate"] == pytest.approx(float(np.mean(truth == pred)), abs=1e-12)
    assert m["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(truth, pred), abs=1e-9)
    assert m["weighted_kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score(truth, pred, weights="quadratic"), abs=1e-9)


@pytest.mark.parametrize("task", ["pointwise", "pairwise"])
def test_a_judge_with_no_readable_answer_keeps_the_kind_of_its_items(task, tmp_path):  # type: ignore[no-untyped-def]
    """Every answer unreadable: a judge of ratings is still pointwise (no A / B / tie κ of 0 against
    ratings), a judge of pairs still pairwise."""
    items, verdicts = [], []
    for i in range(4):
        base = {"id": f"i{i}", "prompt": f"Question {i}?"}
        if task == "pointwise":
            items.append({**base, "response": f"Answer {i}.", "human_labels": {"x": 2 + i % 2, "y": 3}})
        else:
            items.append({**base, "response_a": f"A {i}.", "response_b": f"B {i}.",
                          "human_labels": {"x": "A", "y": "AB"[i % 2]}})
        verdicts.append({"item_id": f"i{i}", "judge": "mute", "verdict": "invalid"})
    entry = _audit_rows(tmp_path, items, verdicts, task, n_boot=40)["judges"]["mute"]
    assert entry["kind"] == task and entry["metrics"]["invalid_rate"]["estimate"] == 1.0
    if task == "pointwise":
        assert "macro_f1" not in entry["metrics"] and entry["metrics"]["weighted_kappa"]["estimate"] is None
        assert not any("barely better than chance" in r for r in entry["verdict"]["reasons"])
    else:
        assert "macro_f1" in entry["metrics"] and "pointwise" not in entry


def test_explorer_pointwise_rows_say_undefined_and_keep_a_nominal_scale_unordered():
    from judgecal.apps.page_judges import pointwise_table

    from judgecal.audit.schema import read_report

    def m(est):  # type: ignore[no-untyped-def]
        return {"estimate": est, "ci_low": est, "ci_high": est, "n": 3}

    rep = {"judges": {
        "flat": {"metrics": {"accuracy": m(1.0), "cohen_kappa": m(None), "weighted_kappa": m(None),
                             "spearman_rho": m(None), "mae": m(0.0)},
                 "pointwise": {"scale": {"kind": "ordinal", "levels": ["1", "2"]}, "kappa": "weighted_kappa"}},
        "labels": {"metrics": {"accuracy": m(0.5), "cohen_kappa": m(0.2)},
                   "pointwise": {"scale": {"kind": "nominal", "levels": ["no", "yes"]}, "kappa": "cohen_kappa"}}}}
    t = pointwise_table(read_report(rep)).set_index("judge")
    assert t.loc["flat", "weighted κ"] == "undefined" and t.loc["flat", "accuracy"].startswith("1.000")
    assert t.loc["flat", "scale"] == "ordinal: 1 < 2" and t.loc["labels", "scale"] == "nominal: no, yes"
    assert t.loc["labels", "Spearman's ρ"] == "n/a" and t.loc["labels", "κ"].startswith("0.200")


# -- Summary of a Haystack end to end --------------------------------------------------------------
def _tokens(s: str) -> list[str]:
    return re.findall(r"\w+", s.lower())


def _f1(a: str, b: str) -> float:
    """SQuAD's token F1, written out with Counters."""
    x, y = Counter(_tokens(a)), Counter(_tokens(b))
    common = sum((x & y).values())
    if not x and not y:
        return 1.0
    return 2 * common / (sum(x.values()) + sum(y.values())) if common else 0.0


COVER = {"fully_covered": 2, "partially_covered": 1, "not_covered": 0, "full_coverage": 2, "partial_coverage": 1,
         "no_coverage": 0}


def test_summhay_audit_of_the_llm_judges_and_the_key_fact_scorer(tmp_path, mirror):  # type: ignore[no-untyped-def]
    """Import, the scorer as a judge, the audit: each judge's coverage κ in audit.json equals scikit-learn's
    on the raw file, and the figures the key-fact tests report (κ 0.19 for Claude 3 Haiku up to 0.55 for
    Gemini 1.5 Pro, 0.32 for the scorer)."""
    from judgecal.cli import main
    from judgecal.stats import keyfacts as K

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    ws = str(tmp_path / "ws")
    assert main(["import", "summary-of-a-haystack", "-w", ws]) == 0
    assert main(["judge", "--judge", "metric/keyfacts-token-f1", "-w", ws]) == 0
    assert main(["judge", "--judge", "metric/keyfacts-token-f1", "-w", ws]) == 0  # deterministic: replaced, not added
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", "200"]) == 0
    report = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    scorer = report["judges"]["metric/keyfacts-token-f1"]
    assert scorer["n_judgments"] == 1419 and scorer["pointwise"]["scale"]["levels"] == ["none", "partial", "full"]

    raw = json.loads((mirror / SH).read_text("utf-8"))
    human, preds, fact = [], {}, []
    facts, units, group = [], [], []
    for r in raw:
        ann = {a["insight_id"]: COVER[a["coverage"]] for a in r["annotation"]}
        for ins in r["reference_insights"]:
            human.append(ann[ins["insight_id"]])
            units += r["summary"]
            group += [len(facts)] * len(r["summary"])
            facts.append(ins["insight"])
            best = max((_f1(b, ins["insight"]) for b in r["summary"]), default=0.0)
            fact.append(2 if best >= 0.5 else 1 if best >= 0.25 else 0)
            for key in (k for k in r if k.startswith("predictions_")):
                p = next(x for x in r[key] if x["insight_id"] == ins["insight_id"])
                preds.setdefault(key, []).append(COVER[str(p["coverage"]).lower()])
    got = {}
    for key, p in preds.items():
        prompt, model = key.removeprefix("predictions_").split("_", 1)
        name = f"replay/summhay/{model}" + ("" if prompt == "prompted" else f"-{prompt}")
        m = report["judges"][name]["metrics"]
        assert m["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(human, p), abs=1e-9), name
        assert m["weighted_kappa"]["estimate"] == pytest.approx(
            cohen_kappa_score(human, p, weights="quadratic"), abs=1e-9), name
        # ... and what the key-fact module's own agreement gives on the same codes
        assert m["cohen_kappa"]["estimate"] == pytest.approx(K.agreement(human, p, n_boot=1)["kappa"]["estimate"])
        got[name.rsplit("/", 1)[1]] = m["cohen_kappa"]["estimate"]
    m = scorer["metrics"]
    assert m["cohen_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(human, fact), abs=1e-9)
    # the key-fact module's own path (tests/test_spans_data.py) on the raw file gives the same codes
    codes = K.coverage_codes(K.best_units(facts, np.arange(len(facts)), units, group)[1])
    assert codes.tolist() == fact
    assert m["cohen_kappa"]["estimate"] == pytest.approx(K.agreement(human, codes, n_boot=1)["kappa"]["estimate"])
    assert m["accuracy"]["estimate"] == pytest.approx(float(np.mean(np.array(human) == np.array(fact))), abs=1e-9)
    print("\ncoverage κ with the person:", json.dumps({**got, "keyfacts-token-f1": m["cohen_kappa"]["estimate"]}))
    assert round(got["claude3-haiku"], 2) == 0.19 and round(got["gemini-1.5-pro"], 2) == 0.55
    assert round(m["cohen_kappa"]["estimate"], 2) == 0.32
    assert min(got.values()) == got["claude3-haiku"] and max(got.values()) == got["gemini-1.5-pro"]
    # one person per insight: no ceiling, said so, never a made-up one
    assert "humans" not in scorer["pointwise"]
    assert any("weighted κ" in r for r in scorer["verdict"]["reasons"])


def test_key_fact_scorer_as_a_spec_file_and_its_errors(tmp_path, capsys):  # type: ignore[no-untyped-def]
    """``backend: metric`` in a spec file sets the scorer's thresholds; two settings are two judges; a bad
    option is one clear line."""
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    rows = [{"id": "k1", "prompt": "p", "reference": "The trial enrolled 400 patients in Spain",
             "response": "- The trial enrolled 400 patients\n- It ran in Spain and Portugal"},
            {"id": "k2", "prompt": "p", "reference": "Prices fell by ten percent",
             "response": "- Sales rose\n- Nothing else changed"},
            {"id": "k3", "prompt": "p", "response": "- no key fact to check"}]
    (tmp_path / "facts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = str(tmp_path / "ws")
    assert main(["import", str(tmp_path / "facts.jsonl"), "--task", "pointwise", "-w", ws]) == 0
    assert main(["judge", "--judge", "metric/keyfacts-token-f1", "-w", ws]) == 0
    assert "2 items scored, 1 skipped" in capsys.readouterr().out
    (tmp_path / "pair.jsonl").write_text(json.dumps({"id": "p1", "prompt": "p", "response_a": "x", "response_b": "y"})
                                         + "\n")
    assert main(["import", str(tmp_path / "pair.jsonl"), "-w", ws]) == 0
    capsys.readouterr()
    assert main(["judge", "--judge", "metric/keyfacts-token-f1", "-w", ws]) == 0  # a pair is not scored, and said so
    assert "2 items scored, 2 skipped (not one response with a reference key fact)" in capsys.readouterr().out
    spec = tmp_path / "strict.yaml"
    spec.write_text("name: strict-keyfacts\nbackend: metric\nmodel: keyfacts-token-f1\noptions: {full: 0.9}\n")
    assert main(["judge", "--judge", str(spec), "-w", ws]) == 0
    with Workspace(tmp_path / "ws") as w:
        j = w.judgments_repo.judgments_frame()
        spans = w.spans_repo.spans_frame(kind="judge")
        specs = {name: s for name, s in w.judgments_repo.judge_specs().values()}
    by = {(r.judge, r.item_id): r for r in j.itertuples()}
    # "The trial enrolled 400 patients" against the fact: 5 of 5 and 5 of 7 tokens -> F1 0.833
    assert json.loads(by[("metric/keyfacts-token-f1", "k1")].raw)["token_f1"] == pytest.approx(10 / 12, abs=1e-6)
    assert by[("metric/keyfacts-token-f1", "k1")].score == 1.0 and by[("strict-keyfacts", "k1")].score == 0.5
    assert by[("metric/keyfacts-token-f1", "k2")].score == 0.0
    assert specs["strict-keyfacts"]["backend"] == "metric" and specs["strict-keyfacts"]["options"]["full"] == 0.9
    k1 = spans[(spans.rater == "metric/keyfacts-token-f1") & (spans.item_id == "k1")].iloc[0]
    assert rows[0]["response"][k1.start:k1.end] == "- The trial enrolled 400 patients"
    k2 = spans[(spans.rater == "metric/keyfacts-token-f1") & (spans.item_id == "k2")].iloc[0]
    assert k2.start == k2.end == 0  # coverage none: it marked nothing
    spec.write_text("backend: metric\nmodel: keyfacts-token-f1\noptions: {full: 0.2, partial: 0.4}\n")
    assert main(["judge", "--judge", str(spec), "-w", ws]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(spec) in err[0] and "partial <= full" in err[0]
    assert main(["judge", "--judge", "metric/rouge", "-w", ws]) == 2
    assert "unknown metric 'rouge'" in capsys.readouterr().err
    for flags in (["--samples", "3"], ["--temperature", "0.7", "--mutation", "paraphrase"], ["--orders", "AB"]):
        assert main(["judge", "--judge", "metric/keyfacts-token-f1", *flags, "-w", ws]) == 2, flags
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "a metric judge calls no model" in err[0] and flags[0] in err[0], err
        assert flags[-2] in err[0]
    for text, field in (("options: {full: true}", "options.full"), ("options: {partial: .nan}", "options.partial"),
                        ("options: {split: 3}", "options.split"), ("parameters: {temperature: 0.7}", "parameters"),
                        ("rubric: pairwise", "rubric")):
        spec.write_text(f"backend: metric\nmodel: keyfacts-token-f1\n{text}\n")
        assert main(["judge", "--judge", str(spec), "-w", ws]) == 2, text
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(spec) in err[0] and f"field '{field}'" in err[0], err


def test_a_judge_name_with_markup_is_text_in_the_report(tmp_path):  # type: ignore[no-untyped-def]
    """A spec file's name reaches the pointwise rows of audit.html as text, never as markup."""
    from judgecal.cli import main

    rows = [{"id": f"k{i}", "prompt": "p", "reference": "Prices fell sharply", "response": r,
             "human_labels": {"a": lab, "b": lab}} for i, (r, lab) in
            enumerate((("- Prices fell sharply", 3), ("- Sales rose", 1), ("- Prices fell", 2)))]
    (tmp_path / "facts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = str(tmp_path / "ws")
    assert main(["import", str(tmp_path / "facts.jsonl"), "--task", "pointwise", "-w", ws]) == 0
    name = "<img src=x onerror=alert(1)>"
    (tmp_path / "x.yaml").write_text(f"name: {json.dumps(name)}\nbackend: metric\nmodel: keyfacts-token-f1\n")
    assert main(["judge", "--judge", str(tmp_path / "x.yaml"), "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", "40"]) == 0
    report = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    assert "pointwise" in report["judges"][name]
    html = (tmp_path / "ws" / "reports" / "audit.html").read_text()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_key_fact_scorer_refuses_bullets_that_are_not_offsets(tmp_path, capsys):  # type: ignore[no-untyped-def]
    """Recorded bullets must be character offsets into the response: a bad one is named by item and field,
    and nothing is stored."""
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    good = {"id": "k1", "prompt": "p", "reference": "Prices fell", "response": "- Prices fell\n- Sales rose",
            "metadata": {"bullets": [[0, 13], [14, 26]]}}
    for n, (bullets, shown) in enumerate((([["a", "b"]], "['a', 'b']"), ([[0, 99]], "[0, 99]"), ([[5, 2]], "[5, 2]"),
                                          ("0-13", "'0-13'"))):
        ws = str(tmp_path / f"ws{n}")
        bad = {**good, "id": "k2", "metadata": {"bullets": bullets}}
        (tmp_path / "facts.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
        assert main(["import", str(tmp_path / "facts.jsonl"), "--task", "pointwise", "-w", ws]) == 0
        capsys.readouterr()
        assert main(["judge", "--judge", "metric/keyfacts-token-f1", "-w", ws]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "item 'k2'" in err[0] and "metadata.bullets" in err[0] and shown in err[0], err
        with Workspace(Path(ws)) as w:
            assert len(w.judgments_repo.judgments_frame()) == 0 and not w.judgments_repo.judge_specs()


# -- the one-screen summary of a pointwise judge ----------------------------------------------------
def test_terminal_shows_the_judges_own_figures_beside_the_annotators(ratings):  # type: ignore[no-untyped-def]
    from rich.console import Console

    from judgecal.report.terminal import print_summary

    _, report = ratings
    entry = report["judges"]["rater-llm"]
    console = Console(width=100, record=True)  # the stacked view, with references
    print_summary(report, console, details=True)
    out = console.export_text()
    for name in ("macro_f1", "first_position_rate", "position_consistency"):
        assert info(name).title not in out  # pairwise figures have nothing to say about a pointwise judge
    flat = " ".join(out.split())
    for name in ("weighted_kappa", "spearman_rho", "mae"):
        line = next(x for x in out.splitlines() if x.startswith(info(name).title))
        assert fmt_metric(entry["metrics"][name]) in line
        # against the consensus, so its human reference is named as another definition
        assert (f"{fmt_metric(entry['metrics'][name])} against the consensus; annotators with each other: "
                f"{fmt_metric(entry['pointwise']['humans'][name])}") in flat
    like = entry["reference"]["like_for_like"]["pairwise"]  # and the like-for-like pair beside it
    assert (f"{info('pairwise_kappa').title} {fmt_metric(like['judge']['kappa'])} annotators with each other: "
            f"{fmt_metric(like['humans']['kappa'])}") in flat
    assert "position: not tested" not in out
    from judgecal.audit.probes import optional_probes, pairwise_only

    titles = ", ".join(optional_probes()[m][0] for m in pairwise_only())  # position ... and every template probe
    assert titles.startswith("position, verbosity, padding, verdict injection, trap sets, transitivity, bandwagon bias")
    assert f"{titles}: apply to pairwise judges only" in flat
    assert entry["verdict"]["not_tested"][-1].endswith("apply to pairwise judges only")


def _heads(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", html)][1:]


def test_html_summary_columns_follow_the_judges_kinds(ratings):  # type: ignore[no-untyped-def]
    from judgecal.report.write import render_html

    _, report = ratings
    html = render_html(report)
    scores = html[html.index('id="scores"'):]
    heads = _heads(scores[: scores.index("</thead>")])
    assert heads == [info(m).title.replace("'", "&#39;") for m in POINTWISE_SUMMARY_METRICS]
    # a pairwise judge beside it: one table, each cell its figure or "n/a" where the metric does not apply
    mixed = json.loads(json.dumps(report))
    mixed["judges"]["pair-judge"] = {"kind": "pairwise", "metrics": {
        "macro_f1": {"estimate": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 10}}}
    html = render_html(mixed)
    scores = html[html.index('id="scores"'):]
    scores = scores[: scores.index("</table>")]
    heads = _heads(scores)
    assert heads[: len(SUMMARY_METRICS) - 1] == [info(m).title.replace("'", "&#39;") for m in SUMMARY_METRICS[:-1]]
    assert info("weighted_kappa").title in heads
    rows = {re.sub(r"<[^>]+>", "", r.split("</td>")[0]).strip(): re.sub(r"<[^>]+>", "", r)
            for r in scores.split("<tr>")[1:]}
    assert "n/a (pointwise)" in rows["rater-llm"] and "n/a (pairwise)" in rows["pair-judge"]
