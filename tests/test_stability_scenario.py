"""The planted-instability-by-axis scenario: the decomposition recovers the axis that moves the judge."""

import pytest

from judgecal.audit.validate_stability import AXES, planted_instability


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


def test_variant_planning_marks_noops_and_refuses_what_does_not_apply():
    from judgecal.judges.spec import JudgeSpec
    from judgecal.stability.runs import StabilityError, plan_variants

    greedy = JudgeSpec(backend="local", model="smollm2", options=(("deterministic", True),))
    vs = {v.name: v for v in plan_variants(greedy, ["seed", "concurrency", "batch_size", "backend"],
                                           {"seed": (1,), "concurrency": (1,), "batch_size": (64,)},
                                           deterministic=True)}
    assert vs["seed=1"].reuse_reason and vs["concurrency=1"].reuse_reason
    assert vs["batch_size=64"].reuse_reason is None and ("n_batch", 64) in vs["batch_size=64"].spec.options
    assert vs["backend=hf"].spec.backend == "hf" and dict(vs["backend=hf"].spec.options) == {"deterministic": True}
    sampled = JudgeSpec(backend="local", model="smollm2", temperature=0.7)
    vs = {v.name: v for v in plan_variants(sampled, ["seed", "concurrency"], {"seed": (1,), "concurrency": (1,)})}
    assert vs["seed=1"].reuse_reason is None and vs["seed=1"].seed == 1
    # outside deterministic mode concurrency can matter: measured under its own cache identity
    assert vs["concurrency=1"].reuse_reason is None and ("run_tag", "concurrency=1") in vs["concurrency=1"].spec.options
    with pytest.raises(StabilityError, match="batch_size axis runs on local/"):
        plan_variants(JudgeSpec(backend="hf", model="smollm2"), ["batch_size"])
    with pytest.raises(StabilityError, match="unknown axis 'dtype'"):
        plan_variants(greedy, ["dtype"])
