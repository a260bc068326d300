"""audit.json's schema and the templated, self-contained, escaped audit.html."""

import html as html_lib
import json
import re
import sys

import pytest

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.audit.run import SCHEMA
from judgecal.catalogue import FLAGS, fmt_metric, fmt_p, info
from judgecal.data.records import Annotation, Candidate, Item, Judgment
from judgecal.data.store import Workspace
from judgecal.report.view import merged_reasons
from judgecal.report.write import render_html, write_report

EVIL = "<script>alert('x')</script>"
IMG = '<img src=x onerror="alert(1)">'
LINK = "[click me](javascript:alert(1))"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("rep") / "ws")
    models = (f"model-{IMG}", f"model-{EVIL}", "plain-model")
    items = [Item(f"i{k}", f"q{k} {EVIL} {LINK}",
                  [Candidate(EVIL + IMG, model=models[k % 3]), Candidate("b " * (k % 4 + 1), model=models[(k + 1) % 3])])
             for k in range(30)]
    ws.items_repo.add_items(items)
    ws.annotations_repo.add_annotations([Annotation(f"i{k}", a, "A" if k % 3 else "B") for k in range(30)
                        for a in (f"h1{IMG}", f"h2{LINK}")])
    judge = f"replay/x/{EVIL}{IMG}"
    rows = []
    for k in range(30):
        for order in ("AB", "BA"):
            v = "A" if order == "AB" else ("B" if k % 2 else "A")
            rows.append(Judgment(key=f"{k}{order}", item_id=f"i{k}", judge=judge, spec_hash="s", order=order,
                                 verdict=v, raw=EVIL, prompt_tokens=100, completion_tokens=2, latency_s=0.5,
                                 cost_usd=0.001))
    ws.judgments_repo.add_judgments(rows)
    from judgecal.aggregate.consensus import compute_consensus

    compute_consensus(ws, ("ds",))
    report = audit_workspace(ws, AuditOptions(n_boot=300)).to_json()
    out = tmp_path_factory.mktemp("out")
    write_report(report, out)
    return out, judge


def test_schema_every_metric_has_estimate_ci_and_n(report_dir):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    assert rep["schema"] == SCHEMA
    m = rep["judges"][judge]["metrics"]
    for name in ("accuracy", "macro_f1", "cohen_kappa", "position_consistency", "first_position_rate",
                 "invalid_rate"):
        assert {"estimate", "ci_low", "ci_high", "n", "null_value", "p", "q", "mde"} == set(m[name]), name
        assert m[name]["ci_low"] <= m[name]["estimate"] <= m[name]["ci_high"]
    # hand-computed: AB always "A" (shown first); BA picks shown-first on odd k -> 45 / 60 first picks
    assert m["first_position_rate"]["estimate"] == pytest.approx(45 / 60)
    assert m["position_consistency"]["estimate"] == pytest.approx(15 / 30)
    u = rep["judges"][judge]["usage"]
    assert u["prompt_tokens_per_1k"] == 100_000 and u["cost_usd_per_1k"] == pytest.approx(1.0)
    assert u["latency_s_mean"] == 0.5


def test_html_is_self_contained_and_escaped(report_dir):
    out, judge = report_dir
    html = (out / "audit.html").read_text()
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "onerror=" not in html.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|javascript:|//)""", html, re.I)
    assert "<a " not in html  # markdown in names stays literal text, never a link
    assert "<svg" in html and "<style>" in html and "<link" not in html
    # the hostile judge, model and annotator names are shown, as text
    assert html.count("replay/x/&lt;script&gt;") >= 3
    assert "model-&lt;img src=x" in html and "h2[click me](javascript:alert(1))" in html


