"""``check_probe``: the contract every probe keeps, run on any probe (as scikit-learn's ``check_estimator``).

A probe, built in or from outside (:mod:`judgecal.audit.plugins`), must:

- be a :class:`~judgecal.audit.probe.Probe` made with no arguments, named in ``snake_case``;
- describe itself: a :class:`~judgecal.catalogue.ProbeInfo` (its question, what it tests, its null in words,
  how to run it, the judges it applies to, its headline metric), a catalogue entry for every metric it
  reports (title, definition, unit, reference, good direction, null for a tested one) and a
  :class:`~judgecal.catalogue.FlagInfo` with a known severity for every flag it raises;
- run on small synthetic judges (:mod:`judgecal.audit.validate`'s simulation: both orders, repeats, prompt
  mutations, padded, injected and perturbed pairs) without changing its inputs, the same twice with the same seed, and
  on a judge with nothing to read;
- report :class:`~judgecal.audit.metric.Metric` values whose interval holds the estimate, tested against the
  null its catalogue entry declares;
- write at most one section, named as the probe, that serialises into ``audit.json`` (JSON without NaN) and
  validates as part of a judge's object (:class:`judgecal.audit.schema.Judge`), and as the type the probe declares
  (``Probe.section``, a :class:`judgecal.audit.schema.Section`; a built-in probe that writes one declares it);
- raise only flags it declares (or ``<name>:underpowered``), from metrics that carry their BH ``q``;
- declare what it reads (:class:`~judgecal.audit.verdict.Inputs`: known task kinds and orders, at least one
  sample, probe pairs of a ``probe:`` source), the calls ``judgecal probe`` makes for it (none, or
  :class:`~judgecal.audit.verdict.LiveCalls` naming the metrics it reports), the thresholds its rule reads (within
  their declared ranges), and closed forms for ``validate`` (:class:`~judgecal.audit.verdict.PowerCheck`: of a
  metric it declares, planted by a scenario of the simulation, finite on it);
- have a verdict rule that returns :class:`~judgecal.audit.verdict.Effect` values (severity 0, 1 or 2, of a
  metric it declares or none) on the synthetic judges, and none on a judge with no figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import pandas as pd
from pydantic import ValidationError

from judgecal.audit.evaluate import evaluate
from judgecal.audit.metric import Metric
from judgecal.audit.probe import AuditConfig, JudgeInput, JudgeResult, Probe, ProbeResult
from judgecal.audit.probes import AlignmentProbe
from judgecal.audit.run import judge_entry
from judgecal.audit.schema import Judge
from judgecal.audit.simulate import SCENARIOS, Scenario, judge_input, simulate, with_traps_and_triads
from judgecal.audit.thresholds import DEFAULT_THRESHOLDS
from judgecal.audit.verdict import (
    TASK_KINDS,
    Effect,
    Figure,
    Inputs,
    LiveCalls,
    PowerCheck,
    ThresholdSpec,
    VerdictInput,
)
from judgecal.catalogue import FLAGS, METRICS, SEVERITIES, FlagInfo, MetricInfo
from judgecal.errors import ConfigError

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
GOOD = ("higher", "lower", "closer to the reference")
APPLIES = ("pairwise", "pointwise")
#: the synthetic judges: one with no bias, one with every bias the simulation can plant
SYNTHETIC = (Scenario("null", perturbation=0.0),
             Scenario("biased", position=0.3, verbosity=0.2, self_pref=0.2, instability=0.2, template=0.2,
                      injection=0.3, perturbation=0.3))


class ProbeContractError(ConfigError, AssertionError):
    """A probe that breaks the contract :func:`check_probe` runs; the message names the probe and the rule."""


def synthetic_inputs(n_items: int = 80, seed: int = 0) -> list[JudgeInput]:
    """Two simulated judges of ``n_items`` pairs (:data:`SYNTHETIC`), as the audit's :class:`JudgeInput`, with
    trap pairs and triads read from their own items (:func:`judgecal.audit.validate.with_traps_and_triads`)."""
    return [with_traps_and_triads(replace(judge_input(simulate(sc, n_items, seed + k)), judge=f"synthetic/{sc.name}"))
            for k, sc in enumerate(SYNTHETIC)]


def _fail(probe: Probe | type, rule: str) -> ProbeContractError:
    name = probe.__name__ if isinstance(probe, type) else f"{type(probe).__name__} {probe.name!r}"
    return ProbeContractError(f"check_probe: {name}: {rule}")


def _made(probe: Probe | type[Probe]) -> Probe:
    if isinstance(probe, Probe):
        return probe
    if not (isinstance(probe, type) and issubclass(probe, Probe)):
        raise ProbeContractError(f"check_probe: {probe!r} is not a judgecal.audit.probe.Probe subclass or instance")
    try:
        return probe()
    except Exception as exc:
        raise _fail(probe, f"cannot be made with no arguments ({type(exc).__name__}: {exc})") from None


def _metric_infos(p: Probe) -> dict[str, MetricInfo]:
    """The catalogue entries of the probe's metrics: its own, else the catalogue's (a built-in probe's)."""
    return {**METRICS, **{m.name: m for m in p.metric_infos}}


def _check_description(p: Probe) -> None:
    if not isinstance(p.name, str) or not NAME.match(p.name):
        raise _fail(p, "name: a snake_case word is needed (it names the probe's section and flags)")
    infos = _metric_infos(p)
    for m in p.metric_infos:
        if not isinstance(m, MetricInfo) or not NAME.match(m.name):
            raise _fail(p, f"metric_infos: {m!r}: a MetricInfo with a snake_case name is needed")
        for field in ("title", "definition", "unit", "reference", "group"):
            if not str(getattr(m, field)).strip():
                raise _fail(p, f"metric {m.name!r}: {field} is empty")
        if m.good not in GOOD:
            raise _fail(p, f"metric {m.name!r}: good must be one of {', '.join(GOOD)} (got {m.good!r})")
        if p.info is not None and m.group != p.info.group:
            raise _fail(p, f"metric {m.name!r}: group {m.group!r} differs from the probe's {p.info.group!r}")
        if m.name in METRICS and METRICS[m.name] != m:
            raise _fail(p, f"metric {m.name!r}: already in the catalogue with another entry")
    if p.info is not None:
        i = p.info
        if i.name != p.name:
            raise _fail(p, f"info.name {i.name!r} differs from the probe's name")
        for field in ("title", "group", "question", "tested", "null", "how_to_run"):
            if not str(getattr(i, field)).strip():
                raise _fail(p, f"info.{field} is empty")
        if not i.question.rstrip().endswith("?"):
            raise _fail(p, f"info.question is not a question: {i.question!r}")
        if not i.applies_to or any(a not in APPLIES for a in i.applies_to):
            raise _fail(p, f"info.applies_to: one or more of {', '.join(APPLIES)} (got {i.applies_to!r})")
        if i.headline not in infos:
            raise _fail(p, f"info.headline {i.headline!r} is not a metric it declares (metric_infos)")
    elif p.metric_infos or p.flag_infos:
        raise _fail(p, "info: a probe that declares metrics or flags needs a ProbeInfo")
    for f in p.flag_infos:
        if not isinstance(f, FlagInfo) or not f.code.strip() or not f.title.strip() or not f.words.strip():
            raise _fail(p, f"flag_infos: {f!r}: a FlagInfo with a code, a title and words is needed")
        if f.severity not in SEVERITIES:
            raise _fail(p, f"flag {f.code!r}: severity must be one of {', '.join(SEVERITIES)} (got {f.severity!r})")
        if f.metric not in infos:
            raise _fail(p, f"flag {f.code!r}: its metric {f.metric!r} is not in the catalogue nor metric_infos")
        if f.code in FLAGS and FLAGS[f.code] != f:
            raise _fail(p, f"flag {f.code!r}: already in the catalogue with another entry")


def _frames(inp: JudgeInput) -> list[pd.DataFrame]:
    """What a probe reads, as frames (to see it left them unchanged)."""
    return [inp.judgments, inp.truth.to_frame(), inp.mutated, inp.probes, inp.lens, inp.own_is_a.to_frame()]


def _run(p: Probe, inputs: Sequence[JudgeInput], cfg: AuditConfig) -> dict[str, ProbeResult]:
    """The probe's results on ``inputs``, after the alignment figures it may need (as the audit runs it)."""
    done: dict[str, dict[str, Metric]] = {inp.judge: {} for inp in inputs}
    if not isinstance(p, AlignmentProbe):
        for judge, res in AlignmentProbe().run_all(inputs, cfg, done).items():
            done[judge].update(res.metrics)
    eligible = [inp for inp in inputs if not p.needs_alignment or "accuracy" in done[inp.judge]]
    got = p.run_all(eligible, cfg, done)
    if not isinstance(got, Mapping) or set(got) - {inp.judge for inp in eligible}:
        raise _fail(p, "run_all must return judge -> ProbeResult for the judges it was given")
    return dict(got)


def _plain(results: Mapping[str, ProbeResult]) -> str:
    return json.dumps({j: {"metrics": {k: m.to_json() for k, m in r.metrics.items()}, "sections": r.sections}
                       for j, r in sorted(results.items())}, sort_keys=True, default=str)


def _check_results(p: Probe, results: Mapping[str, ProbeResult], inputs: Sequence[JudgeInput]) -> None:
    infos = _metric_infos(p)
    reserved = set(Judge.model_fields) | set(judge_entry(inputs[0], JudgeResult()))
    for judge, res in results.items():
        if not isinstance(res, ProbeResult):
            raise _fail(p, f"{judge}: run returned {type(res).__name__}, not a ProbeResult")
        for name, m in res.metrics.items():
            if not isinstance(m, Metric):
                raise _fail(p, f"{judge}: metric {name!r} is a {type(m).__name__}, not a Metric")
            family = name.partition(".")[0]
            if name not in infos and family not in infos:
                raise _fail(p, f"metric {name!r} has no catalogue entry (declare it in metric_infos)")
            declared = (infos.get(name) or infos[family]).null
            if m.null_value is not None and declared is not None and m.null_value != declared:
                raise _fail(p, f"metric {name!r}: tested against {m.null_value}, its catalogue null is {declared}")
            if m.p is not None and not 0 <= m.p <= 1:
                raise _fail(p, f"metric {name!r}: p = {m.p} is not a probability")
            if None not in (m.estimate, m.ci_low, m.ci_high) and not (
                    m.ci_low - 1e-9 <= m.estimate <= m.ci_high + 1e-9):  # type: ignore[operator]
                raise _fail(p, f"metric {name!r}: the interval [{m.ci_low}, {m.ci_high}] does not hold {m.estimate}")
        for name, sec in res.sections.items():
            if name != p.name or name in reserved:
                raise _fail(p, f"section {name!r}: a probe writes one section, named as the probe (not a judge's "
                               f"own key)")
            if not isinstance(sec, dict):
                raise _fail(p, f"section {name!r} is a {type(sec).__name__}, not a dict")
        inp = next(i for i in inputs if i.judge == judge)
        try:
            written = json.loads(json.dumps(judge_entry(inp, JudgeResult(dict(res.metrics), dict(res.sections))),
                                            allow_nan=False))
            Judge.model_validate(written)
        except (TypeError, ValueError) as exc:  # json's and pydantic's (a ValidationError is a ValueError)
            raise _fail(p, f"{judge}: its metrics and section do not serialise into audit.json "
                           f"({str(exc).splitlines()[0]})") from None
        if p.name in written and p.section is not None:
            try:
                p.section.model_validate(written[p.name])
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise _fail(p, f"{judge}: its section is not the {p.section.__name__} it declares: {where}: "
                               f"{err['msg']}") from None
        if p.name in written and p.section is None and type(p).__module__.startswith("judgecal."):
            raise _fail(p, "section: a built-in probe that writes a section declares its type (Probe.section)")


def _check_declarations(p: Probe) -> None:
    infos = _metric_infos(p)
    i = p.inputs
    if not isinstance(i, Inputs):
        raise _fail(p, f"inputs: {i!r} is not an Inputs")
    if not i.task_kinds or any(k not in TASK_KINDS for k in i.task_kinds):
        raise _fail(p, f"inputs.task_kinds: one or more of {', '.join(TASK_KINDS)} (got {i.task_kinds!r})")
    if any(o not in ("AB", "BA") for o in i.orders) or len(set(i.orders)) != len(i.orders):
        raise _fail(p, f"inputs.orders: distinct orders among AB, BA (got {i.orders!r})")
    if not (isinstance(i.samples, int) and i.samples >= 1):
        raise _fail(p, f"inputs.samples: a whole number of at least 1 (got {i.samples!r})")
    if any(not str(src).startswith("probe:") for src in i.probe_sources):
        raise _fail(p, f"inputs.probe_sources: sources of probe pairs start with 'probe:' (got {i.probe_sources!r})")
    plan = p.live_calls
    if plan is not None:
        if not isinstance(plan, LiveCalls) or plan.kind not in ("judge", "perturb", "challenge"):
            raise _fail(p, f"live_calls: {plan!r}: None or a LiveCalls of kind 'judge', 'perturb' or 'challenge'")
        if plan.kind == "judge" and (not callable(plan.make) or not plan.what.strip()):
            raise _fail(p, "live_calls: kind 'judge' needs make (base, truth, n) -> (base, probe items) and what")
        if plan.kind == "judge" and (not plan.orders or any(o not in ("AB", "BA") for o in plan.orders)):
            raise _fail(p, f"live_calls.orders: one or both of AB, BA (got {plan.orders!r})")
        named = [m for m in plan.reports.split(" and ") if m]
        if not named or any(m not in infos for m in named):
            raise _fail(p, f"live_calls.reports: the metrics it reports, each one it declares (got {plan.reports!r})")
    for spec in p.thresholds:
        if not isinstance(spec, ThresholdSpec) or not NAME.match(spec.key):
            raise _fail(p, f"thresholds: {spec!r}: a ThresholdSpec with a snake_case key is needed")
        if set(spec.defaults) != set(spec.ranges):
            raise _fail(p, f"thresholds {spec.key!r}: a range for each default and a default for each range")
        for leaf, value in spec.defaults.items():
            lo, hi, _ = spec.ranges[leaf]
            if not lo <= value <= hi:
                raise _fail(p, f"thresholds {spec.key}.{leaf}: its default {value!r} is outside [{lo}, {hi}]")
        if spec.key in DEFAULT_THRESHOLDS and DEFAULT_THRESHOLDS[spec.key] != dict(spec.defaults):
            raise _fail(p, f"thresholds {spec.key!r}: already a threshold with other values")
    scenarios = {sc.name: sc for sc in SCENARIOS}
    for c in p.power_checks:
        if not isinstance(c, PowerCheck) or c.metric not in infos:
            raise _fail(p, f"power_checks: {c!r}: a PowerCheck of a metric it declares is needed")
        if c.planted not in scenarios:
            raise _fail(p, f"power_check {c.metric!r}: planted {c.planted!r} is not a scenario of the simulation "
                           f"({', '.join(scenarios)})")
        got = [c.truth(sc) for sc in SCENARIOS]
        if not all(isinstance(x, int | float) and x == x and abs(x) != float("inf") for x in got):
            raise _fail(p, f"power_check {c.metric!r}: its closed form is not a finite number on every scenario")


def _thresholds(p: Probe) -> dict[str, object]:
    """The default thresholds with the probe's own (a probe not registered has not added them)."""
    return {**DEFAULT_THRESHOLDS, **{spec.key: dict(spec.defaults) for spec in p.thresholds}}


def _check_rule(p: Probe, inputs: Sequence[JudgeInput], results: Mapping[str, JudgeResult], cfg: AuditConfig) -> None:
    infos = _metric_infos(p)
    t = _thresholds(p)
    for inp in inputs:
        if inp.judge not in results:
            continue
        res = results[inp.judge]
        entry = json.loads(json.dumps(judge_entry(inp, res), default=str))
        v = VerdictInput({k: Figure.of(m) for k, m in entry["metrics"].items()}, tuple(res.flags), t,
                         cfg.effect_of_interest, tuple(inp.orders), str(entry["kind"]), entry)
        got = p.verdict_rule(v)
        if not isinstance(got, list) or not all(isinstance(e, Effect) for e in got):
            raise _fail(p, f"{inp.judge}: verdict_rule must return a list of Effect")
        for e in got:
            if e.severity not in (0, 1, 2) or not e.code.strip() or not e.text.strip():
                raise _fail(p, f"{inp.judge}: verdict_rule: {e!r}: severity 0, 1 or 2, a code and a text")
            if e.metric is not None and e.metric not in infos:
                raise _fail(p, f"{inp.judge}: verdict_rule: effect {e.code!r} on {e.metric!r}, not a known metric")
    if p.verdict_rule(VerdictInput({}, (), t, cfg.effect_of_interest)) != []:
        raise _fail(p, "verdict_rule of a judge with no figures must be []")


def _check_flags(p: Probe, inputs: Sequence[JudgeInput], cfg: AuditConfig) -> dict[str, JudgeResult]:
    probes: list[Probe] = [p] if isinstance(p, AlignmentProbe) else [AlignmentProbe(), p]
    out = evaluate(inputs, cfg, probes=probes, flag_order=[q.name for q in probes])
    known = {f.code for f in p.flag_infos} | set(FLAGS)
    for judge, r in out.items():
        flags = p.flags(r.metrics, cfg)
        if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
            raise _fail(p, f"{judge}: flags must return a list of codes (str)")
        bad = [f for f in flags if f not in known and not f.endswith(":underpowered")]
        if bad:
            raise _fail(p, f"{judge}: flag {bad[0]!r} is not declared (flag_infos)")
    if p.flags({}, cfg) != []:
        raise _fail(p, "flags of a judge it did not run on (no metrics) must be []")
    return out


def check_probe(probe: Probe | type[Probe], inputs: Sequence[JudgeInput] | None = None,
                cfg: AuditConfig | None = None) -> list[str]:
    """Run the probe contract (module docstring) on ``probe``, a class or an instance; ``inputs``: the judges
    to run it on (default :func:`synthetic_inputs`; pass your own when the probe reads what the simulation
    lacks). Raises :class:`ProbeContractError` naming the probe and the rule it breaks; returns the rules
    checked."""
    p = _made(probe)
    cfg = cfg or AuditConfig(n_boot=200, seed=0)
    inputs = list(inputs) if inputs is not None else synthetic_inputs()
    checked = ["made with no arguments"]
    _check_description(p)
    checked.append("describes itself (name, info, metrics, flags)")
    _check_declarations(p)
    checked.append("declares its inputs, live calls, thresholds and power checks")
    before = [[f.copy(deep=True) for f in _frames(inp)] for inp in inputs]
    try:
        results = _run(p, inputs, cfg)
        again = _run(p, inputs, cfg)
    except ProbeContractError:
        raise
    except Exception as exc:
        raise _fail(p, f"fails on the synthetic judges ({type(exc).__name__}: {exc})") from None
    for inp, frames in zip(inputs, before, strict=True):
        if not all(a.equals(b) for a, b in zip(_frames(inp), frames, strict=True)):
            raise _fail(p, f"{inp.judge}: changed its input frames")
    checked.append("leaves its inputs unchanged")
    if _plain(results) != _plain(again):
        raise _fail(p, "two runs with the same seed differ")
    checked.append("the same twice with the same seed")
    _check_results(p, results, inputs)
    if p.info is not None and not any(p.info.headline in r.metrics for r in results.values()):
        raise _fail(p, f"reports no {p.info.headline!r} on the synthetic judges (pass inputs= it can read)")
    checked.append("metrics and section serialise into audit.json and validate")
    empty = JudgeInput("synthetic/empty", inputs[0].judgments.iloc[:0], inputs[0].truth.iloc[:0])
    try:
        p.run_all([empty], cfg, {empty.judge: {}})
    except Exception as exc:
        raise _fail(p, f"fails on a judge with nothing to read ({type(exc).__name__}: {exc})") from None
    checked.append("runs on a judge with nothing to read")
    evaluated = _check_flags(p, inputs, cfg)
    checked.append("raises only declared flags")
    _check_rule(p, inputs, evaluated, cfg)
    checked.append("its verdict rule returns typed effects")
    return checked


__all__ = ["ProbeContractError", "check_probe", "synthetic_inputs"]
