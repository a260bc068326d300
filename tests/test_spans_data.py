"""FaithBench and Summary of a Haystack through the workspace, checked against the raw files and the
figures their repositories publish."""

from __future__ import annotations

import glob
import itertools
import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score

from judgecal.stats import keyfacts as K
from judgecal.stats import spans as S

FB = "vectara/FaithBench/data_for_release"
SH = "salesforce/summary-of-a-haystack/data/eval_benchmark_data.json"


@pytest.fixture(scope="module")
def ws(tmp_path_factory, mirror):  # type: ignore[no-untyped-def]
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)  # module scope: before the per-test environment
    path = tmp_path_factory.mktemp("spans") / "ws"
    assert main(["import", "faithbench", "-w", str(path)]) == 0
    assert main(["import", "summary-of-a-haystack", "-w", str(path)]) == 0
    w = Workspace(path)
    yield w
    w.close()


def _codes(ws, source):  # type: ignore[no-untyped-def]
    items = ws.items_repo.items(source=source)
    return items, {it.item_id: k for k, it in enumerate(items)}


# -- FaithBench ---------------------------------------------------------------------------------------
def _raw_faithbench(mirror):  # type: ignore[no-untyped-def]
    paths = sorted(glob.glob(str(mirror / FB / "batch_*.json")))
    assert len(paths) == 15 and not any(p.endswith("batch_13.json") for p in paths)
    return [s for p in paths for s in json.loads(Path(p).read_text("utf-8"))["samples"]]


def test_faithbench_import(ws, mirror):  # type: ignore[no-untyped-def]
    from judgecal.data.ingest import import_dataset

    items, _ = _codes(ws, "faithbench")
    assert len(items) == 750 and all(it.task == "pointwise" and len(it.candidates) == 1 for it in items)
    assert len({it.candidates[0].model for it in items}) == 10
    sp = ws.spans_repo.spans_frame(source="faithbench")
    # 2,189 annotations; one annotator marked the same stretch twice with the same label on two summaries
    assert len(sp) == 2187 and set(sp.kind) == {"human"}
    text = {it.item_id: it.candidates[0].text for it in items}
    assert all(text[i][s:e] for i, s, e in zip(sp.item_id, sp.start, sp.end, strict=True))
    raw = _raw_faithbench(mirror)
    marked = {(str(a["summary_span"])) for s in raw for a in s["annotations"]}
    assert {text[i][s:e] for i, s, e in zip(sp.item_id, sp.start, sp.end, strict=True)} == marked
    j = ws.judgments_repo.judgments_frame()
    j = j[j.item_id.str.startswith("faithbench/")]
    assert j.groupby("judge").size().tolist() == [750] * 8
    assert (j.status == "invalid").sum() == 2  # TRUE-NLI left two summaries without a prediction
    again = import_dataset(ws, "faithbench")
    assert again["items"] == 0 and again["judgments"] == 0 and len(ws.spans_repo.spans_frame(source="faithbench")) == 2187


def test_faithbench_detectors_balanced_accuracy(ws, mirror):  # type: ignore[no-untyped-def]
    """Binarisation of scripts/binarize.py: a summary is hallucinated when the worst label of all its
    annotations is Questionable or Unwanted (Unwanted.Intrinsic/Extrinsic); Benign or none -> consistent.
    A detector predicts hallucinated when its consistency score is below 0.5 (0/1 for the binary ones)."""
    severity = {"Benign": 1, "Questionable": 2, "Unwanted": 3, "Unwanted.Intrinsic": 3, "Unwanted.Extrinsic": 3}
    raw = _raw_faithbench(mirror)
    truth_raw = [max([severity[x] for a in s["annotations"] for x in a["label"]], default=0) >= 2 for s in raw]
    assert sum(truth_raw) == 511
    items, code = _codes(ws, "faithbench")
    truth = np.array([it.metadata["hallucinated"] for it in items])
    assert truth.sum() == 511
    j = ws.judgments_repo.judgments_frame()
    j = j[j.item_id.str.startswith("faithbench/") & j.score.notna()]
    table = {}
    for judge, g in j.groupby("judge"):
        det = judge.rsplit("/", 1)[1]
        d = S.detection(g.score.to_numpy() < 0.5, truth[g.item_id.map(code).to_numpy()], n_boot=1000)
        ba = d["balanced_accuracy"]
        rows = [(t, s["metadata"][det] < 0.5) for t, s in zip(truth_raw, raw, strict=True)
                if s["metadata"][det] is not None]
        want = balanced_accuracy_score([t for t, _ in rows], [p for _, p in rows])
        assert ba["estimate"] == pytest.approx(want, abs=1e-9)
        assert ba["ci_low"] < ba["estimate"] < ba["ci_high"]
        table[det] = ba
    print("\nFaithBench summary-level balanced accuracy:", json.dumps(table, indent=1))
    assert len(table) == 8
    # FaithBench is built from summaries the detectors disagree on: every detector is near chance
    assert all(0.4 < v["estimate"] < 0.6 for v in table.values())  # type: ignore[operator]


