"""What `judgecal stability score` prints for a judge axis: figures in words, never a Python ``None``."""

from judgecal.cli.stability import cross_judge_line


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


def test_explorer_stability_rows_read_undefined_and_n_a_never_none():
    """The explorer's "Other backends and other judges" grid showed None for a 0/0 κ and for the
    cross-backend tolerance on another judge's row."""
    from judgecal.apps.page_models import shown_rows

    rows = [{"run": "r1", "kind": "judge", "variant": "judge=local/gemma3", "figure": "accuracy",
             "difference_pp": 0.0, "item_agreement": 1.0, "kappa": None, "within_tolerance": None},
            {"run": "r1", "kind": "backend", "variant": "backend=hf", "figure": "accuracy",
             "difference_pp": -2.5, "item_agreement": 0.975, "kappa": 0.9, "within_tolerance": False}]
    df = shown_rows(rows)
    assert df.loc[0, "κ"] == "undefined" and df.loc[0, "within tolerance"] == "n/a (another judge)"
    assert df.loc[1, "κ"] == "0.9" and df.loc[1, "within tolerance"] == "False"
    assert df.loc[1, "difference (points)"] == -2.5  # a column of numbers stays numeric
    assert not any("_" in c for c in df.columns), list(df.columns)  # words, not audit.json's field names
    assert not df.isna().any().any() and "None" not in df.to_csv()
    assert rows[0]["kappa"] is None  # the input rows are not changed
