"""The printable trust report: PandaLM's recorded judges and the real embedded judge at three temperatures (five
judges), audited through the CLI with --pdf; page one (read back with pdftotext) ranks every judge, and the
decision part that it opens (each judge in brief: its verdict, the reason that matters most and its like-for-like
reference) is followed by the detail, then the appendix."""

import json
import os
import re
import shutil
import subprocess

import pytest

from judgecal.catalogue import fmt_metric
from judgecal.cli import main

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils (make pdf-libs)")


def page_text(pdf, first: int, last: int | None = None) -> str:
    out = subprocess.run(["pdftotext", "-f", str(first), "-l", str(last or first), str(pdf), "-"],
                         capture_output=True, text=True, check=True).stdout
    return re.sub(r"\s+", " ", out)


FOOTER = re.compile(r"judgecal trust report · configuration [0-9a-f]+ page \d+ of \d+ ?")


def decision_text(pdf) -> str:
    """The decision part (page one and the judges in brief that may run onto the next page), footers left out:
    the text before the detail's first line (the environment, or the scores)."""
    text = FOOTER.sub("", page_text(pdf, 1, pages_of(pdf)))
    return re.split(r"Environment: judgecal |Scores Judge ", text, maxsplit=1)[0]


@pytest.fixture(scope="module")
def audited(tmp_path_factory, mirror):
    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    ws = tmp_path_factory.mktemp("pdf") / "ws"
    assert main(["import", "pandalm", "-w", str(ws)]) == 0
    for temperature in ([], ["--temperature", "0.7"], ["--temperature", "1.0"]):  # three specs: three judges
        assert main(["judge", "--judge", "local/smollm2", *temperature, "--items", "12", "--quiet", "-w", str(ws)]) == 0
    out = ws / "reports"
    assert main(["audit", "--pdf", "--n-boot", "200", "-w", str(ws)]) == 0
    return out, json.loads((out / "audit.json").read_text())


def test_page_one_opens_with_every_verdict(audited):
    out, rep = audited
    pdf = out / "audit.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    first = page_text(pdf, 1)
    ranking = "".join(first.split("Every judge, closest to the humans first", 1)[1].split())
    for name in rep["judges"]:  # page one ranks every judge (a long name may wrap in its cell)
        assert "".join(name.split()) in ranking, name
    one = decision_text(pdf)
    assert set(rep["judges"]) == {"local/smollm2", "local/smollm2[temperature=0.7]", "local/smollm2[temperature=1.0]",
                                  "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"}
    for name, j in rep["judges"].items():
        v = j["verdict"]
        assert f"{name}: {v['status']}" in one, name
        assert f"Most important: {' '.join(v['reasons'][0].split())}" in one, name  # most serious first
        # pdftotext joins a word hyphenated across a line ("chain-of-" / "thought" -> "chain-ofthought")
        assert f"Not tested: {', '.join(v['not_tested_probes'])}".replace("-", "") in one.replace("-", ""), name
        # the judge with each annotator beside the annotators with each other on the same items, chance, trivial
        lfl = j["reference"]["like_for_like"]
        pw = lfl["pairwise"]
        assert (f"κ with each annotator {fmt_metric(pw['judge']['kappa'])} {fmt_metric(pw['humans']['kappa'])} 0.000 0.000 "
                f"(always {lfl['trivial']['label']!r})") in one, name
        assert (f"Agrees with annotators {fmt_metric(pw['judge']['accuracy'])} {fmt_metric(pw['humans']['accuracy'])} "
                f"{pw['judge']['chance_accuracy']:.3f} {lfl['trivial']['accuracy']:.3f}") in one, name
    # the embedded judge is barely better than chance on these items: not aligned
    assert rep["judges"]["local/smollm2"]["verdict"]["status"] == "not aligned"
    cfg = rep["provenance"]["config_hash"]
    assert re.fullmatch(r"[0-9a-f]{16}", cfg) and f"configuration {cfg}" in first
    assert "page 1 of" in first


