"""Run the audit of every judge in a workspace against the human consensus."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from judgecal import __version__
from judgecal.audit.alignment import USAGE_COLUMNS, usage_metrics, usage_of
from judgecal.audit.evaluate import evaluate
from judgecal.audit.probe import AuditConfig, JudgeInput, JudgeResult
from judgecal.audit.probes import PROBES
from judgecal.audit.schema import SCHEMA
from judgecal.audit.transitivity import workspace_triads
from judgecal.audit.traps import trap_table
from judgecal.audit.truth import resolve_truth
from judgecal.data.families import DEFAULT_FAMILIES, family_of, load_families
from judgecal.data.store import Workspace
from judgecal.stats.bootstrap import draw_ahead

COLUMNS = ("item_id", "judge", "order", "sample", "mutation", "verdict", "score", "status", "p_a", "p_b", "p_tie",
           "p_labels", "prompt_tokens",
           "completion_tokens", "latency_s", "cost_usd")
WHEN_COLUMNS = ("time", "period", "env")  # in the judgments' columnar copy for the over-time section, not read here
KEPT = tuple(c for c in COLUMNS if c not in USAGE_COLUMNS)  # a judge's frames: its usage is read, not kept
# columns left out of a judge's frames when it recorded none of them (each group as a whole)
UNRECORDED = (("p_a", "p_b", "p_tie"), ("p_labels",))


def run_audit(ws: Workspace, *, consensus: str = "ds", invalid_as: str = "tie", n_boot: int = 2000,
              seed: int = 0, level: float = 0.95, judges: list[str] | None = None,
              effect_of_interest: float = 0.05, selective_target: float | None = None,
              selective_delta: float | None = None,
              progress: Callable[[int, int, str], None] | None = None,
              given: dict[str, Any] | None = None) -> dict[str, Any]:
    """The audit as a JSON-ready dict (schema ``judgecal.audit/2``, typed by
    :class:`judgecal.audit.schema.AuditReport`, documented in docs/reference/audit-json.md).

    The truth is the stored consensus ``consensus`` (``<method>[:<source>]``, see
    :mod:`judgecal.audit.truth`); every registered probe runs on every judge through
    :func:`judgecal.audit.evaluate.evaluate`, the path ``judgecal validate`` checks. ``progress(done, total,
    step)`` hears each step (a probe, a section, a judge's reference) as it starts. ``given``: judge ->
    alignment and position figures computed elsewhere (a Ray cluster's per-item sums), read instead of
    computed (:func:`judgecal.audit.probes.with_given_alignment`).
    """
    cfg = AuditConfig(invalid_as=invalid_as, n_boot=n_boot, seed=seed, level=level,
                      effect_of_interest=effect_of_interest)
    truth, about = resolve_truth(ws, consensus, n_boot=n_boot, seed=seed)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "judgecal_version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"consensus": consensus, "truth_source": about["source"], "invalid_as": invalid_as,
                     "n_boot": n_boot, "seed": seed, "ci_level": level,
                     "bootstrap": "item-level cluster bootstrap, percentile interval"},
        "consensus": about,
        "judges": {},
    }
    # every judge's alignment resamples the items with a consensus label (those it judged): their replicates
    # are drawn while the judgments are read, when no earlier audit left them in the cache folder
    draw_ahead(len(truth), n_boot, seed)
    inputs = judge_inputs(ws, truth, judges, truth_source=about["source"])
    from judgecal.audit.probes import PROBES, with_given_alignment
    from judgecal.audit.sections import SECTION_STEPS, add_sections

    step = _counter(progress, len(PROBES) + len(SECTION_STEPS) + len(inputs))
    # given: the alignment and position figures a cluster computed from per-item sums, read, not recomputed
    results = evaluate(inputs, cfg, probes=None if given is None else with_given_alignment(given), step=step)
    for inp in inputs:
        report["judges"][inp.judge] = judge_entry(inp, results[inp.judge])
    report["settings"]["effect_of_interest"] = effect_of_interest
    report["settings"]["multiple_testing"] = "Benjamini-Hochberg over every tested metric of this report"
    report["settings"]["alpha"] = cfg.alpha  # the level a probe's flag needs its BH q under
    extra: dict[str, float] = {}
    if selective_target is not None:
        extra["target"] = selective_target
    if selective_delta is not None:
        extra["delta"] = selective_delta
    return add_sections(report, ws, consensus, truth, about, inputs, cfg, step=step, **extra)


def _counter(progress: Callable[[int, int, str], None] | None, total: int) -> Callable[[str], None]:
    """A step callback that reports each step to ``progress`` as ``(steps done, total, its name)``."""
    done = 0

    def step(name: str) -> None:
        nonlocal done
        if progress is not None:
            progress(done, total, name)
        done += 1

    return step


def judge_inputs(ws: Workspace, truth: pd.Series, judges: list[str] | None = None,
                 truth_source: str | None = None) -> list[JudgeInput]:
    """Each judge's :class:`JudgeInput`, read from the workspace once: probe pairs (padded, injected, perturbed
    copies, a plugin's: the sources the registered probes declare in ``Inputs.probe_sources``) only feed their probes; alignment and bias use the unmutated prompt, mutations feed the
    prompt-sensitivity probe; the trap pairs and the triads (with the labels of ``truth_source``'s people,
    every person's when ``None``) are read once for every judge. A judge's frames hold :data:`KEPT`, less the :data:`UNRECORDED` columns it gave
    no value of; its usage is computed as its usage columns are read."""
    facts = ws.items_repo.item_facts()
    families = load_families(ws.path)
    probe_of = facts["source"][facts["source"].str.startswith("probe:")]
    first = ("item_id", "judge", "mutation")  # what splits the rows; the other columns follow one at a time
    # the columnar copy also keeps when each verdict was given (read here by no probe; the over-time section
    # takes its rows from the copy instead of reading each judge out of SQLite)
    columns = ws.judgments_repo.judgment_columns([*first, *(c for c in COLUMNS if c not in first), *WHEN_COLUMNS])
    read = {c: next(columns) for c in first}
    is_probe = read["item_id"].isin(probe_of.index).to_numpy()
    unmutated = (read["mutation"] == "none").to_numpy()
    judge_code, judge_names = pd.factorize(read["judge"])  # a judge's rows found by its code, not its name
    seen = np.unique(judge_code[~is_probe & unmutated])
    asked = judges or sorted({str(judge_names[c]) for c in seen[seen >= 0]})
    names = list(dict.fromkeys(asked))  # a judge named twice is read once
    code_of = {str(name): c for c, name in enumerate(judge_names)}
    rows = {judge: {part: np.flatnonzero(mask) for part, mask in (
        ("judgments", mine & ~is_probe & unmutated), ("mutated", mine & ~is_probe & ~unmutated),
        ("probes", mine & is_probe & unmutated))} for judge in names
        for mine in [judge_code == code_of.get(judge, -2)]}  # -2: a judge with no row (-1 is a missing name)
    del is_probe, unmutated, judge_code
    parts: dict[str, dict[str, dict[str, Any]]] = {j: {p: {} for p in per} for j, per in rows.items()}
    following = ((c, next(columns)) for c in COLUMNS if c not in first)
    used: dict[str, dict[str, Any]] = {judge: {} for judge in rows}  # judge -> its usage columns' values
    for name, column in itertools.chain([(c, read.pop(c)) for c in first], following):
        values = column.array  # each judge's rows of this column, then the column is let go
        for judge, per in rows.items():
            if name in USAGE_COLUMNS:  # read for the judge's usage, then let go: no probe reads them
                used[judge][name] = values.take(per["judgments"])
                continue
            for part, at in per.items():
                parts[judge][part][name] = values.take(at)
        del column, values
    usage = {judge: usage_of(len(rows[judge]["judgments"]), used.pop(judge)) for judge in rows}
    for mine in parts.values():  # probabilities a judge never gave are not kept (a probe reads none as absent)
        for group in UNRECORDED:
            if all(bool(pd.isna(mine[part][c]).all()) for part in mine for c in group):
                for part in mine:
                    for c in group:
                        del mine[part][c]
    pairs = facts[(facts["task"] == "pairwise") & (facts["n_candidates"] == 2)].drop(probe_of.index)
    lens = pairs[["len_a", "len_b"]]
    traps, triads = trap_table(pairs), workspace_triads(ws, pairs, truth_source)
    # the probe pairs of each source a registered probe declares it reads, read once for every judge
    declared = dict.fromkeys(src for p in PROBES for src in p.inputs.probe_sources)
    probe_items = {src: ws.items_repo.items(source=src) for src in declared if (probe_of == src).any()}

    def frame(judge: str, part: str) -> pd.DataFrame:  # the rows keep their place in the table as their label
        taken = parts[judge].pop(part)
        return pd.DataFrame(taken, index=pd.Index(rows[judge][part]), columns=[c for c in KEPT if c in taken],
                            copy=False)  # the columns taken above, not copied again into blocks

    not_pairs = facts.index[facts["task"] != "pairwise"]  # pointwise and labelled items

    def on_pairs(judgments: pd.DataFrame) -> bool:
        return not bool(pd.Index(judgments["item_id"].unique()).isin(not_pairs).all())

    built = {judge: JudgeInput(judge=judge, judgments=(jf := frame(judge, "judgments")), truth=truth,
                               mutated=frame(judge, "mutated"), probes=frame(judge, "probes"), lens=lens,
                               own_is_a=own_candidates(pairs, judge, families), probe_items=probe_items,
                               usage=usage[judge], on_pairs=on_pairs(jf), traps=traps,
                               triads=triads)
             for judge in names}
    return [built[judge] for judge in asked]


def judge_entry(inp: JudgeInput, res: JudgeResult) -> dict[str, Any]:
    """A judge's object in ``audit.json``: counts, metrics, usage, each probe's section, flags."""
    jf, codes = inp.judgments, inp.codes
    return {
        "kind": "pairwise" if inp.pairwise else "pointwise",
        "n_judgments": int(len(jf)),
        "n_items": int(jf["item_id"].nunique()),
        "n_items_with_consensus": int(len(np.unique(codes[codes >= 0]))),
        "orders": inp.orders,
        "metrics": {name: m.to_json() for name, m in res.metrics.items()},
        "usage": inp.usage if inp.usage is not None else usage_metrics(jf),
        **res.sections,
        "flags": res.flags,
    }


def own_candidates(pairs: pd.DataFrame, judge: str,
                   table: tuple[tuple[str, str], ...] = DEFAULT_FAMILIES) -> pd.Series:
    """item_id -> whether candidate A is the judge's own family, over the pairs (``ws.items_repo.item_facts``)
    with exactly one own candidate. A candidate's family comes from its model name through ``table``
    (``families.yaml`` first), else from the family recorded with it."""
    fam = family_of(judge.rsplit("/", 1)[-1], table)
    if fam is None:
        return pd.Series(dtype=bool)

    def families(model: str, recorded: str) -> np.ndarray:
        known = {m: family_of(m, table) for m in pairs[model].dropna().unique()}
        return np.where(pairs[model].map(known).notna(), pairs[model].map(known), pairs[recorded])

    mine_a, mine_b = families("model_a", "family_a") == fam, families("model_b", "family_b") == fam
    one = mine_a != mine_b
    return pd.Series(mine_a[one], index=pairs.index[one], dtype=bool)
