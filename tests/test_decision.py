"""The verdict per judge: rules, reasons in words, thresholds files."""

import pytest

from judgecal.audit.decision import ThresholdsError, judge_verdict, load_thresholds, tolerated_gap


def _m(est, q=None, lo=None, hi=None):
    return {"estimate": est, "ci_low": lo, "ci_high": hi, "n": 100, "p": None, "q": q, "mde": None}


def test_chance_level_judge_is_not_aligned_with_reasons():
    entry = {"n_items_with_consensus": 200, "flags": ["position_bias:first"],
             "metrics": {"cohen_kappa": _m(0.007), "accuracy": _m(0.40), "invalid_rate": _m(0.0),
                         "first_position_rate": _m(0.98, q=1e-30)}}
    v = judge_verdict(entry, human_kappa=0.864)
    assert v["status"] == "not aligned"
    assert "κ 0.01 against the humans' 0.86 with each other (0 = chance, 1 = perfect): barely better than chance" \
        in v["reasons"]
    assert "picks the response shown first 98% of the time" in v["reasons"]
    # the severe position reason replaces the generic flag wording
    assert "prefers the response shown first" not in v["reasons"]
    assert not any("position" in s for s in v["not_tested"])
    assert any(s.startswith("padding: not tested") for s in v["not_tested"])


def test_good_judge_is_aligned_and_a_bias_flag_means_caution():
    entry = {"n_items_with_consensus": 500, "flags": [],
             "metrics": {"cohen_kappa": _m(0.80), "accuracy": _m(0.88), "invalid_rate": _m(0.01)}}
    assert judge_verdict(entry, human_kappa=0.85)["status"] == "aligned"
    entry["flags"] = ["verbosity_bias:more_than_humans"]
    v = judge_verdict(entry, human_kappa=0.85)
    assert v["status"] == "caution"
    assert "prefers the longer response more often than the humans do" in v["reasons"]


def test_pointwise_judge_reads_its_weighted_kappa_against_the_annotators():
    """An ordinal pointwise judge: the weighted κ (not the unweighted one) against the annotators' own."""
    entry = {"n_items_with_consensus": 300, "flags": [], "pointwise": {"kappa": "weighted_kappa"},
             "metrics": {"cohen_kappa": _m(0.10), "weighted_kappa": _m(0.70), "accuracy": _m(0.55),
                         "invalid_rate": _m(0.0)}}
    v = judge_verdict(entry, human_kappa=0.75, human_accuracy=0.58)
    assert v["status"] == "aligned", v  # an unweighted 0.10 would have made it not aligned
    assert v["reasons"][0].startswith("weighted κ 0.70 against the humans' 0.75 with each other")
    entry["metrics"]["weighted_kappa"] = _m(0.62)
    v = judge_verdict(entry, human_kappa=0.95, human_accuracy=0.58)
    assert v["status"] == "not aligned" and "its weighted κ is 0.33 below the humans' agreement with each other" \
        in v["reasons"]


def test_labelled_items_with_an_undefined_kappa_are_not_called_unlabelled():
    """One level only (every label the same): κ is 0/0 on labelled items, which the verdict says as such."""
    entry = {"n_items_with_consensus": 1, "flags": [], "pointwise": {"kappa": "weighted_kappa"},
             "metrics": {"cohen_kappa": _m(None), "weighted_kappa": _m(None), "accuracy": _m(1.0),
                         "invalid_rate": _m(0.0)}}
    v = judge_verdict(entry)
    assert v["status"] == "caution"
    assert v["reasons"][0].startswith("weighted κ undefined on its 1 items with a human label")
    assert not any("no human labels" in r for r in v["reasons"])
    entry["n_items_with_consensus"] = 0
    assert "no human labels on the items it judged: agreement not measured" in judge_verdict(entry)["reasons"]


