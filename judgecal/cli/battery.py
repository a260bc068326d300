"""`judgecal probe <bias>` and `judgecal probe battery`: the template-perturbation probes' judge calls."""

from __future__ import annotations

import argparse
import random
from typing import Any

from judgecal.cli.common import UsageError, _open_ws
from judgecal.cli.judging import make_engine, print_errors
from judgecal.cli.sequential import judge_chunk, run_sequential
from judgecal.inert import term

# the keys of judgecal.audit.perturb.TEMPLATES (named here so that the parser imports no numerical library)
TEMPLATE_PROBES = ("bandwagon", "authority", "compassion_fade", "distraction", "diversity", "refinement_aware",
                   "chain_of_thought")


def calls_per_item(n_biases: int, follow_ups: int = 0) -> int:
    """Judge calls one base item costs: its clean run, its second unperturbed run and each bias, both orders, and
    ``follow_ups`` turns continuing its clean verdicts (the manipulability probe's)."""
    return 2 * (n_biases + 2) + follow_ups


def _truth(ws: Any) -> Any:
    """The humans' consensus (or gold) label per item, computed when labels exist but none is stored yet."""
    import pandas as pd

    from judgecal.aggregate.consensus import compute_consensus

    if ws.consensus_frame("ds").empty and not ws.annotations_frame().empty:
        compute_consensus(ws, ("ds",))
    frame = ws.consensus_frame("ds")
    return frame.set_index("item_id")["label"] if not frame.empty else pd.Series(dtype=object)


def cmd_perturb(args: argparse.Namespace) -> int:
    """Plan and run the clean, second unperturbed and perturbed calls of one template probe or the battery."""
    from judgecal.cli.challenge import FOLLOW_UPS, judge_follow_ups

    biases = TEMPLATE_PROBES if args.kind == "battery" else (args.kind,)
    challenge = args.kind == "battery"  # the battery continues the clean verdicts too (manipulability)
    per = calls_per_item(len(biases), FOLLOW_UPS if challenge else 0)
    with _open_ws(args, create=False) as ws:
        base = [it for it in ws.items(source=args.source) if not it.source.startswith("probe:")
                and it.task == "pairwise" and len(it.candidates) == 2]
        if not base:
            raise UsageError(f"{ws.path}: no pairwise item with two responses{' in ' + term(args.source) if args.source else ''}"
                             f"; the {args.kind} probe perturbs pairs")
        n = min(len(base), args.items or len(base), (args.budget // per) if args.budget else len(base))
        if n == 0:
            raise UsageError(f"--budget {args.budget}: one item costs {per} judge calls ({args.kind}: its clean "
                             "run, a second unperturbed run and each perturbation, in both orders"
                             + (", and a challenge and an agreeing turn after each clean verdict)" if challenge
                                else ")"))
        if n < len(base) or getattr(args, "sequential", False):  # sequential: the batches in a random order
            base = random.Random(args.sample_seed).sample(base, n)
        engine = make_engine(ws, args)
        if engine.rubric.kind != "pairwise":
            raise UsageError(f"--rubric {term(args.rubric)}: a {engine.rubric.kind} rubric; the {args.kind} probe "
                             "needs a pairwise one (two responses shown together)")
        truth = _truth(ws)
        name = ws.judge_names().get((engine.judge, engine.spec_hash), engine.judge)
        if getattr(args, "sequential", False):
            return run_sequential(ws, engine, name, base, biases, truth, args, challenge)
        st, st2, _ = judge_chunk(ws, engine, name, base, biases, truth, args.seed)
        unread = 0
        if challenge:
            st3, _, unread = judge_follow_ups(ws, engine, name, base, args.seed)
            st2.done, st2.cached, st2.errors = st2.done + st3.done, st2.cached + st3.cached, st2.errors + st3.errors
            st2.error_messages += st3.error_messages[: max(0, 5 - len(st2.error_messages))]
        by_humans = sum(truth.get(it.item_id) in ("A", "B") for it in base)
        print(f"{term(name)}: {', '.join((*biases, 'manipulability') if challenge else biases)} over {len(base)} items (perturbed side: the humans' rejected "
              f"response on {by_humans}, the judge's unpreferred one on {len(base) - by_humans}); "
              f"{st.done + st2.done} calls run, {st.cached + st2.cached} cached; `judgecal audit` reports "
              + ("robustness_<bias> and shift_<bias>, and flip_rate_challenged beside flip_rate_null ("
                 f"{unread} first verdicts unreadable, not challenged)" if challenge else
                 f"robustness_{args.kind}" + ("" if args.kind == "chain_of_thought" else f" and shift_{args.kind}")))
        print_errors(engine, st2, args)
        print_errors(engine, st, args)
    return 1 if st.errors or st2.errors else 0

