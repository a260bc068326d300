"""The registered probes: each wraps one analysis module, owns its metrics' tests and flag rules.

Tests (two-sided; ``p`` tests ``estimate = null_value``):

- ``first_position_rate`` (null 0.5): exact McNemar on the two orders' picks of candidate A; MDE of a
  one-sample proportion test on the decisive pairs.
- ``verbosity_excess``, ``self_preference_excess``, ``injection_excess`` (null 0),
  ``instability_rate`` (null 0), ``pad_pick_rate`` (null 0.5): Wald test with the standard error read
  off the item-bootstrap interval (:func:`judgecal.stats.inference.ci_p_value`); MDE from the same SE.
- ``prompt_flip_rate`` (null: the judge's own ``instability_rate``, which alone makes verdicts
  differ): Wald test of the difference, the two SEs combined in quadrature.
- A worst-of-``k`` metric (the worst prompt mutation, the worst injection kind) carries a Bonferroni
  p-value ``min(1, k p)``, so picking the worst does not inflate its significance.

Descriptive metrics (accuracy, macro-F1, kappa, rates with no null) carry no test.

Flags: significant after Benjamini–Hochberg *and* an interval that reaches the effect of interest away from
the null (a bias of exactly that size is then found in most seeds; a significant effect whose interval stops
short of it is negligible). ``<probe>:underpowered``: not significant while the interval still holds the
effect of interest on either side; an interval pinned at the null (no discordant pair, zero variance) is
evidence of no effect and raises nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.alignment import judge_sums, metrics_from, sums_shape
from judgecal.audit.injection import injection_follow
from judgecal.audit.instability import instability
from judgecal.audit.metric import Metric, clean
from judgecal.audit.padding import padding_preference
from judgecal.audit.plugins import PLUGINS_ENV as PLUGINS_ENV
from judgecal.audit.plugins import load_entry_points, load_env_modules
from judgecal.audit.position import debiased_from, debiased_sums, paired_orders, position_tests
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.self_preference import self_preference
from judgecal.audit.sensitivity import prompt_sensitivity
from judgecal.audit.verbosity import verbosity
from judgecal.catalogue import ProbeInfo, describe
from judgecal.stats import bootstrap as stats
from judgecal.stats.inference import ci_p_value, mde_from_ci


def ci_test(m: Metric, null_value: float = 0.0, k: int = 1) -> Metric:
    """``m`` tested against ``null_value`` with the SE read off its interval (Bonferroni over ``k``)."""
    if m.estimate is None or m.ci_low is None or m.ci_high is None:
        return m.tested(None, null_value)
    p = ci_p_value({"estimate": m.estimate - null_value, "ci_low": m.ci_low - null_value,
                    "ci_high": m.ci_high - null_value})
    return m.tested(None if p is None else min(1.0, k * p), null_value, mde_from_ci(m.ci_low, m.ci_high))


def excess_test(m: Metric, base: Metric | None, k: int = 1) -> Metric:
    """``m`` tested against the estimate of the baseline metric ``base`` (0 when absent), their SEs
    (read off the two intervals) combined in quadrature (Bonferroni over ``k``)."""
    if base is None or base.estimate is None:
        return ci_test(m, 0.0, k)
    if m.estimate is None or m.ci_low is None or m.ci_high is None or base.ci_low is None or base.ci_high is None:
        return m.tested(None, base.estimate)
    half = float(np.hypot(m.ci_high - m.ci_low, base.ci_high - base.ci_low)) / 2
    d = m.estimate - base.estimate
    p = ci_p_value({"estimate": d, "ci_low": d - half, "ci_high": d + half})
    return m.tested(None if p is None else min(1.0, k * p), base.estimate, mde_from_ci(d - half, d + half))


def _reach(m: Metric) -> float | None:
    """How far the interval reaches from the null value (its far end); ``None`` without an interval."""
    if m.ci_low is None or m.ci_high is None:
        return None
    null = m.null_value or 0.0
    return max(abs(m.ci_low - null), abs(m.ci_high - null))


def _significant(m: Metric | None, cfg: AuditConfig) -> bool:
    """The flag rule: significant (BH q < alpha) *and* an effect that may be the effect of interest: the
    interval reaches at least the effect of interest away from the null value (so a bias planted at the
    effect of interest is flagged, and a significant but negligible one, whose interval stops short of
    it, is not). Without an interval, the estimate itself must reach it."""
    if m is None or m.q is None or not m.q < cfg.alpha or m.estimate is None:
        return False
    reach = _reach(m)
    far = abs(m.estimate - (m.null_value or 0.0)) if reach is None else reach
    return far >= cfg.effect_of_interest - 1e-12


def underpowered(m: Metric | None, cfg: AuditConfig) -> bool:
    """Not significant, and the interval still holds an effect of interest on either side of the null.
    An interval pinned at the null (no discordant pair, zero variance) is evidence of no effect: never
    underpowered. Without an interval, the test's MDE stands in."""
    if m is None or m.estimate is None or (m.q is not None and m.q < cfg.alpha):
        return False
    reach = _reach(m)
    if reach is None:
        return m.mde is not None and m.mde > cfg.effect_of_interest
    return reach >= cfg.effect_of_interest - 1e-12


