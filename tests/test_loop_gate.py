"""judgecal gate: paired differences of two judges on the same PandaLM items, and its pass/fail rule."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workspace
from sklearn.metrics import accuracy_score, cohen_kappa_score

from judgecal.cli import main
from judgecal.data.records import Judgment
from judgecal.loop.compare import compare_judges
from judgecal.loop.gate import decide, markdown, run_gate
from judgecal.stats import bootstrap as stats
from judgecal.stats.paired import paired_difference, paired_replicates, worse_by

GPT, P7B = "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"


def test_worse_by_reads_each_direction():
    assert worse_by(0.7, 0.6, "higher") == pytest.approx(0.1)
    assert worse_by(0.1, 0.3, "lower") == pytest.approx(0.2)
    # a first-position rate moving from 0.55 to 0.40 lies 0.05 further from 0.5
    assert worse_by(0.55, 0.40, "null", 0.5) == pytest.approx(0.05)
    assert worse_by(0.40, 0.55, "null", 0.5) == pytest.approx(-0.05)
    with pytest.raises(ValueError):
        worse_by(1, 2, "sideways")


def test_paired_difference_is_the_bootstrap_of_the_per_item_difference():
    """The paired accuracy difference equals the item bootstrap of (b right − a right) per item, computed
    apart: the same resamples weight both raters' items."""
    rng = np.random.default_rng(3)
    a = (rng.random(200) < 0.7).astype(float)
    b = np.where(rng.random(200) < 0.8, a, 1 - a)
    sa, sb = np.column_stack([a, np.ones(200)]), np.column_stack([b, np.ones(200)])
    ba, bb = paired_replicates(sa, sb, 1000, 5)
    def acc(m):
        return m[:, 0] / m[:, 1]
    got = paired_difference(acc, acc, sa, sb, ba, bb, direction="higher", alpha=0.05)
    assert got["difference"] == pytest.approx(b.mean() - a.mean())
    rep = stats.bootstrap_sums(np.column_stack([b - a, np.ones(200)]), 1000, 5)
    lo, hi = stats.percentile_ci(rep[:, 0] / rep[:, 1])
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((lo, hi))
    assert got["worse_bound"] == pytest.approx(np.quantile(-(rep[:, 0] / rep[:, 1]), 0.05))
    # pairing narrows the interval against resampling the two raters independently
    ind = stats.bootstrap_sums(sb, 1000, 6)[:, 0] / 200 - stats.bootstrap_sums(sa, 1000, 7)[:, 0] / 200
    assert hi - lo < np.subtract(*np.quantile(ind, [0.975, 0.025]))


@pytest.fixture(scope="module")
def ws(pandalm_ws, tmp_path_factory):
    """PandaLM with two more judges on the same items: GPT-3.5's verdicts stored again under another spec
    (no worse, by construction) and a judge that always answers A (clearly worse)."""
    w = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("gate") / "ws")
    j = w.judgments_repo.judgments_frame(GPT)
    w.judgments_repo.add_judgments([Judgment(key=f"same-{r.key}", item_id=r.item_id, judge="copy/gpt-3.5-turbo", spec_hash="c0",
                              order=r.order, verdict=r.verdict, status=r.status, raw=r.raw)
                     for r in j.itertuples()])
    w.judgments_repo.add_judgments([Judgment(key=f"a-{r.key}", item_id=r.item_id, judge="always/A", spec_hash="a0",
                              order=r.order, verdict="A", raw="A") for r in j.itertuples()])
    yield w
    w.close()


@pytest.fixture(scope="module")
def truth(ws):
    cons = ws.annotations_repo.consensus_frame("mv")
    return pd.Series(cons["label"].to_numpy(dtype=str), index=cons["item_id"].to_numpy(dtype=str))


def test_estimates_match_scikit_learn(ws, truth):
    got = compare_judges(ws, GPT, P7B, truth, n_boot=200)
    assert got["n_items"] == 999
    for judge, side in ((GPT, "baseline"), (P7B, "candidate")):
        j = ws.judgments_repo.judgments_frame(judge)
        pred = j["verdict"].replace({"invalid": "tie"}).to_numpy()
        true = truth.reindex(j["item_id"]).to_numpy()
        assert got["metrics"]["accuracy"][side] == pytest.approx(accuracy_score(true, pred))
        assert got["metrics"]["cohen_kappa"][side] == pytest.approx(cohen_kappa_score(true, pred))
    # PandaLM's own README: 0.7107 and 0.6677
    assert got["metrics"]["accuracy"]["difference"] == pytest.approx(0.6677 - 0.7107, abs=1e-4)