def test_faithbench_annotator_pairwise_f1(ws, mirror):  # type: ignore[no-untyped-def]
    # the raw file, with Python sets: union of each annotator's spans, pairs where both marked something
    f1 = []
    for s in _raw_faithbench(mirror):
        by: dict[str, set[int]] = {}
        for a in s["annotations"]:
            by.setdefault(a["annotator_id"], set()).update(range(a["summary_start"], a["summary_end"]))
        for x, y in itertools.combinations(sorted(by), 2):
            if by[x] and by[y]:
                f1.append(2 * len(by[x] & by[y]) / (len(by[x]) + len(by[y])))
    items, code = _codes(ws, "faithbench")
    sp = ws.spans_repo.spans_frame(source="faithbench")
    rater, _ = pd.factorize(sp.rater)
    iv = S.intervals(sp.item_id.map(code), sp.start, sp.end)
    ceiling = S.human_ceiling(iv, rater, both_marked=True, n_boot=1000)
    print("\nFaithBench annotators' pairwise character F1:", ceiling)
    assert ceiling["n"] == len(f1) == 826
    assert ceiling["estimate"] == pytest.approx(np.mean(f1), abs=1e-9)
    assert ceiling["estimate"] == pytest.approx(0.59, abs=0.005)
    assert ceiling["ci_low"] < ceiling["estimate"] < ceiling["ci_high"]
    # the majority consensus sits inside the union of the annotators' marks, and a single annotator
    # agrees with it better than with another annotator
    cons = S.consensus(iv, rater)
    _, _, inside = S.overlap_counts(cons, iv, len(items))
    assert inside.sum() == S.overlap_counts(cons, cons, len(items))[0].sum() > 0
    first = rater == 0
    f_cons = S.span_scores(iv.take(first), cons, len(items), n_boot=200)["f1"]
    assert f_cons["estimate"] is not None and f_cons["n"] == len(items)
    labels = S.by_label(iv, sp.label.to_numpy(), iv, sp.label.to_numpy(), len(items), n_boot=100)
    assert set(labels) >= {"Benign", "Questionable", "Unwanted.Intrinsic", "Unwanted.Extrinsic"}
    assert all(v["f1"]["estimate"] == 1.0 for v in labels.values())  # identical sides agree exactly


# -- Summary of a Haystack ----------------------------------------------------------------------------
# Eval_Benchmarking.ipynb, "Results for Insight Coverage Prediction": instance-level correlation and
# bullet-linking accuracy per judge.
PUBLISHED_COVERAGE = {"gemini-1.5-pro": (0.751, 0.893), "gpt-4o-9fs": (0.719, 0.892), "gpt-4o": (0.716, 0.889),
                      "claude3-opus": (0.677, 0.879), "claude3-haiku": (0.498, 0.877), "gpt3.5": (0.495, 0.867)}
