"""Span judges in the audit: span_iou and span_f1 under metrics, the humans' ceiling beside them."""

import pytest

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.data.records import Candidate, Item, Judgment, Span
from judgecal.data.store import Workspace

TEXT = "The cat sat on the mat. It was blue and very loud."  # 0..51
N = 12  # items: enough for a judge that marks the right stretch to be clearly above a trivial marker


def _workspace(tmp_path, human_sources=("file",)):
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([Item(f"i{k}", "Summarise.", [Candidate(TEXT, "m")], task="pointwise") for k in range(N)])
    # two annotators per item; on even items both mark "It was blue" (24..35), on odd items they mark nothing
    spans = []
    marked = [f"i{k}" for k in range(0, N, 2)]
    for src in human_sources:
        for ann in ("h1", "h2"):
            for k in range(N):
                item = f"i{k}"
                spans.append(Span(item, ann, 0, *((24, 35) if item in marked else (0, 0)),
                                  "Unwanted" if item in marked else "", src, "human"))
    for spec, (start, end) in (("a", (24, 35)), ("b", (0, 7))):
        for item in (f"i{k}" for k in range(N)):
            key = f"{spec}-{item}"
            ws.judgments_repo.add_judgments([Judgment(key=key, item_id=item, judge="local/m", spec_hash=spec, raw="...",
                                       status="ok")])
            s, e = (start, end) if item in marked else (0, 0)
            spans.append(Span(item, "local/m", 0, s, e, "", key, "judge"))
    ws.spans_repo.add_spans(spans)
    return ws


def test_span_figures_reach_the_audit_per_spec(tmp_path):
    ws = _workspace(tmp_path)
    rep = audit_workspace(ws, AuditOptions(n_boot=200)).to_json()
    names = sorted(rep["judges"])
    assert len(names) == 2  # two specs of one model stay two judges
    by_iou = {n: rep["judges"][n]["metrics"]["span_iou"]["estimate"] for n in names}
    # spec a marks exactly the consensus on even items and nothing on odd ones: IoU 1 on every item
    # spec b marks "The cat" (0..7), disjoint from it: IoU 0 on even items, 1 on odd (both empty) -> 0.5
    assert sorted(by_iou.values()) == [0.5, 1.0]
    good = max(by_iou, key=by_iou.get)
    bad = min(by_iou, key=by_iou.get)
    assert rep["judges"][good]["metrics"]["span_f1"]["estimate"] == 1.0
    assert rep["judges"][good]["spans"]["human_f1"]["estimate"] == 1.0
    assert rep["spans"]["source"] == "file"
    assert rep["judges"][good]["verdict"]["status"] == "aligned"
    # spec b scores exactly what marking nothing scores: never aligned, and the reason says why
    assert rep["judges"][bad]["verdict"]["status"] == "not aligned"
    like = rep["judges"][bad]["spans"]["like_for_like"]
    assert like["best_baseline"] == "mark_nothing" and like["baselines"]["mark_nothing"]["estimate"] == 0.5
    assert like["above_baseline"]["estimate"] == 0.0 and like["normalised"]["estimate"] == 0.0
    assert any(r.startswith("span F1 0.50 with each annotator beside the annotators' 1.00 with each other")
               and r.endswith("not clearly above the trivial marker") for r in rep["judges"][bad]["verdict"]["reasons"])
    # mark everything, by hand: F1 2 * 11 / (len + 11) on the marked half, 0 on the empty half
    assert like["baselines"]["mark_everything"]["estimate"] == pytest.approx(22 / (len(TEXT) + 11) / 2)
    good_like = rep["judges"][good]["spans"]["like_for_like"]
    assert good_like["normalised"]["estimate"] == 1.0 and good_like["above_baseline"]["ci_low"] > 0


def test_several_span_sources_are_never_pooled(tmp_path):
    ws = _workspace(tmp_path, human_sources=("file", "label-studio:Blind span review"))
    rep = audit_workspace(ws, AuditOptions(n_boot=100)).to_json()
    assert rep["spans"]["source"] is None and "2 sources" in rep["spans"]["note"]
    assert all("span_iou" not in j["metrics"] for j in rep["judges"].values())
