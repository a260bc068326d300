"""The CALM run of `benchmarks/bench_calm.py` with an API judge (GPT-4o, Claude) in CALM's setting: the fact set's
pairs with the published sentiment, fallacy and verbosity rewrites, the whole battery, then the audit. It calls the real API,
so it runs only when the key is set (OPENAI_API_KEY, ANTHROPIC_API_KEY); the model can be changed with
JUDGECAL_OPENAI_MODEL / JUDGECAL_ANTHROPIC_MODEL. 28 calls a pair; 4 pairs by default (JUDGECAL_CALM_PAIRS)."""

from __future__ import annotations

import json
import os

import pytest

from judgecal.audit.perturb import TEMPLATES
from judgecal.cli import main
from judgecal.cli.battery import calls_per_item
from judgecal.cli.challenge import FOLLOW_UPS
from judgecal.data.calm import load_calm
from judgecal.data.store import Workspace

JUDGES = [
    pytest.param(f"openai/{os.environ.get('JUDGECAL_OPENAI_MODEL', 'gpt-4o')}",
                 marks=pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set")),
    pytest.param(f"anthropic/{os.environ.get('JUDGECAL_ANTHROPIC_MODEL', 'claude-sonnet-4-5')}",
                 marks=pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"),
                                          reason="ANTHROPIC_API_KEY is not set")),
]


@pytest.mark.parametrize("judge", JUDGES)
def test_calm_battery_with_an_api_judge(tmp_path, judge):
    pairs = int(os.environ.get("JUDGECAL_CALM_PAIRS", "4"))
    ds = load_calm(("fact",))
    keep = {it.item_id for it in ds.items
            if {"sentiment", "fallacy_oversight", "verbosity"} <= set(it.metadata.get("rewrites", {}))}
    keep = set(sorted(keep)[:pairs])
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([it for it in ds.items if it.item_id in keep])
    ws.annotations_repo.add_annotations([a for a in ds.annotations if a.item_id in keep])
    budget = pairs * calls_per_item(len(TEMPLATES), FOLLOW_UPS)  # every bias applies, and the challenges
    assert main(["probe", "battery", "--judge", judge, "--budget", str(budget), "--quiet", "-w", str(ws.path)]) == 0
    assert main(["audit", "--n-boot", "500", "-w", str(ws.path)]) == 0
    entry = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())["judges"][judge]
    for bias in TEMPLATES:
        rob = entry["metrics"][f"robustness_{bias}"]
        assert 0 <= rob["estimate"] <= 1 and rob["n"] > 0
        assert 0 <= entry[bias]["null_robustness"]["estimate"] <= 1
    tested = {b["probe"]: b["status"] for b in entry["biases"]}
    assert tested["fallacy_oversight"] == tested["verbosity_rewrite"] == tested["manipulability"] == "tested"
    assert len(ws.judgments_repo.judgments_frame(judge=judge)) <= budget