def test_gate_passes_a_candidate_that_is_no_worse(ws, truth):
    res = run_gate(ws, GPT, "copy/gpt-3.5-turbo", truth, consensus="mv", n_boot=300)
    assert res["passed"] and not res["failed"]
    assert all(r["difference"] == 0 for r in res["metrics"].values())


def test_gate_fails_a_clearly_worse_candidate(ws, truth):
    res = run_gate(ws, GPT, "always/A", truth, consensus="mv", n_boot=300)
    assert not res["passed"]
    assert {"accuracy", "cohen_kappa"} <= set(res["failed"])
    assert res["metrics"]["cohen_kappa"]["candidate"] == pytest.approx(0.0)


def test_the_rule_needs_both_an_effect_beyond_tolerance_and_significance():
    row = {"worse_by": 0.05, "worse_bound": -0.01}
    cmp = {"metrics": {"accuracy": row}}
    assert decide(cmp, {"accuracy_tolerance": 0.02})["passed"]  # beyond tolerance, not significant
    cmp = {"metrics": {"accuracy": {"worse_by": 0.01, "worse_bound": 0.005}}}
    assert decide(cmp, {"accuracy_tolerance": 0.02})["passed"]  # significant, within tolerance
    cmp = {"metrics": {"accuracy": {"worse_by": 0.05, "worse_bound": 0.01}}}
    assert not decide(cmp, {"accuracy_tolerance": 0.02})["passed"]


def test_gate_cli_exit_codes_and_markdown(ws, tmp_path, capsys):
    w = ["-w", str(ws.path), "--consensus", "mv", "--n-boot", "200"]
    assert main(["gate", "--baseline", GPT, "--candidate", "copy/gpt-3.5-turbo", *w]) == 0
    md = tmp_path / "gate.md"
    assert main(["gate", "--baseline", GPT, "--candidate", "always/A", "--markdown", str(md), *w]) == 1
    text = md.read_text()
    assert text.startswith("❌ **judge gate failed**") and "| Accuracy |" in text and "999" in text
    saved = json.loads((ws.path / "reports" / "gate.json").read_text())
    assert saved["candidate"] == "always/A" and not saved["passed"]
    capsys.readouterr()
    assert main(["gate", "--baseline", GPT, "--candidate", "nobody/x", *w]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no judge 'nobody/x'" in err
    assert main(["gate", "--baseline", GPT, "--candidate", GPT, *w]) == 2


def test_markdown_makes_names_inert():
    """Judge names are code spans, rendered literally by a CommonMark renderer: no markup, link or HTML acts, and the
    name reads as it is written (no escape shows)."""
    from markdown_it import MarkdownIt

    res = {"passed": True, "failed": [], "candidate": "x|y`<script>alert(1)</script>", "baseline": "judge[v2] <beta>",
           "n_items": 3, "consensus": "mv <b>", "n_boot": 10, "ci_level": 0.95, "alpha": 0.05, "metrics": {}}
    html = MarkdownIt().render(markdown(res))
    assert "<script>" not in html and "<beta>" not in html and "<b>" not in html
    assert "<code>x|y`&lt;script&gt;alert(1)&lt;/script&gt;</code>" in html
    assert "<code>judge[v2] &lt;beta&gt;</code>" in html


def test_bias_estimates_are_the_audits(ws, truth):
    """Verbosity and self-preference excess as compared are the audit's own figures (PandaLM-7B judges
    LLaMA outputs: a self-preference case), here against the same verdicts stored under another name."""
    from judgecal.audit.pipeline import AuditOptions, audit_workspace

    j = ws.judgments_repo.judgments_frame(P7B)
    ws.judgments_repo.add_judgments([Judgment(key=f"p7-{r.key}", item_id=r.item_id, judge="copy/pandalm-7b", spec_hash="p7",
                               order=r.order, verdict=r.verdict, status=r.status, raw=r.raw)
                      for r in j.itertuples()])
    got = compare_judges(ws, P7B, "copy/pandalm-7b", truth, n_boot=200)["metrics"]
    audit = audit_workspace(ws, AuditOptions(consensus="mv", n_boot=100)).to_json()["judges"][P7B]["metrics"]
    for name in ("verbosity_excess", "self_preference_excess"):
        assert got[name]["baseline"] == pytest.approx(audit[name]["estimate"], abs=1e-9)
        assert got[name]["difference"] == 0
