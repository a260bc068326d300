import math

import pytest

from judgecal.judges.parse import expected_score, label_probs, parse_score, parse_verdict


@pytest.mark.parametrize(("text", "verdict"), [
    ("A", "A"), ("B.", "B"), ("tie", "tie"), ("Tie", "tie"), ("[[A]]", "A"), ("[[C]]", "tie"),
    ("My verdict: [[B]]", "B"), ("Output (a)", "A"), ("Output (b)", "B"), ("Response B is better.", "B"),
    ("Assistant 1", "A"), ("The final verdict is tie", "tie"), ("Verdict: A", "A"), ("A is the better choice.", "A"),
    ("Both are equally good.", "tie"), ("  b", "B"),
    ("[[A]] or [[B]]", None), ("1. How to code", None), ("A cat sat on the mat", None), ("", None), (None, None),
    ("The article is well-written", None),
])
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) == verdict


@pytest.mark.parametrize(("text", "lo", "hi", "score"), [
    ("[[7]]", 1, 10, 7.0), ("Feedback ... [RESULT] 4", 1, 5, 4.0), ("Score: 3", 1, 5, 3.0), ("5", 1, 5, 5.0),
    ("4/5 overall", 1, 5, 4.0), ("Rating: 11", 1, 10, None), ("great answer", 1, 5, None), (None, 1, 5, None),
])
def test_parse_score(text, lo, hi, score):
    assert parse_score(text, lo, hi) == score


def test_label_probs_renormalise_over_labels():
    top = [("A", math.log(0.5)), (" B", math.log(0.25)), ("The", math.log(0.2)), ("tie", math.log(0.05))]
    p = label_probs(top)
    assert p == pytest.approx({"A": 0.625, "B": 0.3125, "tie": 0.0625})
    assert label_probs([("The", -0.1)]) is None


def test_expected_score_is_probability_weighted():
    top = [("4", math.log(0.6)), ("5", math.log(0.2)), ("x", math.log(0.2))]
    assert expected_score(top, 1, 5) == pytest.approx((4 * 0.6 + 5 * 0.2) / 0.8)
    assert expected_score([("9", -0.1)], 1, 5) is None
