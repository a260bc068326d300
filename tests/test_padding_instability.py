"""Padding and run-to-run instability probes: hand-made verdicts, statsmodels, and live on SmolLM2."""

import json

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from judgecal.audit.instability import instability, repeat_counts
from judgecal.audit.padding import SOURCE, pad_text, padded_items, padding_preference
from judgecal.data.records import Candidate, Item


def _frame(rows):
    return pd.DataFrame(rows, columns=["item_id", "order", "sample", "verdict"])


def test_instability_hand_computed():
    j = _frame([
        ("x", "AB", 0, "A"), ("x", "AB", 1, "A"), ("x", "AB", 2, "B"),  # 2 of 3 pairs disagree
        ("x", "BA", 0, "B"), ("x", "BA", 1, "B"), ("x", "BA", 2, "B"),  # unanimous
        ("y", "AB", 0, "tie"), ("y", "AB", 1, "A"), ("y", "AB", 2, "invalid"),  # invalid left out: 1 of 1
        ("z", "AB", 0, "A"),  # a single repeat does not count
    ])
    res = instability(j, n_boot=200)
    assert res["instability_rate"]["estimate"] == pytest.approx(3 / 7)
    assert res["unanimity_rate"]["estimate"] == pytest.approx(1 / 3)
    assert res["n_groups"] == 3 and res["repeats_per_group"] == 3
    assert res["instability_rate"]["ci_low"] <= 3 / 7 <= res["instability_rate"]["ci_high"]


def test_deterministic_judge_has_zero_instability_and_kappa_matches_statsmodels():
    rng = np.random.default_rng(3)
    rows = [(f"i{i}", "AB", s, v) for i in range(300) for s, v in enumerate([rng.choice(["A", "B", "tie"])] * 4)]
    assert instability(_frame(rows), n_boot=100)["instability_rate"]["estimate"] == 0.0
    noisy = [(i, o, s, rng.choice(["A", "B", "tie"]) if rng.random() < 0.4 else v) for i, o, s, v in rows]
    res = instability(_frame(noisy), n_boot=100)
    counts, _ = repeat_counts(_frame(noisy))
    assert res["fleiss_kappa_across_samples"]["estimate"] == pytest.approx(sm_fleiss(counts), abs=1e-10)


def test_instability_recovers_a_planted_rate():
    # each repeat is redrawn as a fair coin with probability u: two repeats differ with u (1 - u/2)
    rng = np.random.default_rng(0)
    u, rows = 0.3, []
    for i in range(2000):
        v0 = rng.choice(["A", "B"])
        rows += [(f"i{i}", "AB", s, rng.choice(["A", "B"]) if rng.random() < u else v0) for s in range(5)]
    m = instability(_frame(rows), n_boot=500)["instability_rate"]
    assert m["ci_low"] <= u * (1 - u / 2) <= m["ci_high"]


def test_pad_text_keeps_the_answer_and_adds_no_new_words():
    text = "Paris is the capital. It lies on the Seine!"
    padded = pad_text(text)
    assert padded.startswith(text) and len(padded) > 1.8 * len(text)
    new = set(padded[len(text):].split()) - set(text.replace(".", " ").replace("!", " ").split())
    assert new <= {"To", "restate", "the", "answer", "above", "point", "by", "point,", "so", "that", "nothing", "is",
                   "missed:", "(1)", "(2)", "capital.", "Seine."}
    assert pad_text("") == ""


def test_padded_items_and_hand_computed_pick_rate():
    items = [Item(f"q{k}", "Q", [Candidate(f"answer {k}.", "m1"), Candidate("other.", "m2")]) for k in range(3)]
    probes = padded_items(items)
    assert [p.item_id for p in probes] == ["q0#pad", "q1#pad", "q2#pad"] and probes[0].source == SOURCE
    assert probes[0].candidates[0].text == "answer 0." and probes[0].candidates[1].text.startswith("answer 0.")
    assert probes[0].candidates[1].model == "m1"
    j = pd.DataFrame({"item_id": ["q0#pad", "q0#pad", "q1#pad", "q1#pad", "q2#pad", "q2#pad", "q0"],
                      "verdict": ["B", "B", "A", "B", "tie", "invalid", "A"]})
    res = padding_preference(j, {p.item_id for p in probes}, n_boot=200)
    assert res["pad_pick_rate"]["estimate"] == pytest.approx(3 / 4) and res["pad_pick_rate"]["n"] == 4
    assert res["pad_tie_rate"]["estimate"] == pytest.approx(1 / 5)
    assert res["n_pairs"] == 3


def test_padding_probe_and_repeats_live_through_the_cli(tmp_path, capsys):
    from judgecal.cli import main

    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    assert main(["probe", "padding", "--judge", "local/smollm2", "--items", "4", "--quiet", "-w", ws]) == 0
    assert "4 padded pairs over 4 items; 16 calls run" in capsys.readouterr().out
    # the rerun is served from the cache
    assert main(["probe", "padding", "--judge", "local/smollm2", "--items", "4", "--quiet", "-w", ws]) == 0
    assert "0 calls run, 16 cached" in capsys.readouterr().out
    assert main(["judge", "--judge", "local/smollm2", "--items", "4", "--samples", "3", "--temperature", "1.0",
                 "--quiet", "-w", ws]) == 0
    assert main(["audit", "--n-boot", "200", "-w", ws]) == 0
    judges = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())["judges"]
    local, hot = judges["local/smollm2"], judges["local/smollm2[temperature=1.0]"]  # two specs, two judges
    assert local["n_items_with_consensus"] == 4  # padded pairs never count as aligned items
    from judgecal.data.store import Workspace

    with Workspace(ws) as w:
        f = w.judgments_repo.judgments_frame("local/smollm2")
        f_hot = w.judgments_repo.judgments_frame("local/smollm2[temperature=1.0]")
    assert len(f_hot) == 4 * 2 * 3 and hot["n_judgments"] == 24
    valid = f_hot[f_hot["verdict"].isin(["A", "B", "tie"])]
    repeats = valid.groupby(["item_id", "order"])["sample"].nunique()
    assert repeats.max() <= 3 and hot["instability"]["n_groups"] == int((repeats >= 2).sum())
    inst = hot["metrics"]["instability_rate"]
    assert 0 <= inst["estimate"] <= 1 and {"p", "q", "mde"} <= set(inst)
    if "pad_pick_rate" in local["metrics"]:  # present when the tiny model gave decisive verdicts
        m = local["metrics"]["pad_pick_rate"]
        pads = f[f["item_id"].str.endswith("#pad") & f["verdict"].isin(["A", "B"])]
        assert m["n"] == len(pads) and m["estimate"] == pytest.approx((pads["verdict"] == "B").mean())