def no_sign(m: Metric | None) -> bool:
    """An interval pinned at the null value: zero discordant pairs or zero variance."""
    return (m is not None and m.ci_low is not None and m.ci_high is not None and m.null_value is not None
            and abs(m.ci_low - m.null_value) < 1e-12 and abs(m.ci_high - m.null_value) < 1e-12)


def _direction_flags(m: Metric | None, flag: str, cfg: AuditConfig) -> list[str]:
    if m is None:
        return []
    if _significant(m, cfg):
        return [f"{flag}:{'more' if (m.estimate or 0) > 0 else 'less'}_than_humans"]
    return [f"{flag}:underpowered"] if underpowered(m, cfg) else []


def _plain(d: Mapping[str, Any]) -> dict[str, Any]:
    """A section's ``{estimate, ci_low, ci_high, n}`` dict with undefined values as ``None``."""
    return {k: (int(v) if k == "n" else clean(v) if isinstance(v, float) else v) for k, v in d.items()}


def _worst(rows: Mapping[str, Any], key: Any) -> tuple[str, Any]:
    """The entry whose ``key`` is largest (undefined values last)."""
    def score(kv: tuple[str, Any]) -> float:
        v = clean(key(kv[1]))
        return -np.inf if v is None else v
    return max(rows.items(), key=score)


class AlignmentProbe(Probe):
    """Accuracy, macro-F1, Cohen's kappa, invalid rate and the position metrics against the consensus;
    one item bootstrap serves every judge (paired intervals)."""

    name = "alignment"
    needs_alignment = False

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


