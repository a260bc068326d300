"""One audit path: the report and `judgecal validate` run the same probe objects and tests; metrics
carry estimate, interval, n, null, p, q and MDE; the statistics package sits at the bottom."""

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from judgecal.audit import probes as probes_mod
from judgecal.audit.evaluate import evaluate
from judgecal.audit.metric import Metric
from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.audit.probe import AuditConfig
from judgecal.audit.validate import SCENARIOS, judge_input, probe, simulate, validate

PKG = Path(__file__).resolve().parents[1] / "judgecal"
BY = {s.name: s for s in SCENARIOS}


def test_a_changed_test_changes_the_report_and_its_validation(pandalm_ws, monkeypatch):
    def planted_test(self, m):  # a probe's test replaced: both surfaces must print its p
        return m.tested(0.0123, 0.0, 0.5)

    before = audit_workspace(pandalm_ws, AuditOptions(consensus="mv", n_boot=100)).to_json()["judges"]["replay/pandalm/pandalm-7b"]
    assert before["metrics"]["verbosity_excess"]["p"] != 0.0123
    monkeypatch.setattr(probes_mod.VerbosityProbe, "test", planted_test)
    after = audit_workspace(pandalm_ws, AuditOptions(consensus="mv", n_boot=100)).to_json()["judges"]["replay/pandalm/pandalm-7b"]
    assert after["metrics"]["verbosity_excess"]["p"] == 0.0123 and after["metrics"]["verbosity_excess"]["mde"] == 0.5
    checks = [c for c in validate(n_items=300, n_boot=100)["checks"] if c["metric"] == "verbosity_excess"]
    assert len(checks) == 2 and all(c["p"] == 0.0123 for c in checks)


def _se(m: dict) -> float:
    return (m["ci_high"] - m["ci_low"]) / (2 * norm.ppf(0.975))


def test_prompt_flip_rate_is_tested_against_instability_in_both_paths():
    """In the instability scenario prompt mutations flip verdicts exactly as often as re-sampling does
    (truth 0.255 both): the flip rate is not significant against that null, though far from 0."""
    sim = simulate(BY["instability"], 1000, 4)
    rep = evaluate([judge_input(sim)], AuditConfig(n_boot=400, seed=1))["simulated"].metrics
    flip, inst = rep["prompt_flip_rate"].to_json(), rep["instability_rate"].to_json()
    assert flip["null_value"] == inst["estimate"] and flip["mutations"] == 2
    z = (flip["estimate"] - inst["estimate"]) / np.hypot(_se(flip), _se(inst))
    assert flip["p"] == pytest.approx(min(1.0, 2 * 2 * norm.sf(abs(z))), rel=1e-6)  # Bonferroni over 2 mutations
    # tested against 0 (what validate used to do) the same rate would look overwhelmingly significant
    assert flip["p"] > 1e-3 and 2 * norm.sf(flip["estimate"] / _se(flip)) < 1e-10
    assert probe(sim, 400, 1)["prompt_flip_rate"] == flip  # validate reads the very same figure


def test_injection_estimate_and_p_are_the_same_quantity():
    sim = simulate(BY["injection"], 800, 5)
    rep = evaluate([judge_input(sim)], AuditConfig(n_boot=400))["simulated"].metrics
    ex, follow = rep["injection_excess"].to_json(), rep["injection_follow_rate"].to_json()
    assert ex["null_value"] == 0.0 and ex["p"] == pytest.approx(2 * norm.sf(abs(ex["estimate"]) / _se(ex)), rel=1e-6)
    assert ex["estimate"] == pytest.approx(follow["estimate"] - follow["clean_pick_rate"], abs=1e-9)
    assert follow["p"] is None and follow["null_value"] is None  # descriptive; its test is the excess
    assert "follows_injection" in evaluate([judge_input(sim)], AuditConfig(n_boot=400))["simulated"].flags


def test_metric_serialises_to_the_audit_json_shape():
    m = Metric(0.7, 0.6, float("nan"), 12, extra={"mutation": "paraphrase", "x": float("inf")})
    assert m.to_json() == {"estimate": 0.7, "ci_low": 0.6, "ci_high": None, "n": 12, "mutation": "paraphrase",
                           "x": None, "null_value": None, "p": None, "q": None, "mde": None}
    t = Metric.of({"estimate": 0.6, "ci_low": 0.55, "ci_high": 0.65, "n": 100, "kind": "k"})
    t = probes_mod.ci_test(t, 0.5)
    se = 0.1 / (2 * norm.ppf(0.975))
    assert t.p == pytest.approx(2 * norm.sf(0.1 / se), rel=1e-6) and t.null_value == 0.5
    assert t.mde == pytest.approx((norm.ppf(0.975) + norm.ppf(0.8)) * se, rel=1e-6)
    assert t.extra == {"kind": "k"} and not Metric(0.1).is_tested