# Eval_Benchmarking.ipynb, "Auto-Eval Bias Analysis": mean (predicted - annotated) coverage per summarizer.
PUBLISHED_BIAS = {
    "claude3-sonnet": (0.027, -0.001, -0.012), "gemini-1.5-flash": (0.032, 0.009, -0.025),
    "claude3-opus": (0.040, 0.011, 0.019), "gpt3.5": (0.009, 0.050, 0.048), "gemini-1.5-pro": (0.057, 0.042, 0.041),
    "gpt4-turbo": (0.063, 0.080, 0.042), "claude3-haiku": (0.057, 0.088, 0.052), "gpt-4o": (0.070, 0.078, 0.080),
    "command-r-plus": (0.064, 0.128, 0.071), "Avg. Summarizer Bias": (0.047, 0.054, 0.035),
    "Length <-> Delta (Correlation)": (0.023, -0.047, -0.078),
    "Length <-> Score (Correlation)": (-0.119, -0.169, -0.175),
}
BIAS_JUDGES = ("gpt-4o", "claude3-opus", "gemini-1.5-pro")
ROUNDED = 5e-4 + 1e-9


@pytest.fixture(scope="module")
def summhay(ws):  # type: ignore[no-untyped-def]
    items, code = _codes(ws, "summary-of-a-haystack")
    ann = ws.annotations_repo.annotations_frame()
    ann = ann[ann.source == "summary-of-a-haystack"]
    truth = np.full(len(items), -1)
    truth[ann.item_id.map(code).to_numpy()] = ann.label.map({c: k for k, c in enumerate(K.COVERAGE)}).to_numpy()
    j = ws.judgments_repo.judgments_frame()
    j = j[j.item_id.str.startswith("summhay/")].copy()
    j["i"] = j.item_id.map(code)
    return items, code, truth, j


def test_summhay_import(ws, summhay, mirror):  # type: ignore[no-untyped-def]
    items, code, truth, j = summhay
    raw = json.loads((mirror / SH).read_text("utf-8"))
    assert len(items) == sum(len(r["reference_insights"]) for r in raw) == 1419
    assert len({it.metadata["summary"] for it in items}) == 200 and (truth >= 0).all()
    assert np.bincount(truth).tolist() == [466, 386, 567]
    assert sorted(j.judge.unique()) == sorted(f"replay/summhay/{m}" for m in PUBLISHED_COVERAGE)
    sp = ws.spans_repo.spans_frame(source="summary-of-a-haystack", kind="human")
    for it in items[:50]:  # the linked bullet is the candidate_id-th element of the summary list
        r = raw[it.metadata["summary"]]
        link = next(a["candidate_id"] for a in r["annotation"] if a["insight_id"] == it.metadata["insight_id"])
        row = sp[sp.item_id == it.item_id].iloc[0]
        marked = it.candidates[0].text[row.start:row.end]
        assert marked == ("" if link == "no_selection" else r["summary"][int(link)])


def test_summhay_notebook_coverage_table(ws, summhay):  # type: ignore[no-untyped-def]
    items, code, truth, j = summhay
    sp = ws.spans_repo.spans_frame(source="summary-of-a-haystack")
    human = sp[sp.kind == "human"].set_index("item_id")
    human = human[human.end > human.start]
    out = {}
    for judge, g in j.groupby("judge"):
        name = judge.rsplit("/", 1)[1]
        pred = np.full(len(items), -1)
        pred[g.i.to_numpy()] = (g.score.to_numpy() * 2).astype(int)
        agree = K.agreement(truth, pred, n_boot=1000, groups=[it.metadata["summary"] for it in items])
        # linking: the judge named exactly one bullet (an integer bullet_id) and the person linked one
        raw_int = g[g.raw.map(lambda s: isinstance(json.loads(s).get("bullet_id"), int))].item_id
        js = sp[(sp.rater == judge) & sp.item_id.isin(raw_int) & sp.item_id.isin(human.index)].set_index("item_id")
        hit = (js.start == human.loc[js.index, "start"]).to_numpy()
        corr, link = PUBLISHED_COVERAGE[name]
        assert agree["pearson_r"]["estimate"] == pytest.approx(corr, abs=ROUNDED)
        assert hit.mean() == pytest.approx(link, abs=ROUNDED)
        out[name] = {k: agree[k]["estimate"] for k in ("accuracy", "kappa", "weighted_kappa", "pearson_r")}
        out[name]["ci"] = (agree["kappa"]["ci_low"], agree["kappa"]["ci_high"])
    print("\nSummary of a Haystack, each judge's coverage agreement with the person:", json.dumps(out, indent=1))
    # the ranking the notebook reports, now with Cohen's kappa and its CI
    assert out["gemini-1.5-pro"]["kappa"] > out["gpt-4o"]["kappa"] > out["gpt3.5"]["kappa"] > out["claude3-haiku"]["kappa"]


