"""models.win_rate_weighted (AlpacaEval's win_rate, the mean preference probability) and
models.lc_win_rate (AlpacaEval 2's length-controlled win rate, by the alpaca-eval package)."""

import json

import numpy as np
import pandas as pd
import pytest

from judgecal.audit.win_rates import lc_win_rates
from judgecal.cli import main
from judgecal.stats.winrate_weighted import item_preferences, preference_of_a, weighted_win_rates


def test_preference_of_a_by_hand():
    q = preference_of_a([0.6, None, 0.2, None, None], [0.2, None, 0.6, None, None], [0.2, None, None, None, None],
                        ["A", "B", "B", "tie", "invalid"])
    # (0.6 + 0.1) / 1.0; verdict B; 0.2 / 0.8 (renormalised); tie; invalid as a tie
    assert q.tolist() == pytest.approx([0.7, 0.0, 0.25, 0.5, 0.5])
    assert np.isnan(preference_of_a([None], [None], [None], ["invalid"], invalid_as="wrong")[0])
    # verdicts held as categories (as an audit reads them) score alike, a missing one NaN
    verdicts = pd.Series(pd.Categorical(["A", None, "invalid", "tie", "B"]))
    for invalid_as, want in (("tie", [1.0, np.nan, 0.5, 0.5, 0.0]), ("wrong", [1.0, np.nan, np.nan, 0.5, 0.0])):
        got = preference_of_a([np.nan] * 5, [np.nan] * 5, [np.nan] * 5, verdicts, invalid_as)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, preference_of_a([None] * 5, [None] * 5, [None] * 5,
                                                           verdicts.astype(object), invalid_as))


def test_weighted_win_rates_by_hand_and_orders_averaged():
    j = pd.DataFrame({"item_id": ["1", "1", "2", "3", "3"], "order": ["AB", "BA", "AB", "AB", "AB"],
                      "sample": [0, 0, 0, 0, 1], "verdict": ["A", "B", "B", "A", "B"],
                      "p_a": [0.9, 0.3, None, 0.8, 0.1], "p_b": [0.1, 0.7, None, 0.2, 0.9], "p_tie": None})
    q = item_preferences(j)
    assert q.to_dict() == pytest.approx({"1": 0.6, "2": 0.0, "3": 0.8})  # item 3: the first sample only
    res = weighted_win_rates(["x", "x", "y"], ["base", "base", "base"], q.reindex(["1", "2", "3"]).to_numpy(),
                             n_boot=500, seed=0)
    assert res.loc["x", "estimate"] == pytest.approx(0.3) and res.loc["x", "n"] == 2
    assert res.loc["base", "estimate"] == pytest.approx((0.4 + 1.0 + 0.2) / 3) and res.loc["base", "n"] == 3
    assert (res.loc["y", "ci_low"], res.loc["y", "ci_high"]) == pytest.approx((0.8, 0.8))  # one comparison


