"""The explorer in a real browser (Debian's Chromium driven by Playwright) on PandaLM's real labels and judges:
every page, each filter and download, figures checked against audit.json and hand counts."""

import json
import re

import pandas as pd
import pytest
from conftest import copy_workspace
from explorer_browser import PAGES, Browser, serve

from judgecal.data.records import Annotation, Candidate, Item, Judgment, Span

EVIL = "<img src=x onerror=alert(1)><script>alert('pwned')</script>"
TRUTH = "ds:pandalm"


@pytest.fixture(scope="module")
def app(tmp_path_factory, pandalm_ws):
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.report.write import write_report

    ws_dir = tmp_path_factory.mktemp("app") / "ws"
    ws = copy_workspace(pandalm_ws, ws_dir)
    ws.items_repo.add_items([Item("0", f"Evil prompt {EVIL}", [Candidate(EVIL, "evil-model"), Candidate("fine")],
                       metadata={"category": "evil-cat"})])
    ws.judgments_repo.add_judgments([Judgment(key="evil", item_id="0", judge="replay/x/evil", spec_hash="s", verdict="A", raw=EVIL)])
    # a judge recorded in both orders (position plot, the two-orders filter)
    ws.judgments_repo.add_judgments([Judgment(key=f"both{k}{o}", item_id=f"pandalm/{k}", judge="replay/x/both-orders",
                               spec_hash="s", order=o, verdict="A" if (o == "AB" or k % 3) else "B",
                               raw=f"rationale {k} {o}")
                      for k in range(60) for o in ("AB", "BA")])
    # a second label source (the label-source filter) and spans on two items (the spans page and filter)
    ws.annotations_repo.add_annotations([Annotation(i, "expert-1", "B", "AB", 12.0, "review-2026", f"x{i}") for i in ("0", "pandalm/1")])
    ws.spans_repo.add_spans([Span("0", "expert-1", 1, 0, 4, "bad", "experts", "human"),
                  Span("0", "replay/x/evil", 1, 1, 4, "bad", "k1", "judge"),
                  Span("pandalm/2", "expert-1", 0, 0, 3, "bad", "experts", "human")])
    compute_consensus(ws, ("ds",), source="pandalm")
    write_report(audit_workspace(ws, AuditOptions(consensus=TRUTH, n_boot=200)).to_json(), ws.reports_dir)
    # after the audit: three repeated 1-5 scores per item of a pointwise judge, stored as a stability run
    from judgecal.stability.score import repeats_run

    ws.judgments_repo.add_judgments([Judgment(key=f"sc{k}-{s}", item_id=f"pandalm/{k}", judge="replay/x/scorer", spec_hash="s",
                               sample=s, score=float(1 + (k + s * (k % 2)) % 5), raw=f"score {k} {s}")
                      for k in range(100, 130) for s in range(3)])
    repeats_run(ws, "replay/x/scorer")
    ws.close()
    with serve(ws_dir) as url:
        b = Browser(url)
        yield b, ws_dir
        b.close()


def _iv(ab, ba):
    """The item verdict rule, by hand: the orders' common verdict, a tie when they differ; invalid = tie."""
    ab = "tie" if ab == "invalid" else ab
    ba = "tie" if ba == "invalid" else ba
    if ab is None or ba is None:
        return ab if ba is None else ba
    return ab if ab == ba else "tie"


def _hand(ws_dir):
    """Per judge {item: (AB, BA)} of sample 0 of the unmutated prompt, and the truth, read row by row."""
    from judgecal.data.store import Workspace

    ws = Workspace(ws_dir)
    by: dict[str, dict[str, list]] = {}
    for r in ws.judgments_repo.judgments_frame(columns=("item_id", "judge", "order", "sample", "mutation", "verdict")).itertuples():
        if r.sample == 0 and r.mutation == "none" and r.verdict is not None:  # scores carry no verdict
            by.setdefault(r.judge, {}).setdefault(r.item_id, [None, None])[["AB", "BA"].index(r.order)] = r.verdict
    cons = ws.annotations_repo.consensus_frame(TRUTH)
    ann = ws.annotations_repo.annotations_frame()
    ws.close()
    return by, dict(zip(cons["item_id"], cons["label"], strict=True)), ann


