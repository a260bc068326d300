"""The judge's uncertainty per item (judgecal.audit.uncertainty) from probabilities, votes and orders."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgecal.audit.uncertainty import calibrated_err2, judge_uncertainty


def _frame(rows: list[tuple[str, str, float | None, float | None, float | None]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item_id", "verdict", "p_a", "p_b", "p_tie"])


def test_votes_probabilities_and_orders() -> None:
    out = judge_uncertainty(_frame([
        ("same", "A", None, None, None), ("same", "A", None, None, None),  # both orders agree
        ("flip", "A", None, None, None), ("flip", "B", None, None, None),  # AB says A, BA says B
        ("prob", "A", 0.6, 0.2, 0.2),  # one call with token probabilities
        ("bad", "invalid", None, None, None),
    ]))
    assert set(out.index) == {"same", "flip", "prob"}
    assert out.loc["same", "err2"] == 0.0 and out.loc["same", "f"] == 1.0
    assert out.loc["flip", "f"] == 0.5 and out.loc["flip", "err2"] == pytest.approx(0.25)
    f = 0.6 * 1 + 0.2 * 0 + 0.2 * 0.5
    assert out.loc["prob", "f"] == pytest.approx(f)
    assert out.loc["prob", "err2"] == pytest.approx(0.6 * (1 - f) ** 2 + 0.2 * f**2 + 0.2 * (0.5 - f) ** 2)


def test_calibration_shifts_to_the_observed_error() -> None:
    unc = pd.DataFrame({"f": [1.0, 0.0, 1.0, 0.5], "err2": [0.0, 0.0, 0.0, 0.25]}, index=["a", "b", "c", "d"])
    truth = pd.Series({"a": "A", "b": "A", "x": "B"})  # the judge is wrong on b
    e, used, shift = calibrated_err2(unc, truth)
    assert used == 2 and shift == pytest.approx(0.5)
    assert np.allclose(e, [0.5, 0.5, 0.5, 0.75])
