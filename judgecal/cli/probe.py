"""`judgecal probe KIND`: a live probe's extra judge calls — padding and injection copies here, the template
perturbations and the battery in :mod:`judgecal.cli.battery`, the challenged conversations in
:mod:`judgecal.cli.challenge`."""

from __future__ import annotations

import argparse

from judgecal.cli.battery import TEMPLATE_PROBES, cmd_perturb
from judgecal.cli.challenge import NAME as MANIPULABILITY
from judgecal.cli.challenge import cmd_manipulability
from judgecal.cli.common import UsageError, _open_ws
from judgecal.cli.judging import _select_items, make_engine, print_errors, run_status


def cmd_probe(args: argparse.Namespace) -> int:
    """Plan and run a live probe's extra judge calls (cached and resumable like any judging)."""
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.injection import injected_items
    from judgecal.audit.padding import padded_items

    if args.kind in (*TEMPLATE_PROBES, "battery"):
        return cmd_perturb(args)
    if args.kind == MANIPULABILITY:
        return cmd_manipulability(args)
    if getattr(args, "budget", None):
        raise UsageError(f"--budget: for a template probe or battery (the {args.kind} probe takes --items)")
    if getattr(args, "sequential", False):
        raise UsageError(f"--sequential: for a template probe or battery (the {args.kind} probe judges every item)")
    with _open_ws(args, create=False) as ws:
        n = None if args.kind == "injection" else args.items  # the same sample as `judgecal judge --items`
        base = [it for it in _select_items(ws, args.source, n, args.sample_seed) if not it.source.startswith("probe:")]
        if args.kind == "injection":
            if ws.consensus_frame("ds").empty:
                compute_consensus(ws, ("ds",))
            truth = ws.consensus_frame("ds").set_index("item_id")["label"]
            base = [it for it in base if truth.get(it.item_id) in ("A", "B")]
            base = base[: args.items] if args.items else base
            probes, what, metric = injected_items(base, truth), "injected", "injection_follow_rate"
        else:
            probes, what, metric = padded_items(base), "padded", "pad_pick_rate"
        ws.add_items(probes)
        engine = make_engine(ws, args)
        st = engine.run(engine.plan(base + probes, orders=("AB", "BA"), seed=args.seed))
        print(f"{args.judge}: {len(probes)} {what} pairs over {len(base)} items; {st.done} calls run, "
              f"{st.cached} cached; `judgecal audit` reports {metric}")
        print_errors(engine, st, args)
    return run_status(st)
