"""`judgecal probe <bias>` and `judgecal probe battery`: the template-perturbation probes' judge calls."""

from __future__ import annotations

import argparse
from typing import Any

from judgecal.cli.common import UsageError, open_workspace
from judgecal.cli.judging import pairwise_engine, print_errors, probe_pairs, within_budget
from judgecal.cli.sequential import judge_chunk, run_sequential
from judgecal.inert import term

BATTERY = "battery"  # every probe whose live calls are template perturbations


def template_probes() -> dict[str, str]:
    """name -> the metrics ``judgecal audit`` reports, for every registered probe whose live calls are template
    perturbations (:class:`judgecal.audit.verdict.LiveCalls` ``kind="perturb"``), in the order they run."""
    from judgecal.audit.probes import PROBES

    return {p.name: p.live_calls.reports for p in PROBES if p.live_calls is not None and p.live_calls.kind == "perturb"}


def calls_per_item(n_biases: int, follow_ups: int = 0) -> int:
    """Judge calls one base item costs: its clean run, its second unperturbed run and each bias, both orders, and
    ``follow_ups`` turns continuing its clean verdicts (a probe whose live calls challenge them)."""
    return 2 * (n_biases + 2) + follow_ups


def _truth(ws: Any) -> Any:
    """The humans' consensus (or gold) label per item, computed when labels exist but none is stored yet; labels
    from several sources are aggregated per source (never pooled), each item read from its own source's."""
    import pandas as pd

    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.sources import sources

    labels = ws.annotations_repo.annotations_frame()
    names = ["ds", *(f"ds:{s}" for s in sources(labels))]
    if all(ws.annotations_repo.consensus_frame(n).empty for n in names) and not labels.empty:
        compute_consensus(ws, ("ds",))
    frames = [f for f in (ws.annotations_repo.consensus_frame(n) for n in names) if not f.empty]
    if not frames:
        return pd.Series(dtype=object)
    return pd.concat(frames).drop_duplicates("item_id").set_index("item_id")["label"]


def cmd_perturb(args: argparse.Namespace) -> int:
    """Plan and run the clean, second unperturbed and perturbed calls of one template probe or the battery."""
    from judgecal.audit.perturb import TEMPLATES, rewrites
    from judgecal.cli.challenge import FOLLOW_UPS, challenge_probe, judge_follow_ups

    templates = template_probes()
    biases = tuple(templates) if args.kind == BATTERY else (args.kind,)
    challenged = challenge_probe() if args.kind == BATTERY else None  # the battery continues the clean verdicts too
    challenge = challenged is not None
    with open_workspace(args, create=False) as ws:
        base = probe_pairs(ws, args, "perturbs pairs")
        data_only = {b for b in biases if b in TEMPLATES and TEMPLATES[b].data_only}  # read from published rewrites: no template
        untested = [b for b in biases if b in data_only and not any(rewrites(it, b) for it in base)]
        if untested and args.kind != BATTERY:
            raise UsageError(f"{ws.path}: no pair{' in ' + term(args.source) if args.source else ''} carries CALM's "
                             f"published {args.kind} rewrites; `judgecal import calm --set fact` brings them")
        biases = tuple(b for b in biases if b not in untested)
        per = calls_per_item(len(biases), FOLLOW_UPS if challenge else 0)
        base = within_budget(base, args, per, "its clean run, a second unperturbed run and each perturbation, "
                             "in both orders" + (", and a challenge and an agreeing turn after each clean verdict"
                                                 if challenge else ""), shuffle=getattr(args, "sequential", False))
        engine, name = pairwise_engine(ws, args)
        truth = _truth(ws)
        if getattr(args, "sequential", False):
            return run_sequential(ws, engine, name, base, biases, truth, args, challenged)
        st, st2, _ = judge_chunk(ws, engine, name, base, biases, truth, args.seed)
        unread = 0
        if challenge:
            st3, _, unread = judge_follow_ups(ws, engine, name, base, args.seed)
            st2.done, st2.cached, st2.errors = st2.done + st3.done, st2.cached + st3.cached, st2.errors + st3.errors
            st2.error_messages += st3.error_messages[: max(0, 5 - len(st2.error_messages))]
        by_humans = sum(truth.get(it.item_id) in ("A", "B") for it in base)
        print(f"{term(name)}: {', '.join((*biases, challenged) if challenged else biases)} over {len(base)} items (perturbed side: the humans' rejected "
              f"response on {by_humans}, the judge's unpreferred one on {len(base) - by_humans}); "
              f"{st.done + st2.done} calls run, {st.cached + st2.cached} cached; `judgecal audit` reports "
              + ("robustness_<bias> and shift_<bias>, and flip_rate_challenged beside flip_rate_null ("
                 f"{unread} first verdicts unreadable, not challenged)" if challenge else
                 "robustness_<bias> and shift_<bias>" if args.kind == BATTERY else templates[args.kind]))
        if untested:
            print(f"  not tested: {', '.join(untested)} (no pair carries CALM's published rewrites; "
                  "`judgecal import calm --set fact` brings them)")
        print_errors(engine, st2, args)
        print_errors(engine, st, args)
    return 1 if st.errors or st2.errors else 0

