"""The planted-instability-by-axis scenario: the decomposition recovers the axis that moves the judge."""

import pytest

from judgecal.stability.scenario import AXES, planted_instability


@pytest.mark.parametrize("planted", AXES)
def test_decomposition_recovers_the_planted_axis(planted):
    for seed in range(5):
        res = planted_instability(planted, seed=seed)
        assert res["recovered"] == planted and res["passed"]
        assert res["shares"][planted] > 0.6  # 6% of correct verdicts turned wrong vs 2% re-drawn noise
        assert res["largest_shift"]["axis"] == planted and res["largest_shift"]["shift_pp"] < 0
        assert sum(res["shares"].values()) == pytest.approx(1.0)


def test_without_a_planted_effect_no_axis_dominates():
    res = planted_instability("seed", effect=0.0, seed=1)
    assert max(res["shares"].values()) < 0.6
    assert res["score"] > planted_instability("seed", seed=1)["score"]
    with pytest.raises(ValueError):
        planted_instability("nope")
