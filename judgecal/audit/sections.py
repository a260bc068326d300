"""The audit's sections beyond the probes: models, the humans' reference, confidence and a verdict per judge.

:func:`add_sections` extends a report built by :func:`judgecal.audit.run.run_audit`:

- ``models`` (:mod:`judgecal.audit.models`);
- ``humans``: the truth's annotators, their Fleiss' κ and leave-one-out accuracy (:mod:`judgecal.audit.human`);
- per judge: ``reference`` (κ and accuracy beside the base rate, a chance rater and the humans),
  ``replace_annotator`` (alternative annotator test and κ z-score, when annotators' labels exist),
  ``calibration`` and ``selective`` (when the judge has a confidence, :mod:`judgecal.audit.confidence`),
  and ``verdict`` = ``{status, reasons, not_tested}`` from the workspace's ``thresholds.yaml``
  (:func:`judgecal.audit.decision.judge_verdict`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from judgecal.audit import confidence, human, models
from judgecal.audit.decision import judge_verdict, load_thresholds
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.data.store import Workspace


def add_sections(report: dict[str, Any], ws: Workspace, consensus: str, truth: pd.Series, about: dict[str, Any],
                 inputs: list[JudgeInput], cfg: AuditConfig, *, target: float = confidence.TARGET,
                 delta: float = confidence.DELTA, epsilon: float = human.EPSILON) -> dict[str, Any]:
    thresholds = load_thresholds(ws.path)
    items = models.item_models(ws)
    verdicts = {inp.judge: models.item_verdicts(inp.judgments, cfg.invalid_as) for inp in inputs if inp.pairwise}
    report["models"] = models.models_section(items, truth, inputs, cfg, verdicts=verdicts)
    wide = human.annotator_matrix(ws, consensus, truth)
    humans = report["humans"] = human.humans_section(about, wide, cfg.n_boot, cfg.seed, cfg.level)
    report["settings"]["selective"] = {"target": target, "delta": delta, "split": "random halves of the "
                                       "labelled items: calibration, held out"}
    report["settings"]["replace_annotator"] = {"epsilon": epsilon, "q": human.ALT_Q,
                                               "procedure": "Benjamini-Yekutieli over annotators"}
    report["settings"]["thresholds"] = thresholds
    for inp in inputs:
        entry = report["judges"][inp.judge]
        if inp.pairwise:
            verdict = verdicts[inp.judge]
            entry["reference"] = human.judge_reference(verdict, truth, humans)
            alt = human.replace_annotator(wide, verdict, epsilon=epsilon, q=human.ALT_Q)
            if alt is not None:
                entry["replace_annotator"] = alt
            conf, kind = confidence.item_confidence(inp.judgments)
            if kind is not None and len(conf):
                entry["calibration"] = confidence.calibration_section(conf, kind, truth, n_boot=cfg.n_boot,
                                                                      seed=cfg.seed, level=cfg.level)
                entry["selective"] = confidence.selective_section(conf, truth, target=target, delta=delta,
                                                                  seed=cfg.seed)
        entry["verdict"] = judge_verdict(entry, thresholds, human_kappa=_finite((humans.get("fleiss_kappa") or {})
                                                                                .get("estimate")),
                                         human_accuracy=_finite(humans["loo_accuracy"].get("estimate")),
                                         effect_of_interest=cfg.effect_of_interest)
    return report


def _finite(v: Any) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else float(v)