def _fmt(m):
    return f"{m['estimate']:.3f} ({m['ci_low']:.3f}–{m['ci_high']:.3f})"


def test_every_page_renders_and_audit_json_downloads(app):
    b, ws_dir = app
    shown = b.pages()
    folded = [t for t in PAGES if t not in shown]
    for title in shown:
        b.open(title)
    if folded:  # a page with nothing to show is named, with its commands, on the one "Not run yet" page
        assert shown[-1] == f"Not run yet ({len(folded)})"
        for title in folded:
            assert b.page.locator(f".st-key-not-run-{title.lower().replace(' ', '-')}").inner_text().startswith(title)
    assert [t for t in shown if not t.startswith("Not run yet")] == [t for t in PAGES if t in shown]
    assert b.download("audit-json") == (ws_dir / "reports" / "audit.json").read_bytes()
    assert b.dialogs == [] and b.external == []  # nothing is fetched from another host (fonts, icons)
    # deep links of a multi-page app probe /<page>/_stcore/...; a 404 there is Streamlit's own probing
    assert [e for e in b.errors if "404" not in e] == [], b.errors


def test_overview_shows_each_verdict_and_the_csv_is_the_table(app):
    b, ws_dir = app
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    b.open("Overview")
    csv = b.assert_csv_is_grid("overview")
    rows = {r["judge"]: r for r in csv.to_dict("records")}
    for judge, entry in report["judges"].items():
        row = rows[judge]
        kappa = entry["metrics"].get("cohen_kappa")
        if kappa and kappa["estimate"] is not None:
            assert row["κ with the consensus"] == _fmt(kappa)
        if "verdict" in entry:
            assert row["verdict"] == entry["verdict"]["status"]
            assert row["reasons"] == ("; ".join(entry["verdict"]["reasons"]) or "none")
        assert int(row["judgments"]) == entry["n_judgments"]
    if "humans" in report:
        assert rows["humans (reference)"]["κ with the consensus"].startswith(
            _fmt(report["humans"]["fleiss_kappa"]) + " (Fleiss' κ among them: another definition")
    assert "<script>alert('pwned')</script>" not in b.text()  # no item text on the overview
    b.page.screenshot(path=str(ws_dir / "overview.png"), full_page=True)


def test_overview_opens_with_page_one_of_the_trust_report(app):
    """The Overview shows the report's page one (judgecal.report.summary): each judge in audit.json's order with
    its verdict, the reason that matters most, its figures beside the annotators' measured the same way, and
    what was not tested, in the words of audit.html's page one."""
    import html as html_lib

    from judgecal.catalogue import fmt_metric
    from judgecal.report.write import render_html

    b, ws_dir = app
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    page_one = render_html(report).split('id="detail"', 1)[0]
    b.open("Overview")
    tops = []
    for k, (name, entry) in enumerate(report["judges"].items()):
        box = b.page.locator(f".st-key-summary-{k}")
        card = box.inner_text().replace("\u2060", "")
        v = entry["verdict"]
        assert card.startswith(f"{name} — {v['status']}"), card[:200]
        assert f"Most important: {v['reasons'][0]}" in card, (name, card)
        html_card = re.search(rf'id="summary-{k + 1}">(.*?)</div>', page_one, re.S).group(1)
        shown = html_lib.unescape(re.sub(r"<[^>]+>", "", html_card)).strip()
        assert shown.startswith(f"{name}: {v['status']}") and f"Most important: {v['reasons'][0]}" in shown
        probes = v["not_tested_probes"]
        assert f"Not tested: {', '.join(probes) if probes else 'nothing: every probe ran'}" in card
        lfl = (entry.get("reference") or {}).get("like_for_like")
        if lfl and lfl.get("pairwise"):
            pw = lfl["pairwise"]
            assert "the judge with each annotator" in card and "the annotators with each other" in card
            for side in ("judge", "humans"):
                for fig in ("kappa", "accuracy"):
                    assert fmt_metric(pw[side][fig]) in card, (name, side, fig)
            assert f"{lfl['trivial']['accuracy']:.3f} (always {lfl['trivial']['label']!r})" in card
        tops.append((box.bounding_box()["y"], name))
    assert len(tops) == len(report["judges"]) >= 3
    assert [n for _, n in sorted(tops)] == _by_gap(report)  # the comparison's order: closest to the humans first