def _plain(fragment: str) -> str:
    """Text of an HTML fragment, each tag a space (a space before ':' dropped)."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", fragment)).split()).replace(" :", ":")


def test_page_one_summary_then_detail_with_every_metric(report_dir):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    html = (out / "audit.html").read_text()
    assert html.index('id="summary"') < html.index('id="detail"')
    summary = html.split('id="summary"', 1)[1].split('id="detail"', 1)[0]
    verdict = rep["judges"][judge]["verdict"]
    # page one: the judge's verdict, the reason that matters most (the first: audit.json orders them), its
    # figures beside the annotators' measured the same way, chance and a trivial rater, what was not tested
    card = _plain(summary.split('id="summary-1">', 1)[1].split("</div>", 1)[0])
    assert card.startswith(f"{judge}: {verdict['status']} like with like: pairwise, the same 30 items, 2 annotators")
    assert f"Most important: {verdict['reasons'][0]}" in card and verdict["reasons"][1] not in card
    lfl = rep["judges"][judge]["reference"]["like_for_like"]
    pw = lfl["pairwise"]
    assert (f"κ with each annotator {fmt_metric(pw['judge']['kappa'])} {fmt_metric(pw['humans']['kappa'])} 0.000 0.000 (always "
            f"{lfl['trivial']['label']!r})") in card
    assert (f"Agrees with annotators {fmt_metric(pw['judge']['accuracy'])} {fmt_metric(pw['humans']['accuracy'])} "
            f"{pw['judge']['chance_accuracy']:.3f} {lfl['trivial']['accuracy']:.3f}") in card
    assert verdict["not_tested_probes"] and f"Not tested: {', '.join(verdict['not_tested_probes'])}" in card
    # page one opens with every judge ranked by its gap to the humans, the best named, and its decisive flag
    comparison = _plain(summary.split('id="comparison"', 1)[1].split("</table>", 1)[0])
    gap = pw["difference"]["kappa"]["estimate"]
    assert f"{judge} {verdict['status']} κ with each annotator {fmt_metric(pw['judge']['kappa'])} {fmt_metric(pw['humans']['kappa'])} " \
           f"{gap:+.3f} {info(verdict['details'][0]['metric']).title} {len(verdict['not_tested_probes'])}" in comparison
    assert _plain(summary.split('id="best-judge">', 1)[1].split("</p>", 1)[0]).startswith(
        f"Best available judge: {judge} ({verdict['status']}, {gap:+.3f} to the humans): it may not replace people")
    # the detail: every other reason once (the first is on page one), each figure beside its reference
    detail = html.split('id="detail"', 1)[1]
    assert str(verdict["reasons"][0]).replace("'", "&#39;") not in detail
    legend = re.search(r'<dl class="kv" id="flag-legend">.*?</dl>', detail, re.S)
    said = detail.replace(legend.group(0), "") if legend else detail  # the flags' legend defines, never restates
    for reason in merged_reasons(verdict["reasons"])[1:]:
        assert said.count(str(reason).replace("'", "&#39;")) == 1, reason
    fk = rep["humans"]["fleiss_kappa"]
    assert f"humans with each other: {fmt_metric(fk)}" in detail
    assert "chance: " in detail
    # the report card: each metric of audit.json once, with its catalogue title and definition as hover text
    rows = re.findall(r'<tr data-metric="([^"]+)"><td data-label="Metric"><abbr title="([^"]*)">([^<]+)</abbr>', detail)
    assert [r[0] for r in rows] == list(rep["judges"][judge]["metrics"])
    for name, definition, title in rows:
        assert title == info(name).title.replace("'", "&#39;")
        assert definition == info(name).definition.replace("'", "&#39;")
    first = rep["judges"][judge]["metrics"]["first_position_rate"]
    row = re.search(r'<tr data-metric="first_position_rate">(.*?)</tr>', detail, re.S).group(1)
    cells = [html_lib.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r'<td class="num"[^>]*>(.*?)</td>', row)]
    assert cells[0] == fmt_metric(first) and cells[1] == str(first["n"])
    assert cells[2] == fmt_p(first["p"]) and cells[3] == fmt_p(first["q"]) != "not tested"


DETAIL_HEADINGS = ("Scores", "Reasons, references and flags", "What the figures mean", "Plots", "Appendix", "Each judge",
                   "Closing the loop", "Models", "The humans", "Provenance")


def test_summary_only_leaves_the_detail_out(report_dir, tmp_path):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    full, short = render_html(rep), render_html(rep, summary_only=True)

    def h2(page):
        return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page)]

    def cards(page):
        return re.findall(r'<div class="card [^"]*" id="summary-\d+">.*?</div>', page, re.S)

    assert h2(full) == ["Summary: can each judge stand in for people?", *DETAIL_HEADINGS]
    assert h2(short) == ["Summary: can each judge stand in for people?"]
    assert 'id="detail"' not in short and "data-metric=" not in short and "<svg" not in short
    assert 'id="summary-only"' in short and 'id="summary-only"' not in full
    # page one is the same in both: each judge's verdict, the reason that matters most, its references
    assert len(cards(full)) == len(rep["judges"]) and cards(short) == cards(full)
    assert f"{rep['judges'][judge]['verdict']['reasons'][0]}".replace("'", "&#39;") in cards(short)[0]
    # the full report is what audit writes by default; summary_only changes nothing else
    write_report(rep, tmp_path / "full")
    write_report(rep, tmp_path / "short", summary_only=True)
    assert (tmp_path / "full" / "audit.html").read_text() == full == (out / "audit.html").read_text()
    assert (tmp_path / "short" / "audit.html").read_text() == short
    assert (tmp_path / "full" / "audit.json").read_text() == (tmp_path / "short" / "audit.json").read_text()


def test_page_one_without_two_annotators_says_so(tmp_path):
    """One annotator per item: no like-for-like reference, so page one reads the judge against the consensus
    beside chance and the majority label, and says that the humans' side is not measured."""
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([Item(f"i{k}", f"q{k}", [Candidate("a"), Candidate("b")]) for k in range(40)])
    ws.annotations_repo.add_annotations([Annotation(f"i{k}", "only-one", "A" if k % 4 else "B") for k in range(40)])
    ws.judgments_repo.add_judgments([Judgment(key=f"{k}", item_id=f"i{k}", judge="replay/x/one", spec_hash="s",
                               verdict="A" if k % 3 else "B", raw="") for k in range(40)])
    from judgecal.aggregate.consensus import compute_consensus

    compute_consensus(ws, ("ds",))
    rep = audit_workspace(ws, AuditOptions(n_boot=200)).to_json()
    ws.close()
    entry = rep["judges"]["replay/x/one"]
    card = _plain(render_html(rep).split('id="summary-1">', 1)[1].split("</div>", 1)[0])
    assert "against the consensus: no items with two annotators, so no like-for-like reference" in card
    assert f"Cohen's κ {fmt_metric(entry['metrics']['cohen_kappa'])} not measured (needs two annotators) 0.000" in card
    # chance Σ p² and the majority label's share (30 of 40 items are 'A')
    assert f"{0.75 ** 2 + 0.25 ** 2:.3f} 0.750 (always the most frequent label)" in card
    assert f"Most important: {entry['verdict']['reasons'][0]}" in card