class PositionProbe(Probe):
    """McNemar test of the first-position rate, flip counts, and the swap-debiased accuracy."""

    name = "position"
    info = ProbeInfo("position", "position", "position", "Does the judge prefer a position?",
                     "Each pair is judged in both orders.",
                     "no preference: the first-shown response is picked half the time (0.5)",
                     "judge both presentation orders (--orders AB,BA)", "first_position_rate", ("pairwise",))

    def test(self, m: Metric, pos: Mapping[str, Any]) -> Metric:
        return m.tested(clean(pos["mcnemar_p"]), 0.5, clean(pos["first_position_mde"]))

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        """McNemar per judge; the debiased accuracies of all judges from one item bootstrap over the
        consensus items (the alignment probe's resampling unit, paired across judges)."""
        out, deb = {}, {}
        for inp in inputs:
            res = out[inp.judge] = ProbeResult()
            if inp.orders != ["AB", "BA"]:
                continue
            pairs = paired_orders(inp.judgments)  # made once for both uses
            pos = position_tests(inp.judgments, pairs)
            if not pos:
                continue
            res.sections["position"] = pos
            if "first_position_rate" in done[inp.judge]:
                res.metrics["first_position_rate"] = self.test(done[inp.judge]["first_position_rate"], pos)
            sums, n_pairs = debiased_sums(inp.judgments, inp.truth, cfg.invalid_as, pairs)
            if n_pairs:
                deb[inp.judge] = (sums, n_pairs)
        if deb:
            boot = stats.bootstrap_sums(np.hstack([s for s, _ in deb.values()]), cfg.n_boot, cfg.seed)
            for k, (judge, (sums, n_pairs)) in enumerate(deb.items()):
                got = debiased_from(sums, boot[:, 3 * k:3 * k + 3], n_pairs, cfg.level)
                out[judge].metrics["debiased_accuracy"] = Metric.of(got["debiased_accuracy"])
                out[judge].sections["position"]["paired_single_order_accuracy"] = got["paired_single_order_accuracy"]
        return out

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        return self.run_all([inp], cfg, {inp.judge: done})[inp.judge]

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        m = metrics.get("first_position_rate")
        if m is None or m.q is None:
            return []
        if _significant(m, cfg):
            return [f"position_bias:{'first' if (m.estimate or 0.5) > 0.5 else 'second'}"]
        return ["position_bias:underpowered"] if underpowered(m, cfg) else []


class VerbosityProbe(Probe):
    """Judge minus humans in the share of decisive picks of the longer response; LC win rate beside it."""

    name = "verbosity"
    info = ProbeInfo("verbosity", "verbosity", "verbosity",
                     "Does the judge prefer longer responses more than the humans do?",
                     "Each decisive verdict is compared with the lengths of the two responses.",
                     "the judge picks the longer response as often as the humans (excess 0)",
                     "needs a human consensus and two candidates per item", "verbosity_excess", ("pairwise",))

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.0)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        verb = verbosity(inp.judgments, inp.truth, inp.lens, n_boot=cfg.n_boot, seed=cfg.seed) if len(inp.lens) else {}
        if not verb:
            return res
        lc = verb["judge_length_control"]
        res.metrics = {
            "prefer_longer_rate": Metric.of(verb["prefer_longer_rate"]),
            "verbosity_excess": self.test(Metric.of(verb["verbosity_excess"])),
            # descriptive: the length coefficient's Wald p is a test of another quantity, kept beside it
            "lc_win_rate": Metric(lc["lc_win_rate"], n=len(inp.judgments),
                                  extra={"raw_win_rate_a": clean(lc["raw_win_rate_a"]),
                                         "length_coef": clean(lc["length_coef"]),
                                         "length_coef_p": clean(lc["length_coef_p"])}),
        }
        res.sections["verbosity"] = {
            "human_prefer_longer_rate": _plain(verb["human_prefer_longer_rate"]),
            "human_length_control": {k: clean(v) for k, v in verb["human_length_control"].items()}}
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return _direction_flags(metrics.get("verbosity_excess"), "verbosity_bias", cfg)


class SelfPreferenceProbe(Probe):
    """Judge minus humans in the win rate of the judge's own family's response."""

    name = "self_preference"
    info = ProbeInfo("self_preference", "self-preference", "self-preference",
                     "Does the judge favour its own model family?",
                     "Items where exactly one response comes from the judge's family.",
                     "the judge's win rate for its family equals the humans' (excess 0)",
                     "needs the judge's model family among the candidates", "self_preference_excess")

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.0)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        sp = self_preference(inp.judgments, inp.truth, inp.own_is_a, n_boot=cfg.n_boot,
                             seed=cfg.seed) if len(inp.own_is_a) else {}
        if sp:
            res.metrics["self_preference_excess"] = self.test(Metric.of(sp["self_preference_excess"]))
            res.sections["self_preference"] = {k: (_plain(v) if isinstance(v, dict) else clean(v))
                                               for k, v in sp.items() if k != "self_preference_excess"}
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return _direction_flags(metrics.get("self_preference_excess"), "self_preference", cfg)


