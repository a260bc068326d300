"""A probe from outside: the example of docs/how-to/write-a-probe.md, installed as its own distribution.

The page's one ```python block (the probe module) and its one ```toml block (the ``judgecal.probes`` entry
point) are written into a package of their own and installed with pip (``--target``, no index, no network) beside
an unchanged judgecal; a real audit of the example files plus an always-tie judge then carries the probe's metric,
section and flags in audit.json (schema-valid), audit.html and the terminal. ``check_probe`` passes every built-in
probe and the example, and names the rule each broken variant of the example breaks. A broken entry point stops
the command with one line naming it and its distribution."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import numpy as np
import pytest
from conftest import audit_example_with

from judgecal.audit.check import ProbeContractError, check_probe
from judgecal.audit.probes import PROBES, ci_test
from judgecal.audit.verdict import Effect, Inputs, LiveCalls, PowerCheck, ThresholdSpec
from judgecal.catalogue import FlagInfo
from judgecal.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs/how-to/write-a-probe.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)
JUDGE = "example/always-tie"
HEADER = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"

[tool.setuptools]
py-modules = [{modules}]

"""


def block(lang: str) -> str:
    """The page's one block of ``lang``."""
    (body,) = [b for lg, b in FENCE.findall(PAGE.read_text("utf-8")) if lg == lang]
    return body