def _gap(entry):
    """A judge's like-for-like κ difference (judge − annotators) as audit.json holds it, read by hand: the
    definition its verdict read, else pairwise, else leave-one-out; ``None`` when there is none."""
    if ((entry.get("spans") or {}).get("like_for_like") or {}).get("n_items"):
        return None  # a span judge: its F1 beside the annotators', no difference in the audit
    v = entry.get("verdict") or {}
    lfl = (entry.get("reference") or {}).get("like_for_like") or {}
    first = (v.get("human_likeness") or {}).get("reference") or "pairwise"
    for d in dict.fromkeys((first, "pairwise", "leave_one_out")):
        side = lfl.get(d) or {}
        if side.get("judge") and side.get("humans"):
            return (side.get("difference") or {}).get("kappa")
    return None


def _by_gap(report):
    order = list(report["judges"])
    gaps = {n: _gap(e) for n, e in report["judges"].items()}
    return sorted(order, key=lambda n: (gaps[n] is None, -(gaps[n]["estimate"] if gaps[n] else 0), order.index(n)))


def test_the_first_screen_compares_every_judge_by_its_gap_and_names_the_best(app):
    """A lead decides on the first screen: every judge in one grid, closest to the humans first, with its verdict,
    whether it may replace people (only when aligned), what decides it and its bias flags in words; the best
    available judge named above it; all of it above the fold of a laptop screen."""
    from judgecal.audit.decision import flag_words
    from judgecal.catalogue import fmt_metric

    b, ws_dir = app
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    b.open("Overview")
    csv = b.assert_csv_is_grid("comparison")
    assert list(csv["judge"]) == _by_gap(report)
    gap_col = next(c for c in csv.columns if c.startswith("gap to the humans"))
    words = flag_words()
    for row in csv.to_dict("records"):
        entry = report["judges"][row["judge"]]
        v = entry["verdict"]
        assert row["verdict"] == v["status"] and row["what decides it"] == v["reasons"][0]
        assert row["may replace people"] == ("yes" if v["status"] == "aligned" else "no")
        gap = _gap(entry)
        assert row[gap_col] == (fmt_metric(gap) if gap else "not in the audit")
        for f in entry.get("flags", []):
            assert words.get(f, f.replace("_", " ")) in row["bias flags"] or f.replace("_", " ").replace(":", ": ") \
                in row["bias flags"]
        assert not re.search(r"\w+_\w+:\w+|\bposition_bias\b", row["bias flags"])  # words, not codes
    best = b.page.locator(".st-key-best-judge").inner_text().replace("\u2060", "")
    aligned = [n for n in _by_gap(report) if report["judges"][n]["verdict"]["status"] == "aligned"]
    if aligned:
        assert best.startswith(f"Best available judge: {aligned[0]}") and "may replace people" in best
    else:  # the report's best available judge: of the best verdict present, the closest to the humans
        from judgecal.report.summary import page_one

        first = page_one(report).best.judge
        assert best.startswith("No judge may replace people yet.") and first in best
    b.page.set_viewport_size({"width": 1440, "height": 900})
    try:
        grid = b.page.locator(".st-key-tbl-comparison").bounding_box()
        assert grid is not None and grid["y"] < 900  # on the first screen, no scrolling
    finally:
        b.page.set_viewport_size({"width": 2600, "height": 1400})


