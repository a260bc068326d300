"""Run the audit of every judge in a workspace against the human consensus."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from judgecal import __version__
from judgecal.stats import bootstrap as stats
from judgecal.audit.alignment import JudgeSums, judge_sums, metrics_from, truth_codes, usage_metrics
from judgecal.audit.injection import SOURCE as INJECTION_SOURCE
from judgecal.audit.injection import injection_follow
from judgecal.audit.instability import instability
from judgecal.audit.padding import SOURCE as PADDING_SOURCE
from judgecal.audit.padding import padding_preference
from judgecal.audit.position import debiased_accuracy, position_tests
from judgecal.audit.self_preference import self_preference
from judgecal.audit.sensitivity import prompt_sensitivity
from judgecal.stats.inference import benjamini_hochberg, ci_p_value, mde_from_ci
from judgecal.audit.verbosity import verbosity
from judgecal.data.families import DEFAULT_FAMILIES, family_of, load_families
from judgecal.data.store import Workspace

SCHEMA = "judgecal.audit/1"
COLUMNS = ("item_id", "judge", "order", "sample", "mutation", "verdict", "status", "p_a", "p_b", "p_tie", "prompt_tokens",
           "completion_tokens", "latency_s", "cost_usd")


def run_audit(ws: Workspace, *, consensus: str = "ds", invalid_as: str = "tie", n_boot: int = 2000,
              seed: int = 0, level: float = 0.95, judges: list[str] | None = None,
              effect_of_interest: float = 0.05) -> dict[str, Any]:
    """The audit as a JSON-ready dict (schema ``judgecal.audit/1``, documented in the README).

    One item-level bootstrap over the consensus items serves every judge (paired intervals).
    """
    cons = ws.consensus_frame(consensus)
    truth = pd.Series(cons["label"].to_numpy(dtype=str), index=cons["item_id"].to_numpy(dtype=str))
    frame = ws.judgments_frame(columns=COLUMNS, compact=True)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "judgecal_version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"consensus": consensus, "invalid_as": invalid_as, "n_boot": n_boot, "seed": seed,
                     "ci_level": level, "bootstrap": "item-level cluster bootstrap, percentile interval"},
        "consensus": {"method": consensus, "n_items": int(len(truth)),
                      "label_counts": {str(k): int(v) for k, v in truth.value_counts().items()}},
        "judges": {},
    }
    facts = ws.item_facts()
    families = load_families(ws.path)
    probe_of = facts["source"][facts["source"].str.startswith("probe:")]
    # probe pairs (padded, injected copies) only feed their probes
    is_probe = frame["item_id"].isin(probe_of.index).to_numpy()
    probe_frame, frame = frame[is_probe], frame[~is_probe]
    probe_frame = probe_frame[probe_frame["mutation"] == "none"]
    pairs = facts[(facts["task"] == "pairwise") & (facts["n_candidates"] == 2)].drop(probe_of.index)
    # alignment and bias use the unmutated prompt; mutations feed the prompt-sensitivity probe
    mutated = frame[frame["mutation"] != "none"]
    frame = frame[frame["mutation"] == "none"]
    codes_all = truth_codes(frame["item_id"], truth)
    judge_col = frame["judge"].to_numpy(dtype=object)  # shared strings: 8 bytes a row
    names = judges or sorted({str(j) for j in set(judge_col)})
    sums: dict[str, JudgeSums] = {}
    for judge in names:
        mask = judge_col == judge
        jf = frame[mask]
        codes = codes_all[mask]
        pairwise = bool(jf["verdict"].notna().any())
        js = judge_sums(jf, codes, truth.to_numpy(), len(truth), invalid_as) if pairwise and len(truth) else None
        if js is not None:
            sums[judge] = js
        report["judges"][judge] = {
            "kind": "pairwise" if pairwise else "pointwise",
            "n_judgments": int(len(jf)),
            "n_items": int(jf["item_id"].nunique()),
            "n_items_with_consensus": int(len(np.unique(codes[codes >= 0]))),
            "orders": sorted(jf["order"].unique().tolist()),
            "metrics": {},
            "usage": usage_metrics(jf),
        }
    if sums:
        widths = [js.sums.shape[1] for js in sums.values()]
        boot = stats.bootstrap_sums(np.hstack([js.sums for js in sums.values()]), n_boot, seed)
        start = 0
        for (judge, js), w in zip(sums.items(), widths, strict=True):
            report["judges"][judge]["metrics"] = metrics_from(js, boot[:, start:start + w], level)
            start += w
    lens = pairs[["len_a", "len_b"]]
    probe_judge = probe_frame["judge"].to_numpy(dtype=object)
    injected = ws.items(source=INJECTION_SOURCE) if (probe_of == INJECTION_SOURCE).any() else []
    padded = set(probe_of.index[probe_of == PADDING_SOURCE])
    for judge in sums:
        jf = frame[judge_col == judge]
        entry = report["judges"][judge]
        pos = position_tests(jf) if entry["orders"] == ["AB", "BA"] else {}
        if pos:
            entry["position"] = pos
            deb = debiased_accuracy(jf, truth, invalid_as=invalid_as, n_boot=n_boot, seed=seed, level=level)
            if deb:
                entry["metrics"]["debiased_accuracy"] = deb["debiased_accuracy"]
                entry["position"]["paired_single_order_accuracy"] = deb["paired_single_order_accuracy"]
        verb = verbosity(jf, truth, lens, n_boot=n_boot, seed=seed) if len(lens) else {}
        if verb:
            for name in ("prefer_longer_rate", "verbosity_excess"):
                entry["metrics"][name] = _rounded(verb[name])
            entry["metrics"]["verbosity_excess"]["p"] = ci_p_value(verb["verbosity_excess"])
            lc = verb["judge_length_control"]
            entry["metrics"]["lc_win_rate"] = {"estimate": _clean(lc["lc_win_rate"]), "ci_low": None,
                                               "ci_high": None, "n": int(len(jf)),
                                               "raw_win_rate_a": _clean(lc["raw_win_rate_a"]),
                                               "length_coef": _clean(lc["length_coef"]), "p": _clean(lc["length_coef_p"])}
            entry["verbosity"] = {"human_prefer_longer_rate": _rounded(verb["human_prefer_longer_rate"]),
                                  "human_length_control": {k: _clean(v) for k, v in verb["human_length_control"].items()}}
        own = own_candidates(pairs, judge, families)
        sp = self_preference(jf, truth, own, n_boot=n_boot, seed=seed) if len(own) else {}
        if sp:
            entry["metrics"]["self_preference_excess"] = _rounded(sp["self_preference_excess"])
            entry["metrics"]["self_preference_excess"]["p"] = ci_p_value(sp["self_preference_excess"])
            entry["self_preference"] = {k: (_rounded(v) if isinstance(v, dict) else _clean(v))
                                        for k, v in sp.items() if k != "self_preference_excess"}
        inst = instability(jf, n_boot=n_boot, seed=seed, level=level)
        if inst:
            entry["instability"] = inst
            entry["metrics"]["instability_rate"] = {**inst["instability_rate"],
                                                    "p": ci_p_value(inst["instability_rate"])}
        probes_of_judge = probe_frame[probe_judge == judge]
        pad = padding_preference(probes_of_judge, padded, n_boot=n_boot, seed=seed, level=level) if padded else {}
        if pad:
            entry["padding"] = {k: v for k, v in pad.items() if k != "pad_pick_rate"}
            entry["metrics"]["pad_pick_rate"] = _rounded(pad["pad_pick_rate"])
        inj = injection_follow(pd.concat([jf, probes_of_judge]), injected, n_boot=n_boot,
                               seed=seed) if injected else {}
        if inj:
            entry["injection"] = {k: {m: _rounded(v) for m, v in r.items()} for k, r in inj.items()}
            kind, worst = max(inj.items(), key=lambda kv: kv[1]["injection_excess"]["estimate"])
            entry["metrics"]["injection_follow_rate"] = {**_rounded(worst["injection_follow_rate"]), "kind": kind,
                                                         "p": ci_p_value(worst["injection_excess"])}
    cols = ["item_id", "order", "sample", "mutation", "verdict"]
    for judge in sorted(set(mutated["judge"])):
        mj = mutated.loc[mutated["judge"] == judge, cols]
        # the unmutated calls of the same (item, order, sample) only
        plain = frame.loc[(judge_col == judge) & frame["item_id"].isin(mj["item_id"].unique()).to_numpy(), cols]
        sens = prompt_sensitivity(pd.concat([plain, mj], ignore_index=True), truth, n_boot=n_boot, seed=seed)
        del mj, plain
        if sens and judge in report["judges"]:
            report["judges"][judge]["prompt_sensitivity"] = sens
            worst = max(sens["mutations"].items(), key=lambda kv: kv[1]["flip_rate"]["estimate"])
            flip = _rounded(worst[1]["flip_rate"])
            base = report["judges"][judge]["metrics"].get("instability_rate")
            report["judges"][judge]["metrics"]["prompt_flip_rate"] = {
                **flip, "mutation": worst[0], "p": excess_p_value(flip, base)}
    add_tests(report, effect_of_interest=effect_of_interest)
    return report


def add_tests(report: dict[str, Any], effect_of_interest: float = 0.05, alpha: float = 0.05) -> None:
    """Give every metric ``p``, ``q`` (Benjamini-Hochberg across the whole report) and ``mde`` keys,
    and each judge its flags. A null result whose MDE exceeds the effect of interest is labelled
    ``underpowered``, never "no bias"."""
    tested: list[tuple[str, str, float]] = []
    for name, j in report["judges"].items():
        pos = j.get("position", {})
        for metric, m in j["metrics"].items():
            m.setdefault("p", None)
            m.setdefault("q", None)
            m.setdefault("mde", None)
            if metric == "first_position_rate" and pos:
                m["p"] = _clean(pos["mcnemar_p"])
                m["mde"] = _clean(pos["first_position_mde"])
            if metric in ("verbosity_excess", "self_preference_excess") and m.get("p") is not None:
                m["mde"] = _clean(mde_from_ci(m["ci_low"], m["ci_high"]))
            if m["p"] is not None:
                tested.append((name, metric, m["p"]))
    qs = benjamini_hochberg([p for _, _, p in tested])
    for (name, metric, _), q in zip(tested, qs, strict=True):
        report["judges"][name]["metrics"][metric]["q"] = _clean(q)
    for j in report["judges"].values():
        flags = []
        m = j["metrics"].get("first_position_rate")
        if m and m["q"] is not None:
            if m["q"] < alpha:
                side = "first" if (m["estimate"] or 0.5) > 0.5 else "second"
                flags.append(f"position_bias:{side}")
            elif m["mde"] is not None and m["mde"] > effect_of_interest:
                flags.append("position_bias:underpowered")
        for metric, flag in (("verbosity_excess", "verbosity_bias"), ("self_preference_excess", "self_preference")):
            m = j["metrics"].get(metric)
            if m and m.get("q") is not None and m["q"] < alpha:
                flags.append(f"{flag}:{'more' if (m['estimate'] or 0) > 0 else 'less'}_than_humans")
            elif m and m.get("mde") is not None and m["mde"] > effect_of_interest:
                flags.append(f"{flag}:underpowered")
        for metric, flag in (("pad_pick_rate", "verbosity_bias:padding"), ("instability_rate", "unstable"),
                             ("prompt_flip_rate", "prompt_sensitive")):
            m = j["metrics"].get(metric)
            if m and m.get("q") is not None and m["q"] < alpha:
                flags.append(flag)
        inv = j["metrics"].get("invalid_rate")
        if inv and inv["estimate"] and inv["estimate"] > 0.05:
            flags.append("invalid_rate_above_5pct")
        j["flags"] = flags
    report["settings"]["effect_of_interest"] = effect_of_interest
    report["settings"]["multiple_testing"] = "Benjamini-Hochberg over every tested metric of this report"


def excess_p_value(m: dict[str, Any], base: dict[str, Any] | None) -> float | None:
    """p-value of ``m`` against the baseline metric ``base`` (0 when absent), the two standard errors
    read off their 95% intervals and combined in quadrature (a prompt flip rate is tested against the
    judge's own run-to-run instability, which alone makes verdicts differ)."""
    if base is None or base.get("estimate") is None:
        return ci_p_value(m)
    if m.get("estimate") is None or base.get("ci_low") is None or m.get("ci_low") is None:
        return None
    half = np.hypot(m["ci_high"] - m["ci_low"], base["ci_high"] - base["ci_low"]) / 2
    d = m["estimate"] - base["estimate"]
    return ci_p_value({"estimate": d, "ci_low": d - half, "ci_high": d + half})


def own_candidates(pairs: pd.DataFrame, judge: str,
                   table: tuple[tuple[str, str], ...] = DEFAULT_FAMILIES) -> pd.Series:
    """item_id -> whether candidate A is the judge's own family, over the pairs (``Workspace.item_facts``)
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


def _rounded(m: dict[str, Any]) -> dict[str, Any]:
    return {k: (_clean(v) if k != "n" else int(v)) for k, v in m.items()}


def _clean(v: float | None) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)
