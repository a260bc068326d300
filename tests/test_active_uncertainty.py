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


def test_a_version_9_workspace_gains_the_active_draws_table(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sqlite3

    from judgecal.data.store import SCHEMA_VERSION, Workspace

    with Workspace(tmp_path / "ws") as ws:
        ws._db.conn.execute("DROP TABLE ls_active")
        ws._db.conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    with Workspace(tmp_path / "ws") as ws:
        draw = pd.DataFrame({"pi": [0.25, 1.0], "drawn": [False, True]}, index=["i1", "i2"])
        assert ws.labelstudio_repo.ls_record_active("Active review", draw, seed=3, tau=0.5, budget=1, judge=None) == 2
        got = ws.labelstudio_repo.ls_active_frame("Active review")
        assert got["pi"].tolist() == [0.25, 1.0] and got["drawn"].tolist() == [0, 1] and set(got["seed"]) == {3}
        assert ws.labelstudio_repo.ls_active_frame("another").empty
    db = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()