def test_judges_confusion_breakdown_and_paired_comparison(app):
    b, ws_dir = app
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    by, truth, _ = _hand(ws_dir)
    b.open("Judges")
    agree = b.assert_csv_is_grid("judges-agreement")
    for judge, entry in report["judges"].items():
        acc = entry["metrics"].get("accuracy")
        if acc and acc["estimate"] is not None:
            assert agree[agree["judge"] == judge]["accuracy against the consensus"].item() == _fmt(acc)
    first = list(report["judges"])[0]
    b.select("conf-judge", "replay/x/both-orders")
    conf = b.assert_csv_is_grid("judges-confusion")
    counts = {}
    for item, (ab, ba) in by["replay/x/both-orders"].items():
        if item in truth:
            key = (truth[item], _iv(ab, ba))
            counts[key] = counts.get(key, 0) + 1
    for _, row in conf.iterrows():
        for j in ("A", "B", "tie"):
            assert int(row[f"judge said {j}"]) == counts.get((row["humans said"], j), 0)
    b.assert_csv_is_grid("judges-by-model")
    confid = b.assert_csv_is_grid("judges-confidence")
    for judge, entry in report["judges"].items():
        row = confid[confid["judge"] == judge].iloc[0]
        alt, cal = entry.get("replace_annotator"), entry.get("calibration")
        assert row["replaces an annotator"] == ({True: "yes", False: "no"}[alt["passed"]] if alt
                                                else "not tested (needs annotators' labels)")
        assert row["ECE (95% CI)"] == (_fmt(cal["ece"]) if cal else "not tested")
    # paired: X = the first judge, Y = both-orders; the difference by hand on the items both judged
    b.select("pair-y", "replay/x/both-orders")
    paired = b.assert_csv_is_grid("judges-paired")
    x, y = by[first], by["replay/x/both-orders"]
    common = [i for i in x if i in y and i in truth]
    diff = sum((_iv(*x[i]) == truth[i]) - (_iv(*y[i]) == truth[i]) for i in common) / len(common)
    assert int(paired["items"].item()) == len(common)
    assert paired["accuracy X − Y"].item().startswith(f"{diff:.3f} (")
    assert b.errors == [] or all("404" in e for e in b.errors)


def test_judges_page_shows_each_judge_beside_its_like_for_like_reference(app):
    """Each pairwise judge's κ with each annotator beside the annotators' κ with each other on its items, in the
    table, its CSV and a plot that puts the reference on the judge's own row; the definition is on the page."""
    b, ws_dir = app
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    b.open("Judges")
    agree = b.assert_csv_is_grid("judges-agreement")
    checked = 0
    for judge, entry in report["judges"].items():
        row = agree[agree["judge"] == judge].iloc[0]
        like = (entry.get("reference") or {}).get("like_for_like") or {}
        if like.get("pairwise"):
            pw = like["pairwise"]
            assert row["κ with each annotator"] == _fmt(pw["judge"]["kappa"])
            assert row["annotators with each other (same items, same way)"] == (
                f"{_fmt(pw['humans']['kappa'])} ({like['n_items']} items)")
            checked += 1
        elif entry.get("kind") == "pairwise":
            assert row["κ with each annotator"] == "not measured (needs two annotators)"
    assert checked >= 2  # the recorded PandaLM judges, three annotators each
    text = b.text()
    assert "Like with like" in text and "measured the same way (pairwise mean Cohen's κ) on the same items" in text
    plot = b.page.locator(".st-key-like-plot")
    plot.wait_for(state="attached", timeout=30_000)
    legend = " ".join(plot.locator("text").all_text_contents())
    assert "annotators with each other (same items)" in legend and "judge with each annotator" in legend
    # no humans' line on the consensus plots: only chance is drawn there
    for key in ("acc-plot", "kappa-plot"):
        labels = " ".join(b.page.locator(f".st-key-{key} text").all_text_contents())
        assert "humans" not in labels and "chance" in labels
    b.page.screenshot(path=str(ws_dir / "judges-like.png"), full_page=True)


