"""Each judge's bias profile on PandaLM's real pairs, run through the battery against judges served over the
OpenAI-compatible API (the judges of tests/test_perturbation_probes.py, and one swayed by an author's stated
identity): the profile in audit.json holds the audit's own figures, nulls and flags in the registry's order; page
one counts them; audit.html draws them; the explorer's Biases page charts them in Chromium, the cited-answer judge's
authority bias marked flagged and no other perturbation; and a serious bias (diversity) makes a judge not aligned
where a caution one (authority) does not."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from explorer_browser import Browser, serve
from test_hardening_engine import Vendor, completion
from test_perturbation_probes import _by_content, _responses, ignores, prefers_cited

from judgecal.audit.decision import DEFAULT_THRESHOLDS, judge_verdict
from judgecal.audit.perturb import TEMPLATED
from judgecal.audit.probes import PROBES
from judgecal.catalogue import FLAGS, flag_info
from judgecal.cli import main

BUDGET = 40 * 22  # 40 items: clean, null and seven perturbations, both orders; a challenge and an agreeing turn
IDENTITY = re.compile(r"The author of Response ([AB]) is ")


def named_author(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Picks the response whose author's identity the prompt states; its own taste otherwise."""
    said = IDENTITY.search(json.loads(prompt)[-1]["content"])
    return 200, {}, completion(said.group(1) if said else _by_content(*_responses(prompt)))


