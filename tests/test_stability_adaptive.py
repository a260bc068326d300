"""Adaptive repeats on the real embedded judge: the stopping rule holds per unit, and the adaptive calls are
the first N of a fixed-N run (the fixed run pays only the rest)."""

import numpy as np
from conftest import copy_workspace

from judgecal.judges.engine import Engine
from judgecal.judges.rubric import load_rubric
from judgecal.judges.spec import JudgeSpec
from judgecal.stability.adaptive import adaptive_repeats, fixed_repeats
from judgecal.stats.stability import binary_spread, required_repeats, worst_case_epsilon


def test_adaptive_repeats_against_fixed_n(pandalm_ws, tmp_path, local_backend):
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    items = sorted(ws.items(), key=lambda it: it.item_id)[:3]
    spec = JudgeSpec(backend="local", model="smollm2", temperature=1.0)
    eng = Engine(ws, local_backend, load_rubric("pairwise"), spec=spec, progress=False)
    eps = worst_case_epsilon(8)
    ad = adaptive_repeats(eng, items, epsilon=eps, n0=4, n_max=8)
    assert len(ad["units"]) == 6 and ad["paid_calls"] == ad["calls"]
    for u in ad["units"]:
        k = round(u["estimate"] * u["n"])
        assert 4 <= u["n"] <= 8
        assert u["n"] >= min(8, int(required_repeats(binary_spread(k, u["n"]), eps)))  # the stopping rule
    fx = fixed_repeats(eng, items, 8)
    assert fx["calls"] == 48 and fx["paid_calls"] == 48 - ad["calls"]  # the adaptive answers are reused
    fixed = {(u["item_id"], u["order"]): u["estimate"] for u in fx["units"]}
    for u in ad["units"]:
        if u["n"] == 8:
            assert np.isclose(u["estimate"], fixed[(u["item_id"], u["order"])])
    ws.close()
