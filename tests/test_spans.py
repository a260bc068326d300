"""Span metrics and key-fact scoring against hand-computed values, brute-force sets, scipy and scikit-learn."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score

from judgecal.stats import keyfacts as K
from judgecal.stats import spans as S


def test_char_scores_by_hand():
    # item 0: P = [0,5) u [10,12) (7 chars), R = [3,8) (5 chars), both [3,5) (2 chars)
    # item 1: nobody marks anything -> 1; item 2: only the reference marks -> 0
    p = S.intervals([0, 0, 1], [0, 10, 5], [5, 12, 5])
    r = S.intervals([0, 2], [3, 0], [8, 4])
    lp, lr, li = S.overlap_counts(p, r, 3)
    assert lp.tolist() == [7, 0, 0] and lr.tolist() == [5, 0, 4] and li.tolist() == [2, 0, 0]
    s = S.scores_from_counts(lp, lr, li)
    assert s["precision"] == pytest.approx([2 / 7, 1, 0])
    assert s["recall"] == pytest.approx([2 / 5, 1, 0])
    assert s["f1"] == pytest.approx([4 / 12, 1, 0])
    assert s["iou"] == pytest.approx([2 / 10, 1, 0])
    out = S.span_scores(p, r, 3, n_boot=500)
    assert out["f1"]["estimate"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert out["iou"]["n"] == 3
    assert out["micro_f1"]["estimate"] == pytest.approx(2 * 2 / (7 + 9))
    assert out["f1"]["ci_low"] <= out["f1"]["estimate"] <= out["f1"]["ci_high"]


def test_empty_inputs():
    e = S.intervals([], [], [])
    out = S.span_scores(e, e, 4, n_boot=100)
    assert out["f1"]["estimate"] == 1.0 and out["iou"]["ci_low"] == 1.0 and out["f1"]["n"] == 4
    assert S.span_scores(e, e, 0, n_boot=100)["f1"]["estimate"] is None
    assert len(S.consensus(e, [])) == 0 and len(S.merge(e)) == 0
    with pytest.raises(ValueError):
        S.intervals([0], [5], [3])


def _sets(item, start, end, n):
    out = [set() for _ in range(n)]
    for i, s, e in zip(item, start, end, strict=True):
        out[i].update(range(s, e))
    return out


def test_char_counts_match_brute_force_sets():
    rng = np.random.default_rng(7)
    n = 40
    def draw(m):
        s = rng.integers(0, 90, m)
        return S.intervals(rng.integers(0, n, m), s, s + rng.integers(0, 15, m))
    p, r = draw(120), draw(100)
    lp, lr, li = S.overlap_counts(p, r, n)
    sp, sr = _sets(*p, n), _sets(*r, n)
    assert lp.tolist() == [len(x) for x in sp]
    assert lr.tolist() == [len(x) for x in sr]
    assert li.tolist() == [len(a & b) for a, b in zip(sp, sr, strict=True)]
    m = S.merge(p)
    assert _sets(*m, n) == sp
    assert (m.end > m.start).all() and not (np.diff(m.start)[np.diff(m.item) == 0] <= 0).any()
    # masks built on the boundaries agree with the sets too
    counts, off = S.char_counts(p, np.full(n, 110))
    assert [set(np.flatnonzero(counts[off[i]:off[i + 1]] > 0)) for i in range(n)] == sp


def test_tokens():
    texts = ["hello world, ok", "a b"]
    tok = S.token_bounds(texts)
    assert [texts[i][s:e] for i, s, e in zip(*tok, strict=True)] == ["hello", "world", ",", "ok", "a", "b"]
    sp = S.intervals([0, 0, 1, 0], [3, 6, 2, 5], [8, 6, 3, 6])  # "lo wo" -> hello, world; empty; "b"; " " -> none
    t = S.to_tokens(sp, tok, 2)
    assert t.start.tolist() == [0, 1, 1, 1] and t.end.tolist() == [2, 1, 2, 1]


def test_soft_spearman_against_scipy():
    rng = np.random.default_rng(3)
    lengths = np.array([30, 1, 25, 40])
    x = np.round(rng.random(lengths.sum()) * 3) / 3  # ties on purpose
    y = np.round(rng.random(lengths.sum()) * 4) / 4
    off = np.concatenate([[0], np.cumsum(lengths)])
    x[off[2]:off[3]] = 0.5  # item 2: prediction constant, reference not -> 0
    rho = S.soft_spearman(x, y, off)
    for i in (0, 3):
        assert rho[i] == pytest.approx(spearmanr(x[off[i]:off[i + 1]], y[off[i]:off[i + 1]]).statistic)
    assert rho[1] == 1.0 and rho[2] == 0.0  # a one-character item is constant on both sides
    # ranking in blocks changes nothing; empty texts (first, too) are NaN
    off3 = np.concatenate([[0, 0], off + 0, [off[-1]]])[1:]
    blocks = S.soft_spearman(x, y, off3, chunk_chars=7)
    assert np.isnan(blocks[0]) and np.isnan(blocks[-1]) and blocks[1:-1] == pytest.approx(rho)
    # soft labels from spans: fraction of raters marking each character
    sp = S.intervals([0, 0], [0, 2], [3, 4])
    counts, off2 = S.char_counts(sp, [5], weight=[0.5, 0.5])
    assert counts.tolist() == [0.5, 0.5, 1.0, 0.5, 0.0] and off2.tolist() == [0, 5]


def test_span_matching_by_hand():
    # item 0: pred [0,10) vs ref [0,8): IoU 0.8 -> match; pred [20,22) vs ref [21,30): IoU 1/10 -> no
    p = S.intervals([0, 0, 1], [0, 20, 0], [10, 22, 0])
    r = S.intervals([0, 0], [0, 21], [8, 30])
    m = S.span_matches(p, r, 2, threshold=0.5, n_boot=200)
    assert m["precision"]["estimate"] == pytest.approx(1 / 2)  # the empty span is left out
    assert m["recall"]["estimate"] == pytest.approx(1 / 2)
    assert m["f1"]["estimate"] == pytest.approx(1 / 2)
    low = S.span_matches(p, r, 2, threshold=0.1, n_boot=200)
    assert low["precision"]["estimate"] == 1.0 and low["recall"]["estimate"] == 1.0
    lab = S.span_matches(p, r, 2, threshold=0.1, pred_label=["x", "y", "x"], ref_label=["y", "y"], n_boot=200)
    assert lab["precision"]["estimate"] == pytest.approx(1 / 2) and lab["recall"]["estimate"] == pytest.approx(1 / 2)
    per = S.by_label(p, ["x", "y", "x"], r, ["y", "y"], 2, n_boot=100)
    assert per["x"]["recall"]["estimate"] == pytest.approx(0.5)  # item 0: ref has no x -> 0; item 1: both empty -> 1
    # item 0: [20,22) vs [0,8) u [21,30): 1 shared of 2 + 17 - 1 = 18 marked; item 1: both empty -> 1
    assert per["y"]["iou"]["estimate"] == pytest.approx((1 / 18 + 1) / 2)


def test_detection_against_sklearn():
    rng = np.random.default_rng(1)
    t = rng.random(300) < 0.3
    p = np.where(rng.random(300) < 0.7, t, ~t)
    d = S.detection(p, t, n_boot=500)
    assert d["balanced_accuracy"]["estimate"] == pytest.approx(balanced_accuracy_score(t, p))
    assert d["balanced_accuracy"]["ci_low"] < d["balanced_accuracy"]["estimate"] < d["balanced_accuracy"]["ci_high"]
    assert d["tpr"]["n"] == t.sum()
    sp = S.intervals([0, 2, 3], [1, 0, 4], [4, 0, 9])
    assert S.marked(sp, 5).tolist() == [True, False, False, True, False]


def test_pairwise_and_ceiling_by_hand():
    # item 0: r0 [0,4), r1 [2,6), r2 marked nothing; item 1: r0 [0,3), r1 marked nothing
    sp = S.intervals([0, 0, 0, 1, 1], [0, 2, 0, 0, 0], [4, 6, 0, 3, 0])
    rater = [0, 1, 2, 0, 1]
    pw = S.pairwise_f1(sp, rater)
    got = {(int(i), int(a), int(b)): f for i, a, b, f in zip(pw["item"], pw["rater_a"], pw["rater_b"], pw["f1"],
                                                               strict=True)}
    assert got == {(0, 0, 1): 0.5, (0, 0, 2): 0.0, (0, 1, 2): 0.0, (1, 0, 1): 0.0}
    assert S.human_ceiling(sp, rater, n_boot=100)["estimate"] == pytest.approx(0.5 / 4)
    both = S.human_ceiling(sp, rater, both_marked=True, n_boot=100)
    assert both["estimate"] == 0.5 and both["n"] == 1
    # two raters who both marked nothing agree perfectly
    assert S.pairwise_f1(S.intervals([0, 0], [0, 0], [0, 0]), [0, 1])["f1"].tolist() == [1.0]


def test_consensus_majority_and_weights():
    # three raters on item 0: [0,4), [2,6), nothing -> more than 1.5 raters only on [2,4)
    sp = S.intervals([0, 0, 0, 0, 1, 1], [0, 2, 0, 3, 0, 5], [4, 6, 0, 5, 3, 9])
    rater = [0, 1, 2, 0, 0, 1]  # rater 0's own overlapping spans [0,4) u [3,5) count once
    c = S.consensus(sp, rater)
    assert list(zip(c.item.tolist(), c.start.tolist(), c.end.tolist(), strict=True)) == [(0, 2, 5)]
    # rater 0 weighs 3 of 5 on item 0 (and 3 of 4 on item 1): its marks alone are a majority
    w = S.consensus(sp, rater, weights=[3.0, 1.0, 1.0])
    assert list(zip(w.item.tolist(), w.start.tolist(), w.end.tolist(), strict=True)) == [(0, 0, 5), (1, 0, 3)]


def test_mean_ci_groups():
    v = np.array([1.0, 0.0, 1.0, 1.0])
    m = S.mean_ci(v, groups=[0, 0, 1, 1], n_boot=400)
    assert m["estimate"] == 0.75 and m["n"] == 4
    assert 0.5 <= m["ci_low"] <= m["ci_high"] <= 1.0
    assert S.mean_ci(np.full(5, 0.3), n_boot=50)["ci_low"] == pytest.approx(0.3)


# -- key facts ---------------------------------------------------------------------------------------
def test_token_f1_by_hand():
    out = K.token_f1(["The cat sat", "a a b", "", "", "x"], ["the cat", "a b b", "", "y", ""])
    assert out["precision"] == pytest.approx([2 / 3, 2 / 3, 1, 0, 0])
    assert out["recall"] == pytest.approx([1, 2 / 3, 1, 0, 0])
    assert out["f1"] == pytest.approx([0.8, 2 / 3, 1, 0, 0])
    fields = K.field_f1([{"drug": "aspirin", "dose": "100 mg"}], [{"drug": "Aspirin", "dose": "75 mg", "freq": "daily"}])
    assert fields == {"dose": pytest.approx([0.5]), "drug": pytest.approx([1.0]), "freq": pytest.approx([0.0])}


def test_best_units_and_coverage():
    facts = ["blood test shows inflammation", "surgery is planned", "no match here"]
    units = ["The blood test shows inflammation markers", "Diet advice", "Surgery is planned next week", "x"]
    best, score = K.best_units(facts, [0, 0, 1], units, [0, 0, 0, 1])
    assert best.tolist() == [0, 2, 3]
    assert score[0] == pytest.approx(2 * 4 / (4 + 6)) and score[1] == pytest.approx(2 * 3 / (3 + 5))
    assert score[2] == 0.0
    assert K.coverage_codes(score).tolist() == [2, 2, 0]
    assert K.coverage_codes([0.49, 0.25, 0.24], full=0.5, partial=0.25).tolist() == [1, 1, 0]
    text = "# Title\n* one. two!\n\n* three"
    assert [text[s:e] for s, e in K.units(text)] == ["# Title", "* one. two!", "* three"]
    assert [text[s:e] for s, e in K.units(text, "sentences")] == ["# Title", "* one.", "two!", "* three"]


def test_agreement_against_sklearn():
    rng = np.random.default_rng(5)
    t = rng.integers(0, 3, 400)
    p = np.where(rng.random(400) < 0.6, t, rng.integers(0, 3, 400))
    p[:7] = -1  # invalid answers are left out and counted
    a = K.agreement(t, p, n_boot=300)
    ok = p >= 0
    assert a["accuracy"]["estimate"] == pytest.approx(float((t[ok] == p[ok]).mean()))
    assert a["kappa"]["estimate"] == pytest.approx(cohen_kappa_score(t[ok], p[ok]))
    assert a["weighted_kappa"]["estimate"] == pytest.approx(cohen_kappa_score(t[ok], p[ok], weights="quadratic"))
    assert a["pearson_r"]["estimate"] == pytest.approx(np.corrcoef(t[ok], p[ok])[0, 1])
    assert a["n_invalid"]["estimate"] == 7 and a["kappa"]["n"] == 393
    assert a["kappa"]["ci_low"] < a["kappa"]["estimate"] < a["kappa"]["ci_high"]
    # resampling groups of items: same estimates, an interval at least as wide when groups are alike inside
    g = np.repeat(np.arange(40), 10)
    t2, p2 = np.repeat(t[:40], 10), np.repeat(np.where(p[:40] < 0, 0, p[:40]), 10)
    flat, grouped = K.agreement(t2, p2, n_boot=500), K.agreement(t2, p2, n_boot=500, groups=g)
    assert grouped["kappa"]["estimate"] == pytest.approx(flat["kappa"]["estimate"])
    width = lambda m: m["kappa"]["ci_high"] - m["kappa"]["ci_low"]  # noqa: E731
    assert width(grouped) > 2 * width(flat)


# -- records, store and import ------------------------------------------------------------------------
def test_spans_in_store_and_import(tmp_path):
    from judgecal.data.importers import ImportValidationError, import_file
    from judgecal.data.store import Workspace

    good = tmp_path / "good.jsonl"
    rows = [
        {"id": "a", "prompt": "p", "response": "The drug is aspirin 100 mg daily.",
         "human_spans": {"ann1": [[12, 19, "drug"], [20, 26, "dose"]], "ann2": []}},
        {"id": "b", "prompt": "p", "response": "Nothing here."},
    ]
    good.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with Workspace(tmp_path / "ws") as ws:
        res = import_file(ws, good, task="pointwise")
        assert len(res.spans) == 3
        df = ws.spans_repo.spans_frame()
        assert df[["rater", "start", "end", "label"]].values.tolist() == [
            ["ann1", 12, 19, "drug"], ["ann1", 20, 26, "dose"], ["ann2", 0, 0, ""]]
        assert set(df.kind) == {"human"} and set(df.source) == {"good"}
        assert ws.spans_repo.add_spans(ws_spans := [res.spans[0]]) == 1 and len(ws.spans_repo.spans_frame()) == 3  # replaced, not doubled
        assert ws_spans[0].empty is False and res.spans[2].empty is True

        bad = tmp_path / "bad.jsonl"
        bad_rows = [
            {"id": "c", "prompt": "p", "response": "short", "human_spans": {"x": [[2, 9]]}},
            {"id": "d", "prompt": "p", "response": "short", "human_spans": {"x": [["1", 2]], "y": [[4, 3]]}},
            {"id": "e", "prompt": "p", "response": "short", "human_spans": [[0, 1]]},
        ]
        bad.write_text("\n".join(json.dumps(r) for r in bad_rows) + "\n")
        with pytest.raises(ImportValidationError) as err:
            import_file(ws, bad, task="pointwise")
        msg = str(err.value)
        assert f"{bad}:1: human_spans.x[0]: [2, 9] is not a span of the 5-character text" in msg
        assert f"{bad}:2: human_spans.x[0]: start and end must be integers" in msg
        assert f"{bad}:2: human_spans.y[0]: [4, 3] is not a span" in msg  # reversed; [3, 3] is dropped, not refused
        assert f"{bad}:3: human_spans: must be an object" in msg
        assert len(ws.spans_repo.spans_frame()) == 3 and "c" not in ws.items_repo.item_ids()  # nothing written


def test_older_workspace_gains_the_spans_table(tmp_path):
    import sqlite3

    from judgecal.data.records import Span
    from judgecal.data.store import SCHEMA_VERSION, Workspace

    with Workspace(tmp_path / "ws") as ws:
        ws._db.conn.execute("DROP TABLE spans")
        ws._db.conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    with Workspace(tmp_path / "ws") as ws:
        assert ws.spans_repo.add_spans([Span("x", "r", 0, 1, 3, "bad")]) == 1
        assert ws.spans_repo.spans_frame(kind="human")[["start", "end"]].values.tolist() == [[1, 3]]
        assert ws.spans_repo.spans_frame(kind="judge").empty and ws.spans_repo.spans_frame(raters=["nobody"]).empty
    db = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()


def test_rater_quality_leave_one_out():
    # four raters on 30 items: 0, 1 and 2 mark [10,20); 3 marks [40,50); on item 0 rater 0 is alone
    n = 30
    item = np.r_[np.repeat(np.arange(1, n), 4), 0]
    rater = np.r_[np.tile([0, 1, 2, 3], n - 1), 0]
    start = np.where(rater == 3, 40, 10)
    sp = S.intervals(item, start, start + 10)
    q, count = S.rater_quality(sp, rater)
    assert q.tolist() == [1.0, 1.0, 1.0, 0.0] and count.tolist() == [n - 1] * 4
    # as consensus weights: rater 3 (quality 0) no longer tips [5,8) into the majority
    three = S.intervals([0, 0, 0], [0, 5, 5], [3, 8, 8])
    plain = S.consensus(three, [0, 1, 3])
    assert list(zip(plain.start.tolist(), plain.end.tolist(), strict=True)) == [(5, 8)]  # 2 of 3 raters
    assert len(S.consensus(three, [0, 1, 3], weights=np.nan_to_num(q))) == 0  # weight 1 of 2 is not > half
