"""Adaptive repeats on the real embedded judge: the stopping rule holds per unit, and the adaptive calls are
the first N of a fixed-N run (the fixed run pays only the rest)."""

import numpy as np
import pytest
from conftest import copy_workspace

from judgecal.judges.engine import Engine
from judgecal.judges.rubric import load_rubric
from judgecal.judges.spec import JudgeSpec
from judgecal.stability.adaptive import adaptive_repeats, fixed_repeats, next_n, pooled_variance
from judgecal.stats.stability import worst_case_epsilon


def test_adaptive_repeats_against_fixed_n(pandalm_ws, tmp_path, local_backend):
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    items = sorted(ws.items_repo.items(), key=lambda it: it.item_id)[:3]
    spec = JudgeSpec(backend="local", model="smollm2", temperature=1.0)
    eng = Engine(ws, local_backend, load_rubric("pairwise"), spec=spec, progress=False)
    eps = worst_case_epsilon(8)
    ad = adaptive_repeats(eng, items, epsilon=eps, n0=4, n_max=8)
    assert len(ad["units"]) == 6 and ad["paid_calls"] == ad["calls"]
    k = np.array([round(u["estimate"] * u["n"]) for u in ad["units"]])
    n = np.array([u["n"] for u in ad["units"]])
    assert ((n >= 4) & (n <= 8)).all() and ad["spread"] == "pooled"
    # the stopping rule: no unit asks for more samples than it has (or it is at n_max)
    assert (next_n(k, n, [u["order"] for u in ad["units"]], epsilon=eps, n0=4, n_max=8) == n).all()
    assert [u["s"] ** 2 for u in ad["units"]] == pytest.approx(pooled_variance(k, n, [u["order"] for u in ad["units"]]))
    fx = fixed_repeats(eng, items, 8)
    assert fx["calls"] == 48 and fx["paid_calls"] == 48 - ad["calls"]  # the adaptive answers are reused
    fixed = {(u["item_id"], u["order"]): u["estimate"] for u in fx["units"]}
    for u in ad["units"]:
        if u["n"] == 8:
            assert np.isclose(u["estimate"], fixed[(u["item_id"], u["order"])])
    ws.close()