def test_biases_say_what_was_not_tested_and_explain_flags(app):
    b, ws_dir = app
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    b.open("Biases")
    pos = b.assert_csv_is_grid("biases-position")
    first = report["judges"]["replay/x/both-orders"]["metrics"]["first_position_rate"]
    row = pos[(pos["judge"] == "replay/x/both-orders") & (pos["metric"] == "Picks the first shown")]
    assert row["estimate (95% CI)"].item() == _fmt(first)
    q = first["q"]
    assert row["q (BH)"].item() == ("< 0.001" if q < 0.001 else f"{q:.3f}")
    inj = b.csv("biases-injection")  # no judge went through the injection probe
    assert set(inj["estimate (95% CI)"]) == {"not tested"}
    assert all(m.startswith("not tested (") for m in inj["matters?"])
    flags = b.csv("biases-flags") if any(e.get("flags") for e in report["judges"].values()) else None
    if flags is not None:
        from judgecal.apps.page_overview import flag_text

        from judgecal.audit.decision import flag_words

        want = sorted((j, flag_text(f, flag_words())) for j, e in report["judges"].items() for f in e.get("flags", []))
        assert sorted(zip(flags["judge"], flags["flag"], strict=True)) == want
        assert all(m and "_" not in m for m in flags["flag"])  # words, not codes (`<probe>: underpowered` spelt out)
    assert b.page.locator(".js-plotly-plot").count() >= 1


def test_models_annotators_spans_and_stability_pages(app):
    b, ws_dir = app
    _, _, ann = _hand(ws_dir)
    b.open("Annotators")
    src = b.assert_csv_is_grid("annotators-sources")
    assert dict(zip(src["source"], src["labels"].astype(int), strict=True)) == ann["source"].value_counts().to_dict()
    b.assert_csv_is_grid("annotators-quality")
    # one source at a time, as `judgecal annotators` computes it: never a pool of the two sources
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    per = report["annotators"]["by_source"]
    first = next(iter(per))
    agree = b.assert_csv_is_grid("annotators-agreement")
    assert agree.iloc[0]["value (95% CI)"] == _fmt(per[first]["fleiss_kappa"])
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "annotators", "-w", str(ws_dir), "--json",
                          "--out", str(ws_dir.parent / "annotators.json")], capture_output=True, text=True)
    cli = json.loads(res.stdout)["by_source"]
    assert set(cli) == set(per)
    for s in per:
        assert cli[s]["fleiss_kappa"]["estimate"] == pytest.approx(per[s]["fleiss_kappa"]["estimate"])
    b.open("Spans")
    b.select("spans-item", "0")
    spans = b.assert_csv_is_grid("spans-item-1")
    assert sorted(spans["marked"]) == ["fine", "ine"]  # "fine"[0:4] by the expert, [1:4] by the judge
    assert "⟦fine⟧" in b.text() and "f⟦ine⟧" in b.text()
    b.open("Stability")
    # the run was stored after the audit: the page says so and names the command; it scores nothing itself
    assert "1 stability run(s) stored but not yet in an audit" in b.text()
    assert "judgecal audit --workspace WS" in b.text()
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.data.store import Workspace
    from judgecal.report.write import write_report

    report_file = ws_dir / "reports" / "audit.json"
    before = report_file.read_bytes()
    ws = Workspace(ws_dir)
    try:  # audited again, the run is in the report, and the page shows the report's figures
        write_report(audit_workspace(ws, AuditOptions(consensus=TRUTH, n_boot=200)).to_json(), ws.reports_dir)
    finally:
        ws.close()
    want = json.loads(report_file.read_text())["judges"]["replay/x/scorer"]["stability"]["score"]
    b.open("Spans")
    b.open("Stability")
    stab = b.assert_csv_is_grid("stability-scores")
    row = stab[stab["judge"] == "replay/x/scorer"].iloc[0]
    lo, hi = want["ci"]
    assert row["Stability Score"] == f"{want['score']:.3f} ({lo:.3f}–{hi:.3f})"
    assert row["weakest figure"] == want["figure"]
    b.assert_csv_is_grid("stability-figures")
    axes = b.assert_csv_is_grid("stability-axes")  # the per-axis breakdown of the selected judge's runs
    assert set(axes["axis"]) == {"repeat"}  # one axis: it carries every moved figure's whole variance
    shares = pd.to_numeric(axes["share"], errors="coerce").dropna()
    assert len(shares) >= 1 and (shares == 1.0).all()
    report_file.write_bytes(before)  # the module's other tests read the first audit
    b.open("Models")
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    if report.get("models", {}).get("ranking"):
        rank = b.assert_csv_is_grid("models-ranking")
        assert list(rank["model"]) == report["models"]["ranking"]["humans"]
        bt = report["models"].get("bradley_terry", {}).get("humans") or {}
        for _, row in rank.iterrows():  # the strength beside its interval, never "n/a (lo–hi)"
            if row["model"] in bt:
                assert row["Bradley–Terry (95% CI)"].startswith(f"{bt[row['model']]['score']:.3f} (")


