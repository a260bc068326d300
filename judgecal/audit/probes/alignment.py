"""The alignment figures: accuracy, macro-F1, κ, invalid rate and the position metrics against the consensus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from judgecal.audit.alignment import judge_sums, metrics_from, sums_shape
from judgecal.audit.metric import Metric
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.verdict import Effect, Inputs, VerdictInput
from judgecal.stats import bootstrap as stats


class AlignmentProbe(Probe):
    """Accuracy, macro-F1, Cohen's kappa, invalid rate and the position metrics against the consensus;
    one item bootstrap serves every judge (paired intervals)."""

    name = "alignment"
    needs_alignment = False
    inputs = Inputs(task_kinds=("pairwise", "pointwise", "labels"), samples=1)

    def verdict_rule(self, v: VerdictInput) -> list[Effect]:
        """Unreadable answers: ``invalid_rate`` above ``invalid_rate.caution_above`` is a caution, above
        ``invalid_rate.not_aligned_above`` not aligned."""
        inv = v.figure("invalid_rate").estimate
        band = v.thresholds["invalid_rate"]
        if inv is None or not inv > band["caution_above"]:
            return []
        return [Effect(2 if inv > band["not_aligned_above"] else 1, "invalid_rate", "invalid_rate",
                       f"{inv:.0%} of its answers could not be parsed")]

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        out = {inp.judge: ProbeResult() for inp in inputs}
        shapes = {inp.judge: shape for inp in inputs if inp.pairwise and len(inp.truth)
                  and (shape := sums_shape(inp.judgments, inp.codes, inp.truth.to_numpy(), cfg.invalid_as))}
        sums = {}
        if shapes:
            # every judge's sums written into one matrix (their columns side by side), in single precision when
            # every count and bootstrap total of them is an integer below 2**24 (exact there, half the memory)
            n = len(inputs[0].truth)
            exact = max(s.most_per_item for s in shapes.values()) * n < 2**24
            # held column by column (each count one contiguous row of memory): each is written in one pass and
            # the bootstrap multiplies them as they are
            every = np.zeros((sum(s.width for s in shapes.values()), n), dtype=np.float32 if exact else np.float64).T
            start = 0
            for inp in inputs:
                if (shape := shapes.get(inp.judge)) is not None:
                    js = judge_sums(inp.judgments, inp.codes, inp.truth.to_numpy(), n, cfg.invalid_as, shape,
                                    every[:, start:start + shape.width])
                    assert js is not None  # a shape was found, so there are judgments to sum
                    sums[inp.judge] = js
                    start += shape.width
            boot = stats.bootstrap_sums(every, cfg.n_boot, cfg.seed)
            start = 0
            for judge, js in sums.items():
                w = js.sums.shape[1]
                got = metrics_from(js, boot[:, start:start + w], cfg.level)
                out[judge].metrics = {k: Metric.of(v) for k, v in got.items()}
                start += w
        return out

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        inv = metrics.get("invalid_rate")
        return ["invalid_rate_above_5pct"] if inv and inv.estimate and inv.estimate > 0.05 else []


class GivenAlignment(AlignmentProbe):
    """The alignment probe whose figures were computed elsewhere (``--executor ray``: from per-item sums on the
    cluster, :mod:`judgecal.distributed.audit`), read instead of computed: ``given`` is judge -> ``{"metrics":
    {name: metric object}, "position": section}``; its flags are the alignment probe's own."""

    def __init__(self, given: Mapping[str, Mapping[str, Any]]) -> None:
        self.given = given

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        out = {}
        for inp in inputs:
            g = self.given.get(inp.judge) or {}
            res = out[inp.judge] = ProbeResult(metrics={k: Metric.of(m, null_value=m.get("null_value"), p=m.get("p"),
                                                                     mde=m.get("mde"))
                                                        for k, m in (g.get("metrics") or {}).items()})
            if g.get("position"):
                res.sections["position"] = dict(g["position"])
        return out
