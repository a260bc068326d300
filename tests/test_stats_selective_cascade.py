"""Cascaded selective evaluation: thresholds stage by stage, and the guarantee checked by simulation."""

from __future__ import annotations

import numpy as np

from judgecal.stats.selective import escalate, trust_or_escalate
from judgecal.stats.selective_cascade import cascade_calibrate, cascade_stage


def _draw(rng, n):
    """Two judges with independent confidences; a judge agrees with the humans with probability
    ``0.45 + 0.5 * conf`` (the cheap one) or ``0.55 + 0.45 * conf`` (the strong one)."""
    conf = rng.random((n, 2))
    p = np.column_stack([0.45 + 0.5 * conf[:, 0], 0.55 + 0.45 * conf[:, 1]])
    return conf, (rng.random((n, 2)) < p).astype(float)


def test_each_stage_is_calibrated_on_what_reaches_it():
    conf, agree = _draw(np.random.default_rng(0), 600)
    (r1, n1), (r2, n2) = cascade_calibrate(conf, agree, target=0.8, delta=0.2)
    ref1 = trust_or_escalate(conf[:, 0], agree[:, 0], target=0.8, delta=0.1)
    assert (r1.threshold, r1.n_kept, n1) == (ref1.threshold, ref1.n_kept, 600)
    left = escalate(conf[:, 0], r1.threshold)
    ref2 = trust_or_escalate(conf[left, 1], agree[left, 1], target=0.8, delta=0.1)
    assert (r2.threshold, r2.n_kept, n2) == (ref2.threshold, ref2.n_kept, int(left.sum()))
    stage = cascade_stage(conf, [r1.threshold, r2.threshold])
    assert (stage == 0).sum() == r1.n_kept and (stage == 1).sum() == r2.n_kept
    assert ((stage == 2) == (left & escalate(conf[:, 1], r2.threshold))).all()


def test_the_chain_meets_the_target_with_probability_at_least_one_minus_delta():
    """Over 300 calibration sets, the true agreement of everything the chain decides (measured on 200,000
    fresh rows) falls below the target in at most delta of them (plus Monte Carlo slack)."""
    target, delta, reps = 0.8, 0.2, 300
    fresh_conf, fresh_agree = _draw(np.random.default_rng(99), 200_000)
    fails, decided = 0, []
    for seed in range(reps):
        conf, agree = _draw(np.random.default_rng(seed), 400)
        thr = [r.threshold for r, _ in cascade_calibrate(conf, agree, target=target, delta=delta)]
        stage = cascade_stage(fresh_conf, thr)
        kept = stage < 2
        if kept.any():
            decided.append(kept.mean())
            rate = fresh_agree[np.flatnonzero(kept), stage[kept]].mean()
            fails += rate < target
    assert fails / reps <= delta + 3 * np.sqrt(delta * (1 - delta) / reps)
    assert np.mean(decided) > 0.3  # and the chain still decides a good share alone