class InstabilityProbe(Probe):
    """The chance that two repeated samples of the same prompt disagree (null 0)."""

    name = "instability"
    info = ProbeInfo("instability", "run-to-run instability", "stability", "Does the judge change its mind?",
                     "Repeated calls with the same prompt.", "repeats agree (instability 0)",
                     "judgecal judge --samples 5 --temperature 0.7", "instability_rate")

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.0)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        inst = instability(inp.judgments, n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)
        if inst:
            res.sections["instability"] = inst
            res.metrics["instability_rate"] = self.test(Metric.of(inst["instability_rate"]))
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return ["unstable"] if _significant(metrics.get("instability_rate"), cfg) else []


class PaddingProbe(Probe):
    """Share of decisive verdicts that pick a response's padded copy over the response (null 0.5)."""

    name = "padding"
    info = ProbeInfo("padding", "padding", "verbosity", "Does padding a response win the judge over?",
                     "The padding probe pads a response with restatements of its own sentences.",
                     "a padded copy is picked as often as the original (0.5)", "judgecal probe padding",
                     "pad_pick_rate", ("pairwise",))

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.5)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        pad = padding_preference(inp.probes, inp.padded, n_boot=cfg.n_boot, seed=cfg.seed,
                                 level=cfg.level) if inp.padded and len(inp.probes) else {}
        if pad:
            res.sections["padding"] = {k: v for k, v in pad.items() if k != "pad_pick_rate"}
            pick = {k: v for k, v in pad["pad_pick_rate"].items() if k not in ("p", "mde")}
            res.metrics["pad_pick_rate"] = self.test(Metric.of(pick))
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return ["verbosity_bias:padding"] if _significant(metrics.get("pad_pick_rate"), cfg) else []


class InjectionProbe(Probe):
    """Verdict injection, worst kind: ``injection_excess`` (tested, null 0) is the follow rate minus the
    same judge's rate of picking that response on the clean pair; ``injection_follow_rate`` beside it
    (descriptive, its reference is ``clean_pick_rate``)."""

    name = "injection"
    info = ProbeInfo("injection", "verdict injection", "injection",
                     "Does the judge follow instructions planted in a response?",
                     "The response the humans ranked lower carries an injected instruction or fake verdict.",
                     "it picks that response no more often than without the injection", "judgecal probe injection",
                     "injection_follow_rate", ("pairwise",))

    def test(self, m: Metric, k: int = 1) -> Metric:
        return ci_test(m, 0.0, k)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        if not inp.injected:
            return res
        inj = injection_follow(pd.concat([inp.judgments, inp.probes]), inp.injected, n_boot=cfg.n_boot,
                               seed=cfg.seed)
        if not inj:
            return res
        res.sections["injection"] = {k: {m: _plain(v) for m, v in r.items()} for k, r in inj.items()}
        kind, worst = _worst(inj, lambda r: r["injection_excess"]["estimate"])
        extra = {"kind": kind, "kinds": len(inj)}
        res.metrics["injection_follow_rate"] = Metric.of(
            worst["injection_follow_rate"], extra={**extra, "clean_pick_rate": clean(worst["clean_pick_rate"]["estimate"])})
        res.metrics["injection_excess"] = self.test(Metric.of(worst["injection_excess"], extra=extra), len(inj))
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        m = metrics.get("injection_excess")
        return ["follows_injection"] if _significant(m, cfg) and m is not None and (m.estimate or 0) > 0 else []