def test_detail_follows_with_the_environment(audited):
    out, rep = audited
    pdf = out / "audit.pdf"
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True,
                                                             text=True, check=True).stdout).group(1))
    assert pages >= 3
    everything = FOOTER.sub("", page_text(pdf, 1, pages))
    detail = everything[len(decision_text(pdf)):]
    assert detail.startswith("Environment: judgecal") and "Scores" in detail  # the detail follows the judges in brief
    assert "Most important:" not in detail and "Reasons, references and flags" in detail
    assert detail.index("Scores") < detail.index("Appendix") < detail.index("Each judge")
    env = rep["provenance"]["environment"]["judges"]["local/smollm2"]["common"]
    assert env["backend"] == "local" and env["model_sha256"] in everything
    assert "Each judge" in everything and "Models" in everything


def test_configuration_hash_is_stable_and_moves_with_the_settings(audited, tmp_path):
    out, rep = audited
    ws = out.parent
    assert main(["audit", "--n-boot", "200", "--out", str(tmp_path / "same"), "-w", str(ws)]) == 0
    assert main(["audit", "--n-boot", "201", "--out", str(tmp_path / "other"), "-w", str(ws)]) == 0
    same = json.loads((tmp_path / "same" / "audit.json").read_text())["provenance"]
    other = json.loads((tmp_path / "other" / "audit.json").read_text())["provenance"]
    assert same["config_hash"] == rep["provenance"]["config_hash"] != other["config_hash"]
    assert same["truth_digest"] == other["truth_digest"]


def test_stability_statement_on_page_one(audited, tmp_path):
    import copy

    from judgecal.report.pdf import write_pdf

    rep = copy.deepcopy(audited[1])  # the module's shared audit stays as audited (later tests compare with it)
    rep["judges"]["local/smollm2"]["stability"] = {
        "score": {"figure": "accuracy", "score": 75.0, "ci": [60.0, 90.0], "run_id": "r"}, "guard": "pass",
        "runs": [{"run_id": "r", "variants": [{}] * 4,
                  "figures": {"accuracy": {"sigma_pp": 0.5, "score": 75.0, "n_variants": 4}}}]}
    pdf = write_pdf(rep, tmp_path / "s.pdf")
    assert "stable within ±1.0 points at 95% confidence" in decision_text(pdf)


def test_measured_stability_is_stated_on_page_one(tmp_path, mirror):
    """Prometheus' three GPT-4 scores per MT-Bench response, stored as a stability run, then audited."""
    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    ws = tmp_path / "ws"
    assert main(["import", "prometheus/mt-bench", "-w", str(ws)]) == 0
    assert main(["stability", "repeats", "--judge", "replay/prometheus/gpt-4", "-w", str(ws)]) == 0
    assert main(["audit", "--pdf", "--n-boot", "200", "-w", str(ws)]) == 0
    rep = json.loads((ws / "reports" / "audit.json").read_text())
    stab = rep["judges"]["replay/prometheus/gpt-4"]["stability"]
    figure = stab["score"]["figure"]
    fig = stab["runs"][-1]["figures"][figure]
    assert fig["score"] == min(f["score"] for f in stab["runs"][-1]["figures"].values() if f["score"] is not None)
    x = 1.959963984540054 * fig["sigma_pp"]
    assert f"stable within ±{x:.1f} points at 95% confidence" in decision_text(ws / "reports" / "audit.pdf")


def test_report_command_renders_a_stored_audit(audited, tmp_path, capsys):
    out, rep = audited
    pdf, html = tmp_path / "again.pdf", tmp_path / "again.html"
    assert main(["report", "pdf", str(out / "audit.json"), "--out", str(pdf)]) == 0
    assert main(["report", "html", str(out / "audit.json"), "--out", str(html)]) == 0
    one = decision_text(pdf)
    for name, j in rep["judges"].items():
        assert f"{name}: {j['verdict']['status']}" in one
    assert html.read_text() == (out / "audit.html").read_text()
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    for text, why in (('{"schema": ', "line 1: not valid JSON"), ('{"judges": {}}', "schema: not an audit.json"),
                      ("\xff\xfe", "not UTF-8 text")):
        bad.write_bytes(text.encode("latin-1"))
        assert main(["report", "pdf", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"judgecal report: {bad}: ") and why in err and len(err.splitlines()) == 1


def pages_of(pdf) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"Pages:\s+(\d+)", info).group(1))


DETAIL = ("Scores", "Reasons, references and flags", "What the figures mean", "Appendix", "Each judge", "The humans",
          "Provenance")


