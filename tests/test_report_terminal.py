"""`judgecal audit` in a terminal: nothing truncated at 80 columns, the catalogue's titles and number
format; `--json` on the commands that print tables parses and matches what they write."""

import json
import os

import pytest

from judgecal.catalogue import SUMMARY_METRICS, fmt_metric, info
from judgecal.cli import main
from judgecal.data.records import Annotation, Candidate, Item, Judgment
from judgecal.data.store import Workspace

LONG = "openai/gpt-4o-mini-2024-07-18[temperature=0.7,rubric=pairwise-with-ties]"


@pytest.fixture(scope="module")
def ws_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("term") / "ws"
    ws = Workspace(path)
    ws.items_repo.add_items([Item(f"i{k}", f"q{k}", [Candidate("a" * (k % 5 + 1)), Candidate("b")]) for k in range(40)])
    ws.annotations_repo.add_annotations([Annotation(f"i{k}", a, "A" if (k + n) % 4 else "B") for k in range(40)
                        for n, a in enumerate(("ann-1", "ann-2", "ann-3"))])
    rows = [Judgment(key=f"{j}{k}{o}", item_id=f"i{k}", judge=j, spec_hash="s", order=o,
                     verdict="A" if (o == "AB" or k % 3) else "B")
            for j in (LONG, "local/smollm2") for k in range(40) for o in ("AB", "BA")]
    ws.judgments_repo.add_judgments(rows)
    ws.close()
    return path


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_80_columns_never_truncate(ws_path, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "80")
    out, _ = run(capsys, "audit", "--details", "--n-boot", "200", "--out", str(tmp_path), "-w", str(ws_path))
    rep = json.loads((tmp_path / "audit.json").read_text())
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in out
    assert "..." not in " ".join(out.split()).replace("--mutation paraphrase ...", "")  # a command's own "..."
    assert any(line.startswith(LONG) for line in lines)  # the whole name on one line
    for judge, entry in rep["judges"].items():
        for m in SUMMARY_METRICS:
            title, value = info(m).title, fmt_metric(entry["metrics"].get(m))
            assert any(line.startswith(title) and value in line for line in lines), (judge, m)
        assert f"{judge}: {entry['verdict']['status'].upper()}" in " ".join(out.split())
    k = rep["judges"][LONG]["metrics"]["cohen_kappa"]
    assert f"{k['estimate']:.3f} ({k['ci_low']:.3f}–{k['ci_high']:.3f})" in out


def column(lines: list[str], header: str, next_header: str) -> str:
    """The text of one column of the page-one table, its folded lines joined."""
    k = next(k for k, line in enumerate(lines) if header in line)
    start = lines[k].index(header)
    end = lines[k].find(next_header) if next_header in lines[k] else None
    rows = lines[k + 1:next(j for j, line in enumerate(lines) if line.startswith("best available"))]
    return " ".join(" ".join(line[start:end].strip() for line in rows).split())


@pytest.mark.parametrize("width", [80, 150])
def test_page_one_is_one_table_ranked_by_the_gap(ws_path, capsys, monkeypatch, tmp_path, width):
    """By default one table, a row per judge closest to the humans first, then the best judge: nothing cut,
    no line twice, and none of the details' blocks."""
    monkeypatch.setenv("COLUMNS", str(width))
    out, _ = run(capsys, "audit", "--n-boot", "200", "--out", str(tmp_path), "-w", str(ws_path))
    rep = json.loads((tmp_path / "audit.json").read_text())
    lines = [line.rstrip() for line in out.splitlines()]
    assert max(len(line) for line in lines) <= width and "…" not in out
    below = [line for line in lines[next(k for k, x in enumerate(lines) if x.startswith("best available")):] if line]
    assert len(below) == len(set(below))  # (the two judges here are the same verdicts: their rows read alike)
    flat = " ".join(out.split())
    reasons = column(lines, "the reason that matters most", "not tested")
    gaps = {}
    for name, entry in rep["judges"].items():
        d = entry["reference"]["like_for_like"]["pairwise"]
        gaps[name] = d["difference"]["kappa"]["estimate"]
        for side in ("judge", "humans"):  # each figure whole on a line
            assert any(fmt_metric(d[side]["kappa"]) in line for line in lines)
        assert f"{gaps[name]:+.3f}" in flat
        assert " ".join(entry["verdict"]["reasons"][0].split()) in reasons  # the reason that matters most, whole
        assert len(entry["verdict"]["reasons"]) < 2 or entry["verdict"]["reasons"][1] not in reasons
    order = sorted(gaps, key=lambda n: -gaps[n])  # (equal gaps here: the ranking is tested on PandaLM)
    assert f"best available judge: {order[0]} ({rep['judges'][order[0]]['verdict']['status']}" in flat
    assert not any(line.startswith(("  ?", "  !", "  =", "  -")) for line in lines)  # the blocks: --details only
    assert f"wrote {tmp_path / 'audit.json'}" in lines and f"wrote {tmp_path / 'audit.html'}" in lines


