"""`judgecal plan --strategy active` on PandaLM with its two recorded judges: uniform vs active budgets."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgecal.audit.models import item_models
from judgecal.audit.truth import resolve_truth
from judgecal.audit.uncertainty import calibrated_err2, spread_around, workspace_uncertainty
from judgecal.cli import main
from judgecal.stats.active import active_variance, inclusion_probabilities
from judgecal.stats.winrate import outcome_scores

GPT = "replay/pandalm/gpt-3.5-turbo"


def test_plan_active_on_pandalm(pandalm_ws, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    ws = pandalm_ws
    assert main(["plan", "--strategy", "active", "--consensus", "mv", "--judge", GPT, "--json",
                 "-w", str(ws.db_path.parent)]) == 0
    res = json.loads(capsys.readouterr().out)
    p = res["judges"][GPT]
    assert p["n_items"] == len(item_models(ws)) and p["n_labelled_measured"] == p["n_items"]
    assert p["expected_labels_active"] < p["n_uniform"] < p["n_items"]
    # the uncertainty's mean equals the judge's squared error against the humans (the calibration's promise)
    truth, _ = resolve_truth(ws, "mv", n_boot=10)
    ids = item_models(ws).index.astype(str).tolist()
    unc = spread_around(workspace_uncertainty(ws, ids, GPT), workspace_uncertainty(ws, ids))
    e, _, _ = calibrated_err2(unc, truth)
    y = outcome_scores(truth.reindex(ids).to_numpy(dtype=object))
    assert e.mean() == pytest.approx(np.mean((y - unc["f"].to_numpy()) ** 2))
    # the planned active budget reaches the half-width and one label less does not
    v = (0.03 / 1.959963984540054) ** 2
    u = np.sqrt(e)
    assert active_variance(e, inclusion_probabilities(u, p["n_active"])) <= v
    assert active_variance(e, inclusion_probabilities(u, p["n_active"] - 1)) > v
    assert set(p["pairs"]) and all(q["n_uniform"] <= q["n_items"] for q in p["pairs"].values())
    assert main(["plan", "--strategy", "active", "--consensus", "mv", "-w", str(ws.db_path.parent)]) == 0
    assert "uniform draw" in capsys.readouterr().out
    assert main(["plan", "--strategy", "active", "--tau", "2", "-w", str(ws.db_path.parent)]) == 2
    assert "--tau: 2 is not between 0 and 1" in capsys.readouterr().err
    assert main(["plan", "--strategy", "active", "--judge", "nobody", "-w", str(ws.db_path.parent)]) == 2
    assert "no judge 'nobody' in this workspace" in capsys.readouterr().err