def test_flags_are_words_with_a_legend_and_severity(report_dir):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    html = (out / "audit.html").read_text()
    flags = rep["judges"][judge]["flags"]
    assert "position_bias:first" in flags  # 45/60 first picks, significant
    legend = html.split('id="flag-legend"', 1)[1].split("</dl>", 1)[0]
    for code in flags:
        assert f"(code {code})" in legend  # every raw code appears only beside its explanation
    assert FLAGS["position_bias:first"].words in legend and "sev-serious" in legend
    # outside the legend a code is only a hover title, never the shown text
    shown = re.sub(r'title="[^"]*"', "", html.replace(legend, ""))
    assert "position_bias:first" not in shown


def test_absent_sections_name_the_command_that_produces_them(report_dir):
    out, _ = report_dir
    html = (out / "audit.html").read_text()
    assert "Not measured: judgecal stability run --judge JUDGE" in html
    rep = json.loads((out / "audit.json").read_text())
    rep.pop("models", None)
    rep.pop("humans", None)
    for j in rep["judges"].values():
        j.pop("verdict", None)
    bare = render_html(rep)
    assert "Not computed: judgecal audit on items whose two candidates name their models" in bare
    assert "no verdict" in bare and "not computed; produced by judgecal audit" in bare


def test_stability_statement_when_measured(report_dir):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    rep["judges"][judge]["stability"] = {
        "score": {"figure": "accuracy", "score": 60.0, "ci": [40.0, 80.0], "run_id": "r1"}, "guard": "pass",
        "runs": [{"run_id": "r1", "variants": [{}, {}, {}],
                  "figures": {"accuracy": {"sigma_pp": 0.8, "score": 60.0, "n_variants": 3}}}]}
    html = render_html(rep)
    # x = 1.96 σ: 1.96 × 0.8 = 1.57 -> "±1.6"
    assert "stable within ±1.6 points at 95% confidence" in html
    summary = html.split('id="detail"', 1)[0]
    assert "stable within ±1.6 points" in summary


