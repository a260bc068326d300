"""Position and self-preference probes: hand-made cases, planted biases, and real data."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from judgecal.audit.evaluate import evaluate
from judgecal.audit.position import debiased_verdicts, paired_orders, position_tests
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.audit.probes import AlignmentProbe, PositionProbe
from judgecal.audit.self_preference import self_preference


def _judgments(rows):
    return pd.DataFrame(rows, columns=["item_id", "order", "verdict"]).assign(sample=0, mutation="none")


def test_hand_made_position_case():
    # i0: consistent A; i1: always first shown (A then B); i2: always second shown; i3: tie vs A
    j = _judgments([("i0", "AB", "A"), ("i0", "BA", "A"), ("i1", "AB", "A"), ("i1", "BA", "B"),
                    ("i2", "AB", "B"), ("i2", "BA", "A"), ("i3", "AB", "tie"), ("i3", "BA", "A")])
    t = position_tests(j)
    assert (t["pairs"], t["decisive_pairs"], t["flips"]) == (4, 3, 2)
    assert t["flip_rate"] == pytest.approx(2 / 3)
    # [A in AB] vs [A in BA]: i1 -> b, i2 and i3 -> c
    assert (t["mcnemar_b"], t["mcnemar_c"]) == (1, 2)
    deb = debiased_verdicts(paired_orders(j)).tolist()
    assert deb == ["A", "tie", "tie", "tie"]


def test_debiased_accuracy_hand_computed():
    from judgecal.audit.position import debiased_accuracy

    j = _judgments([("i0", "AB", "A"), ("i0", "BA", "A"), ("i1", "AB", "A"), ("i1", "BA", "B"),
                    ("i2", "AB", "B"), ("i2", "BA", "A"), ("i3", "AB", "tie"), ("i3", "BA", "A")])
    truth = pd.Series({"i0": "A", "i1": "B", "i2": "tie", "i3": "A"})
    res = debiased_accuracy(j, truth, n_boot=200)
    # debiased A, tie, tie, tie -> right on i0 and i2; single orders: 2 + 1 + 0 + 1 of 8 = 0.5
    assert res["debiased_accuracy"]["estimate"] == pytest.approx(2 / 4)
    assert res["paired_single_order_accuracy"]["estimate"] == pytest.approx(4 / 8)
    assert res["debiased_accuracy"]["n"] == 4


def test_debiasing_with_probabilities_averages_the_two_orders():
    j = pd.DataFrame({"item_id": ["x", "x"], "order": ["AB", "BA"], "verdict": ["A", "B"], "sample": 0,
                      "mutation": "none", "p_a": [0.9, 0.3], "p_b": [0.05, 0.6], "p_tie": [0.05, 0.1]})
    assert debiased_verdicts(paired_orders(j)).tolist() == ["A"]  # (0.9 + 0.3) / 2 > (0.05 + 0.6) / 2


def _planted(first_bias: float, n: int, seed: int = 0, noise: float = 0.0) -> pd.DataFrame:
    """A judge that picks the truly better response, except that with probability ``first_bias``
    it picks whatever is shown first, and otherwise with probability ``noise`` flips a coin."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(["A", "B"], n)
    rows = []
    for i, t in enumerate(truth):
        for order in ("AB", "BA"):
            shown_first = "A" if order == "AB" else "B"
            pick = shown_first if rng.random() < first_bias else t
            if noise and rng.random() < noise:
                pick = "A" if rng.random() < 0.5 else "B"
            rows.append((f"i{i}", order, pick))
    return _judgments(rows), pd.Series(truth, index=[f"i{i}" for i in range(n)])


def _report(j, truth):
    """The audit's own path (alignment and position probes, BH, flags) on one planted judge."""
    j = j.assign(status="ok")
    res = evaluate([JudgeInput("planted", j, truth)], AuditConfig(n_boot=300),
                   probes=(AlignmentProbe(), PositionProbe()))["planted"]
    return {"metrics": {k: m.to_json() for k, m in res.metrics.items()}, "flags": res.flags}


