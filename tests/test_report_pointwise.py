"""A pointwise judge's one-screen summary: its own figures read against the annotators' agreement on the
same items, no pairwise-only figures or probes, and a mixed report that says which metric applies to whom."""

import json
import re

import pytest
from test_audit_pointwise import _write_inputs

from judgecal.catalogue import POINTWISE_SUMMARY_METRICS, SUMMARY_METRICS, fmt_metric, info


@pytest.fixture(scope="module")
def pointwise_report(tmp_path_factory):
    from judgecal.cli import main

    folder = tmp_path_factory.mktemp("pw")
    items, scores = _write_inputs(folder)
    ws = str(folder / "ws")
    assert main(["import", str(items), "--task", "pointwise", "-w", ws]) == 0
    assert main(["import", str(scores), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws, "--method", "mv"]) == 0
    assert main(["audit", "-w", ws, "--consensus", "mv", "--n-boot", "200"]) == 0
    return folder, json.loads((folder / "ws" / "reports" / "audit.json").read_text())


def test_terminal_shows_the_judges_own_figures_beside_the_annotators(pointwise_report):
    from rich.console import Console

    from judgecal.report.terminal import print_summary

    _, report = pointwise_report
    entry = report["judges"]["rater-llm"]
    console = Console(width=100, record=True)  # the stacked view, with references
    print_summary(report, console)
    out = console.export_text()
    for name in ("macro_f1", "first_position_rate", "position_consistency"):
        assert info(name).title not in out  # pairwise figures have nothing to say about a pointwise judge
    for name in ("weighted_kappa", "spearman_rho", "mae"):
        line = next(x for x in out.splitlines() if x.startswith(info(name).title))
        assert fmt_metric(entry["metrics"][name]) in line
        assert f"annotators with each other: {fmt_metric(entry['pointwise']['humans'][name])}" in line
    assert "position: not tested" not in out
    assert "position, verbosity, padding, verdict injection: apply to pairwise judges only" in out
    assert entry["verdict"]["not_tested"][-1].endswith("apply to pairwise judges only")


def _heads(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", html)][1:]


def test_html_summary_columns_follow_the_judges_kinds(pointwise_report):
    from judgecal.report.write import render_html

    _, report = pointwise_report
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