def test_kappa_gap_and_too_few_items_and_invalid_rate():
    entry = {"n_items_with_consensus": 12, "flags": [],
             "metrics": {"cohen_kappa": _m(0.65), "invalid_rate": _m(0.25)}}
    v = judge_verdict(entry, human_kappa=0.90)
    assert v["status"] == "not aligned"  # 25% unparsable
    assert "25% of its answers could not be parsed" in v["reasons"]
    assert "only 12 items with a human label (fewer than 30)" in v["reasons"]
    assert "its κ is 0.25 below the humans' agreement with each other" in v["reasons"]
    assert v["reasons"][0] == "25% of its answers could not be parsed"  # worst first


def test_business_loss_backcalculation(tmp_path):
    # 100,000 requests, 200 per error, a budget of 500,000: at most 0.025 more errors
    assert tolerated_gap({"budget": 5e5, "requests": 1e5, "cost_per_error": 200}) == pytest.approx(0.025)
    (tmp_path / "thresholds.yaml").write_text(
        "version: 1\nbusiness_loss: {budget: 500000, requests: 100000, cost_per_error: 200}\n")
    t = load_thresholds(tmp_path)
    entry = {"n_items_with_consensus": 300, "flags": [],
             "metrics": {"cohen_kappa": _m(0.7), "accuracy": _m(0.80)}}
    assert judge_verdict(entry, t, human_kappa=0.72, human_accuracy=0.82)["status"] == "aligned"
    v = judge_verdict(entry, t, human_kappa=0.72, human_accuracy=0.83)
    assert v["status"] == "not aligned"
    assert any("business-loss budget tolerates" in r for r in v["reasons"])


@pytest.mark.parametrize("text, msg", [
    ("kapa: {not_aligned_below: 0.1}\n", "unknown key 'kapa'"),
    ("kappa: {aligned_at_least: high}\n", "kappa.aligned_at_least: must be a number"),
    ("version: 2\n", "version 2"),
    ("business_loss: {budget: 10}\n", "business_loss needs"),
    ("[1, 2]\n", "thresholds are a mapping"),
])
def test_bad_thresholds_name_the_file_and_key(tmp_path, text, msg):
    p = tmp_path / "thresholds.yaml"
    p.write_text(text)
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(p)
    assert str(p) in str(err.value) and msg in str(err.value)


def test_overrides_merge_key_by_key(tmp_path):
    (tmp_path / "thresholds.yaml").write_text("kappa: {aligned_at_least: 0.7}\n")
    t = load_thresholds(tmp_path)
    assert t["kappa"] == {"not_aligned_below": 0.2, "aligned_at_least": 0.7}
    entry = {"n_items_with_consensus": 300, "flags": [], "metrics": {"cohen_kappa": _m(0.65)}}
    assert judge_verdict(entry)["status"] == "aligned"
    assert judge_verdict(entry, t)["status"] == "caution"


@pytest.mark.parametrize("kappa, words", [(-0.101, "no better"), (0.0, "no better"), (0.05, "barely better")])
def test_a_kappa_at_or_below_zero_is_no_better_than_chance(kappa, words):  # type: ignore[no-untyped-def]
    """κ -0.10 is below chance: calling it "barely better than chance" said the opposite of the figure."""
    entry = {"n_items_with_consensus": 100, "flags": [],
             "metrics": {"cohen_kappa": _m(kappa), "accuracy": _m(0.3), "invalid_rate": _m(0.0)}}
    v = judge_verdict(entry, human_kappa=0.69)
    assert v["status"] == "not aligned"
    assert f"κ {kappa:.2f} against the humans' 0.69 with each other (0 = chance, 1 = perfect): {words} than chance" \
        in v["reasons"]


def test_an_untested_position_probe_of_a_judge_run_in_both_orders_does_not_ask_for_both_orders():
    """A judge run in both orders on items without a human label was told to judge both orders."""
    entry = {"n_items_with_consensus": 0, "flags": [], "orders": ["AB", "BA"], "metrics": {}}
    v = judge_verdict(entry)
    assert "position: not tested (needs both orders of items with a human label)" in v["not_tested"]
    assert not any("--orders AB,BA" in s for s in v["not_tested"])
    v = judge_verdict({**entry, "orders": ["AB"]})
    assert "position: not tested (judge both presentation orders (--orders AB,BA))" in v["not_tested"]
