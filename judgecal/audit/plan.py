"""``judgecal plan``: how many human labels a confidence-interval half-width needs, for every judge of a
workspace (:func:`judgecal.audit.models.plan` for pairwise judges, the pass-rate plan for binary ones), and the
answer in words."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.labels import label_set_keys, label_set_of
from judgecal.audit.models import PLAN_HALFWIDTH, item_models, item_verdicts, plan
from judgecal.audit.pipeline import ensure_consensus
from judgecal.audit.run import judge_inputs
from judgecal.audit.truth import resolve_truth
from judgecal.audit.uncertainty import calibrated_err2, spread_around, workspace_uncertainty
from judgecal.data.store import Workspace
from judgecal.errors import InputError
from judgecal.stats.active import DEFAULT_TAU, plan_active
from judgecal.stats.classification import pass_rate_plan


def _planning_base(ws: Workspace, consensus: str, judges: list[str] | None) -> tuple[pd.Series, dict[str, Any],
                                                                                     pd.DataFrame]:
    """The truth ``consensus`` (with what it is), the items' models; an unknown judge in ``judges`` or consensus
    raises :class:`~judgecal.errors.InputError` naming the known ones."""
    known = ws.judgments_repo.judges()
    if missing := [j for j in judges or [] if j not in known]:
        raise InputError(f"no judge {missing[0]!r} in this workspace (judges there: {', '.join(known) or 'none'})",
                         name="judge")
    ensure_consensus(ws, consensus)  # an aggregator's consensus not stored yet is computed, as the audit does
    truth, about = resolve_truth(ws, consensus, n_boot=10)
    return truth, about, item_models(ws)


def plan_workspace(ws: Workspace, consensus: str, target_halfwidth: float = PLAN_HALFWIDTH, *,
                   judges: list[str] | None = None, level: float = 0.95, n_unlabelled: int | None = None,
                   invalid_as: str = "tie") -> dict[str, Any]:
    """``judgecal plan``: :func:`plan` for every pairwise judge (or ``judges``) of the workspace against
    the consensus ``consensus``. Unknown judges raise :class:`~judgecal.errors.InputError` naming the known ones."""
    truth, about, items = _planning_base(ws, consensus, judges)
    out: dict[str, Any] = {"consensus": consensus, "truth_source": about["source"], "judges": {}}
    label_sets = ws.items_repo.label_sets()
    for inp in judge_inputs(ws, truth, judges):
        if not inp.pairwise:
            out["judges"].update(_pass_rate_plans(inp, truth, label_sets, target_halfwidth, level))
            continue
        v = item_verdicts(inp.judgments, invalid_as)
        try:
            out["judges"][inp.judge] = plan(truth, v.loc[v.index.intersection(items.index)], target_halfwidth,
                                            level=level, n_unlabelled=n_unlabelled)
        except ValueError as exc:
            out["judges"][inp.judge] = {"error": str(exc)}
    return out


def _pass_rate_plans(inp: Any, truth: pd.Series, label_sets: pd.Series, halfwidth: float,
                     level: float) -> dict[str, dict[str, Any]]:
    """A binary judge's plan for the evaluated system's pass rate (each criterion apart, named
    ``judge [criterion]``): :func:`judgecal.stats.classification.pass_rate_plan` on its first valid label
    per item, the human-labelled items as the pilot."""
    jf = inp.judgments
    ids = jf["item_id"].astype(str)
    out: dict[str, dict[str, Any]] = {}
    sets = [ls for ls in label_set_of(pd.Index(ids.unique()), label_sets) if ls.task == "binary"]
    keys = label_set_keys(ids, label_sets)
    for ls in sets:
        mine = jf[(keys == ls.key()).to_numpy()]
        ok = mine[(mine["status"].astype(str) == "ok") & mine["verdict"].isin(ls.labels)].drop_duplicates("item_id")
        said = ok.set_index(ok["item_id"].astype(str))["verdict"]
        on = said.index.intersection(truth.index[truth.isin(ls.labels)])
        name = f"{inp.judge} [{ls.criterion}]" if len(sets) > 1 and ls.criterion else inp.judge
        if not len(on):
            out[name] = {"error": "no item it labelled has a human label: nothing to plan from"}
            continue
        got = pass_rate_plan((truth.reindex(on) == ls.positive).to_numpy(dtype=np.float64),
                             (said.reindex(on) == ls.positive).to_numpy(dtype=np.float64), int(len(said)),
                             halfwidth, level=level)
        out[name] = {**got["ppi_plan"], "quantity": f"the pass rate (share {ls.positive!r})"}
    return out


def format_plan(res: dict[str, Any]) -> list[str]:
    """The planner's answer in words, one judge a paragraph."""
    lines = []
    for judge, p in res["judges"].items():
        if "error" in p:
            lines.append(f"{judge}: {p['error']}")
            continue
        pool = "any number of items" if p["n_unlabelled"] is None else f"{p['n_unlabelled']} items"
        lines += [
            f"{judge}: judge-human correlation "
            + (f"{p['rho']:.3f}" if p.get("rho_defined", True) else "undefined (one side constant), planned as 0")
            + f" on {p['n_labelled_measured']} items "
            f"(outcome variance {p['sigma2']:.3f}); a ±{p['target_halfwidth']:g} interval "
            + (f"of {p['quantity']} " if p.get("quantity") else "") + "at "
            f"{p['level']:.0%} needs",
            f"  human labels alone:               {p['n_human_only']}",
            f"  PPI++ with the judge on {pool}: {p['n_ppi']} ({p['gain']:.2f}x fewer)",
            f"  if the judge is no better than the models it evaluates: at least "
            f"{p['n_ppi_if_judge_not_better']} (at most {p['ceiling']:g}x fewer)",
            f"  {p['ceiling_note']}"
            + (" The measured correlation promises more than that ceiling." if p["exceeds_ceiling"] else ""),
        ]
    return lines


