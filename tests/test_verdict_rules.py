"""The verdict rules as typed functions: a probe's own rule, the thresholds a probe declares, the sections' views."""

from __future__ import annotations

import copy

import pytest

from judgecal.audit import thresholds as T
from judgecal.audit.decision import DEFAULT_THRESHOLDS, judge_verdict
from judgecal.audit.probes import PositionProbe
from judgecal.audit.section_rules import JudgeFacts, labels_rule
from judgecal.audit.verdict import Effect, Figure, ThresholdSpec, VerdictInput


def _input(metrics: dict[str, Figure], flags: tuple[str, ...] = (), **sections: object) -> VerdictInput:
    return VerdictInput(metrics, flags, copy.deepcopy(DEFAULT_THRESHOLDS), sections=sections)


def test_the_position_rule_is_the_probes_own() -> None:
    # 0.85 of decisive verdicts on the first position, significant: beyond the default 0.80, not aligned
    severe = _input({"first_position_rate": Figure(0.85, 0.80, 0.90, 0.5, 0.001)})
    (effect,) = PositionProbe().verdict_rule(severe)
    assert effect == Effect(2, "position_severe", "first_position_rate",
                            "picks the response shown first 85% of the time", replaces_flags=True)
    # 0.25 picks the second 75%: within the band, no effect of its own (its flag speaks for it)
    assert PositionProbe().verdict_rule(_input({"first_position_rate": Figure(0.25, 0.2, 0.3, 0.5, 0.001)})) == []
    # not significant: nothing, however far
    assert PositionProbe().verdict_rule(_input({"first_position_rate": Figure(0.9, 0.5, 1.0, 0.5, 0.2)})) == []
    # identical in both orders: no sign of bias, said after the other rules
    (note,) = PositionProbe().verdict_rule(_input({}, position={"decisive_pairs": 4, "mcnemar_b": 0,
                                                                "mcnemar_c": 0}))
    assert (note.severity, note.code, note.stage) == (0, "no_sign", "no_sign")


def test_a_severe_position_bias_stands_for_its_flag_in_the_verdict() -> None:
    entry = {"kind": "pairwise", "n_items_with_consensus": 0, "orders": ["AB", "BA"], "flags": ["position_bias:first"],
             "metrics": {"first_position_rate": {"estimate": 0.85, "ci_low": 0.8, "ci_high": 0.9, "null_value": 0.5,
                                                 "q": 0.001}}}
    got = judge_verdict(entry, copy.deepcopy(DEFAULT_THRESHOLDS))
    assert got["status"] == "not aligned"
    codes = [d["code"] for d in got["details"]]
    assert codes[0] == "position_severe" and "flag:position_bias:first" not in codes


def test_a_probe_declares_its_thresholds_at_their_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(T, "DEFAULT_THRESHOLDS", {"alpha": 0.05, "gate": {}})
    monkeypatch.setattr(T, "RANGES", {"alpha": (0.0, 1.0, False)})
    spec = ThresholdSpec("ties", {"not_aligned_beyond": 0.25}, {"not_aligned_beyond": (0.0, 1.0, False)}, before="gate")
    T.declare_thresholds(spec)
    T.declare_thresholds(spec)  # the same again: nothing changes
    assert list(T.DEFAULT_THRESHOLDS) == ["alpha", "ties", "gate"]
    assert T.RANGES["ties.not_aligned_beyond"] == (0.0, 1.0, False)
    with pytest.raises(T.ThresholdsError, match="'ties' is already declared with other defaults"):
        T.declare_thresholds(ThresholdSpec("ties", {"not_aligned_beyond": 0.5}, {"not_aligned_beyond": (0, 1, False)}))


def test_a_declared_threshold_is_read_and_checked_from_the_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "thresholds.yaml"
    path.write_text("position:\n  not_aligned_beyond: 0.9\n", "utf-8")
    assert T.load_thresholds(path)["position"] == {"not_aligned_beyond": 0.9}
    path.write_text("position:\n  not_aligned_beyond: 0.4\n", "utf-8")
    with pytest.raises(T.ThresholdsError, match=r"position.not_aligned_beyond: 0.4 is out of range"):
        T.load_thresholds(path)


def test_the_sections_views_read_what_is_there() -> None:
    facts = JudgeFacts.of({})
    assert (facts.n_items, facts.kappa_name, facts.labels, facts.span_reference, dict(facts.references)) == (
        0, "cohen_kappa", None, None, {})
    # a binary judge that never says FAIL: TNR 0 is not aligned, whatever its accuracy
    v = _input({"tpr": Figure(1.0), "tnr": Figure(0.0), "balanced_accuracy": Figure(0.5, 0.5, 0.5)},
               labels={"task": "binary", "positive": "PASS"})
    (never,) = labels_rule(v)
    assert (never.severity, never.code) == (2, "label_never") and "TNR 0" in never.text
    # like with like: a TPR 0.20 below the annotators' is beyond label_rate_gap.not_aligned_above (0.15)
    v = _input({"tpr": Figure(0.7), "tnr": Figure(0.9), "balanced_accuracy": Figure(0.8, 0.7, 0.9)},
               labels={"task": "binary", "positive": "PASS", "like_for_like": {
                   "judge": {"tpr": {"estimate": 0.7}, "tnr": {"estimate": 0.9}},
                   "humans": {"tpr": {"estimate": 0.9}, "tnr": {"estimate": 0.92}}}})
    got = {(e.code, e.metric): e.severity for e in labels_rule(v)}
    assert got == {("balanced_accuracy", "balanced_accuracy"): 0, ("label_rate_gap", "tpr"): 2,
                   ("label_rate_gap", "tnr"): 0}
