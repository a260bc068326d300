"""Span judges in the audit: span_iou and span_f1 under metrics, the humans' ceiling beside them."""

from judgecal.audit.run import run_audit
from judgecal.data.records import Candidate, Item, Judgment, Span
from judgecal.data.store import Workspace

TEXT = "The cat sat on the mat. It was blue and very loud."  # 0..51


def _workspace(tmp_path, human_sources=("file",)):
    ws = Workspace(tmp_path / "ws")
    ws.add_items([Item(f"i{k}", "Summarise.", [Candidate(TEXT, "m")], task="pointwise") for k in range(2)])
    # two annotators per item; on i0 both mark "It was blue" (24..35), on i1 they mark nothing
    spans = []
    for src in human_sources:
        for ann in ("h1", "h2"):
            spans.append(Span("i0", ann, 0, 24, 35, "Unwanted", src, "human"))
            spans.append(Span("i1", ann, 0, 0, 0, "", src, "human"))
    for spec, (start, end) in (("a", (24, 35)), ("b", (0, 7))):
        for item in ("i0", "i1"):
            key = f"{spec}-{item}"
            ws.add_judgments([Judgment(key=key, item_id=item, judge="local/m", spec_hash=spec, raw="...",
                                       status="ok")])
            s, e = (start, end) if item == "i0" else (0, 0)
            spans.append(Span(item, "local/m", 0, s, e, "", key, "judge"))
    ws.add_spans(spans)
    return ws


def test_span_figures_reach_the_audit_per_spec(tmp_path):
    ws = _workspace(tmp_path)
    rep = run_audit(ws, n_boot=200)
    names = sorted(rep["judges"])
    assert len(names) == 2  # two specs of one model stay two judges
    by_iou = {n: rep["judges"][n]["metrics"]["span_iou"]["estimate"] for n in names}
    # spec a marks exactly the consensus on i0 and nothing on i1: IoU 1 on both items
    # spec b marks "The cat" (0..7), disjoint from it: IoU 0 on i0, 1 on i1 (both empty) -> 0.5
    assert sorted(by_iou.values()) == [0.5, 1.0]
    good = max(by_iou, key=by_iou.get)
    bad = min(by_iou, key=by_iou.get)
    assert rep["judges"][good]["metrics"]["span_f1"]["estimate"] == 1.0
    assert rep["judges"][good]["spans"]["human_f1"]["estimate"] == 1.0
    assert rep["spans"]["source"] == "file"
    assert rep["judges"][good]["verdict"]["status"] == "aligned"
    assert rep["judges"][bad]["verdict"]["status"] in ("caution", "not aligned")
    assert any(r.startswith("span F1 0.50 against the annotators' 1.00") for r in rep["judges"][bad]["verdict"]["reasons"])


def test_several_span_sources_are_never_pooled(tmp_path):
    ws = _workspace(tmp_path, human_sources=("file", "label-studio:Blind span review"))
    rep = run_audit(ws, n_boot=100)
    assert rep["spans"]["source"] is None and "2 sources" in rep["spans"]["note"]
    assert all("span_iou" not in j["metrics"] for j in rep["judges"].values())