def test_summary_only_is_page_one_alone(audited, tmp_path, capsys):
    """`audit --summary-only --pdf` and `report pdf|html --summary-only`: page one without the detail; the audit
    itself (audit.json) is the same."""
    out, rep = audited
    ws = out.parent
    full_one = decision_text(out / "audit.pdf")
    n = pages_of(out / "audit.pdf")
    # five judges; each judge's bias profile chart adds a page to the eight the detail took before it
    assert 2 < n <= 9 and all(h in page_text(out / "audit.pdf", 2, n) for h in DETAIL)
    assert main(["audit", "--pdf", "--summary-only", "--n-boot", "200", "--out", str(tmp_path / "a"), "-w", str(ws)]) == 0
    short = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert short["judges"] == rep["judges"] and short["provenance"]["config_hash"] == rep["provenance"]["config_hash"]
    again = str(tmp_path / "a" / "audit.json")
    assert main(["report", "pdf", again, "--summary-only", "--out", str(tmp_path / "r.pdf")]) == 0
    assert main(["report", "html", again, "--summary-only", "--out", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text() == (tmp_path / "a" / "audit.html").read_text()
    html = (tmp_path / "r.html").read_text()
    assert 'id="detail"' not in html and 'id="summary-5"' in html
    for pdf in (tmp_path / "a" / "audit.pdf", tmp_path / "r.pdf"):
        assert pages_of(pdf) <= 2  # five judges in brief after the comparison
        one = FOOTER.sub("", page_text(pdf, 1, pages_of(pdf)))
        assert not [h for h in DETAIL if h in one]
        assert "Summary only: the per-judge detail is left out" in one
        # the decision part as in the full report, every judge's verdict and reason in it
        assert one.split("Summary only:")[0].split("Summary: can each judge")[1].strip() == \
            full_one.split("Summary: can each judge")[1].strip()
        for name, j in rep["judges"].items():
            assert f"{name}: {j['verdict']['status']}" in one


def test_three_judges_make_a_short_decision_document(audited, tmp_path):
    """Three judges (as the demo has) in seven pages at most (six before each judge's bias profile chart): page one ranks them by their gap to the humans and
    names the best; each reason is said once; the key/value listings of audit.json stay in audit.html."""
    from judgecal.catalogue import FLAGS
    from judgecal.report.pdf import write_pdf
    from judgecal.report.view import merged_reasons

    out, rep = audited
    three = {**rep, "judges": {k: v for k, v in rep["judges"].items() if "temperature" not in k}}
    assert len(three["judges"]) == 3
    pdf = write_pdf(three, tmp_path / "three.pdf")
    n = pages_of(pdf)
    assert n <= 7
    one, rest = page_text(pdf, 1), page_text(pdf, 2, n)
    gaps = {k: v["reference"]["like_for_like"]["pairwise"]["difference"]["kappa"]["estimate"]
            for k, v in three["judges"].items()}
    ranked = sorted(gaps, key=lambda k: -gaps[k])
    table = one.split("Every judge, closest to the humans first", 1)[1]
    assert [table.index(f"{gaps[k]:+.3f}") for k in ranked] == sorted(table.index(f"{gaps[k]:+.3f}") for k in ranked)
    best = three["judges"][ranked[0]]["verdict"]["status"]
    assert f"Best available judge: {ranked[0]} ({best}, {gaps[ranked[0]]:+.3f} to the humans)" in one
    assert ("it may replace people" in one) == (best == "aligned")
    assert "Appendix" in rest and "In audit.html" in rest and "ci low" not in rest  # no key/value dumps
    words = {f.words for f in FLAGS.values()}
    everything = FOOTER.sub("", page_text(pdf, 1, n))
    said = {name: [" ".join(r.split()) for r in merged_reasons(j["verdict"]["reasons"])]
            for name, j in three["judges"].items()}
    judges_saying = {r: sum(r in rs for rs in said.values()) for rs in said.values() for r in rs}
    for name, reasons in said.items():  # once for each judge it is a reason of (two judges may share one)
        assert everything.count(reasons[0]) == judges_saying[reasons[0]], name
        for r in reasons[1:]:
            if r not in words:  # a flag's words are also defined once in the flags' legend
                assert everything.count(r) == judges_saying[r], (name, r)