def test_summhay_notebook_bias_table(summhay):  # type: ignore[no-untyped-def]
    items, code, truth, j = summhay
    frame = pd.DataFrame({"i": np.arange(len(items)), "summary": [it.metadata["summary"] for it in items],
                          "model": [it.candidates[0].model for it in items], "human": truth / 2})
    first = frame.groupby("summary").i.first()
    text = {s: items[i].candidates[0].text for s, i in first.items()}
    n_bullets = {s: len(items[i].metadata["bullets"]) for s, i in first.items()}
    words = {s: (re.sub(r"\s{2,}", " ", t).count(" ") + 1) / n_bullets[s] for s, t in text.items()}
    got: dict[str, list[float]] = {}
    for k, judge in enumerate(BIAS_JUDGES):
        g = j[j.judge == f"replay/summhay/{judge}"]
        f = frame.assign(pred=pd.Series(g.score.to_numpy(), index=g.i.to_numpy()).reindex(frame.i).to_numpy())
        per = f.groupby("summary").agg(model=("model", "first"), pred=("pred", "mean"), human=("human", "mean"))
        per["delta"] = per.pred - per.human
        per["words"] = per.index.map(words)
        by_model = per.groupby("model").delta.mean()
        for m, v in by_model.items():
            got.setdefault(str(m), [np.nan] * 3)[k] = float(v)
        got.setdefault("Avg. Summarizer Bias", [np.nan] * 3)[k] = float(by_model.mean())
        got.setdefault("Length <-> Delta (Correlation)", [np.nan] * 3)[k] = float(np.corrcoef(per.delta, per.words)[0, 1])
        got.setdefault("Length <-> Score (Correlation)", [np.nan] * 3)[k] = float(np.corrcoef(per.pred, per.words)[0, 1])
    assert set(got) == set(PUBLISHED_BIAS)
    for row, want in PUBLISHED_BIAS.items():
        assert got[row] == pytest.approx(list(want), abs=ROUNDED), row


def test_summhay_deterministic_key_fact_scorer(summhay):  # type: ignore[no-untyped-def]
    """Token F1 of each key fact against its best bullet, coverage by the default thresholds (set before
    looking at this data), audited against the person like any judge."""
    items, code, truth, j = summhay
    facts = [it.reference or "" for it in items]
    units, group = [], []
    for k, it in enumerate(items):
        for s, e in it.metadata["bullets"]:
            units.append(it.candidates[0].text[s:e])
            group.append(k)
    best, score = K.best_units(facts, np.arange(len(items)), units, group)
    pred = K.coverage_codes(score)
    agree = K.agreement(truth, pred, n_boot=1000, groups=[it.metadata["summary"] for it in items])
    print("\nDeterministic key-fact scorer vs the person:", json.dumps(agree, indent=1))
    assert agree["kappa"]["ci_low"] > 0  # better than chance, with its interval
    # ... and well short of the best LLM judge
    gem = j[j.judge == "replay/summhay/gemini-1.5-pro"]
    p = np.full(len(items), -1)
    p[gem.i.to_numpy()] = (gem.score.to_numpy() * 2).astype(int)
    assert agree["kappa"]["ci_high"] < K.agreement(truth, p, n_boot=200)["kappa"]["estimate"]


