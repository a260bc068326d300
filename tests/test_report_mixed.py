"""A workspace as an engineer brings it: Likert items rated by three annotators with a judge's scores, and
pairs with a second judge's verdicts in both orders; the report read on every surface."""

import json
import re
from html import unescape
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from judgecal.catalogue import info


def _write(folder: Path) -> None:
    likert, scores, pairs, verdicts = [], [], [], []
    for k in range(12):
        q = 1 + k % 5
        likert.append({"id": f"p{k}", "prompt": f"Explain topic {k}.", "response": f"An answer about {k}.",
                       "human_labels": {"kim": q, "lee": min(5, q + k % 2), "ortiz": max(1, q - (k % 3 == 0))}})
        scores.append({"item_id": f"p{k}", "judge": "acme/likert-judge", "score": min(5, q + (k % 4 == 1))})
        pairs.append({"id": f"q{k}", "prompt": f"Compare {k}.", "response_a": f"One {k}.",
                      "response_b": f"Another answer {k}.", "human_labels": {"kim": "AB"[k % 2], "lee": "AB"[k % 2]}})
        verdicts += [{"item_id": f"q{k}", "judge": "acme/pair-judge", "verdict": "A", "order": o}
                     for o in ("AB", "BA")]
    for name, rows in (("likert", likert), ("scores", scores), ("pairs", pairs), ("verdicts", verdicts)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):  # type: ignore[no-untyped-def]
    from judgecal.cli import main

    folder = tmp_path_factory.mktemp("mixed")
    _write(folder)
    ws = str(folder / "ws")
    assert main(["import", str(folder / "likert.jsonl"), "--task", "pointwise", "-w", ws]) == 0
    assert main(["import", str(folder / "scores.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["import", str(folder / "pairs.jsonl"), "-w", ws]) == 0
    assert main(["import", str(folder / "verdicts.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv:likert", "--n-boot", "50"]) == 0
    return json.loads((folder / "ws" / "reports" / "audit.json").read_text())


@pytest.mark.parametrize("width", [150, 160, 200])
def test_terminal_never_cuts_a_wide_mixed_table(mixed, width):  # type: ignore[no-untyped-def]
    """Eleven columns do not fold into 150-200 columns: rich cut the last titles ("Unpars") and figures;
    the summary now stacks per judge instead, every title whole."""
    from judgecal.report.terminal import print_summary

    console = Console(width=width, record=True)
    print_summary(mixed, console, details=True)
    out = console.export_text()
    assert max(cell_len(line) for line in out.splitlines()) <= width
    lines = [line.strip() for line in out.splitlines()]
    for name in ("invalid_rate", "mae", "weighted_kappa"):
        assert any(line.startswith(info(name).title) for line in lines), name


def test_the_truth_line_counts_one_annotator_in_the_singular():
    """Summary of a Haystack has one person per insight: "1 annotators" read as a typo."""
    from judgecal.audit.truth import describe

    about = {"aggregator": "ds", "source": "summary-of-a-haystack", "n_annotators": 1, "n_labels": 1419,
             "n_items": 1419}
    assert describe(about) == "ds of source summary-of-a-haystack: 1 annotator, 1419 labels on 1419 items"
    assert describe({**about, "n_annotators": 3, "n_labels": 1, "n_items": 1}).endswith(
        ": 3 annotators, 1 label on 1 item")
    from judgecal.report.write import render_html

    html = render_html({"schema": "judgecal.audit/1", "settings": {"consensus": "ds"}, "judges": {},
                        "consensus": about})
    assert "by 1 annotator (1419 labels)" in html


def test_html_agreement_cell_reads_a_pointwise_judge_against_the_annotators_on_its_items(mixed):  # type: ignore[no-untyped-def]
    """The verdict reads the weighted κ against the annotators' own on the same items; the report's
    "Agreement with the humans" cell showed the unweighted κ against the consensus' Fleiss' κ instead."""
    from judgecal.catalogue import fmt_metric
    from judgecal.report.write import render_html

    html = render_html(mixed)
    rows = html[html.index('id="verdicts"'):]
    rows = rows[: rows.index("</table>")].split('<tr class="judge-row">')[1:]
    cell = {r.split("</span>")[0].split(">")[-1]:
            unescape(re.sub(r"<[^>]+>", "", r.split('data-label="Agreement">')[1].split("</td>")[0])) for r in rows}
    entry = mixed["judges"]["acme/likert-judge"]
    humans = entry["pointwise"]["humans"]
    likert = cell["acme/likert-judge"]
    assert entry["pointwise"]["kappa"] == "weighted_kappa" and info("weighted_kappa").title in likert
    assert fmt_metric(entry["metrics"]["weighted_kappa"]) in likert
    assert f"annotators with each other: {fmt_metric(humans['weighted_kappa'])}; chance: 0" in likert
    assert f"annotators with each other: {fmt_metric(humans['accuracy'])}" in likert
    assert mixed["humans"]["fleiss_kappa"]["estimate"] is not None and "humans with each other" not in likert
    # a pairwise judge keeps its κ against the humans with each other
    assert "humans with each other: " in cell["acme/pair-judge"] and info("cohen_kappa").title in cell["acme/pair-judge"]


def test_explorer_judges_page_does_not_read_a_pointwise_judge_as_a_judge_of_pairs(tmp_path):  # type: ignore[no-untyped-def]
    """On a pointwise-only workspace the Judges page showed a macro F1 "not tested", no chance accuracy,
    and an A/B/tie confusion of zeros whose breakdowns called every item wrong; the Biases page listed the
    position, verbosity and injection probes as "not tested" with the command to run them."""
    from explorer_browser import Browser, serve

    from judgecal.cli import main

    _write(tmp_path)
    ws = str(tmp_path / "ws")
    assert main(["import", str(tmp_path / "likert.jsonl"), "--task", "pointwise", "-w", ws]) == 0
    assert main(["import", str(tmp_path / "scores.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", "50"]) == 0
    report = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    counts = report["consensus"]["label_counts"]
    chance = sum((c / sum(counts.values())) ** 2 for c in counts.values())
    with serve(tmp_path / "ws") as url:
        b = Browser(url)
        try:
            b.open("Judges")
            grid = b.assert_csv_is_grid("judges-agreement")
            text = b.text()
            b.open("Biases")  # position, verbosity and injection compare two responses: not for this judge
            biases = {g: b.csv(f"biases-{g}") for g in ("position", "verbosity", "injection", "stability")}
        finally:
            b.close()
    for g in ("position", "verbosity", "injection"):
        assert set(biases[g]["estimate (95% CI)"]) == {"n/a (pointwise)"}, g
        assert set(biases[g]["matters?"]) == {"applies to judges of pairs only (one response per item)"}
    assert set(biases["stability"]["estimate (95% CI)"]) == {"not tested"}  # repeats would apply: not run
    row = grid[grid["judge"] == "acme/likert-judge"].iloc[0]
    assert row["macro F1"] == "n/a (pointwise)" and row["chance accuracy"] == f"{chance:.3f}"
    assert "Every judge here is pointwise" in text and "judge said A" not in text


def test_explorer_spans_page_names_its_figures_and_shows_the_reference(tmp_path):  # type: ignore[no-untyped-def]
    """The Spans page listed raw metric names (span_iou) without the annotators' F1 beside them, and a
    key-fact item showed the summary's marks without the key fact they answer to."""
    from explorer_browser import Browser, serve

    from judgecal.catalogue import fmt_metric
    from judgecal.cli import main

    text = "- Prices fell sharply in May.\n- Sales rose in June."
    items = [{"id": f"k{i}", "prompt": "Summarise the notes.", "reference": f"Key fact {i}: prices fell",
              "response": text, "human_labels": {"kim": 2, "lee": 2},
              "human_spans": {"kim": [[0, 28]], "lee": [[2, 28]] if i % 2 else [[0, 28]]}} for i in range(4)]
    judged = [{"item_id": f"k{i}", "judge": "acme/span-judge", "score": 1, "spans": [[0, 14 + i]]} for i in range(4)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    (tmp_path / "judged.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judged))
    ws = str(tmp_path / "ws")
    assert main(["import", str(tmp_path / "items.jsonl"), "--task", "pointwise", "-w", ws]) == 0
    assert main(["import", str(tmp_path / "judged.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", "50"]) == 0
    report = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    ceiling = report["judges"]["acme/span-judge"]["spans"]["human_f1"]
    assert ceiling["estimate"] is not None
    with serve(tmp_path / "ws") as url:
        b = Browser(url)
        try:
            b.open("Spans")
            grid = b.assert_csv_is_grid("spans-metrics")
            b.select("spans-item", "k1")
            page = b.text()
        finally:
            b.close()
    assert set(grid["metric"]) == {info("span_iou").title, info("span_f1").title}
    assert set(grid["annotators with each other (F1)"]) == {fmt_metric(ceiling)}
    assert "Key fact 1: prices fell" in page


def test_agreement_of_a_judge_with_no_labelled_item_is_not_measured_not_untested(mixed):  # type: ignore[no-untyped-def]
    """Under the Likert truth the pair judge has no labelled item: its κ and accuracy read "not tested",
    the words kept for a probe that was not run, where nothing can be run to get them."""
    from judgecal.report.view import report_view

    view = report_view(mixed)
    pair = next(j for j in view.judges if j.name == "acme/pair-judge")
    assert pair.n_labelled == 0
    cells = {f.name: f.value for f in pair.summary}
    assert cells["cohen_kappa"] == cells["accuracy"] == "not measured"
    assert cells["first_position_rate"] == "not tested"  # a probe
    assert cells["weighted_kappa"] == "n/a (pairwise)"
    likert = next(j for j in view.judges if j.name == "acme/likert-judge")
    assert all("not measured" not in f.value for f in likert.summary)


def test_overview_reads_a_pointwise_judge_by_the_kappa_of_its_verdict(mixed):  # type: ignore[no-untyped-def]
    """The Overview's "κ with the consensus" showed a Likert judge's unweighted κ while its verdict, on the same
    row, reads the weighted one; with one annotator per item the humans' row said "undefined"."""
    from judgecal.apps.page_overview import trust_table

    from judgecal.audit.schema import read_report
    from judgecal.catalogue import fmt_metric

    rows = trust_table(read_report(mixed)).set_index("judge")
    likert = mixed["judges"]["acme/likert-judge"]
    assert rows.loc["acme/likert-judge", "κ with the consensus"] == f"{fmt_metric(likert['metrics']['weighted_kappa'])}, weighted"
    pair = mixed["judges"]["acme/pair-judge"]
    assert rows.loc["acme/pair-judge", "κ with the consensus"] == fmt_metric(pair["metrics"].get("cohen_kappa"))
    assert rows.loc["humans (reference)", "κ with the consensus"] == (
        f"{fmt_metric(mixed['humans']['fleiss_kappa'])} (Fleiss' κ among them: another definition than a judge's "
        "κ with the consensus)")
    one = {**mixed, "humans": {**mixed["humans"], "n_annotators": 1}}
    assert trust_table(read_report(one)).set_index("judge").loc["humans (reference)", "κ with the consensus"] == \
        "not measured (one annotator)"


def test_judges_page_humans_row_with_one_annotator_is_not_measured(mixed):  # type: ignore[no-untyped-def]
    from judgecal.apps.page_judges import humans_row

    from judgecal.audit.schema import Humans
    from judgecal.catalogue import fmt_metric

    row = humans_row(Humans.model_validate(mixed["humans"]))
    assert row["κ with the consensus"].startswith(fmt_metric(mixed["humans"]["fleiss_kappa"]) + " (Fleiss' κ among them: another")
    assert row["accuracy against the consensus"].startswith(fmt_metric(mixed["humans"]["loo_accuracy"]) + " (leave-one-out: another")
    one = humans_row(Humans.model_validate({**mixed["humans"], "n_annotators": 1,
                                            "fleiss_kappa": {"estimate": None}, "loo_accuracy": {"estimate": None}}))
    assert one["κ with the consensus"] == one["accuracy against the consensus"] == "not measured (one annotator)"


def test_html_plots_a_pointwise_judges_weighted_kappa_without_a_common_line(mixed):  # type: ignore[no-untyped-def]
    from judgecal.report.view import report_view
    from judgecal.report.write import _plots, render_html

    plots = {p.title: p for p in _plots(mixed, report_view(mixed))}
    wk = plots[info("weighted_kappa").title]
    assert "acme/likert-judge" in wk.svg and "acme/pair-judge" not in wk.svg  # judges with that figure only
    assert "Dashed line" not in wk.note and "its own items" in wk.note
    # κ against the consensus: no humans' line (Fleiss' κ is another definition); the like-for-like figure
    # draws each judge's own reference on its row
    ck = plots[info("cohen_kappa").title]
    assert "Dashed line" not in ck.note and "other definitions" in ck.note and "row-ref" not in ck.svg
    assert unescape(wk.note) in unescape(render_html(mixed))