class PromptSensitivityProbe(Probe):
    """Verdict flips under the worst meaning-preserving prompt mutation, tested against the judge's
    own run-to-run instability."""

    name = "prompt_sensitivity"
    info = ProbeInfo("prompt_sensitivity", "prompt sensitivity", "stability",
                     "Does rewording the prompt change its verdict?",
                     "Reworded prompts: meaning-preserving mutations of the judge's prompt.",
                     "rewording flips no more verdicts than repeating the same prompt does",
                     "judgecal judge --mutation paraphrase ...", "prompt_flip_rate")
    needs_alignment = False

    def test(self, m: Metric, base: Metric | None, k: int = 1) -> Metric:
        return excess_test(m, base, k)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        if not len(inp.mutated):
            return res
        cols = ["item_id", "order", "sample", "mutation", "verdict"]
        mj = inp.mutated[cols]
        # the unmutated calls of the same items only
        plain = inp.judgments.loc[inp.judgments["item_id"].isin(mj["item_id"].unique()).to_numpy(), cols]
        sens = prompt_sensitivity(pd.concat([plain, mj], ignore_index=True), inp.truth, n_boot=cfg.n_boot,
                                  seed=cfg.seed)
        if not sens or not sens["mutations"]:
            return res
        res.sections["prompt_sensitivity"] = sens
        name, worst = _worst(sens["mutations"], lambda r: r["flip_rate"]["estimate"])
        k = len(sens["mutations"])
        flip = Metric.of(worst["flip_rate"], extra={"mutation": name, "mutations": k})
        res.metrics["prompt_flip_rate"] = self.test(flip, done.get("instability_rate"), k)
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return ["prompt_sensitive"] if _significant(metrics.get("prompt_flip_rate"), cfg) else []


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


class GivenPosition(PositionProbe):
    """The position probe whose test and section came with :class:`GivenAlignment`: nothing to compute; its
    flags are the position probe's own."""

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        return {inp.judge: ProbeResult() for inp in inputs}


def with_given_alignment(given: Mapping[str, Mapping[str, Any]]) -> list[Probe]:
    """The registered probes, the alignment and position figures read from ``given`` instead of computed."""
    return [GivenAlignment(given) if type(p) is AlignmentProbe else GivenPosition() if type(p) is PositionProbe
            else p for p in PROBES]


PROBES: list[Probe] = []  # in the order they run; register() adds to it
FLAG_ORDER: list[str] = []  # the order of a judge's flags, by probe name


def register(probe: Probe, flag_position: int | None = None) -> Probe:
    """Add ``probe`` to the audit: it runs after those registered before it (so it reads their metrics),
    its flags come at ``flag_position`` of a judge's flags (default: last), and its description, metrics and
    flags enter the catalogue that the verdict rules, the terminal, the HTML/PDF report, the explorer and
    ``validate`` read. Registering a name twice is refused."""
    if any(p.name == probe.name for p in PROBES):
        raise ValueError(f"a probe named {probe.name!r} is already registered")
    if probe.info is not None:
        describe(probe.info, probe.metric_infos, probe.flag_infos)
    PROBES.append(probe)
    FLAG_ORDER.insert(len(FLAG_ORDER) if flag_position is None else flag_position, probe.name)
    return probe


def optional_probes() -> dict[str, tuple[str, str]]:
    """headline metric -> (probe title, how to run it), for every registered probe that can be not run."""
    return {p.info.headline: (p.info.title, p.info.how_to_run) for p in PROBES if p.info is not None}


def pairwise_only() -> tuple[str, ...]:
    """The headline metrics of the probes that apply to judges of pairs only (two responses shown together)."""
    return tuple(p.info.headline for p in PROBES if p.info is not None and p.info.applies_to == ("pairwise",))


for _probe in (AlignmentProbe(), PositionProbe(), VerbosityProbe(), SelfPreferenceProbe(), InstabilityProbe(),
               PromptSensitivityProbe(), PaddingProbe(), InjectionProbe()):
    register(_probe)
FLAG_ORDER[:] = ["position", "verbosity", "self_preference", "padding", "instability", "prompt_sensitivity",
                 "injection", "alignment"]


def load_plugins() -> list[str]:
    """Register the probes of every ``judgecal.probes`` entry point, then import the modules named in
    ``$JUDGECAL_PROBES`` (each registers its own), so the CLI, the explorer and ``validate`` run them as they run
    the built-in ones (:mod:`judgecal.audit.plugins`); returns the names loaded. A plugin that cannot be loaded
    stops with one line naming it, never silently."""
    return [*load_entry_points(register, lambda: PROBES), *load_env_modules()]


load_plugins()