JUDGES = {"openai/ignores": ignores, "openai/cites": prefers_cited, "openai/identity": named_author}


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> tuple[Path, dict[str, Any], str]:
    """The workspace, its audit.json and what `judgecal audit` printed at 80 columns."""
    ws = tmp_path_factory.mktemp("profile") / "ws"
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:  # the module's workspace is built before each test's own setup
        mp.setenv("JUDGECAL_DATA_MIRROR", str(mirror))
        mp.setenv("JUDGECAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
        assert main(["import", "pandalm", "-w", str(ws)]) == 0
        for judge, script in JUDGES.items():
            srv = Vendor(script, 0.0)
            try:
                assert main(["probe", "battery", "--judge", judge, "--base-url", srv.url,
                             "--budget", str(BUDGET), "--quiet", "-w", str(ws)]) == 0
            finally:
                srv.shutdown()
                srv.server_close()
        mp.setenv("COLUMNS", "80")
        with redirect_stdout(out):
            assert main(["audit", "--n-boot", "300", "-w", str(ws)]) == 0
    return ws, json.loads((ws / "reports" / "audit.json").read_text("utf-8")), out.getvalue()


def _owner(code: str) -> str:
    """The probe a flag belongs to (by the metric it is read from, or its name's first part)."""
    for p in PROBES:
        if p.info and (flag_info(code).metric in {p.info.headline, *(m.name for m in p.metric_infos)}
                       or code.partition(":")[0] == p.name):
            return p.name
    raise AssertionError(code)


def test_the_profile_holds_the_audits_own_figures(audited):  # type: ignore[no-untyped-def]
    _, rep, _ = audited
    described = [p for p in PROBES if p.info is not None]
    for judge in JUDGES:
        j = rep["judges"][judge]
        biases = j["biases"]
        assert [b["probe"] for b in biases] == [p.name for p in described]  # every bias probe, the registry's order
        for b, p in zip(biases, described, strict=True):
            assert p.info is not None and b["title"] == p.info.title
            m = j["metrics"].get(b["metric"])
            if p.info.headline not in j["metrics"]:
                assert b["status"] == "not tested" and b["how_to_run"] == p.info.how_to_run and "figure" not in b
                continue
            assert b["status"] == "tested"
            assert b["figure"] == {k: m[k] for k in ("estimate", "ci_low", "ci_high")}
            section = j.get(p.name) or {}
            if p.info.chart_null:  # the null run's own figure, with its interval
                assert b["null"] == {k: section[p.info.chart_null][k] for k in ("estimate", "ci_low", "ci_high")}
            elif m.get("null_value") is not None:
                assert b["null"]["estimate"] == m["null_value"] and b["null"]["ci_low"] is None
            mine = sorted(c for c in j["flags"] if _owner(c) == p.name and not c.endswith(":underpowered"))
            assert b["flagged"] is bool(mine) and sorted(x for x in b["flags"] if x in mine) == mine
        flagged = {b["probe"] for b in biases if b["flagged"]}
        battery = {p.name for p in described if p.info and p.info.group == "perturbation" and p.name in TEMPLATED}
        tested = {b["probe"] for b in biases if b["status"] == "tested"}
        assert battery <= tested and {"position", "verbosity"} <= tested  # both orders and a human consensus
        assert not {"sentiment", "fallacy_oversight", "verbosity_rewrite"} & tested  # CALM's rewrites are not on PandaLM's pairs
        expect = {"openai/ignores": set(), "openai/cites": {"authority"}, "openai/identity": {"diversity"}}[judge]
        assert flagged & battery == expect


def test_page_one_counts_each_judges_biases(audited):  # type: ignore[no-untyped-def]
    _, rep, out = audited
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert max(len(line) for line in out.splitlines()) <= 80
    for judge in JUDGES:
        biases = rep["judges"][judge]["biases"]
        flagged = [b["title"].removesuffix(" bias") for b in biases if b["flagged"]]
        n = sum(b["status"] == "tested" for b in biases)
        assert n == 10  # position, verbosity, the battery's seven and manipulability
        words = f"{len(flagged)} flagged ({', '.join(flagged)})" if flagged else "none flagged"
        assert lines.count(f"{judge}: biases: {n} tested, {words}") == 1
    assert "openai/cites: biases: 10 tested, 2 flagged (verbosity, authority)" in lines


def test_a_serious_bias_fails_the_judge_and_a_caution_one_does_not(audited):  # type: ignore[no-untyped-def]
    _, rep, _ = audited
    assert FLAGS["diversity_bias"].severity == "serious" and FLAGS["authority_bias"].severity == "caution"
    identity, cites = rep["judges"]["openai/identity"], rep["judges"]["openai/cites"]
    shift = identity["metrics"]["shift_diversity"]
    assert shift["estimate"] - shift["null_value"] > DEFAULT_THRESHOLDS["serious_bias"]["not_aligned_beyond"]
    serious = [d for d in identity["verdict"]["details"] if d["code"] == "serious_bias"]
    assert [(d["severity"], d["metric"]) for d in serious] == [("not aligned", "shift_diversity")]
    assert cites["metrics"]["shift_authority"]["estimate"] > 0.30  # as far, but declared a caution
    codes = {d["code"]: d["severity"] for d in cites["verdict"]["details"]}
    assert codes["flag:authority_bias"] == "caution" and "serious_bias" not in codes


def _entry(flag: str, metric: str, estimate: float) -> dict[str, Any]:
    return {"kind": "pairwise", "n_items_with_consensus": 0, "flags": [flag],
            "metrics": {metric: {"estimate": estimate, "ci_low": estimate - 0.1, "ci_high": estimate + 0.1,
                                 "null_value": 0.05, "q": 0.001}}}


@pytest.mark.parametrize(("flag", "metric", "estimate", "status"), [
    ("diversity_bias", "shift_diversity", 0.40, "not aligned"),  # 0.35 from its null, beyond 0.30
    ("diversity_bias", "shift_diversity", 0.30, "caution"),  # 0.25 from its null: the flag alone
    ("authority_bias", "shift_authority", 0.60, "caution"),  # a caution however far
])
def test_the_serious_bias_rule(flag, metric, estimate, status):  # type: ignore[no-untyped-def]
    v = judge_verdict(_entry(flag, metric, estimate))
    assert {d["code"]: d["severity"] for d in v["details"]}.get("serious_bias", "caution") == status


def test_audit_html_draws_the_profile(audited):  # type: ignore[no-untyped-def]
    ws, rep, _ = audited
    html = (ws / "reports" / "audit.html").read_text("utf-8")
    svgs = re.findall(r'<svg[^>]*class="plot bias-profile".*?</svg>', html, re.S)
    assert len(svgs) == len(rep["judges"])
    order = list(rep["judges"])
    for judge in JUDGES:
        svg = svgs[order.index(judge)]
        biases = rep["judges"][judge]["biases"]
        assert re.findall(r'data-probe="([^"]+)"', svg) == [b["probe"] for b in biases]
        assert svg.count('fill="#c33">flagged') == sum(b["flagged"] for b in biases)  # marked in red
        assert svg.count('font-style="italic">not tested: ') == sum(b["status"] == "not tested" for b in biases)


@pytest.fixture(scope="module")
def explorer(audited) -> Iterator[Browser]:  # type: ignore[no-untyped-def]
    with serve(audited[0]) as url:
        b = Browser(url)
        yield b
        b.close()


def _texts(where: Any, css: str) -> list[str]:
    """The texts of a chart's SVG elements (an SVG element has no inner text)."""
    return list(where.locator(css).evaluate_all("els => els.map(e => e.textContent)"))


def test_the_biases_page_charts_each_judges_profile(audited, explorer):  # type: ignore[no-untyped-def]
    _, rep, _ = audited
    b = explorer
    b.open("Biases")
    judges = [name for name, j in rep["judges"].items() if j.get("biases")]
    k = judges.index("openai/cites") + 1
    chart = b.page.locator(f".st-key-profile-{k} [data-testid='stPlotlyChart']")
    chart.locator(".ytick text").first.wait_for(timeout=30_000)
    biases = rep["judges"]["openai/cites"]["biases"]
    ticks = _texts(chart, ".ytick text")
    assert sorted(ticks) == sorted(x["title"] for x in biases)  # every bias named, tested or not
    marked = [t for t in _texts(chart, ".textpoint text") if t.startswith("flagged")]
    assert len(marked) == 2  # verbosity and authority, in the chart itself
    untested = [t for t in _texts(chart, ".textpoint text") if t.startswith("not tested")]
    assert len(untested) == sum(x["status"] == "not tested" for x in biases)
    shown = b.assert_csv_is_grid(f"profile-{k}")  # the rows the grid draws, and all of them in its CSV
    state = dict(zip(shown["bias"], shown["state"], strict=True))
    assert list(state) == [x["title"] for x in biases]
    assert state["authority bias"] == "flagged (caution)"
    battery = [x["title"] for x in biases if x["metric"].startswith("robustness_") and x["status"] == "tested"]
    assert len(battery) == 7 and all(state[t] == "not flagged" for t in battery if t != "authority bias")
    assert all(state[x["title"]].startswith("not tested: ") for x in biases if x["status"] == "not tested")
    assert b.errors == [] and b.external == []


def test_names_in_the_chart_are_inert():
    """A plugin's probe title and command are data: escaped in the SVG, never markup."""
    from judgecal.audit.schema import BiasEntry
    from judgecal.report.bias_profile import profile_svg

    hostile = "<script>alert(1)</script> & \u202eevil"
    biases = [BiasEntry(probe="x", title=hostile, metric="m", metric_title=hostile, status="tested",
                        figure={"estimate": 0.4, "ci_low": 0.3, "ci_high": 0.5}, flagged=True, severity="caution"),
              BiasEntry(probe="y", title="y", metric="m", metric_title="m", status="not tested",
                        how_to_run=hostile + " " + "x" * 100)]
    svg = str(profile_svg(biases))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "\u202e" not in svg
    assert "&amp;" in svg and not re.search(r"&[a-z]*…", svg)  # no entity cut in two by the shortening