def test_tables_fit_the_page_in_a_browser(report_dir, tmp_path):
    """Rendered in Chromium at 1280 and 760 px: no table is wider than the page (names and flags wrap)."""
    from playwright.sync_api import sync_playwright

    out, _ = report_dir
    rep = json.loads((out / "audit.json").read_text())
    long = "openai/" + "averylongjudgenamewithoutanybreaks" * 4  # no hyphen, no space: nowhere to break
    rep["judges"][long] = next(iter(rep["judges"].values()))
    page_file = tmp_path / "audit.html"
    page_file.write_text(render_html(rep), "utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update"])
        try:
            for width in (1280, 760):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(page_file.as_uri())
                over = page.evaluate("""() => [...document.querySelectorAll('table')]
                    .filter(t => t.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                    .map(t => t.id || t.className)""")
                assert over == [], (width, over)
                assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
                assert page.locator("#verdicts").inner_text().count(long) == 1
                page.close()
        finally:
            browser.close()


def test_empty_workspace_gives_an_empty_but_valid_report(tmp_path):
    ws = Workspace(tmp_path / "ws")
    rep = audit_workspace(ws, AuditOptions(n_boot=10)).to_json()
    assert rep["judges"] == {} and rep["consensus"]["n_items"] == 0
    js, html = write_report(rep, tmp_path / "out")
    assert json.loads(js.read_text())["schema"] == SCHEMA
    assert "No judge in this workspace yet" in html.read_text()


def test_undefined_statistics_are_written_as_null(tmp_path):
    import numpy as np

    rep = {"schema": SCHEMA, "judgecal_version": "x", "generated_at": "t", "consensus": {"n_items": 0},
           "settings": {"consensus": "ds", "invalid_as": "tie", "n_boot": 1, "ci_level": 0.95, "bootstrap": "b"},
           "judges": {"j": {"n_judgments": 1, "metrics": {}, "usage": {"judgments": 1, "prompt_tokens_per_1k": None,
                            "completion_tokens_per_1k": None, "cost_usd_per_1k": None, "latency_s_mean": None,
                            "latency_s_p95": None}, "position": {"flip_rate": float("nan"), "b": np.int64(3)}}}}
    js, _ = write_report(rep, tmp_path)
    back = json.loads(js.read_text())
    assert back["judges"]["j"]["position"] == {"flip_rate": None, "b": 3}


def test_every_probe_flag_has_words_and_a_severity():
    import inspect

    from judgecal.audit import probes
    from judgecal.audit.decision import judge_verdict
    from judgecal.catalogue import SEVERITIES, flag_info

    src = "".join(inspect.getsource(sys.modules[type(p).__module__]) for p in probes.PROBES)  # a module each
    literal = set(re.findall(r'return \["([a-z0-9_:]+)"\]', src))  # flags returned as ["code"]
    direction = {f"{p}:{d}" for p in ("verbosity_bias", "self_preference") for d in ("more_than_humans",
                                                                                   "less_than_humans")}
    codes = literal | direction | {"position_bias:first", "position_bias:second", "position_bias:underpowered"}
    assert {"follows_injection", "unstable", "prompt_sensitive", "invalid_rate_above_5pct"} <= codes
    for code in codes:
        f = flag_info(code)
        assert code in FLAGS or code.endswith(":underpowered"), code
        assert f.severity in SEVERITIES and f.words and code not in f.words, code
    # the verdict reads the same words: a judge that follows injections says so
    v = judge_verdict({"metrics": {}, "flags": ["follows_injection"], "n_items_with_consensus": 0})
    assert flag_info("follows_injection").words in v["reasons"]
