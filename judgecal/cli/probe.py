"""`judgecal probe KIND`: a live probe's extra judge calls — padding and injection copies here, the template
perturbations and the battery in :mod:`judgecal.cli.battery`."""

from __future__ import annotations

import argparse
from typing import Any

from judgecal.cli.battery import TEMPLATE_PROBES, cmd_perturb
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


def cmd_probe(args: argparse.Namespace) -> int:
    """Plan and run a live probe's extra judge calls (cached and resumable like any judging)."""
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.injection import injected_items
    from judgecal.audit.padding import padded_items

    if args.kind in (*TEMPLATE_PROBES, "battery"):
        return cmd_perturb(args)
    if getattr(args, "budget", None):
        raise UsageError(f"--budget: for a template probe or battery (the {args.kind} probe takes --items)")
    if getattr(args, "sequential", False):
        raise UsageError(f"--sequential: for a template probe or battery (the {args.kind} probe judges every item)")
    with open_workspace(args, create=False) as ws:
        n = None if args.kind == "injection" else args.items  # the same sample as `judgecal judge --items`
        base = [it for it in _select_items(ws, args.source, n, args.sample_seed) if not it.source.startswith("probe:")]
        if args.kind == "injection":
            if ws.annotations_repo.consensus_frame("ds").empty:
                compute_consensus(ws, ("ds",))
            truth = ws.annotations_repo.consensus_frame("ds").set_index("item_id")["label"]
            base = [it for it in base if truth.get(it.item_id) in ("A", "B")]
            base = base[: args.items] if args.items else base
            probes, what, metric = injected_items(base, truth), "injected", "injection_follow_rate"
        else:
            probes, what, metric = padded_items(base), "padded", "pad_pick_rate"
        ws.items_repo.add_items(probes)
        engine = make_engine(ws, args)
        st = engine.run(engine.plan(base + probes, orders=("AB", "BA"), seed=args.seed))
        print(f"{args.judge}: {len(probes)} {what} pairs over {len(base)} items; {st.done} calls run, "
              f"{st.cached} cached; `judgecal audit` reports {metric}")
        print_errors(engine, st, args)
    return run_status(st)


def add_parser(sub: Any) -> None:
    """Register ``probe`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("probe", help="run a live bias probe's extra judge calls (injection, padding, a template "
                       "perturbation, or battery: every template perturbation)")
    p.add_argument("kind", choices=("injection", "padding", *TEMPLATE_PROBES, "battery"))
    p.add_argument("--judge", required=True, help="<backend>/<model>, a judge spec YAML file or a shipped spec name")
    p.add_argument("--source", help="only items from this source")
    p.add_argument("--items", type=upto(MAX_ITEMS, "items"), help="at most this many base items")
    p.add_argument("--base-url", type=as_base_url, help="OpenAI-compatible server URL for openai/<model>")
    p.add_argument("--budget", type=upto(10**9, "judge calls"), metavar="CALLS",
                   help="a template probe or battery: at most this many judge calls planned (cached ones count): "
                   "as many items as fit, each costing its clean run, a second unperturbed run and each "
                   "perturbation, in both orders")
    p.add_argument("--sequential", action="store_true",
                   help="a template probe or battery: judge the items in batches, each bias stopping once its "
                   "decision is settled (flagged, or the effect of interest excluded); the budget still caps; the "
                   "calls each bias used go to reports/sequential.json")
    p.add_argument("--batch", type=upto(MAX_ITEMS, "items"), default=20,
                   help="with --sequential: items per batch, a look after each (default 20)")
    judge_opts(p)
    workspace_arg(p)
    p.set_defaults(func=cmd_probe)