def plan_active_workspace(ws: Workspace, consensus: str, target_halfwidth: float, *,
                          judges: list[str] | None = None, level: float = 0.95, tau: float = DEFAULT_TAU,
                          others: bool = True) -> dict[str, Any]:
    """``judgecal plan --strategy active``: for every judge with pairwise verdicts (or ``judges``), the expected
    human labels a ±``target_halfwidth`` interval on a win rate over the workspace's pairwise items needs,
    uniform vs active (:func:`judgecal.stats.active.plan_active`), from the judge's :func:`calibrated_err2`
    against ``consensus``; the same for each pair of models apart. ``others``: the uncertainty counts the
    other judges' verdicts too (:func:`spread_around`). Unknown judges raise :class:`~judgecal.errors.InputError`."""
    truth, about, items = _planning_base(ws, consensus, judges)
    known = ws.judgments_repo.judges()
    ids = items.index.astype(str).tolist()
    out: dict[str, Any] = {"consensus": consensus, "truth_source": about["source"], "strategy": "active",
                           "other_judges_counted": others, "judges": {}}
    pooled = workspace_uncertainty(ws, ids) if others else None
    for judge in judges or known:
        unc = workspace_uncertainty(ws, ids, judge)
        if pooled is not None:
            unc = spread_around(unc, pooled)
        if not int(unc["n"].sum()):
            out["judges"][judge] = {"error": "no pairwise verdict of this judge to measure its uncertainty"}
            continue
        err2, used, shift = calibrated_err2(unc, truth)
        res = plan_active(err2, target_halfwidth, level=level, tau=tau)
        res.update({"n_labelled_measured": used, "err2_shift": shift, "pairs": {}})
        pair = items["model_a"].where(items["model_a"] < items["model_b"], items["model_b"]) + " vs " + \
            items["model_b"].where(items["model_a"] < items["model_b"], items["model_a"])
        for name, idx in pair.groupby(pair.to_numpy()).groups.items():
            sel = items.index.get_indexer(idx)
            res["pairs"][str(name)] = plan_active(err2[sel], target_halfwidth, level=level, tau=tau)
        out["judges"][judge] = res
    return out


def format_active_plan(res: dict[str, Any]) -> list[str]:
    """The active planner's answer in words, one judge a paragraph."""
    lines = []
    for judge, p in res["judges"].items():
        if "error" in p:
            lines.append(f"{judge}: {p['error']}")
            continue
        cal = (f"its uncertainty shifted by {p['err2_shift']:+.3f} to the error on {p['n_labelled_measured']} "
               "labelled items" if p["n_labelled_measured"] else "its own uncertainty (no labelled item to check it on)")
        lines += [
            f"{judge}: a ±{p['target_halfwidth']:g} interval on a win rate over its {p['n_items']} pairwise items "
            f"at {p['level']:.0%}, from {cal}, needs",
            f"  uniform draw:               {p['n_uniform']} labels",
            f"  active draw (tau {p['tau']:g}):      {p['expected_labels_active']:.0f} labels expected "
            f"(--budget {p['n_active']}; {p['saving']:.0%} fewer)",
        ]
        for name, q in p["pairs"].items():
            lines.append(f"  {name}: {q['n_uniform']} uniform, {q['expected_labels_active']:.0f} active "
                         f"of {q['n_items']} items")
    return lines
