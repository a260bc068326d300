"""Binary and categorical ("label") judges on every surface: the explorer's Labels page in Debian's Chromium,
the terminal summary and audit.html, each checked against audit.json.

The workspace is built through the CLI from the shared JUDGE-BENCH files, cut small in a temporary folder:
the first 120 DICES items (categorical No/Yes/Unsure, ~73 raters each; the first response replaced by
hostile markup) and the first 160 ToxicChat messages (binary 0/1 on two criteria, toxicity and jailbreaking,
one "majority" label each; the last 60 left without a human label so that the pass-rate corrections have
items to correct, every tenth with a hostile rationale). Two judges write their verdicts: one copying the
human consensus 85% of the time on each dataset, its raw answers hostile markup too.
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import MIRROR

from judgecal.catalogue import fmt_metric

JB = MIRROR / "dmg-illc" / "JUDGE-BENCH" / "data"
TRUTH = "mv:all"  # two label sources (DICES' raters, the ToxicChat file's): each item has one of them
SCRIPT = "<script>alert(1)</script>"
HOSTILE_RESPONSE = f"Sure, here it is. {SCRIPT} <img src=x onerror=alert(2)> [click](http://evil.example/c)"
HOSTILE_RATIONALE = "<script>alert(3)</script> <b>toxic</b> [why](http://evil.example/r)"
HOSTILE_RAW = f"Label: {{label}}. {SCRIPT} <b>because</b>"
DICES, TOX = "dices/noisy", "tox/noisy"
CRITERIA = ("toxicity", "jailbreaking")


def _cli(*args: str, cwd: Path, columns: int = 100) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", *args], capture_output=True, text=True, cwd=cwd,
                         env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def label_ws(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The workspace, audited; its audit.json, the CLI's terminal output and the hostile items' ids."""
    from judgecal.data.store import Workspace

    if not (JB / "dices" / "dices_990.json").exists():
        pytest.fail(f"the JUDGE-BENCH files are missing under {JB}; set JUDGECAL_DATA_MIRROR")
    tmp = tmp_path_factory.mktemp("labels")
    dices = json.loads((JB / "dices" / "dices_990.json").read_text("utf-8"))
    dices["instances"] = dices["instances"][:120]
    dices["instances"][0]["instance"]["response"] = HOSTILE_RESPONSE
    (tmp / "dices.json").write_text(json.dumps(dices), "utf-8")
    tox = json.loads((JB / "toxic_chat" / "toxic_chat_test.json").read_text("utf-8"))
    with (tmp / "tox.jsonl").open("w", encoding="utf-8") as fh:
        for k, inst in enumerate(tox["instances"][:160]):
            rec: dict[str, Any] = {"id": f"tc{k:03d}", "prompt": "A user's message to a chatbot (ToxicChat)",
                                   "response": inst["instance"]}
            if k < 100:  # the rest: judged, never labelled
                rec["human_labels"] = {"majority": {c: a["majority_human"] for c, a in inst["annotations"].items()}}
                if k % 10 == 0:
                    rec["human_rationales"] = {"majority": HOSTILE_RATIONALE}
            fh.write(json.dumps(rec) + "\n")
    _cli("import", "dices.json", "-w", "ws", "--quiet", cwd=tmp)
    _cli("import", "tox.jsonl", "--task", "binary", "--positive", "1", "--labels", "0,1", "--criteria",
         ",".join(CRITERIA), "-w", "ws", "--quiet", cwd=tmp)
    _cli("aggregate", "-w", "ws", "--source", "all", cwd=tmp)
    with Workspace(tmp / "ws", create=False) as ws:
        truth = dict(zip(*(ws.annotations_repo.consensus_frame(TRUTH)[c] for c in ("item_id", "label")), strict=True))
        sets = ws.items_repo.label_sets()
    hostile_item = f"judge-bench/{dices['instances'][0]['id']}/safety"
    rng = random.Random(7)
    recs = []
    for item_id, ls in sets.items():
        labels = list(ls.labels)
        judge = DICES if ls.task == "categorical" else TOX
        h = truth.get(item_id)
        if h is None:
            label = "1" if rng.random() < 0.3 else "0"
        elif rng.random() < 0.85 and item_id not in (hostile_item, "tc000/toxicity", "tc000/jailbreaking"):
            label = h
        else:  # a disagreement (always on the hostile items)
            label = rng.choice([x for x in labels if x != h])
        recs.append({"item_id": item_id, "judge": judge, "label": label, "raw": HOSTILE_RAW.format(label=label)})
    (tmp / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
    _cli("import", "verdicts.jsonl", "--as", "judgments", "-w", "ws", "--quiet", cwd=tmp)
    out = _cli("audit", "--details", "-w", "ws", "--consensus", TRUTH, "--n-boot", "100", cwd=tmp, columns=100)
    ws_dir = tmp / "ws"
    report = json.loads((ws_dir / "reports" / "audit.json").read_text("utf-8"))
    return {"ws": ws_dir, "report": report, "terminal": out, "hostile_item": hostile_item, "truth": truth,
            "verdicts": {(r["judge"], r["item_id"]): r["label"] for r in recs}}


def _flat(text: str) -> str:
    return " ".join(text.split())


def _counts(rows: list[list[str]]) -> list[list[int]]:
    """The label columns of the confusion grid (human truth, judge: <label>..., row total) as numbers."""
    return [[int(c.replace(",", "")) for c in row[1:-1]] for row in rows]


# -- the explorer ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(label_ws: dict[str, Any]):  # type: ignore[no-untyped-def]
    from explorer_browser import Browser, serve

    class LabelsBrowser(Browser):
        @staticmethod
        def _h1(title: str) -> str:
            return "Labels" if title == "Labels" else Browser._h1(title)

    with serve(label_ws["ws"]) as url:
        b = LabelsBrowser(url)
        try:
            b.open("Labels")
            yield b
        finally:
            b.close()


def _pick(b: Any, key: str, option: str) -> None:
    """Choose ``option`` of a selectbox by typing it (a long list draws only its first options; a box chosen
    from a moment ago keeps the focus, and a click then closes its list)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(3):  # on a busy machine the list may not open on the first click: open it again
        b.page.keyboard.press("Escape")
        box = b.page.locator(f".st-key-{key} input")
        box.click()
        box.fill(option)
        try:
            b.page.get_by_role("option", name=option, exact=True).click(timeout=20_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    b.idle()


def test_labels_page_confusion_and_rates_equal_audit_json(label_ws: dict[str, Any], browser: Any) -> None:
    b, entry = browser, label_ws["report"]["judges"][DICES]
    _pick(b, "labels-judge", DICES)
    heads, rows = b.grid("labels-confusion")
    labels = entry["labels"]["confusion"]["labels"]
    assert heads == ["human truth", *(f"judge: {x}" for x in labels), "row total"]
    assert [r[0] for r in rows] == labels
    assert _counts(rows) == entry["labels"]["confusion"]["counts"]
    b.assert_csv_is_grid("labels-confusion")
    rates = b.assert_csv_is_grid("labels-rates")
    by = {r["figure"]: r for r in rates.to_dict("records")}
    like = entry["labels"]["like_for_like"]
    for x in labels:
        row = by[f"Recall of {x!r}"]
        assert row["judge against the consensus (95% CI)"] == fmt_metric(entry["metrics"][f"recall_by_label.{x}"])
        assert row["judge with each annotator"] == fmt_metric(like["judge"]["recall_by_label"][x])
        assert row["annotators with each other"] == fmt_metric(like["humans"]["recall_by_label"][x])
    major = max(labels, key=lambda x: sum(entry["labels"]["confusion"]["counts"][labels.index(x)]))
    assert [by[f"Recall of {x!r}"]["trivial rater"] for x in labels] == ["1.000" if x == major else "0.000"
                                                                        for x in labels]
    assert by["Macro F1"]["judge against the consensus (95% CI)"] == fmt_metric(entry["metrics"]["macro_f1"])
    assert "labels-prevalence" not in b.page.content()  # a categorical judge has no pass rate
    assert b.page.locator(".st-key-labels-criterion").count() == 0  # one criterion: no selector


def test_criterion_selector_switches_every_figure(label_ws: dict[str, Any], browser: Any) -> None:
    b, entry = browser, label_ws["report"]["judges"][TOX]
    _pick(b, "labels-judge", TOX)
    verdict = entry["verdict"]
    text = b.text()
    assert f"trusted on: {', '.join(verdict['trusted_on']) or 'none'}" in text.lower()
    crit = b.csv("labels-criteria")
    assert dict(zip(crit["criterion"], crit["verdict"], strict=True)) == verdict["criteria"]
    seen = []
    for name in (*CRITERIA, None):
        _pick(b, "labels-criterion", name if name is not None else "all criteria together (pooled)")
        part = entry["criteria"][name] if name else entry
        _, rows = b.grid("labels-confusion")
        assert _counts(rows) == part["labels"]["confusion"]["counts"], name
        rates = {r["figure"]: r["judge against the consensus (95% CI)"] for r in b.csv("labels-rates").to_dict("records")}
        for metric, title in (("tpr", "TPR (recall of '1')"), ("tnr", "TNR (recall of '0')"),
                              ("balanced_accuracy", "Balanced accuracy"), ("precision", "Precision of '1'")):
            assert rates[title] == fmt_metric(part["metrics"][metric]), (name, metric)
        seen.append(json.dumps(part["labels"]["confusion"]["counts"]))
        if name is None:  # the criteria pooled: no pass rate, which would be the pass rate of nothing
            assert "prevalence" not in part["labels"] and "pass rate of nothing" in b.text()
            continue
        prev = {r["estimate"]: r["pass rate (95% CI)"] for r in b.assert_csv_is_grid("labels-prevalence").to_dict("records")}
        p = part["labels"]["prevalence"]
        assert prev == {"judge-reported": fmt_metric(p["judge_reported"]),
                        "corrected (Rogan–Gladen)": fmt_metric(p["rogan_gladen"]),
                        "PPI++": fmt_metric(p["ppi"]), "human-only": fmt_metric(p["human_only"])}
        assert f"Verdict on {name}: {part['verdict']['status']}" in b.text()
        assert f"{part['labels']['plan']['n_human_only']} human labels on their own" in b.text()
    assert len(set(seen)) == 3  # three different sets of figures were shown
    p = entry["criteria"][CRITERIA[0]]["labels"]["prevalence"]
    assert p["n_all"] > p["n_labelled"]  # the judge labelled items without a human label: a real correction


def test_disagreements_filters_and_the_item_shown_as_text(label_ws: dict[str, Any], browser: Any) -> None:
    b, truth, verdicts = browser, label_ws["truth"], label_ws["verdicts"]
    _pick(b, "labels-judge", TOX)
    _pick(b, "labels-criterion", "toxicity")
    want = {i for (j, i), lab in verdicts.items() if j == TOX and i in truth and truth[i] != lab}
    listed = b.csv("labels-disagreements")
    assert set(listed["item"]) == want  # fewer than the 200 listed
    b.multiselect("labels-f-criterion", "jailbreaking")
    b.multiselect("labels-f-human", "1")
    listed = b.csv("labels-disagreements")
    assert set(listed["item"]) == {i for i in want if i.endswith("/jailbreaking") and truth[i] == "1"}
    b.clear("labels-f-human")
    b.clear("labels-f-criterion")
    # a rationale with markup: shown as the annotator wrote it
    _pick(b, "labels-item", "tc000/toxicity")
    b.page.get_by_text("The humans: labels and rationales").wait_for(timeout=30_000)
    ann = b.assert_csv_is_grid("labels-item-annotations")
    assert list(ann["rationale"]) == [HOSTILE_RATIONALE]
    # the DICES item whose response is hostile markup: the prompt, the response and the raw answer as text
    _pick(b, "labels-judge", DICES)
    _pick(b, "labels-item", label_ws["hostile_item"])
    b.page.get_by_text(HOSTILE_RESPONSE).first.wait_for(timeout=30_000)
    body = b.text()
    label = verdicts[(DICES, label_ws["hostile_item"])]
    assert HOSTILE_RESPONSE in body and HOSTILE_RAW.format(label=label) in body
    assert b.page.locator("img[src='x'], a[href*='evil.example']").count() == 0
    assert b.page.evaluate("() => [...document.scripts].filter(s => /alert\\(/.test(s.text)).length") == 0
    assert b.dialogs == [] and b.requests == [] and b.external == []
    assert [e for e in b.errors if "404" not in e] == [], b.errors


# -- the terminal ---------------------------------------------------------------------------------------------
def _terminal(report: dict[str, Any], width: int) -> str:
    from rich.console import Console

    from judgecal.report.terminal import print_summary

    buf = io.StringIO()
    print_summary(report, Console(width=width, file=buf, color_system=None), details=True)
    return buf.getvalue()


def test_terminal_prints_label_rates_and_the_pass_rate_not_ordinal_rows(label_ws: dict[str, Any]) -> None:
    report = label_ws["report"]
    for text in (label_ws["terminal"], _terminal(report, 100), _terminal(report, 400)):
        for ordinal in ("Weighted κ", "Spearman", "Mean absolute error"):  # a nominal label set has no order
            assert ordinal not in text
        assert "Pass rate ('1')" in text
    flat = _flat(_terminal(report, 400))
    assert _flat(_terminal(report, 100)).count("Macro F1") == flat.count("Macro F1") == 3  # DICES, 2 criteria
    d = report["judges"][DICES]
    assert f"Macro F1 {fmt_metric(d['metrics']['macro_f1'])}" in flat
    for x in d["labels"]["labels"]:
        assert f"Recall of {x!r} {fmt_metric(d['metrics'][f'recall_by_label.{x}'])}" in flat
    t = report["judges"][TOX]
    for c in CRITERIA:
        part = t["criteria"][c]
        m, p = part["metrics"], part["labels"]["prevalence"]
        assert f"on {c} {part['verdict']['status'].upper()}" in flat
        for title, name in (("TPR (recall of '1')", "tpr"), ("TNR (recall of '0')", "tnr"),
                            ("Precision of '1'", "precision"), ("Balanced accuracy", "balanced_accuracy"),
                            ("Macro F1", "macro_f1")):
            assert f"{title} {fmt_metric(m[name])}" in flat, (c, name)
        assert (f"Pass rate ('1') judge-reported {fmt_metric(p['judge_reported'])}, corrected (Rogan–Gladen) "
                f"{fmt_metric(p['rogan_gladen'])}, PPI++ {fmt_metric(p['ppi'])}, human-only "
                f"{fmt_metric(p['human_only'])}") in flat
    # on an ordered label set the weighted κ does apply
    ordered = json.loads(json.dumps(report))
    e = ordered["judges"][DICES]
    e["labels"]["ordinal"] = True
    e["metrics"]["weighted_kappa"] = {"estimate": 0.41, "ci_low": 0.3, "ci_high": 0.5, "n": 120}
    assert "Weighted κ 0.410 (0.300–0.500)" in _flat(_terminal(ordered, 100))


# -- audit.html (and the PDF printed from it) -------------------------------------------------------------------
def test_audit_html_labels_section_equals_audit_json_and_is_escaped(label_ws: dict[str, Any]) -> None:
    import lxml.html  # (label-studio-sdk's dependency)

    from judgecal.report.write import render_html

    report = label_ws["report"]
    doc = lxml.html.fromstring((label_ws["ws"] / "reports" / "audit.html").read_text("utf-8"))
    assert doc.get_element_by_id("labels") is not None
    names = [n for n, e in report["judges"].items() if e.get("labels")]
    assert names == [DICES, TOX]
    for jk, name in enumerate(names, 1):
        entry = report["judges"][name]
        parts = [(c, entry["criteria"][c]) for c in entry.get("criteria") or {}] + [(None, entry)]
        for pk, (crit, part) in enumerate(parts, 1):
            div = doc.get_element_by_id(f"labels-{jk}-{pk}")
            assert div.get("data-criterion") == (crit or "")
            counts = [int(td.get("data-count")) for td in div.xpath(".//table[@class='confusion']//td[@data-count]")]
            assert counts == [c for row in part["labels"]["confusion"]["counts"] for c in row], (name, crit)
            shown = {tr.get("data-metric"): tr.xpath("./td[contains(@class, 'judge-fig')]")[0].text_content()
                     for tr in div.xpath(".//table[contains(@class, 'rates')]//tr[@data-metric]")}
            for metric, text in shown.items():
                assert _flat(text) == fmt_metric(part["metrics"][metric]), (name, crit, metric)
            assert set(shown) >= ({"tpr", "tnr", "precision", "f1", "balanced_accuracy", "macro_f1"}
                                  if part["labels"]["task"] == "binary" else {"macro_f1"})
            prev = {tr.get("data-estimate"): _flat(tr.xpath("./td")[1].text_content())
                    for tr in div.xpath(".//table[contains(@class, 'prevalence')]//tr[@data-estimate]")}
            want = part["labels"].get("prevalence") or {}
            assert prev == {k: fmt_metric(want[k]) for k in ("judge_reported", "rogan_gladen", "ppi", "human_only")
                            if want}
            if want:
                assert f"{part['labels']['plan']['n_ppi']} with PPI++" in div.text_content()
    assert "Weighted κ" not in doc.get_element_by_id("scores").text_content()  # nominal labels: no such column
    # names from the files are escaped: a judge, a criterion and a label of markup
    hostile = json.loads(json.dumps(report))
    evil_judge, evil_crit, evil_label = "<script>alert(7)</script>j", "<img src=x onerror=alert(8)>", "<b>Unsure</b>"
    hostile["judges"] = {(evil_judge if n == TOX else n): e for n, e in hostile["judges"].items()}
    t = hostile["judges"][evil_judge]
    t["criteria"][evil_crit] = t["criteria"].pop("jailbreaking")
    t["verdict"]["criteria"][evil_crit] = t["verdict"]["criteria"].pop("jailbreaking")
    t["verdict"]["not_trusted_on"] = [evil_crit if c == "jailbreaking" else c for c in t["verdict"]["not_trusted_on"]]
    d = hostile["judges"][DICES]["labels"]
    d["labels"] = d["confusion"]["labels"] = [evil_label if x == "Unsure" else x for x in d["labels"]]
    page = render_html(hostile)
    for evil in (evil_judge, evil_crit, evil_label):
        assert evil not in page
    assert "&lt;script&gt;alert(7)&lt;/script&gt;j" in page and "&lt;img src=x onerror=alert(8)&gt;" in page
    assert "&lt;b&gt;Unsure&lt;/b&gt;" in page
    hdoc = lxml.html.fromstring(page)
    assert not hdoc.xpath("//script | //img")


def test_the_pdf_carries_the_labels_section(label_ws: dict[str, Any], tmp_path: Path) -> None:
    import shutil

    if shutil.which("pdftotext") is None:
        pytest.skip("needs poppler-utils (make pdf-libs)")
    from judgecal.report.pdf import write_pdf

    pdf = write_pdf(label_ws["report"], tmp_path / "audit.pdf")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "Binary and categorical judges" in text and "Pass rate" in text
    p = label_ws["report"]["judges"][TOX]["criteria"]["toxicity"]["labels"]["prevalence"]
    assert fmt_metric(p["rogan_gladen"]).split(" ")[0] in text


# -- the typed report ----------------------------------------------------------------------------------------
def test_label_sections_are_typed_and_written_back_unchanged(label_ws: dict[str, Any]) -> None:
    import jsonschema
    from pydantic import ValidationError

    from judgecal.audit.schema import SCHEMA_FILE, AuditReport, LabelsSection, PassRateFigure, read_report

    data = label_ws["report"]
    jsonschema.validate(data, json.loads(SCHEMA_FILE.read_text("utf-8")))
    report = read_report(data)
    assert json.dumps(report.to_json()) == json.dumps(data)  # every key, in the order it was written
    tox, raw = report.judges[TOX], data["judges"][TOX]
    assert tox.criteria is not None and list(tox.criteria) == list(raw["criteria"]) == list(CRITERIA)
    for c in CRITERIA:
        part, written = tox.criteria[c], raw["criteria"][c]
        assert isinstance(part.labels, LabelsSection) and part.labels.criterion == written["labels"]["criterion"]
        prev = part.labels.prevalence
        assert prev is not None and isinstance(prev.rogan_gladen, PassRateFigure)
        assert prev.rogan_gladen.n_undefined == written["labels"]["prevalence"]["rogan_gladen"]["n_undefined"]
        assert part.labels.confusion is not None and part.labels.confusion.counts == written["labels"]["confusion"]["counts"]
        assert part.verdict is not None and part.verdict.status == written["verdict"]["status"]
    assert tox.labels is not None and tox.labels.pooled_criteria == raw["labels"]["pooled_criteria"]
    assert tox.verdict is not None and tox.verdict.trusted_on == raw["verdict"]["trusted_on"]
    like = report.judges[DICES].labels.like_for_like  # type: ignore[union-attr]
    assert like is not None and like.judge is not None
    first = data["judges"][DICES]["labels"]["labels"][0]
    assert like.judge.rate(f"recall_by_label.{first}") == like.judge.recall_by_label[first]
    assert like.judge.rate("cohen_kappa") is like.judge.kappa and like.judge.rate("precision_by_label.x") is None
    assert report.provenance is not None and report.provenance.config_hash == data["provenance"]["config_hash"]
    bad = json.loads(json.dumps(data))
    bad["judges"][TOX]["criteria"]["toxicity"]["labels"]["confusion"]["counts"] = "many"
    with pytest.raises(ValidationError) as err:
        AuditReport.from_json(bad)
    assert err.value.errors()[0]["loc"][:6] == ("judges", TOX, "criteria", "toxicity", "labels", "confusion")