def test_planted_first_position_bias_is_found_and_a_null_is_silent():
    biased = _report(*_planted(0.4, 400))
    m = biased["metrics"]["first_position_rate"]
    assert m["q"] < 0.001 and "position_bias:first" in biased["flags"]
    # truth: P(first) = 0.4 + 0.6 * 0.5 = 0.7 on decisive verdicts; over seeds the CIs cover it
    runs = [_report(*_planted(0.4, 400, seed=s))["metrics"]["first_position_rate"] for s in range(6)]
    assert sum(r["ci_low"] < 0.7 < r["ci_high"] for r in runs) >= 5
    assert np.mean([r["estimate"] for r in runs]) == pytest.approx(0.7, abs=0.015)
    # a null with enough pairs to see a 5-point effect: silent
    null = _report(*_planted(0.0, 2000, seed=1))
    assert null["metrics"]["first_position_rate"]["q"] > 0.05
    assert null["metrics"]["first_position_rate"]["mde"] < 0.05
    assert not any(f.startswith("position_bias") for f in null["flags"])
    # a noisy null on too few pairs is "underpowered" (its interval still holds 0.5 +- 0.05), never "no bias"
    small = _report(*_planted(0.0, 100, seed=2, noise=0.5))
    m = small["metrics"]["first_position_rate"]
    assert m["mde"] > 0.05 and (m["ci_high"] >= 0.55 or m["ci_low"] <= 0.45)
    assert small["flags"] == ["position_bias:underpowered"]
    # the same few pairs judged identically in both orders: the interval is pinned at 0.5, no flag at all
    steady = _report(*_planted(0.0, 100, seed=2))
    m = steady["metrics"]["first_position_rate"]
    assert (m["estimate"], m["ci_low"], m["ci_high"]) == (0.5, 0.5, 0.5) and m["mde"] > 0.05
    assert steady["flags"] == []


def test_mcnemar_on_llmbar_matches_statsmodels(mirror):
    from judgecal.data.datasets import load_llmbar

    ds = load_llmbar("llmbar/Natural")
    frame = pd.DataFrame([j.__dict__ for j in ds.judgments])
    j = frame[frame["judge"] == "replay/llmbar/ChatGPT/Vanilla"]
    t = position_tests(j)
    b, c = t["mcnemar_b"], t["mcnemar_c"]
    ref = sm_mcnemar(np.array([[0, b], [c, 0]]), exact=True).pvalue
    assert t["mcnemar_p"] == pytest.approx(ref, abs=1e-12)


def test_pandalm_7b_preference_for_llama_outputs(pandalm_ws, capsys):
    """PandaLM-7B is a LLaMA-7B fine-tune: its win rate for llama-7b outputs against the humans'."""
    items = pandalm_ws.items_repo.items(source="pandalm")
    own = {}
    for it in items:
        models = [c.model for c in it.candidates]
        if models.count("llama-7b") == 1:
            own[it.item_id] = models[0] == "llama-7b"
    own_is_a = pd.Series(own)
    truth = pandalm_ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"]
    j = pandalm_ws.judgments_repo.judgments_frame("replay/pandalm/pandalm-7b")
    res = self_preference(j, truth, own_is_a, n_boot=2000)
    ex = res["self_preference_excess"]
    with capsys.disabled():
        print(f"\nPandaLM-7B on llama-7b outputs: judge win rate {res['judge_win_rate']:.3f}, humans "
              f"{res['human_win_rate']:.3f}, excess {ex['estimate']:+.3f} [{ex['ci_low']:+.3f}, {ex['ci_high']:+.3f}] "
              f"over {ex['n']} items; picked llama-7b when the humans said it lost: "
              f"{res['self_pick_when_lost']['estimate']:.3f}")
    assert ex["n"] == len(own_is_a) == 111 + 110 + 106 + 94
    assert ex["ci_low"] <= ex["estimate"] <= ex["ci_high"]
    assert ex["estimate"] == pytest.approx(res["judge_win_rate"] - res["human_win_rate"])
    assert 0.3 < res["own_shown_as_a"] < 0.7 or res["own_shown_as_a"] in (0.0, 1.0)


def test_lc_win_rate_matches_a_statsmodels_glm():
    import statsmodels.api as sm

    from judgecal.audit.verbosity import lc_win_rate

    rng = np.random.default_rng(0)
    diff = rng.normal(0, 50, 600)
    p = 1 / (1 + np.exp(-(0.2 + 1.5 * np.tanh(diff / diff.std()))))
    win = np.where(rng.random(600) < 0.1, 0.5, (rng.random(600) < p).astype(float))
    res = lc_win_rate(win, diff)
    x = sm.add_constant(np.tanh(diff / diff.std()))
    ref = sm.GLM(np.column_stack([win, 1 - win]), x, family=sm.families.Binomial()).fit()
    assert res["length_coef"] == pytest.approx(ref.params[1], abs=1e-7)
    assert res["lc_win_rate"] == pytest.approx(1 / (1 + np.exp(-ref.params[0])), abs=1e-7)
    assert res["length_coef_p"] < 1e-6
    assert res["raw_win_rate_a"] == pytest.approx(win.mean())


