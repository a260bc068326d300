"""A probe describes itself: one module and one registration line add a probe, and every surface finds it.

The toy probe below (how much more often the judge says A than the humans, null 0) is written to a temporary module and
named in ``$JUDGECAL_PROBES``; nothing else of judgecal is touched. A real audit of the example files plus an
always-A judge then carries its metric and flag in audit.json, its flag's words in the verdict, the terminal and
audit.html, its question and rows on the explorer's Biases page (Chromium), and ``validate``'s null scenario
checks that it stays silent there. Everything runs in subprocesses, so the registration never reaches the
other tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import audit_example_with

ROOT = Path(__file__).resolve().parents[1]
TOY = '''
import numpy as np
from scipy import stats

from judgecal.audit.metric import Metric
from judgecal.audit.probe import Probe, ProbeResult
from judgecal.audit.probes import ci_test, register
from judgecal.catalogue import FlagInfo, MetricInfo, ProbeInfo


class ToyProbe(Probe):
    """How much more often the judge says A than the humans do, on the same items (null 0)."""

    name = "toy"
    info = ProbeInfo("toy", "toy letter preference", "toy", "Does the judge like the letter A?",
                     "Compares the share of items the judge gives A with the humans' share on the same items.",
                     "the judge says A as often as the humans (excess 0)", "judge some pairs", "toy_a_excess")
    metric_infos = (MetricInfo("toy_a_excess", "Says A more than the humans (toy)",
                               "The judge's share of A minus the humans' share, one verdict per item.",
                               reference="0 (no letter preferred)", group="toy", null=0.0),)
    flag_infos = (FlagInfo("toy_likes_a", "Likes A (toy)", "says A far more often than the humans (toy probe)",
                           "caution", "toy_a_excess"),)

    def run(self, inp, cfg, done):
        j = inp.judgments
        first = j[(j["sample"] == 0)].drop_duplicates("item_id").set_index("item_id")["verdict"]
        truth = inp.truth.reindex(first.index)
        keep = truth.notna().to_numpy()
        if keep.sum() < 2:
            return ProbeResult()
        d = (first[keep] == "A").to_numpy(float) - (truth[keep] == "A").to_numpy(float)
        se = d.std(ddof=1) / np.sqrt(len(d)) or 1e-12
        z = stats.norm.ppf(0.5 + cfg.level / 2)
        m = Metric(float(d.mean()), float(d.mean() - z * se), float(d.mean() + z * se), int(len(d)))
        return ProbeResult(metrics={"toy_a_excess": ci_test(m, 0.0)})

    def flags(self, metrics, cfg):
        m = metrics.get("toy_a_excess")
        return ["toy_likes_a"] if m and m.q is not None and m.q < cfg.alpha and m.estimate > cfg.effect_of_interest else []


register(ToyProbe())
'''
JUDGE = "toy/always-a"


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("toy")
    (tmp / "toy_probe_module.py").write_text(TOY, "utf-8")
    env = {**os.environ, "JUDGECAL_PROBES": "toy_probe_module", "COLUMNS": "120",
           "PYTHONPATH": os.pathsep.join([str(tmp), os.environ.get("PYTHONPATH", "")])}
    items = [json.loads(line) for line in (ROOT / "data/items.jsonl").read_text("utf-8").splitlines() if line.strip()]
    with (tmp / "always_a.jsonl").open("w", encoding="utf-8") as fh:
        for it in items:  # one order: its A is the item's first candidate
            fh.write(json.dumps({"item_id": it["id"], "judge": JUDGE, "order": "AB", "verdict": "A",
                                 "raw": "Verdict: A"}) + "\n")

    terminal = audit_example_with(tmp, env, tmp / "always_a.jsonl")
    report = json.loads((tmp / "ws" / "reports" / "audit.json").read_text("utf-8"))
    return {"tmp": tmp, "env": env, "terminal": terminal, "report": report,
            "html": (tmp / "ws" / "reports" / "audit.html").read_text("utf-8")}


def test_the_toy_probe_is_in_audit_json_the_terminal_and_the_html(toy: dict) -> None:
    report, terminal, html = toy["report"], toy["terminal"], toy["html"]
    always, acme = report["judges"][JUDGE], report["judges"]["example/acme-judge"]
    m = always["metrics"]["toy_a_excess"]
    assert m["estimate"] > 0.3 and m["null_value"] == 0.0 and m["q"] < 0.05  # tested, BH applied with the rest
    assert "toy_likes_a" in always["flags"]  # (the example judge, biased to the first shown, is flagged too)
    assert "toy_a_excess" in acme["metrics"]
    words = "says A far more often than the humans (toy probe)"
    assert words in always["verdict"]["reasons"]
    assert any(d["code"] == "flag:toy_likes_a" and d["metric"] == "toy_a_excess" for d in always["verdict"]["details"])
    assert words in terminal
    assert "Says A more than the humans (toy)" in html and words in html


def test_the_toy_probe_is_on_the_explorer_biases_page(toy: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from explorer_browser import Browser, serve

    from judgecal.catalogue import fmt_metric

    for k in ("JUDGECAL_PROBES", "PYTHONPATH"):
        monkeypatch.setenv(k, toy["env"][k])  # the explorer's server is started with them
    with serve(toy["tmp"] / "ws") as url:
        b = Browser(url)
        try:
            b.open("Biases")
            assert "Does the judge like the letter A?" in b.text()
            assert "Compares the share of items the judge gives A with the humans' share" in b.text()
            rows = b.csv("biases-toy")
            row = rows[rows["judge"] == JUDGE].iloc[0]
            assert row["metric"] == "Says A more than the humans (toy)"
            assert row["estimate (95% CI)"] == fmt_metric(toy["report"]["judges"][JUDGE]["metrics"]["toy_a_excess"])
            flags = b.csv("biases-flags")
            assert "says A far more often than the humans (toy probe)" in set(flags["flag"])  # the flag in words
        finally:
            b.close()


def test_validate_runs_the_toy_probe_in_its_null_scenario(toy: dict) -> None:
    code = ("import json; from judgecal.audit.validate import probe_checks; "
            "checks, _ = probe_checks(n_items=400, n_boot=200); "
            "print(json.dumps([c for c in checks if c['metric'] == 'toy_a_excess']))")
    res = subprocess.run([sys.executable, "-c", code], env=toy["env"], capture_output=True, text=True, cwd=toy["tmp"])
    assert res.returncode == 0, res.stderr
    (check,) = json.loads(res.stdout)
    assert check["scenario"] == "null" and check["check"] == "no toy_a_excess effect reported at null"
    assert check["ok"] and abs(check["estimate"]) < 0.1


def test_a_probe_module_that_cannot_be_imported_is_named(toy: dict) -> None:
    env = {**toy["env"], "JUDGECAL_PROBES": "no_such_probe_module"}
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "audit", "-w", str(toy["tmp"] / "ws")], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "JUDGECAL_PROBES: no_such_probe_module: cannot be imported" in res.stderr
