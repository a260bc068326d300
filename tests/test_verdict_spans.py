"""Judge spans arrive with imported verdicts: checked against the text, stored with their judgment."""

import json

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.cli import main
from judgecal.data.store import Workspace

TEXT = "The cat sat on the mat. It was blue and very loud."


def _items(tmp_path):
    p = tmp_path / "items.jsonl"
    p.write_text("\n".join(json.dumps({"id": f"i{k}", "prompt": "Summarise the article.", "response": TEXT,
                                       "human_spans": {"h1": [[24, 35, "Unwanted"]], "h2": [[24, 35]]}})
                           for k in range(2)) + "\n")
    return p


def _verdicts(tmp_path, rows, name="v.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_spans_import_audit_and_reimport(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", str(_items(tmp_path)), "--task", "pointwise", "-w", ws]) == 0
    rows = [{"item_id": "i0", "judge": "ext/detector", "spans": [[24, 35, "Unwanted"]]},
            {"item_id": "i1", "judge": "ext/detector", "spans": {"ext/detector": []}}]
    assert main(["import", str(_verdicts(tmp_path, rows)), "--as", "judgments", "-w", ws]) == 0
    assert "2 judge spans" in capsys.readouterr().out
    with Workspace(ws) as w:
        judge = w.spans_repo.spans_frame(kind="judge")
        assert sorted(zip(judge["item_id"], judge["start"], judge["end"], strict=True)) == [("i0", 24, 35), ("i1", 0, 0)]
        rep = audit_workspace(w, AuditOptions(n_boot=100)).to_json()
    m = rep["judges"]["ext/detector"]["metrics"]
    # i0: exactly the consensus (IoU 1); i1: the judge marked nothing where the people marked 24..35 (IoU 0)
    assert m["span_iou"]["estimate"] == 0.5 and m["span_iou"]["n"] == 2
    # the same file again stores nothing; changed spans are refused without --replace
    assert main(["import", str(_verdicts(tmp_path, rows)), "--as", "judgments", "-w", ws]) == 0
    assert "nothing new in" in (out := capsys.readouterr().out) and "its 2 judgments" in out
    rows[1]["spans"] = [[24, 35]]
    changed = _verdicts(tmp_path, rows, "changed.jsonl")
    assert main(["import", str(changed), "--as", "judgments", "-w", ws]) == 2
    assert "changed.jsonl:2: spans: differs from the judgment already stored" in capsys.readouterr().err
    assert main(["import", str(changed), "--as", "judgments", "--replace", "-w", ws]) == 0
    with Workspace(ws) as w:
        judge = w.spans_repo.spans_frame(kind="judge")
        assert sorted(zip(judge["item_id"], judge["start"], judge["end"], strict=True)) == [("i0", 24, 35), ("i1", 24, 35)]


def test_bad_spans_name_the_line_and_field(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", str(_items(tmp_path)), "--task", "pointwise", "-w", ws]) == 0
    before = Workspace(ws).judgments_repo.count_judgments()
    bad = _verdicts(tmp_path, [{"item_id": "i0", "judge": "d", "spans": [[0, 7]]},
                               {"item_id": "i1", "judge": "d", "spans": [[40, 400]]},
                               {"item_id": "i0", "judge": "e", "spans": {"someone-else": []}}])
    assert main(["import", str(bad), "--as", "judgments", "-w", ws]) == 2
    err = capsys.readouterr().err
    assert "v.jsonl:2: spans[0]: [40, 400] is not a span of the 50-character text" in err
    assert "v.jsonl:3: spans: as an object, spans name one rater" in err
    assert Workspace(ws).judgments_repo.count_judgments() == before  # nothing written