def test_lc_win_rate_on_per_item_sums_equals_the_per_judgment_fit():
    from judgecal.audit.verbosity import lc_win_rate

    rng = np.random.default_rng(1)
    item_diff = rng.normal(0, 40, 300)
    reps = rng.integers(1, 6, 300)  # judgments per item
    diff = np.repeat(item_diff, reps)
    win = rng.choice([0.0, 0.5, 1.0], len(diff), p=[0.4, 0.1, 0.5])
    item = np.repeat(np.arange(300), reps)
    grouped = lc_win_rate(np.bincount(item, weights=win), item_diff, reps)
    for key, value in lc_win_rate(win, diff).items():
        assert grouped[key] == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_planted_verbosity_bias_against_unbiased_humans():
    from judgecal.audit.verbosity import verbosity

    rng = np.random.default_rng(3)
    n = 600
    lens = pd.DataFrame({"len_a": rng.integers(10, 200, n), "len_b": rng.integers(10, 200, n)},
                        index=[f"i{k}" for k in range(n)])
    truth = pd.Series(rng.choice(["A", "B"], n), index=lens.index)
    longer = np.where(lens["len_a"] > lens["len_b"], "A", "B")
    # the judge follows the humans, except that 30% of the time it picks the longer response
    v = np.where(rng.random(n) < 0.3, longer, truth.to_numpy())
    j = pd.DataFrame({"item_id": lens.index, "verdict": v})
    res = verbosity(j, truth, lens, n_boot=500)
    ex = res["verbosity_excess"]
    # planted: P(judge longer) = 0.3 + 0.7 * P(human longer) ~ 0.3 + 0.7 * 0.5 -> excess ~ 0.15
    assert ex["ci_low"] > 0.05 and ex["ci_low"] < 0.15 < ex["ci_high"] + 0.03
    assert res["judge_length_control"]["length_coef_p"] < 0.001
    assert res["human_length_control"]["length_coef_p"] > 0.01


def test_pandalm_verbosity_judges_against_humans(pandalm_ws, capsys):
    from judgecal.audit.verbosity import verbosity

    facts = pandalm_ws.items_repo.item_facts()
    lens = facts.loc[facts["source"] == "pandalm", ["len_a", "len_b"]]
    truth = pandalm_ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"]
    for judge in ("replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"):
        res = verbosity(pandalm_ws.judgments_repo.judgments_frame(judge), truth, lens, n_boot=500)
        pl, hl = res["prefer_longer_rate"], res["human_prefer_longer_rate"]
        with capsys.disabled():
            print(f"\n{judge}: prefers longer {pl['estimate']:.3f} [{pl['ci_low']:.3f}, {pl['ci_high']:.3f}], "
                  f"humans {hl['estimate']:.3f}; LC win rate of response 1 "
                  f"{res['judge_length_control']['lc_win_rate']:.3f} (raw {res['judge_length_control']['raw_win_rate_a']:.3f})")
        assert 0 < pl["n"] <= 999 and pl["ci_low"] <= pl["estimate"] <= pl["ci_high"]
        assert 0 <= res["judge_length_control"]["lc_win_rate"] <= 1


def test_families_yaml_extends_the_family_map(tmp_path, capsys):
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.cli import main
    from judgecal.data.records import Annotation, Candidate, Item, Judgment
    from judgecal.data.store import Workspace

    ws = Workspace(tmp_path / "ws")
    rng = np.random.default_rng(0)
    items, rows, anns = [], [], []
    for k in range(80):
        own_a = k % 2 == 0
        models = ("acme-7b", "other-1") if own_a else ("other-1", "acme-7b")
        items.append(Item(f"i{k}", "q", [Candidate("x", models[0]), Candidate("y", models[1])]))
        truth = "A" if rng.random() < 0.5 else "B"
        anns += [Annotation(f"i{k}", h, truth) for h in ("h1", "h2", "h3")]
        for order in ("AB", "BA"):  # the judge always picks acme's response
            rows.append(Judgment(key=f"{k}{order}", item_id=f"i{k}", judge="replay/x/acme-judge", spec_hash="s",
                                 order=order, verdict="A" if own_a else "B"))
    ws.items_repo.add_items(items)
    ws.annotations_repo.add_annotations(anns)
    ws.judgments_repo.add_judgments(rows)
    compute_consensus(ws, ("ds",))
    assert "self_preference_excess" not in audit_workspace(ws, AuditOptions(n_boot=200)).to_json()["judges"]["replay/x/acme-judge"]["metrics"]
    (tmp_path / "ws" / "families.yaml").write_text("acme-*: acme\n")
    m = audit_workspace(ws, AuditOptions(n_boot=200)).to_json()["judges"]["replay/x/acme-judge"]["metrics"]["self_preference_excess"]
    assert m["estimate"] > 0.3 and m["q"] < 0.05
    ws.close()
    (tmp_path / "ws" / "families.yaml").write_text("- not a mapping\n")
    assert main(["audit", "--n-boot", "100", "-w", str(tmp_path / "ws")]) == 2
    assert "families.yaml: expected a mapping" in capsys.readouterr().err
