"""`judgecal probe NAME` for a probe whose live calls challenge the judge (:class:`judgecal.audit.verdict.LiveCalls`
``kind="challenge"``: manipulability), and its part of `judgecal probe battery`: after the judge's verdict on a pair,
the same conversation continued by a challenge and by an agreeing turn (:mod:`judgecal.audit.challenge`)."""

from __future__ import annotations

import argparse
from typing import Any

from judgecal.cli.common import UsageError, open_workspace
from judgecal.cli.judging import pairwise_engine, print_errors, probe_pairs, within_budget
from judgecal.inert import term

FOLLOW_UPS = 4  # judge calls per base item beyond its clean run: a challenge and an agreeing turn, both orders


def challenge_probe() -> str | None:
    """The name of the registered probe whose live calls challenge the judge's verdicts (None: none is)."""
    from judgecal.audit.probes import PROBES

    return next((p.name for p in PROBES if p.live_calls is not None and p.live_calls.kind == "challenge"), None)


def judge_follow_ups(ws: Any, engine: Any, name: str, base: list[Any], seed: int) -> tuple[Any, list[Any], int]:
    """Continue the conversation of each clean verdict (``base`` judged at ``seed``, first sample, both orders) by
    a challenge and an agreeing turn, at the same seed; returns the run's stats, the copies and how many first
    verdicts could not be read (not challenged)."""
    from judgecal.audit.challenge import follow_up_items
    from judgecal.audit.perturb import ORDERS

    ids = {it.item_id for it in base}
    clean = ws.judgments_repo.judgments_frame(judge=name, columns=["item_id", "order", "sample", "seed", "mutation", "verdict", "raw"])
    clean = clean[(clean["mutation"] == "none") & (clean["seed"] == seed) & (clean["sample"] == 0)
                  & clean["item_id"].isin(ids)]
    first = {(str(r.item_id), str(r.order)): (str(r.verdict), str(r.raw or ""))
             for r in clean.itertuples(index=False)}
    copies, calls, unread = [], [], 0
    for it in base:
        for order in ORDERS:
            verdict, raw = first.get((it.item_id, order), ("invalid", ""))
            if verdict not in ("A", "B", "tie"):
                unread += 1
                continue
            for c in follow_up_items(it, verdict, order):
                copies.append(c)
                calls.append(engine.follow_up(c, order, raw, c.metadata["follow_up"], seed=seed))
    ws.items_repo.add_items(copies)
    return engine.run(calls), copies, unread


def refuse_recorded(judge: str, name: str) -> None:
    """A recorded judge (``replay/...``) answered once, long ago: it cannot be asked a follow-up."""
    if judge.startswith("replay/"):
        raise UsageError(f"--judge {term(judge)}: a recorded judge cannot continue a conversation; the "
                         f"{name} probe needs a live one (a backend: openai/..., local/..., a spec)")


def cmd_challenge(args: argparse.Namespace) -> int:
    """Plan and run the clean calls and their follow-ups (cached and resumable like any judging)."""
    from judgecal.audit.perturb import ORDERS

    kind = args.kind
    refuse_recorded(args.judge, kind)
    if getattr(args, "sequential", False):
        raise UsageError(f"--sequential: for a template probe or battery (the {kind} probe alone judges every item "
                         "it plans; `judgecal probe battery --sequential` stops it with the others)")
    per = 2 + FOLLOW_UPS
    with open_workspace(args, create=False) as ws:
        base = within_budget(probe_pairs(ws, args, "challenges verdicts on pairs"), args, per,
                             "its clean run, then a challenge and an agreeing turn after it, in both orders")
        engine, name = pairwise_engine(ws, args)
        st = engine.run(engine.plan(base, orders=ORDERS, seed=args.seed))
        st2, _, unread = judge_follow_ups(ws, engine, name, base, args.seed)
        print(f"{term(name)}: {kind} over {len(base)} items; {st.done + st2.done} calls run, "
              f"{st.cached + st2.cached} cached; {unread} first verdicts unreadable (not challenged); "
              "`judgecal audit` reports flip_rate_challenged beside flip_rate_null")
        print_errors(engine, st2, args)
        print_errors(engine, st, args)
    return 1 if st.errors or st2.errors else 0