def test_judge_span_alignment_summhay(ws, summhay):  # type: ignore[no-untyped-def]
    """Each judge's linked bullets against the person's, as character spans, checked with Python sets."""
    from judgecal.audit.spans import human_span_agreement, workspace_span_alignment

    items = summhay[0]
    report = workspace_span_alignment(ws, source="summary-of-a-haystack", n_boot=300)
    assert sorted(report) == sorted(f"replay/summhay/{m}" for m in PUBLISHED_COVERAGE)
    sp = ws.spans_repo.spans_frame(source="summary-of-a-haystack")
    marks: dict[tuple[str, str], set[int]] = {}
    for r in sp.itertuples():
        marks.setdefault((r.rater, r.item_id), set()).update(range(r.start, r.end))
    for judge, entry in report.items():
        f1, iou = [], []
        for it in items:
            a, b = marks[(judge, it.item_id)], marks[("summhay/annotator", it.item_id)]
            f1.append(1.0 if not a and not b else 2 * len(a & b) / (len(a) + len(b)))
            iou.append(1.0 if not a and not b else len(a & b) / len(a | b))
        assert entry["span_f1"]["estimate"] == pytest.approx(np.mean(f1), abs=1e-9)
        assert entry["span_iou"]["estimate"] == pytest.approx(np.mean(iou), abs=1e-9)
        assert entry["span_f1"]["n"] == len(items) == 1419
        assert entry["human_f1"]["n"] == 0  # one annotator: no human ceiling to show
    print("\nSummary of a Haystack, linked-bullet character IoU per judge:",
          {k: v["span_iou"]["estimate"] for k, v in report.items()})
    assert report["replay/summhay/gemini-1.5-pro"]["span_iou"]["estimate"] > report["replay/summhay/gpt3.5"][
        "span_iou"]["estimate"]
    fb = human_span_agreement(ws.spans_repo.spans_frame(source="faithbench"), both_marked=True, n_boot=200)
    assert fb["estimate"] == pytest.approx(0.5897, abs=1e-4) and fb["n"] == 826


def test_faithbench_token_level_and_per_label_ceiling(ws):  # type: ignore[no-untyped-def]
    """Annotators' pairwise F1 at token level (a token counts when any of its characters is marked),
    checked with Python sets over the token indices; and per label."""
    items, code = _codes(ws, "faithbench")
    texts = [it.candidates[0].text for it in items]
    sp = ws.spans_repo.spans_frame(source="faithbench")
    rater, _ = pd.factorize(sp.rater)
    iv = S.intervals(sp.item_id.map(code), sp.start, sp.end)
    toks = S.token_bounds(texts)
    tv = S.to_tokens(iv, toks, len(items))
    got = S.human_ceiling(tv, rater, both_marked=True, n_boot=300)
    spans_of = [[m.span() for m in re.finditer(r"\w+|[^\w\s]", t)] for t in texts]
    by: dict[tuple[int, int], set[int]] = {}
    for i, r, s, e in zip(iv.item, rater, iv.start, iv.end, strict=True):
        by.setdefault((int(i), int(r)), set()).update(k for k, (ts, te) in enumerate(spans_of[i]) if ts < e and te > s)
    f1 = []
    for (i, r), a in by.items():
        for (i2, r2), b in by.items():
            if i2 == i and r < r2 and a and b:
                f1.append(2 * len(a & b) / (len(a) + len(b)))
    assert got["n"] == len(f1) and got["estimate"] == pytest.approx(np.mean(f1), abs=1e-9)
    per = {}
    for lab in ("Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign"):
        keep = (sp.label == lab).to_numpy()
        per[lab] = S.human_ceiling(iv.take(keep), rater[keep], both_marked=True, n_boot=300)
    print("\nFaithBench annotators' pairwise F1, token level:", got, "\nper label (character level):",
          json.dumps(per, indent=1))
    assert all(v["n"] > 0 for v in per.values())


def test_span_datasets_are_registered(capsys, mirror):  # type: ignore[no-untyped-def]
    from judgecal.cli import main
    from judgecal.data.registry import COMMITS, LICENSES, expected_checksum, registry

    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    assert "faithbench" in out and "summary-of-a-haystack" in out and "CC BY-NC-SA 4.0" in out
    assert COMMITS["vectara/FaithBench"] == "cf89797d82812c23b5d5e5c121f1d9b8983bbbce"
    assert COMMITS["salesforce/summary-of-a-haystack"] == "43531729bc39fdc301bcc9ff7b26c5e6ce3fbf57"
    assert LICENSES["salesforce/summary-of-a-haystack"] == "Apache-2.0"
    files = registry()["faithbench"].files + registry()["summary-of-a-haystack"].files
    assert len(files) == 16 and all(expected_checksum(f) for f in files)  # every file's sha256 ships
    assert all(f.url.startswith("https://raw.githubusercontent.com/") and COMMITS[f.repo] in f.url for f in files)