def test_wide_terminal_is_one_table(ws_path, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    out, _ = run(capsys, "audit", "--details", "--n-boot", "200", "--out", str(tmp_path), "-w", str(ws_path))
    assert max(len(line) for line in out.splitlines()) <= 200 and "…" not in out
    header = "".join(line for line in out.splitlines() if "┃" in line)
    for m in SUMMARY_METRICS:
        for word in info(m).title.split():
            assert word in header
    assert any(LONG in line for line in out.splitlines())


def test_audit_json_is_audit_json(ws_path, capsys, tmp_path):
    out, err = run(capsys, "audit", "--json", "--n-boot", "200", "--out", str(tmp_path), "-w", str(ws_path))
    assert json.loads(out) == json.loads((tmp_path / "audit.json").read_text())
    assert f"wrote {tmp_path / 'audit.json'}" in err


def test_annotators_and_datasets_json(ws_path, capsys, tmp_path):
    out, _ = run(capsys, "annotators", "--json", "--n-boot", "100", "--out", str(tmp_path / "a.json"),
                 "-w", str(ws_path))
    rep = json.loads(out)
    assert rep == json.loads((tmp_path / "a.json").read_text())
    assert set(rep["annotators"]) == {"ann-1", "ann-2", "ann-3"}
    out, _ = run(capsys, "datasets", "list", "--json")
    from judgecal.data import registry

    rows = json.loads(out)
    assert [r["name"] for r in rows] == list(registry.registry())
    assert all(len(r["commit"]) == 40 and r["license"] for r in rows)


def test_annotators_table_uses_the_catalogue_format(ws_path, capsys, tmp_path):
    out, _ = run(capsys, "annotators", "--n-boot", "100", "--out", str(tmp_path / "a.json"), "-w", str(ws_path))
    rep = json.loads((tmp_path / "a.json").read_text())
    assert f"Fleiss' kappa {fmt_metric(rep['fleiss_kappa'])}" in out
    assert os.path.exists(tmp_path / "a.json")


def test_stability_json(tmp_path, capsys, mirror, monkeypatch):
    monkeypatch.setenv("JUDGECAL_DATA_MIRROR", str(mirror))
    ws = str(tmp_path / "ws")
    run(capsys, "import", "prometheus/mt-bench", "-w", ws)
    run(capsys, "stability", "repeats", "--judge", "replay/prometheus/gpt-4", "-w", ws)
    out, _ = run(capsys, "stability", "score", "--json", "--n-boot", "100", "--out", str(tmp_path), "-w", ws)
    assert json.loads(out) == json.loads((tmp_path / "stability.json").read_text())
    assert main(["stability", "guard", "--json", "--n-boot", "100", "--threshold", "50", "--out", str(tmp_path),
                 "-w", ws]) == 0
    guard = json.loads(capsys.readouterr().out)
    assert guard["status"] == "pass" and guard["threshold_pp"] == 50


def test_validate_json_and_readable_numbers(capsys, tmp_path):
    from judgecal.catalogue import fmt_interval, fmt_p

    assert main(["validate", "--items", "600", "--n-boot", "400", "--json", "--out", str(tmp_path / "v.json")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res == json.loads((tmp_path / "v.json").read_text()) and res["ok"] is True
    assert main(["validate", "--items", "600", "--n-boot", "400"]) == 0
    out = capsys.readouterr().out
    c = res["checks"][0]
    assert f"{c['check']}: {fmt_interval(c['estimate'], c['ci'][0], c['ci'][1])} p {fmt_p(c['p'])}" in out
    assert "e-" not in out  # no 7.8e-13: tiny p-values read "< 0.001"
