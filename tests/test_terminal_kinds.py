"""The terminal summary of judges that are not judges of pairs: a span judge on FaithBench shows its span
figures beside their human references (never a column of "not measured" pairwise rows), and the truth
line names the truth each kind was read against: the human spans, or the ratings and their scale."""

from __future__ import annotations

import json
import os

import pytest
from rich.console import Console

from judgecal.catalogue import SPAN_SUMMARY_METRICS, fmt_metric, info
from judgecal.cli import main
from judgecal.report.terminal import print_summary

JUDGE = "mine/mark-everything"
PAIRWISE_TITLES = [info(m).title for m in ("pairwise_kappa", "pairwise_accuracy", "cohen_kappa")]


@pytest.fixture(scope="module")
def faithbench(tmp_path_factory, mirror):  # type: ignore[no-untyped-def]
    """FaithBench imported, and a span judge's own verdicts (every summary marked whole) imported from a file."""
    from judgecal.data.store import Workspace

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    folder = tmp_path_factory.mktemp("fbterm")
    ws = str(folder / "ws")
    assert main(["import", "faithbench", "-w", ws]) == 0
    with Workspace(folder / "ws") as w:
        human = w.spans_repo.spans_frame(kind="human")
        ids = sorted(set(human["item_id"]))[:40]
        texts = {it.item_id: it.candidates[0].text for it in w.items_repo.items(ids=ids)}
    (folder / "spans.jsonl").write_text("".join(
        json.dumps({"item_id": i, "judge": JUDGE, "spans": [[0, len(texts[i])]]}) + "\n" for i in ids))
    assert main(["import", str(folder / "spans.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["audit", "--n-boot", "200", "--out", str(folder / "rep"), "-w", ws]) == 0
    report = json.loads((folder / "rep" / "audit.json").read_text())
    return ws, human, report


def _render(report: dict, width: int) -> str:  # type: ignore[type-arg]
    console = Console(width=width, record=True)
    print_summary(report, console, details=True)
    return console.export_text()


def _block(out: str, name: str) -> list[str]:
    """The lines of one judge's stacked block: from its heading to the next rule."""
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(f"{name}  ("))
    end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("─")), len(lines))
    return lines[start:end]


def test_a_span_only_judge_shows_its_span_figures_not_pairwise_rows(faithbench, capsys):  # type: ignore[no-untyped-def]
    _, _, report = faithbench
    capsys.readouterr()
    entry = report["judges"][JUDGE]
    assert entry["n_items_with_consensus"] == 0 and "span_score" in entry["metrics"]
    block = _block(_render(report, 100), JUDGE)
    assert f"({entry['n_judgments']} judgments, {entry['metrics']['span_iou']['n']} items with human spans)" in block[0]
    for title in PAIRWISE_TITLES:
        assert not any(line.startswith(title) for line in block), title
    assert not any("not measured" in line for line in block)
    flat = " ".join(" ".join(block).split())
    like = entry["spans"]["like_for_like"]
    for name in SPAN_SUMMARY_METRICS:
        line = next(x for x in block if x.startswith(info(name).title + "  "))  # "Span F1" begins another title
        assert fmt_metric(entry["metrics"][name]) in line
    # each figure beside its like-for-like human reference, as the span section holds it
    assert (f"{info('span_f1_pairwise').title} {fmt_metric(entry['metrics']['span_f1_pairwise'])} annotators with "
            f"each other: {fmt_metric(like['humans'])} (pairwise, the same {like['n_items']} items)") in flat
    assert (f"{info('span_iou').title} {fmt_metric(entry['metrics']['span_iou'])} against the span consensus; "
            f"annotators' pairwise F1 (another definition): {fmt_metric(entry['spans']['human_f1'])}") in flat


def test_a_wide_terminal_gives_span_judges_a_table_of_their_own(faithbench):  # type: ignore[no-untyped-def]
    _, _, report = faithbench
    out = _render(report, 200)
    assert "Span judges against the human spans (source faithbench, 95% CI)" in out
    row = next(line for line in out.splitlines() if line.startswith(f"│ {JUDGE}"))
    assert "not measured" not in row
    for name in SPAN_SUMMARY_METRICS:
        assert fmt_metric(report["judges"][JUDGE]["metrics"][name]) in row
    # the detectors (no human label anywhere) stay in the consensus table, never among the span columns
    span_table = out[out.index("Span judges against"):]
    assert "replay/faithbench" not in span_table.split(f"{JUDGE}: ")[0]


def test_the_truth_line_names_the_human_spans(faithbench, capsys, monkeypatch):  # type: ignore[no-untyped-def]
    ws, human, report = faithbench
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["audit", "--details", "--n-boot", "200", "-w", ws]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    n_ann, n_items = human["rater"].nunique(), human["item_id"].nunique()
    n_marked = int((human["end"] > human["start"]).sum())
    assert n_ann > 1 and n_marked > n_items > 0
    assert report["spans"] == {"source": "faithbench", "sources": ["faithbench"], "n_annotators": n_ann,
                               "n_items": n_items, "n_spans": n_marked}
    assert (f"truth for spans: human spans of source faithbench: {n_ann} annotators on {n_items} items, "
            f"{n_marked} marked spans") in flat
    assert "0 annotators, 0 labels" not in flat  # no empty consensus named as the truth
    # the detectors' scores have no human rating to be read against, and the line says so
    assert "truth: no human ratings of the judged responses" in flat


def test_the_truth_line_names_the_rating_scale(tmp_path, capsys):  # type: ignore[no-untyped-def]
    rows = [{"id": f"p{k}", "prompt": f"Explain topic {k}.", "response": f"An answer about {k}.",
             "human_labels": {"kim": 1 + k % 5, "lee": 1 + (k + k % 2) % 5}} for k in range(12)]
    scores = [{"item_id": f"p{k}", "judge": "acme/likert", "score": 1 + (k + 1) % 5} for k in range(12)]
    (tmp_path / "likert.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    ws = str(tmp_path / "ws")
    assert main(["import", str(tmp_path / "likert.jsonl"), "--task", "pointwise", "-w", ws]) == 0
    assert main(["import", str(tmp_path / "scores.jsonl"), "--as", "judgments", "-w", ws]) == 0
    capsys.readouterr()
    assert main(["audit", "--n-boot", "100", "--out", str(tmp_path / "rep"), "-w", ws]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    rep = json.loads((tmp_path / "rep" / "audit.json").read_text())
    scale = rep["judges"]["acme/likert"]["pointwise"]["scale"]
    assert scale["kind"] == "ordinal" and len(scale["levels"]) == 5
    assert (f"truth: ds of source likert: 2 annotators, 24 labels on 12 items; ratings on the ordinal scale "
            f"{' < '.join(scale['levels'])}") in flat
    assert "truth for spans" not in flat
