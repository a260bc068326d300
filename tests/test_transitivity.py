"""Transitivity: intransitive triads counted by hand, the random rater's rate derived by enumeration, and the
``transitivity`` probe on PandaLM's real triads (prompts with three or more of its five models' responses, each
pair labelled by three annotators and judged by GPT-3.5 and PandaLM-7B), counted here from the files."""

from __future__ import annotations

import html
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgecal.audit.check import check_probe
from judgecal.audit.evaluate import evaluate
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.audit.probes import TransitivityProbe
from judgecal.audit.transitivity import find_triads, transitivity
from judgecal.data.datasets import _text
from judgecal.stats.triads import is_cycle, random_cycle_rate

GPT = "replay/pandalm/gpt-3.5-turbo"


def test_cycles_and_the_random_rate_by_enumeration() -> None:
    assert is_cycle(np.array([1, -1, 1, 0, 1]), np.array([1, -1, 1, 0, np.nan]),
                    np.array([-1, 1, 1, 0, -1])).tolist() == [True, True, False, False, False]
    for t in (0.0, 0.2, 0.5, 1.0):
        p = {1: (1 - t) / 2, -1: (1 - t) / 2, 0: t}
        exact = sum(p[a] * p[b] * p[c] for a, b, c in itertools.product((1, -1, 0), repeat=3)
                    if is_cycle(np.array([a]), np.array([b]), np.array([c]))[0])
        assert random_cycle_rate(t) == pytest.approx(exact)
    assert random_cycle_rate(0.0) == 0.25
    with pytest.raises(ValueError):
        random_cycle_rate(1.5)


