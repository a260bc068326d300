"""What `judgecal stability score` prints for a judge axis: figures in words, never a Python ``None``."""

from judgecal.stability.cli import cross_judge_line


def test_cross_judge_line_says_undefined_instead_of_none():
    c = {"judge": "local/gemma3", "figure": "accuracy", "difference_pp": 0.0, "item_agreement": 1.0,
         "kappa": None, "n": 4}
    line = cross_judge_line(c)
    assert "None" not in line
    assert line == ("  beside local/gemma3: accuracy +0.00 pp, item agreement 1.000, kappa undefined "
                    "(every verdict on one label) on 4 items both answered")
    line = cross_judge_line({**c, "item_agreement": 2 / 3, "kappa": 0.41234, "n": 3})
    assert "item agreement 0.667, kappa 0.412 on 3 items" in line
    assert "kappa undefined on 0 items" in cross_judge_line({**c, "item_agreement": None, "n": 0})
    assert "item agreement n/a" in cross_judge_line({**c, "item_agreement": None, "n": 0})