def install(tmp: Path, name: str, modules: Mapping[str, str], entry_points: str) -> Path:
    """A distribution ``name`` of ``modules`` (file stem -> source) and ``entry_points`` (toml), installed by pip
    into a folder of its own (put on ``PYTHONPATH``); returns that folder."""
    src, site = tmp / f"{name}-src", tmp / f"{name}-site"
    src.mkdir()
    for stem, text in modules.items():
        (src / f"{stem}.py").write_text(text, "utf-8")
    listed = ", ".join(json.dumps(m) for m in modules)
    (src / "pyproject.toml").write_text(HEADER.format(name=name, modules=listed) + entry_points, "utf-8")
    res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(site), str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return site


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """The page's probe module, imported from the page's text (not registered: nothing calls ``register``)."""
    spec = importlib.util.spec_from_loader("tie_probe", loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    exec(compile(block("python"), str(PAGE), "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize("name", [p.name for p in PROBES])
def test_check_probe_passes_every_built_in_probe(name: str) -> None:
    (probe,) = [p for p in PROBES if p.name == name]
    checked = check_probe(type(probe))
    assert "metrics and section serialise into audit.json and validate" in checked and len(checked) == 9
    assert "its verdict rule returns typed effects" in checked


def test_check_probe_passes_the_example(example: ModuleType) -> None:
    assert len(check_probe(example.TieProbe)) == 9
    assert len(check_probe(example.TieProbe())) == 9  # an instance too


def _broken(example: ModuleType) -> dict[str, tuple[type, str]]:
    """Variants of the example that each break one rule -> (the variant, what the error says)."""
    tie = example.TieProbe
    info = tie.info

    def run_then(change: Callable[[Any], Any]) -> Callable[..., Any]:
        def run(self: Any, inp: Any, cfg: Any, done: Any) -> Any:
            return change(tie.run(self, inp, cfg, done))
        return run

    def mutating(self: Any, inp: Any, cfg: Any, done: Any) -> Any:
        inp.judgments.loc[inp.judgments.index[:1], "verdict"] = "tie"
        return tie.run(self, inp, cfg, done)

    def renamed(r: Any) -> Any:
        r.sections = {"other": r.sections["ties"]} if r.sections else {}
        return r

    def nan_section(r: Any) -> Any:
        if r.sections:
            r.sections["ties"]["judge_tie_rate"] = float("nan")
        return r

    def undeclared(r: Any) -> Any:
        r.metrics = {"tie_rate_gap_v2": r.metrics["tie_rate_gap"]} if r.metrics else {}
        return r

    def wrong_null(r: Any) -> Any:
        r.metrics = {k: ci_test(m, 0.5) for k, m in r.metrics.items()}
        return r

    def jitter(r: Any) -> Any:
        if r.sections:
            r.sections["ties"]["judge_tie_rate"] += float(np.random.default_rng().random())
        return r

    def unnamed_key(r: Any) -> Any:
        if r.sections:
            r.sections["ties"]["tie_rate_by_order"] = {"AB": 0.1}
        return r

    def args(self: Any, x: int) -> None:
        pass

    variants: dict[str, tuple[dict[str, Any], str]] = {
        "bad name": ({"name": "Ties!"}, "name: a snake_case word"),
        "no question": ({"info": type(info)(**{**info.__dict__, "question": "Tie calling."})},
                        "info.question is not a question"),
        "headline not declared": ({"info": type(info)(**{**info.__dict__, "headline": "tie_rate"})},
                                  "info.headline 'tie_rate' is not a metric it declares"),
        "unknown severity": ({"flag_infos": (FlagInfo("ties:too_often", "Too many ties", "ties a lot", "grave",
                                                      "tie_rate_gap"),)}, "severity must be one of"),
        "undeclared flag": ({"flags": lambda self, metrics, cfg: ["ties:odd"] if metrics else []},
                            "flag 'ties:odd' is not declared"),
        "flags without metrics": ({"flags": lambda self, metrics, cfg: ["ties:too_often"]},
                                  "flags of a judge it did not run on"),
        "section not named as the probe": ({"run": run_then(renamed)}, "section 'other'"),
        "NaN in its section": ({"run": run_then(nan_section)}, "do not serialise into audit.json"),
        "a key its section type does not name": ({"run": run_then(unnamed_key)},
                                                 "not the TieSection it declares: tie_rate_by_order"),
        "metric not in the catalogue": ({"run": run_then(undeclared)}, "'tie_rate_gap_v2' has no catalogue entry"),
        "tested against another null": ({"run": run_then(wrong_null)}, "tested against 0.5, its catalogue null is 0.0"),
        "changes its input": ({"run": mutating}, "changed its input frames"),
        "not reproducible": ({"run": run_then(jitter)}, "two runs with the same seed differ"),
        "needs an argument": ({"__init__": args}, "cannot be made with no arguments"),
        "an order it cannot read": ({"inputs": Inputs(orders=("AB", "CA"))}, "inputs.orders: distinct orders"),
        "live calls reporting another metric": ({"live_calls": LiveCalls("perturb", reports="tie_rate")},
                                                "live_calls.reports"),
        "a threshold outside its range": ({"thresholds": (ThresholdSpec("ties", {"not_aligned_beyond": 2.0},
                                                                        {"not_aligned_beyond": (0.0, 1.0, False)}),)},
                                          "its default 2.0 is outside [0.0, 1.0]"),
        "a power check of no scenario": ({"power_checks": (PowerCheck("tie_rate_gap", "ties", lambda sc: 0.0),)},
                                         "planted 'ties' is not a scenario"),
        "a verdict rule of words": ({"verdict_rule": lambda self, v: ["not aligned"]},
                                    "verdict_rule must return a list of Effect"),
        "a verdict rule without figures": ({"verdict_rule": lambda self, v: [Effect(1, "ties", None, "always")]},
                                           "verdict_rule of a judge with no figures must be []"),
    }
    return {k: (type("Broken", (tie,), attrs), words) for k, (attrs, words) in variants.items()}


BROKEN = ("bad name", "no question", "headline not declared", "unknown severity", "undeclared flag",
          "flags without metrics", "section not named as the probe", "NaN in its section",
          "a key its section type does not name",
          "metric not in the catalogue", "tested against another null", "changes its input", "not reproducible",
          "needs an argument", "an order it cannot read", "live calls reporting another metric",
          "a threshold outside its range", "a power check of no scenario", "a verdict rule of words",
          "a verdict rule without figures")


@pytest.mark.parametrize("case", BROKEN)
def test_check_probe_names_the_rule_a_broken_probe_breaks(example: ModuleType, case: str) -> None:
    probe, words = _broken(example)[case]
    with pytest.raises(ProbeContractError) as err:
        check_probe(probe)
    msg = str(err.value)
    assert words in msg and msg.startswith("check_probe: Broken") and "\n" not in msg
    assert isinstance(err.value, ConfigError) and isinstance(err.value, AssertionError)


def test_check_probe_refuses_what_is_not_a_probe() -> None:
    with pytest.raises(ProbeContractError, match="is not a judgecal.audit.probe.Probe subclass or instance"):
        check_probe(dict)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("plugin")
    site = install(tmp, "judgecal-tie-probe", {"tie_probe": block("python")}, block("toml"))
    (ep,) = [p for p in site.glob("*.dist-info/entry_points.txt")]
    assert "[judgecal.probes]" in ep.read_text("utf-8")
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("JUDGECAL_PROBES", None)
    items = [json.loads(line) for line in (ROOT / "data/items.jsonl").read_text("utf-8").splitlines() if line.strip()]
    with (tmp / "always_tie.jsonl").open("w", encoding="utf-8") as fh:
        for it in items:
            for order in ("AB", "BA"):
                fh.write(json.dumps({"item_id": it["id"], "judge": JUDGE, "order": order, "verdict": "tie",
                                     "raw": "Verdict: tie"}) + "\n")

    terminal = audit_example_with(tmp, env, tmp / "always_tie.jsonl")
    reports = tmp / "ws" / "reports"
    return {"tmp": tmp, "env": env, "items": items, "terminal": terminal,
            "report": json.loads((reports / "audit.json").read_text("utf-8")),
            "html": html.unescape((reports / "audit.html").read_text("utf-8"))}


def test_the_installed_example_is_in_audit_json_typed_and_schema_valid(audited: dict[str, Any]) -> None:
    from judgecal.audit.schema import SCHEMA_FILE, read_report

    report, items = audited["report"], audited["items"]
    jsonschema.validate(report, json.loads(SCHEMA_FILE.read_text("utf-8")))
    assert json.dumps(read_report(report).to_json()) == json.dumps(report)  # written back unchanged
    tie, acme = report["judges"][JUDGE], report["judges"]["example/acme-judge"]
    all_tie = np.mean([set(it["human_labels"].values()) == {"tie"} for it in items])
    any_tie = np.mean(["tie" in it["human_labels"].values() for it in items])
    for entry in (tie, acme):
        sec, m = entry["ties"], entry["metrics"]["tie_rate_gap"]
        assert sec["n_items"] == len(items) == m["n"]
        assert all_tie <= sec["human_tie_rate"] <= any_tie  # the consensus: between unanimous and any tie
        assert m["estimate"] == pytest.approx(sec["judge_tie_rate"] - sec["human_tie_rate"])
        assert m["null_value"] == 0.0 and m["q"] is not None  # tested, BH applied with the built-in probes
    assert tie["ties"]["judge_tie_rate"] == 1.0 and tie["metrics"]["tie_rate_gap"]["q"] < 0.05
    assert "ties:too_often" in tie["flags"] and "ties:too_often" not in acme["flags"]
    # the example judge's own ties, per item (its unreadable answer left out), read from the file it came from
    rows = [json.loads(line) for line in (ROOT / "data/verdicts.jsonl").read_text("utf-8").splitlines() if line]
    per: dict[str, list[bool]] = {}
    for r in rows:
        if r["verdict"] != "invalid":
            per.setdefault(r["item_id"], []).append(r["verdict"] == "tie")
    assert acme["ties"]["judge_tie_rate"] == pytest.approx(np.mean([np.mean(v) for v in per.values()]))
    words = "calls ties more often than the humans do"
    assert words in tie["verdict"]["reasons"]
    assert any(d["code"] == "flag:ties:too_often" and d["metric"] == "tie_rate_gap" for d in tie["verdict"]["details"])


def test_the_installed_example_is_in_the_html_and_the_terminal(audited: dict[str, Any]) -> None:
    terminal = audited["terminal"]
    page = html.unescape(re.sub(r"</?bdi>", "", audited["html"]))  # names are isolated and escaped in the page
    sec = audited["report"]["judges"][JUDGE]["ties"]
    assert "Tie rate beyond the humans'" in page and "<h4>ties</h4>" in page
    assert "judge tie rate" in page and f"{sec['human_tie_rate']:.3f}" in page  # the section, rendered
    assert "calls ties more often than the humans do" in page
    assert "calls ties more often than the humans do" in " ".join(terminal.split())
    assert "ties: not significant" in terminal  # the example judge's gap: an interval that still holds 0.05


def test_validate_runs_the_installed_example_in_its_null_scenario(audited: dict[str, Any]) -> None:
    code = ("import json; from judgecal.audit.validate import probe_checks; "
            "checks, _ = probe_checks(n_items=300, n_boot=200); "
            "print(json.dumps([c for c in checks if c['metric'] == 'tie_rate_gap']))")
    res = subprocess.run([sys.executable, "-c", code], env=audited["env"], capture_output=True, text=True,
                         cwd=audited["tmp"])
    assert res.returncode == 0, res.stderr
    (check,) = json.loads(res.stdout)
    assert check["scenario"] == "null" and check["ok"]


@pytest.mark.parametrize("value, words", [
    ("no_such_probe_module_xyz:TieProbe", "cannot be loaded (ModuleNotFoundError"),
    ("json:dumps", "is not a judgecal.audit.probe.Probe subclass or instance (got function)"),
    ("clash_probe:Clash", "already in the catalogue: accuracy"),
])
def test_a_broken_entry_point_is_named_in_one_line(audited: dict[str, Any], tmp_path: Path, value: str,
                                                   words: str) -> None:
    clash = ("from judgecal.audit.probe import Probe\nfrom judgecal.catalogue import MetricInfo, ProbeInfo\n\n\n"
             "class Clash(Probe):\n    name = 'clash'\n"
             "    info = ProbeInfo('clash', 'clash', 'clash', 'Clash?', 'x', 'x', 'x', 'accuracy')\n"
             "    metric_infos = (MetricInfo('accuracy', 'Mine', 'Not the catalogue\\'s.'),)\n")
    site = install(tmp_path, "judgecal-broken-probe", {"clash_probe": clash},
                   f'[project.entry-points."judgecal.probes"]\nbroken = "{value}"\n')
    env = {**audited["env"], "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "audit", "-w", str(audited["tmp"] / "ws")], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "judgecal.probes: entry point 'broken'" in line and "of distribution 'judgecal-broken-probe'" in line
    assert words in line


def test_a_probe_reads_the_pairs_of_the_source_it_declares(tmp_path: Path) -> None:
    """The audit loads the probe pairs of every source a registered probe declares (``Inputs.probe_sources``), a
    plugin's as the built-in ones': a probe of its own pairs needs no change to judgecal."""
    import pandas as pd

    from judgecal.audit.probe import Probe
    from judgecal.audit.run import judge_inputs
    from judgecal.data.records import Candidate, Item, Judgment
    from judgecal.data.store import Workspace

    class OwnPairs(Probe):
        name = "own_pairs"
        inputs = Inputs(probe_sources=("probe:own-pairs",))

    ws = Workspace(tmp_path / "ws")
    base = [Item(f"i{k}", f"p{k}", [Candidate(f"a{k}", "m1"), Candidate(f"b{k}", "m2")]) for k in range(3)]
    mine = [Item(f"i{k}#own", f"p{k}", [Candidate("x", "m1"), Candidate("y", "m2")], source="probe:own-pairs")
            for k in range(2)]
    other = [Item("i0#other", "p0", [Candidate("x", "m1"), Candidate("y", "m2")], source="probe:undeclared")]
    ws.items_repo.add_items([*base, *mine, *other])
    ws.judgments_repo.add_judgments([Judgment(key=f"k{it.item_id}", item_id=it.item_id, judge="j", spec_hash="s",
                                              order="AB", verdict="A") for it in [*base, *mine, *other]])
    truth = pd.Series({f"i{k}": "A" for k in range(3)}, dtype=object)
    PROBES.append(OwnPairs())
    try:
        (inp,) = judge_inputs(ws, truth)
    finally:
        PROBES.pop()
    assert sorted(it.item_id for it in inp.pairs("probe:own-pairs")) == ["i0#own", "i1#own"]
    assert inp.pairs("probe:own-pairs")[0].candidates[1].text == "y"
    assert inp.pairs("probe:undeclared") == []  # no probe reads them: not loaded
    assert set(inp.probes["item_id"]) == {"i0#own", "i1#own", "i0#other"}  # its calls on them, as every probe pair's
    assert set(inp.judgments["item_id"]) == {"i0", "i1", "i2"}
    (without,) = judge_inputs(ws, truth)
    assert without.pairs("probe:own-pairs") == []


def test_the_sections_of_real_audits_are_the_types_their_probes_declare() -> None:
    """Each section a built-in probe wrote in the golden audits (PandaLM's and the demo's) and in the battery's
    audit of CALM-style pairs validates as the probe's declared type; every built-in probe that writes a section
    declares one (``check_probe`` holds each to it on the simulated judges)."""
    from judgecal.audit.schema import Section

    declared = {p.name: p.section for p in PROBES if p.section is not None}
    assert {"position", "verbosity", "self_preference", "instability", "prompt_sensitivity", "padding", "injection",
            "traps", "transitivity", "bandwagon", "manipulability"} <= set(declared)
    assert all(issubclass(t, Section) or t.__name__ == "InjectionSection" for t in declared.values())
    seen = set()
    for name in ("pandalm-audit.json", "demo-audit.json"):
        report = json.loads((ROOT / "tests" / "golden" / name).read_text("utf-8"))
        for judge in report["judges"].values():
            for key, sec in judge.items():
                if key in declared:
                    declared[key].model_validate(sec)
                    seen.add(key)
    assert {"position", "verbosity", "self_preference", "transitivity"} <= seen
    # a key a probe's type does not name is refused, naming it
    with pytest.raises(ValueError, match="flip_rat"):
        declared["position"].model_validate({"pairs": 3, "flip_rat": 0.5})