def _count(b):
    m = re.search(r"([\d,]+) items match", b.text())
    assert m, b.text()[:500]
    return int(m.group(1).replace(",", ""))


def test_items_each_filter_and_the_side_by_side_view(app):
    b, ws_dir = app
    by, truth, ann = _hand(ws_dir)
    b.open("Items")
    b.select("items-judge", "replay/x/both-orders")
    mine = by["replay/x/both-orders"]
    assert _count(b) == len(mine)
    b.assert_csv_is_grid("items")
    b.tick("f-humans")
    assert _count(b) == sum(1 for i, v in mine.items() if i in truth and _iv(*v) != truth[i])
    b.tick("f-humans")
    b.tick("f-orders")
    assert _count(b) == sum(1 for ab, ba in mine.values() if ab and ba and ab != ba)
    b.tick("f-orders")
    b.tick("f-judges")
    split = {i for i in mine if len({_iv(*by[j][i]) for j in by if i in by[j]}) > 1}
    assert _count(b) == len(split)
    b.tick("f-judges")
    b.tick("f-spans")
    assert _count(b) == 1  # of its 60 items, only pandalm/2 has spans
    b.tick("f-spans")
    b.multiselect("f-source", "review-2026")
    assert _count(b) == 1  # pandalm/1
    b.clear("f-source")
    # category and model: the evil item, judged by replay/x/evil
    b.select("items-judge", "replay/x/evil")
    b.multiselect("f-category", "evil-cat")
    assert _count(b) == 1
    b.clear("f-category")
    b.multiselect("f-model", "evil-model")
    assert _count(b) == 1
    b.clear("f-model")
    # the side-by-side view of an item, opened by id: prompt, both responses, every verdict and raw text
    b.page.get_by_label("Open an item by id (any item, listed or not)").fill("pandalm/5")
    b.page.keyboard.press("Enter")
    b.idle()
    b.page.get_by_text("rationale 5 BA").first.wait_for(state="attached", timeout=30_000)
    verdicts = b.assert_csv_is_grid("item-judgments")
    assert sorted(verdicts["judge"].unique()) == sorted(j for j in by if "pandalm/5" in by[j])
    labels = b.csv("item-labels")
    assert sorted(labels["annotator"]) == sorted(ann[ann["item_id"] == "pandalm/5"]["annotator"])
    cons = b.csv("item-consensus")
    assert all(re.fullmatch(r"([A-Za-z_]+ \d\.\d{3}(, )?)+", p) for p in cons["posterior"])  # never 1.88e-05
    # the evil item: its text shown as text, never run
    b.page.get_by_label("Open an item by id (any item, listed or not)").fill("0")
    b.page.keyboard.press("Enter")
    b.idle()
    body = b.text()
    assert f"Evil prompt {EVIL}" in body and "model: evil-model" in body
    assert b.page.locator("img[src='x']").count() == 0
    b.page.screenshot(path=str(ws_dir / "items.png"), full_page=True)
    assert b.dialogs == []