def _hand_input() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two prompts: p1 with responses x, y, z (items x-y, z-y, x-z: the second is stored the other way round),
    p2 with four responses and all six pairs (four triads)."""
    keys = pd.DataFrame({"item_id": ["1", "2", "3", "4", "5", "6", "7", "8", "9"],
                         "prompt": [1, 1, 1, 2, 2, 2, 2, 2, 2],
                         "a": [10, 12, 10, 20, 20, 20, 21, 21, 22], "b": [11, 11, 12, 21, 22, 23, 22, 23, 23]})
    # judge, order AB: x>y, y>z (item 2 says its A = z loses: B), z>x (item 3: B) -> a cycle; order BA: x>y,
    # y>z, x>z -> none; p2 (AB only): 20>21, 21>22, 22>20 is a cycle, every other triad has a tie or is ordered
    v_ab = ["A", "B", "B", "A", "B", "A", "A", "tie", "A"]
    v_ba = ["A", "B", "A"]
    j = pd.DataFrame({"item_id": keys["item_id"].tolist() + ["1", "2", "3"], "order": ["AB"] * 9 + ["BA"] * 3,
                      "sample": 0, "verdict": v_ab + v_ba})
    # two people on p1: one sees the cycle, one ties a pair
    human = pd.DataFrame({"item_id": ["1", "2", "3", "1", "2", "3"], "rater": ["h1"] * 3 + ["h2"] * 3,
                          "label": ["A", "B", "B", "A", "tie", "B"]})
    return keys, j, human


def test_triads_and_rates_by_hand() -> None:
    keys, j, human = _hand_input()
    ts = find_triads(keys, human)
    assert len(ts) == 1 + 4
    got = transitivity(j, ts, n_boot=200)
    # judge readings: p1 AB (cycle), p1 BA (none), p2 AB: triads (20,21,22) cycle, (20,21,23), (20,22,23),
    # (21,22,23) -> 2 cycles of 6 readings
    # p2's triads: 20>21, 21>23 (tie? item 8 is a tie) ... counted below by rule
    s = {("20", "21"): 1, ("20", "22"): -1, ("20", "23"): 1, ("21", "22"): 1, ("21", "23"): 0, ("22", "23"): 1}
    p2 = sum(bool(is_cycle(np.array([s[(u, v)]]), np.array([s[(v, w)]]), np.array([s[(u, w)]]))[0])
             for u, v, w in itertools.combinations(["20", "21", "22", "23"], 3))
    assert p2 == 1
    assert got["judge"]["estimate"] == pytest.approx((1 + 0 + p2) / 6) and got["judge"]["n"] == 6
    assert got["humans"]["estimate"] == pytest.approx(1 / 2) and got["humans"]["n"] == 2
    assert got["excess"]["estimate"] == pytest.approx((1 + p2) / 6 - 1 / 2)
    ties = 1 / 12  # one tie among the judge's twelve verdicts on triad pairs
    assert got["tie_rate"] == pytest.approx(ties) and got["random"] == pytest.approx((1 - ties) ** 3 / 4)


def test_a_judge_that_cycles_is_flagged() -> None:
    rows, verdicts, human = [], [], []
    for p in range(30):  # each prompt: x>y, y>z, z>x for the judge; x>y>z for the people (h1 cycles on 1 in 5)
        for n, (a, b, jv, hv) in enumerate(((0, 1, "A", "A"), (1, 2, "A", "A"), (0, 2, "B", "A"))):
            item = f"p{p}/{n}"
            rows.append({"item_id": item, "prompt": p, "a": 3 * p + a, "b": 3 * p + b})
            verdicts += [{"item_id": item, "order": o, "sample": 0, "verdict": jv} for o in ("AB", "BA")]
            human += [{"item_id": item, "rater": r, "label": jv if r == "h1" and p % 5 == 0 else hv}
                      for r in ("h1", "h2")]
    ts = find_triads(pd.DataFrame(rows), pd.DataFrame(human))
    j = pd.DataFrame(verdicts)
    inp = JudgeInput("rule/cycles", j, pd.Series(dtype=object), triads=ts)
    out = evaluate([inp], AuditConfig(n_boot=300), probes=[TransitivityProbe()], flag_order=["transitivity"])
    m = out["rule/cycles"].metrics
    assert m["intransitive_rate"].estimate == 1.0 and m["intransitive_rate"].extra["human_rate"] == pytest.approx(0.1)
    assert m["intransitivity_excess"].estimate == pytest.approx(0.9)
    assert out["rule/cycles"].flags == ["intransitive"]


def _pandalm_by_hand(mirror: Path) -> dict[str, float]:
    """Intransitive share per rater kind, from PandaLM's files: a response is its text per prompt, a pair counts
    once (its first item), each annotator and the GPT-3.5 judge one reading; GPT-3.5's unreadable verdicts are
    ties (the audit's default)."""
    rows = json.loads((mirror / "WeOpenML/PandaLM/data/testset-v1.json").read_text("utf-8"))
    gpt = {int(r["idx"]): {"1": 1, "2": -1}.get(str(r["gpt_result"]), 0) for r in json.loads(
        (mirror / "WeOpenML/PandaLM/data/gpt-3.5-turbo-testset-v1.json").read_text("utf-8"))}
    edges: dict[tuple[str, str, str], dict[str, int]] = {}
    for r in rows:
        prompt = str(r["instruction"]) + (f"\n\n{r['input']}" if r.get("input") else "")
        a, b = _text(r["response1"]), _text(r["response2"])
        if a == b:
            continue
        key = (prompt, min(a, b), max(a, b))
        if key in edges:
            continue
        sign = 1 if a == min(a, b) else -1
        labels = {f"h{k}": {0: 0, 1: 1, 2: -1}[int(r[f"annotator{k}"])] * sign for k in (1, 2, 3)}
        edges[key] = {**labels, "gpt": gpt[int(r["idx"])] * sign}
    by_prompt: dict[str, list[str]] = {}
    for p, u, v in edges:
        by_prompt.setdefault(p, []).extend([u, v])
    cycles = {"h": 0, "gpt": 0}
    triads = 0
    for p, texts in by_prompt.items():
        for u, v, w in itertools.combinations(sorted(set(texts)), 3):
            if not all((p, x, y) in edges for x, y in ((u, v), (v, w), (u, w))):
                continue
            triads += 1
            for rater in ("h1", "h2", "h3", "gpt"):
                s = [edges[(p, x, y)][rater] for x, y in ((u, v), (v, w), (u, w))]
                cycles["gpt" if rater == "gpt" else "h"] += s[0] != 0 and s[0] == s[1] == -s[2]
    return {"triads": triads, "gpt": cycles["gpt"] / triads, "humans": cycles["h"] / (3 * triads)}


def test_pandalm_triads_counted_from_the_files(pandalm_ws, mirror: Path) -> None:  # type: ignore[no-untyped-def]
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.audit.run import judge_inputs
    from judgecal.audit.truth import resolve_truth

    want = _pandalm_by_hand(mirror)
    assert want["triads"] > 300
    report = audit_workspace(pandalm_ws, AuditOptions(consensus="ds", n_boot=300)).to_json()
    m = report["judges"][GPT]["metrics"]
    assert m["intransitive_rate"]["estimate"] == pytest.approx(want["gpt"])
    assert m["intransitive_rate"]["n_triads"] == want["triads"] == m["intransitive_rate"]["n"]
    assert m["intransitive_rate"]["human_rate"] == pytest.approx(want["humans"])
    assert m["intransitivity_excess"]["estimate"] == pytest.approx(want["gpt"] - want["humans"])
    assert m["intransitivity_excess"]["null_value"] == 0.0 and m["intransitivity_excess"]["q"] is not None
    assert m["intransitive_rate"]["random_rate"] == pytest.approx(
        (1 - m["intransitive_rate"]["tie_rate"]) ** 3 / 4)
    truth, about = resolve_truth(pandalm_ws, "ds", n_boot=50)
    inputs = judge_inputs(pandalm_ws, truth, truth_source=about["source"])
    assert "raises only declared flags" in check_probe(TransitivityProbe, inputs=inputs, cfg=AuditConfig(n_boot=200))


def test_the_report_shows_transitivity(tmp_path: Path, mirror: Path) -> None:
    env = {**os.environ, "JUDGECAL_DATA_MIRROR": str(mirror), "COLUMNS": "100"}

    def cli(*args: str) -> str:
        res = subprocess.run([sys.executable, "-m", "judgecal.cli", *args, "-w", str(tmp_path / "ws")], env=env,
                             cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    cli("import", "pandalm")
    text = " ".join(cli("audit", "--n-boot", "300", "--details").split())
    assert "transitivity: not tested" not in text  # both recorded judges judged PandaLM's triads
    assert "trap sets: not tested" in text
    page = html.unescape((tmp_path / "ws/reports/audit.html").read_text("utf-8"))
    shown = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "Transitivity: intransitive triads" in shown and "random rate" in shown and "n triads" in shown
    report = json.loads((tmp_path / "ws/reports/audit.json").read_text("utf-8"))
    assert report["judges"][GPT]["transitivity"]["n_prompts"] > 50