def test_item_preferences_are_a_group_mean_of_each_orders_first_sample():
    """Against the same definition in pandas (sort by sample, first row per item and order, group mean), on
    random judgments with repeated samples, missing probabilities and unparsable verdicts."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = int(rng.integers(1, 300))
        j = pd.DataFrame({"item_id": pd.Categorical(rng.choice([f"i{k}" for k in range(30)], n)),
                          "order": rng.choice(np.array(["AB", "BA", None], dtype=object), n, p=[0.45, 0.45, 0.1]),
                          "sample": rng.integers(0, 3, n),
                          "verdict": rng.choice(["A", "B", "tie", "invalid"], n),
                          "p_a": np.where(rng.random(n) < 0.5, rng.random(n), np.nan), "p_b": rng.random(n),
                          "p_tie": rng.random(n)})
        for invalid_as in ("tie", "wrong"):
            q = preference_of_a(j["p_a"], j["p_b"], j["p_tie"], j["verdict"], invalid_as)
            frame = j[["item_id", "order", "sample"]].assign(item_id=j["item_id"].astype(str), q=q)
            want = frame.sort_values("sample", kind="stable").drop_duplicates(["item_id", "order"]).groupby(
                "item_id")["q"].mean()
            got = item_preferences(j, invalid_as)
            assert got.index.tolist() == want.index.tolist() and got.index.name == "item_id"
            # equal up to the last bit of a mean of three orders (a missing order is a group of its own)
            np.testing.assert_allclose(got.to_numpy(), want.to_numpy(dtype=float), rtol=1e-15, atol=0, equal_nan=True)


def test_weighted_win_rate_is_alpaca_evals_win_rate():
    """The same preferences through alpaca-eval's own get_winrate (its AbsoluteScoringRule)."""
    winrate = pytest.importorskip("alpaca_eval.metrics.winrate", exc_type=ImportError)
    rng = np.random.default_rng(7)
    pref = np.round(rng.uniform(1, 2, 300), 4)
    pref[:20] = 1.5
    pref[20:30] = 0  # alpaca-eval's old draw
    theirs = winrate.get_winrate(pd.DataFrame({"preference": pref}))["win_rate"] / 100
    p_b = np.where(pref == 0, 0.5, pref - 1)
    ours = weighted_win_rates(["base"] * 300, ["m"] * 300, 1 - p_b, n_boot=200)
    assert ours.loc["m", "estimate"] == pytest.approx(theirs, abs=1e-12)


def _annotations(n=805, seed=3):
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(n):
        p = float(np.round(rng.uniform(1, 2), 4))
        rows.append({"instruction": f"Instruction {k}", "output_1": "b" * int(rng.integers(5, 60)),
                     "generator_1": "gpt4_1106_preview", "output_2": "m" * int(rng.integers(5, 90)),
                     "generator_2": "my-model", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": p,
                     "raw_completion": "m", "price_per_example": 0.001, "time_per_example": 0.5})
    return rows


def test_audit_reports_weighted_and_lc_win_rates(tmp_path, capsys):
    rows = _annotations()
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(rows))
    humans = [{"instruction": r["instruction"], "output_1": r["output_1"], "output_2": r["output_2"],
               "preference": 1 if r["preference"] < 1.5 else 2, "annotator_index": 0} for r in rows[:60]]
    h = tmp_path / "human.json"
    h.write_text(json.dumps(humans))
    ws = str(tmp_path / "ws")
    assert main(["import", str(f), "-w", ws]) == 0 and main(["import", str(h), "--from", "alpaca_eval", "-w", ws]) == 0
    capsys.readouterr()
    assert main(["audit", "-w", ws, "--n-boot", "200", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    w = rep["models"]["win_rate_weighted"]["weighted_alpaca_eval_gpt4_turbo"]
    want = float(np.mean([r["preference"] - 1 for r in rows]))
    assert w["my-model"]["estimate"] == pytest.approx(want) and w["my-model"]["n"] == 805
    assert w["my-model"]["ci_low"] < want < w["my-model"]["ci_high"]
    assert w["gpt4_1106_preview"]["estimate"] == pytest.approx(1 - want)
    lc = rep["models"]["lc_win_rate"]["weighted_alpaca_eval_gpt4_turbo"]
    if "error" in lc:  # alpaca-eval missing, or its instruction-difficulty table out of reach (offline)
        assert lc["error"].startswith(("the length-controlled win rate needs the alpaca-eval package",
                                       "alpaca-eval could not fit its GLM"))
    else:
        assert set(lc) == {"my-model"} and 0 <= lc["my-model"]["estimate"] <= 1 and lc["my-model"]["n"] == 805


def test_lc_win_rate_says_why_without_alpaca_eval_items(tmp_path):
    items = pd.DataFrame({"model_a": ["a"], "model_b": ["b"]}, index=["1"])
    out = lc_win_rates(items, pd.Series({"1": 0.5}), pd.DataFrame(columns=["output_1", "output_2", "index"]))
    assert "error" in out
