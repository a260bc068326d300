"""The perturbation battery's validation: the simulated judges' planted excess matches its closed form, the
call count of a sequential battery by hand, and the rows `judgecal validate` reports (fixed N beside the
sequential rule)."""

from __future__ import annotations

import pandas as pd
import pytest

from judgecal.audit import challenge
from judgecal.audit.perturb import SOURCE, TEMPLATES, item_excess
from judgecal.audit.simulate import judge_input, simulate
from judgecal.audit.validate_battery import battery_calls, scenarios, validate_battery


@pytest.mark.parametrize("name", ["planted deterministic", "planted sampled", "clean sampled"])
def test_the_planted_excess_is_the_effect_of_interest(name):
    sc = dict(scenarios(0.05))[name]
    sim = simulate(sc, 20000, 3)
    ex = item_excess(pd.concat([sim["judgments"], sim["probes"]]), judge_input(sim).pairs(SOURCE))
    want = 0.05 if name.startswith("planted") else 0.0
    for bias in TEMPLATES:  # the per-item excess has sd <= 0.5: 4 standard errors is 0.014
        # fallacy oversight, read the other way: the effect minus the move away (the clean judge moves 2 x effect)
        w = -0.05 if TEMPLATES[bias].direction == "away" and not name.startswith("planted") else want
        assert ex[bias].mean() == pytest.approx(w, abs=0.014), bias
    # manipulability: the challenged verdicts' flips minus those after an agreeing turn, planted at the effect too
    flips = challenge.item_excess(sim["probes"], judge_input(sim).pairs(SOURCE))
    assert len(flips) == 20000 and flips.mean() == pytest.approx(want, abs=0.014)


def test_a_sequential_battery_costs_what_its_running_biases_cost():
    # two biases stop at 20 and 40 items of 60: 20 items x (4 shared + 2 x 2), then 20 x (4 + 2), then nothing
    assert battery_calls([20, 40], 60, 20) == 20 * 8 + 20 * 6
    assert battery_calls([60, 60], 60, 20) == 60 * 8  # none settled: the fixed battery of two
    assert battery_calls([], 60, 20) == 0
    # manipulability costs 4 an item (a challenge and an agreeing turn, both orders): it stops at 20 here
    assert battery_calls([20, 40], 60, 20, [4, 2]) == 20 * (4 + 4 + 2) + 20 * (4 + 2)


def test_validate_rows_fixed_n_beside_sequential():
    res = validate_battery(n_items=1000, seeds=3, n_boot=300, batch=20)
    rows = {(r["judge"], r["bias"]): r for r in res["rows"]}
    assert len(rows) == 4 * (len(TEMPLATES) + 1) and res["calls_fixed"] == (2 * (len(TEMPLATES) + 2) + 4) * 1000
    for (judge, bias), r in rows.items():
        assert 0 < r["calls_sequential"] <= r["calls_fixed"] == (4000 if bias == challenge.BIAS else 2000)
        if judge == "clean deterministic" and (bias == challenge.BIAS or TEMPLATES[bias].direction != "away"):
            assert r["flagged_fixed"] == r["flagged_sequential"] == 0 and r["calls_sequential"] < 400
        if judge == "planted deterministic":
            assert r["flagged_sequential"] == 1.0 and r["flagged_fixed"] >= 2 / 3, (bias, r)
    assert 0.4 <= res["saving"] < 1 and res["agreement"] >= 0.9
    assert res["saving_by_judge"]["clean deterministic"] > res["saving_by_judge"]["clean sampled"]
    assert set(res["goals"]) == {"detect", "false_flag", "saving"} and res["goals"]["saving"]
