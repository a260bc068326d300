"""`judgecal probe NAME`: a live probe's extra judge calls, as the probe declares them
(:attr:`judgecal.audit.probe.Probe.live_calls`): probe items made from the base items and judged beside them here,
the template perturbations and the battery in :mod:`judgecal.cli.battery`, the challenged
conversations in :mod:`judgecal.cli.challenge`. The probes are read from the registry
(built-in and plugins alike) when the command runs, so the parser imports no numerical library and a plugin that
cannot be loaded is said in one line."""

from __future__ import annotations

import argparse
from typing import Any

from judgecal.cli.battery import BATTERY, cmd_perturb
from judgecal.cli.challenge import cmd_challenge
from judgecal.cli.common import (
    MAX_ITEMS,
    UsageError,
    as_base_url,
    judge_opts,
    open_workspace,
    upto,
    workspace_arg,
)
from judgecal.cli.judging import _select_items, make_engine, print_errors, run_status


def live_probes() -> dict[str, Any]:
    """name -> the registered probe, for every probe that declares live calls (in the order they run)."""
    from judgecal.audit.probes import PROBES

    return {p.name: p for p in PROBES if p.live_calls is not None}


def cmd_probe(args: argparse.Namespace) -> int:
    """Plan and run a live probe's extra judge calls (cached and resumable like any judging)."""
    from judgecal.aggregate.consensus import compute_consensus

    probes = live_probes()
    if args.kind != BATTERY and args.kind not in probes:  # checked here, not by the parser: plugins are loaded now
        raise UsageError(f"argument kind: invalid choice: {args.kind!r} (choose from "
                         f"{', '.join(repr(name) for name in [*probes, BATTERY])})")
    plan = None if args.kind == BATTERY else probes[args.kind].live_calls
    if plan is None or plan.kind == "perturb":
        return cmd_perturb(args)
    if plan.kind == "challenge":
        return cmd_challenge(args)
    if getattr(args, "budget", None):
        raise UsageError(f"--budget: for a template probe or battery (the {args.kind} probe takes --items)")
    if getattr(args, "sequential", False):
        raise UsageError(f"--sequential: for a template probe or battery (the {args.kind} probe judges every item)")
    assert plan.make is not None, f"{args.kind}: live calls of kind 'judge' make their items"
    with open_workspace(args, create=False) as ws:
        n = args.items if plan.sample_before else None  # the same sample as `judgecal judge --items`
        base = [it for it in _select_items(ws, args.source, n, args.sample_seed) if not it.source.startswith("probe:")]
        truth: Any = None
        if plan.needs_truth:
            if ws.annotations_repo.consensus_frame("ds").empty:
                compute_consensus(ws, ("ds",))
            truth = ws.annotations_repo.consensus_frame("ds").set_index("item_id")["label"]
        base, probes = plan.make(base, truth, None if plan.sample_before else args.items)
        ws.items_repo.add_items(probes)
        engine = make_engine(ws, args)
        st = engine.run(engine.plan(base + probes, orders=plan.orders, seed=args.seed))
        print(f"{args.judge}: {len(probes)} {plan.what} pairs over {len(base)} items; {st.done} calls run, "
              f"{st.cached} cached; `judgecal audit` reports {plan.reports}")
        print_errors(engine, st, args)
    return run_status(st)


def add_parser(sub: Any) -> None:
    """Register ``probe`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("probe", help="run a live bias probe's extra judge calls (injection, padding, a template "
                       "perturbation, manipulability: the verdict challenged in the same conversation, or battery: "
                       "every template perturbation and manipulability)")
    p.add_argument("kind", metavar="NAME", help="a registered probe that declares live calls, or battery (every "
                   "template perturbation and every challenge); an unknown name lists them")
    p.add_argument("--judge", required=True, help="<backend>/<model>, a judge spec YAML file or a shipped spec name")
    p.add_argument("--source", help="only items from this source")
    p.add_argument("--items", type=upto(MAX_ITEMS, "items"), help="at most this many base items")
    p.add_argument("--base-url", type=as_base_url, help="OpenAI-compatible server URL for openai/<model>")
    p.add_argument("--budget", type=upto(10**9, "judge calls"), metavar="CALLS",
                   help="a template probe, manipulability or battery: at most this many judge calls planned (cached "
                   "ones count): as many items as fit, each costing its clean run, a second unperturbed run and each "
                   "perturbation (manipulability: a challenge and an agreeing turn), in both orders")
    p.add_argument("--sequential", action="store_true",
                   help="a template probe or battery: judge the items in batches, each bias stopping once its "
                   "decision is settled (flagged, or the effect of interest excluded); the budget still caps; the "
                   "calls each bias used go to reports/sequential.json")
    p.add_argument("--batch", type=upto(MAX_ITEMS, "items"), default=20,
                   help="with --sequential: items per batch, a look after each (default 20)")
    judge_opts(p)
    workspace_arg(p)
    p.set_defaults(func=cmd_probe)
