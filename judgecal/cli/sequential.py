"""`judgecal probe <bias>|battery --sequential`: the items judged in batches, each bias (manipulability too, in the
battery) stopping once its decision is settled (:mod:`judgecal.stats.group_sequential`), the calls each bias used recorded in
``reports/sequential.json``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from judgecal.cli.judging import print_errors
from judgecal.inert import term

RECORD = "sequential.json"


def judge_chunk(ws: Any, engine: Any, name: str, base: list[Any], biases: tuple[str, ...], truth: Any,
                seed: int) -> tuple[Any, Any, list[Any]]:
    """Judge ``base`` clean (both orders), pick each item's perturbed side, then judge its copies under ``biases``
    and its second unperturbed run (the next seed); returns both runs' stats and the copies."""
    from judgecal.audit.perturb import NULL, ORDERS, perturbed_items, sides_of

    st = engine.run(engine.plan(base, orders=ORDERS, seed=seed))  # the clean run, or its cached calls
    ids = {it.item_id for it in base}
    clean = ws.judgments_repo.judgments_frame(judge=name, columns=["item_id", "order", "seed", "mutation", "verdict"])
    clean = clean[(clean["mutation"] == "none") & (clean["seed"] == seed) & clean["item_id"].isin(ids)]
    sides = sides_of(base, truth, clean)
    probes = perturbed_items(base, sides, biases)
    ws.items_repo.add_items(probes)
    calls = []
    for order in ORDERS:
        mine = [p for p in probes if p.metadata["order"] == order]
        calls += engine.plan([p for p in mine if p.metadata["bias"] != NULL], orders=(order,), seed=seed)
        # the second unperturbed run: the same pair, the next seed (a deterministic judge answers the same)
        calls += engine.plan([p for p in mine if p.metadata["bias"] == NULL], orders=(order,), seed=seed + 1)
    return st, engine.run(calls), probes


def run_sequential(ws: Any, engine: Any, name: str, base: list[Any], biases: tuple[str, ...], truth: Any,
                   args: argparse.Namespace, challenge: str | None = None) -> int:
    """Judge ``base`` batch by batch until every bias is settled or the items (the budget) run out; with
    ``challenge``, manipulability too (its follow-ups continue the clean verdicts, 4 calls an item)."""
    import pandas as pd

    from judgecal.audit import challenge as manip
    from judgecal.audit.perturb import item_excess
    from judgecal.audit.probe import AuditConfig
    from judgecal.cli.challenge import FOLLOW_UPS, judge_follow_ups
    from judgecal.stats.group_sequential import sequential_decision

    cfg = AuditConfig()
    batch, n_max = args.batch, len(base)
    every = (*biases, challenge) if challenge else biases
    cost = {b: FOLLOW_UPS if b == challenge else 2 for b in every}  # each bias's own calls per item
    running = list(every)
    looks: dict[str, list[int]] = {b: [] for b in every}
    seen: dict[str, int] = dict.fromkeys(every, 0)
    result: dict[str, dict[str, Any]] = {}
    copies: list[Any] = []
    follow: list[Any] = []  # the manipulability copies
    done = cached = errors = shared = 0
    for start in range(0, n_max, batch):
        chunk = base[start:start + batch]
        st, st2, probes = judge_chunk(ws, engine, name, chunk, tuple(b for b in running if b != challenge), truth,
                                      args.seed)
        copies += probes
        if challenge in running:
            st3, more, _ = judge_follow_ups(ws, engine, name, chunk, args.seed)
            follow += more
            done, cached, errors = done + st3.done, cached + st3.cached, errors + st3.errors
            print_errors(engine, st3, args)
        done, cached, errors = done + st.done + st2.done, cached + st.cached + st2.cached, errors + st.errors + st2.errors
        shared += 4 * len(chunk)  # the clean and the second unperturbed runs, both orders
        print_errors(engine, st2, args)
        print_errors(engine, st, args)
        ids = {it.item_id for it in (*copies, *follow)} | {str(it.metadata["base_item"]) for it in copies}
        frame = ws.judgments_repo.judgments_frame(judge=name, columns=["item_id", "order", "sample", "seed", "mutation", "verdict"])
        frame = frame[frame["item_id"].isin(ids) & (frame["mutation"] == "none")]
        null = frame["item_id"].str.contains("#null-", regex=False)
        # the clean run and the copies at the run's seed, the second unperturbed run at the next
        mine = frame[(~null & (frame["seed"] == args.seed)) | (null & (frame["seed"] == args.seed + 1))]
        excess = item_excess(mine, [c for c in copies if c.metadata["bias"] in (*running, "null")],
                             cfg.effect_of_interest)
        if challenge in running:
            excess[challenge] = manip.item_excess(frame[frame["seed"] == args.seed], follow)
        last = start + len(chunk) >= n_max
        for b in list(running):
            seen[b] += len(chunk)
            x = excess.get(b, pd.Series(dtype=float)).to_numpy()
            if not looks[b] or x.size > looks[b][-1]:
                looks[b].append(int(x.size))
            r = sequential_decision(x, looks=looks[b], n_max=n_max, effect=cfg.effect_of_interest, alpha=cfg.alpha)
            if r["decision"] != "open" or last:
                running.remove(b)
                result[b] = {**r, "items": seen[b], "calls": cost[b] * seen[b], "looks": len(looks[b])}
        if not running:
            break
    items = max(seen.values())
    record = {"batch": batch, "items_planned": n_max, "items_used": items, "shared_calls": shared,
              "calls": shared + sum(r["calls"] for r in result.values()),
              "fixed_calls": (2 * (len(biases) + 2) + (FOLLOW_UPS if challenge else 0)) * n_max,
              "effect_of_interest": cfg.effect_of_interest, "alpha": cfg.alpha, "biases": result}
    path = ws.reports_dir / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # the other judges' records are kept; an unreadable file is replaced
        old = json.loads(path.read_text("utf-8")) if path.exists() else {}
    except (ValueError, UnicodeDecodeError):
        old = {}
    path.write_text(json.dumps({**(old if isinstance(old, dict) else {}), name: record}, indent=1), "utf-8")
    print(f"{term(name)}: sequential, batches of {batch} items; {done} calls run, {cached} cached; "
          f"{record['calls']} planned of the {record['fixed_calls']} a fixed run of {n_max} items needs")
    for b, r in result.items():
        lo, hi = r["ci_low"], r["ci_high"]
        span = "no item read" if lo is None else f"excess over the null {r['estimate']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        print(f"  {b}: {r['decision']} after {r['items']} items ({r['calls']} calls of its own); {span}")
    print(f"  recorded in {term(str(path))}; `judgecal audit` reports the figures on the items judged")
    return 1 if errors else 0
