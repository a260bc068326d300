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
                   "chain_of_thought", "sentiment", "fallacy_oversight")
# read from CALM's published rewrites only (judgecal import calm --set fact): no template
DATA_PROBES = ("sentiment", "fallacy_oversight")


def calls_per_item(n_biases: int) -> int:
    """Judge calls one base item costs: its clean run, its second unperturbed run and each bias, both orders."""
    return 2 * (n_biases + 2)


def _truth(ws: Any) -> Any:
    """The humans' consensus (or gold) label per item, computed when labels exist but none is stored yet; labels
    from several sources are aggregated per source (never pooled), each item read from its own source's."""
    import pandas as pd

    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.sources import sources

    labels = ws.annotations_frame()
    names = ["ds", *(f"ds:{s}" for s in sources(labels))]
    if all(ws.consensus_frame(n).empty for n in names) and not labels.empty:
        compute_consensus(ws, ("ds",))
    frames = [f for f in (ws.consensus_frame(n) for n in names) if not f.empty]
    if not frames:
        return pd.Series(dtype=object)
    return pd.concat(frames).drop_duplicates("item_id").set_index("item_id")["label"]


def cmd_perturb(args: argparse.Namespace) -> int:
    """Plan and run the clean, second unperturbed and perturbed calls of one template probe or the battery."""
    biases: tuple[str, ...] = TEMPLATE_PROBES if args.kind == "battery" else (args.kind,)
    with _open_ws(args, create=False) as ws:
        base = [it for it in ws.items(source=args.source) if not it.source.startswith("probe:")
                and it.task == "pairwise" and len(it.candidates) == 2]
        if not base:
            raise UsageError(f"{ws.path}: no pairwise item with two responses{' in ' + term(args.source) if args.source else ''}"
                             f"; the {args.kind} probe perturbs pairs")
        untested = [b for b in biases if b in DATA_PROBES and not any(_has_rewrite(it, b) for it in base)]
        if untested and args.kind != "battery":
            raise UsageError(f"{ws.path}: no pair{' in ' + term(args.source) if args.source else ''} carries CALM's "
                             f"published {args.kind} rewrites; `judgecal import calm --set fact` brings them")
        biases = tuple(b for b in biases if b not in untested)
        per = calls_per_item(len(biases))
        n = min(len(base), args.items or len(base), (args.budget // per) if args.budget else len(base))
        if n == 0:
            raise UsageError(f"--budget {args.budget}: one item costs {per} judge calls ({args.kind}: its clean "
                             "run, a second unperturbed run and each perturbation, in both orders)")
        if n < len(base) or getattr(args, "sequential", False):  # sequential: the batches in a random order
            base = random.Random(args.sample_seed).sample(base, n)
        engine = make_engine(ws, args)
        if engine.rubric.kind != "pairwise":
            raise UsageError(f"--rubric {term(args.rubric)}: a {engine.rubric.kind} rubric; the {args.kind} probe "
                             "needs a pairwise one (two responses shown together)")
        truth = _truth(ws)
        name = ws.judge_names().get((engine.judge, engine.spec_hash), engine.judge)
        if getattr(args, "sequential", False):
            return run_sequential(ws, engine, name, base, biases, truth, args)
        st, st2, _ = judge_chunk(ws, engine, name, base, biases, truth, args.seed)
        by_humans = sum(truth.get(it.item_id) in ("A", "B") for it in base)
        print(f"{term(name)}: {', '.join(biases)} over {len(base)} items (perturbed side: the humans' rejected "
              f"response on {by_humans}, the judge's unpreferred one on {len(base) - by_humans}); "
              f"{st.done + st2.done} calls run, {st.cached + st2.cached} cached; `judgecal audit` reports "
              + ("robustness_<bias> and shift_<bias>" if args.kind == "battery" else
                 f"robustness_{args.kind}" + ("" if args.kind == "chain_of_thought" else f" and shift_{args.kind}")))
        if untested:
            print(f"  not tested: {', '.join(untested)} (no pair carries CALM's published rewrites; "
                  "`judgecal import calm --set fact` brings them)")
        print_errors(engine, st2, args)
        print_errors(engine, st, args)
    return 1 if st.errors or st2.errors else 0


def _has_rewrite(item: Any, bias: str) -> bool:
    rw = item.metadata.get("rewrites")
    return isinstance(rw, dict) and bool(rw.get(bias))