def test_bh_runs_once_over_every_tested_metric_of_every_judge():
    from statsmodels.stats.multitest import multipletests

    inputs = [judge_input(simulate(BY[name], 400, 7)) for name in ("position", "null")]
    for inp, name in zip(inputs, ("position", "null"), strict=True):
        inp.judge = name
    out = evaluate(inputs, AuditConfig(n_boot=200))
    tested = [(j, k) for j, r in out.items() for k, m in r.metrics.items() if m.is_tested]
    assert len(tested) == 10  # 5 each; a deterministic judge's instability and flip rate are 0, untestable
    ref = multipletests([out[j].metrics[k].p for j, k in tested], method="fdr_bh")[1]
    assert [out[j].metrics[k].q for j, k in tested] == pytest.approx(ref, rel=1e-12)
    assert "position_bias:first" in out["position"].flags
    assert [f for f in out["null"].flags if not f.endswith(":underpowered")] == []  # 400 items: underpowered


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_audit_and_aggregate_do_not_import_each_other_and_stats_imports_neither():
    rules = {"audit": ("judgecal.aggregate",), "aggregate": ("judgecal.audit",),
             "stats": ("judgecal.audit", "judgecal.aggregate", "judgecal.data", "judgecal.judges",
                       "judgecal.annotation", "judgecal.report", "judgecal.cli")}
    for pkg, banned in rules.items():
        files = sorted((PKG / pkg).glob("*.py"))
        assert files
        for f in files:
            if (pkg, f.name) == ("audit", "pipeline.py"):  # the producer computes a missing consensus (a layer
                continue  # below it, as the import-linter contract allows); nothing else of the audit does
            bad = [m for m in _imports(f) if m.startswith(banned)]
            assert not bad, f"{f.name} imports {bad}"
    # and at run time: importing every audit module loads nothing of aggregate, and the reverse
    code = ("import importlib, pkgutil, sys, judgecal.{a} as p\n"
            "for m in pkgutil.iter_modules(p.__path__): importlib.import_module('judgecal.{a}.' + m.name)\n"
            "assert not [m for m in sys.modules if m.startswith('judgecal.{b}')], sorted(sys.modules)\n")
    for a, b in (("audit", "aggregate"), ("aggregate", "audit")):
        subprocess.run([sys.executable, "-c", code.format(a=a, b=b)], check=True)


def test_every_audit_goes_through_the_pipeline():
    """``run_audit`` (the judges' part) is called by :func:`judgecal.audit.pipeline.audit_workspace` only: the
    CLI, the explorer, the tests and the benchmarks all read the one producer's report."""
    repo = PKG.parent
    callers = []
    for folder in ("judgecal", "apps", "tests", "benchmarks"):
        for f in sorted((repo / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(f.read_text("utf-8"))):
                if isinstance(node, ast.Call):
                    fn = node.func
                    name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
                    if name == "run_audit":
                        callers.append(str(f.relative_to(repo)))
    assert callers == ["judgecal/audit/pipeline.py"], callers


def test_no_sql_outside_the_store():
    for pkg in ("audit", "aggregate", "stats"):
        for f in (PKG / pkg).glob("*.py"):
            text = f.read_text()
            assert ".execute(" not in text and ".conn" not in text and "read_sql" not in text, f


def test_a_workspace_holding_the_simulation_audits_to_validates_figures(tmp_path):
    """The simulated judge written into a workspace (items, lengths, model families, probe pairs, labels,
    consensus, every judgment) and audited by the pipeline gives exactly the figures ``validate`` reads
    from the simulation: the per-judge inputs built from a workspace are the simulation's."""
    from judgecal.audit.injection import injected_items
    from judgecal.audit.padding import SOURCE as PAD
    from judgecal.audit.validate import Scenario
    from judgecal.data.records import Annotation, Candidate, Consensus, Item, Judgment
    from judgecal.data.store import Workspace

    sc = Scenario("mixed", position=0.1, verbosity=0.1, self_pref=0.1, instability=0.2, template=0.2, injection=0.2)
    sim = simulate(sc, 300, 11)
    truth, lens, own = sim["truth"], sim["lens"], sim["own_is_a"]
    ws = Workspace(tmp_path / "ws")
    (tmp_path / "ws" / "families.yaml").write_text("acme-*: acme\n")
    items = []
    for i in truth.index:
        models = (("acme-7b", "other-1") if own[i] else ("other-1", "acme-7b")) if i in own.index else ("x-1", "x-2")
        items.append(Item(i, "q", [Candidate("w " * int(lens.loc[i, "len_a"]), models[0]),
                                   Candidate("w " * int(lens.loc[i, "len_b"]), models[1])], source="sim"))
    pads = [Item(f"{it.item_id}#pad", "q", it.candidates, source=PAD) for it in items]
    ws.items_repo.add_items(items + pads + injected_items(items, truth, kinds=("instruction",)))
    ws.annotations_repo.add_annotations([Annotation(i, "h", t, source="sim") for i, t in truth.items()])
    ws.annotations_repo.set_consensus([Consensus(i, "ds", t) for i, t in truth.items()], "ds")
    rows = pd.concat([sim["repeats"], sim["mutated"][sim["mutated"]["mutation"] != "none"], sim["probes"]])
    judge = "replay/sim/acme-judge"
    ws.judgments_repo.add_judgments([Judgment(key=str(k), item_id=r.item_id, judge=judge, spec_hash="s", order=r.order,
                               mutation=r.mutation, sample=int(r.sample), verdict=r.verdict)
                      for k, r in enumerate(rows.itertuples())])
    entry = audit_workspace(ws, AuditOptions(consensus="ds", n_boot=300, seed=3)).to_json()["judges"][judge]
    ws.close()
    res = evaluate([judge_input(sim)], AuditConfig(n_boot=300, seed=3))["simulated"]
    assert set(entry["metrics"]) >= {"first_position_rate", "verbosity_excess", "self_preference_excess",
                                     "instability_rate", "pad_pick_rate", "injection_excess", "prompt_flip_rate"}
    assert entry["metrics"] == {k: m.to_json() for k, m in res.metrics.items()}
    assert entry["flags"] == res.flags
