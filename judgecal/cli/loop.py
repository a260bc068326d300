"""The command line of the loop: ``gate``, ``regrade`` (and the commands added beside them). No logic
of its own: each command calls :mod:`judgecal.loop`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgecal.inert import term


def truth_of(ws: Any, consensus: str, n_boot: int = 200, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """The stored consensus ``consensus`` (computed when it is a known method and missing)."""
    from judgecal.audit.pipeline import ensure_consensus
    from judgecal.audit.truth import resolve_truth
    from judgecal.cli.common import UsageError

    if not ws.annotations_repo.has_consensus(consensus) and ws.annotations_repo.annotations_frame().empty:
        raise UsageError("no human labels in this workspace: import or pull some first")
    ensure_consensus(ws, consensus)
    return resolve_truth(ws, consensus, n_boot=n_boot, seed=seed)


def cmd_gate(args: argparse.Namespace) -> int:
    from judgecal.cli.common import open_workspace, output_file

    if args.markdown not in (None, "", "-"):
        output_file(args.markdown)  # refused before anything is computed
    from judgecal.loop import gate

    with open_workspace(args, create=False) as ws:
        truth, _ = truth_of(ws, args.consensus)
        res = gate.run_gate(ws, args.baseline, args.candidate, truth, consensus=args.consensus,
                            invalid_as=args.invalid_as, n_boot=args.n_boot, seed=args.seed)
        path = gate.save(res, ws.reports_dir)
    md = gate.markdown(res)
    if args.markdown == "-":
        sys.stdout.write(md)
    else:
        if args.markdown:
            output_file(args.markdown).write_text(md, "utf-8")
        from judgecal.loop import inert

        def f(v: Any, sign: str = "") -> str:
            return "—" if v is None else format(v, sign + ".3f")

        for name, r in res["metrics"].items():
            print(f"{name:24s} {f(r['baseline']):>6} -> {f(r['candidate']):<6} Δ {f(r['difference'], '+')} "
                  f"[{f(r['ci_low'], '+')}, {f(r['ci_high'], '+')}]  tolerance {r['tolerance']:g}  {r['result']}")
        word = "PASSED" if res["passed"] else "FAILED (" + ", ".join(res["failed"]) + ")"
        print(f"gate {word}: {inert(args.candidate)} vs {inert(args.baseline)} on {res['n_items']} items; {path}")
    return 0 if res["passed"] else 1


def cmd_regrade(args: argparse.Namespace) -> int:
    from judgecal.cli.common import open_workspace
    from judgecal.cli.judging import make_engine, print_errors, run_status
    from judgecal.loop.regrade import plan_like

    with open_workspace(args, create=False) as ws:
        engine = make_engine(ws, args)
        calls = plan_like(ws, engine, args.like, seed=args.seed)
        st = engine.run(calls)
        name = ws.judgments_repo.judge_names().get((engine.judge, engine.spec_hash), engine.judge)
    print(f"{term(name)} (spec {engine.spec_hash}) like {term(args.like)}: {st.planned} planned, {st.cached} cached, "
          f"{st.done} run ({st.invalid} invalid, {st.errors} errors)")
    print_errors(engine, st, args)
    return run_status(st)


def save_section(ws: Any, name: str, key: str, value: dict[str, Any]) -> Path:
    """Keep ``value`` under ``key`` in ``<workspace>/reports/<name>.json`` (the audit's loop section reads it)."""
    import json

    path = ws.reports_dir / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        stored = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        stored = {}
    from judgecal.loop import finite

    stored[key] = finite(value)
    path.write_text(json.dumps(stored, indent=2, allow_nan=False, default=str), "utf-8")
    return path


def cmd_panel(args: argparse.Namespace) -> int:
    from judgecal.cli.common import UsageError, open_workspace
    from judgecal.loop import inert
    from judgecal.loop.panel import load_panel, make_panel, run_panel

    if bool(args.spec) == bool(args.members):
        raise UsageError("give a panel spec file (--spec) or its members (--members J1,J2,J3), one of the two")
    panel = load_panel(args.spec) if args.spec else make_panel(args.members.split(","), name=args.name or "")
    with open_workspace(args, create=False) as ws:
        got = run_panel(ws, panel)
        save_section(ws, "panels", panel.name, got)
    print(f"{inert(panel.name)} (spec {got['spec_hash']}): {got['slots']} verdicts from {len(panel.members)} members, "
          f"{got['decided']} by a strict majority ({got['unanimous']} unanimous), {got['no_majority']} without one "
          "(recorded as undecided, never broken)")
    return 0


def cmd_align(args: argparse.Namespace) -> int:
    from judgecal.cli.common import open_workspace
    from judgecal.cli.judging import make_engine
    from judgecal.loop import inert
    from judgecal.loop.align import run_align

    with open_workspace(args, create=False) as ws:
        truth, _ = truth_of(ws, args.consensus)

        def engine_for(judge: str) -> Any:
            return make_engine(ws, argparse.Namespace(**{**vars(args), "judge": judge}))

        res = run_align(ws, args.judge, args.method, truth, engine_for=engine_for,
                        folder=Path(args.out) if args.out else ws.path / "judges", n_items=args.items,
                        train_share=args.train_share, seed=args.split_seed, shots=args.shots,
                        n_boot=args.n_boot, invalid_as=args.invalid_as, evaluate_train=args.evaluate_train,
                        orders=tuple(args.orders), consensus=args.consensus, candidates=args.candidates,
                        verbose=not args.quiet)
        path = save_section(ws, "align", res["candidate"], res)
    sp = res["split"]
    print(f"split by item ({'stratified by label' if sp['stratified'] else 'random'}, seed {sp['seed']}): "
          f"{sp['n_train']} train labels {sp['train_labels']}, {sp['n_held_out']} held-out labels "
          f"{sp['held_out_labels']}")
    print(f"candidate {inert(res['candidate'])}: {args.method} from the train split "
          f"({len(res['shots'])} examples, {len(res['guidelines'])} guidelines); spec {res['candidate_spec']}")
    if "rationales" in res:
        r = res["rationales"]
        print(f"  rationales: {r['used']} quoted of {r['agree_with_truth']} on train items agreeing with the truth "
              f"({r['positional']} left out: they name a shown position)")
    if "optimizer" in res:
        o = res["optimizer"]
        print(f"  {o['library']} {o['optimizer']}: {o['candidates']} example sets scored on {o['n_val']} train items "
              f"(best agreement {o['best_val_agreement']}); {o['calls']} calls, {o['cached_calls']} cached")
    for name, r in res["held_out"]["metrics"].items():
        if r["difference"] is not None:
            print(f"  held-out {name:22s} {r['baseline']:.3f} -> {r['candidate']:.3f}  Δ {r['difference']:+.3f} "
                  f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]  {r['result']}")
    if "train" in res:
        acc = res["train"]["metrics"].get("accuracy") or {}
        print(f"  train accuracy Δ {acc.get('difference')}: not evidence (the candidate was built from these items)")
    print(f"held-out conclusion on {res['held_out']['n_items']} items: {res['conclusion']}; {path}")
    return 0


def _usd(text: str) -> float:
    """A cost in USD: a finite number of at least 0 (argparse ``type``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a cost in USD of at least 0")
    return value


def _cost(text: str) -> tuple[str, float]:
    judge, sep, usd = text.rpartition("=")
    try:
        value = _usd(usd)
    except argparse.ArgumentTypeError:
        value = -1.0
    if not sep or not judge or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give JUDGE=USD, a cost per item of at least 0")
    return judge, value


def cmd_cascade(args: argparse.Namespace) -> int:
    from judgecal.cli.common import open_workspace
    from judgecal.loop import inert
    from judgecal.loop.cascade import run_cascade

    with open_workspace(args, create=False) as ws:
        truth, _ = truth_of(ws, args.consensus)
        res = run_cascade(ws, args.stage, truth, target=args.target, delta=args.delta, seed=args.seed,
                          costs=dict(args.cost or []), human_cost=args.human_cost, name=args.name or "")
        path = save_section(ws, "cascade", res["name"], res)
    print(f"cascade {inert(res['name'])}: {res['n_items']} items, {res['n_labelled']} labelled "
          f"({res['n_calibration']} calibrate, {res['n_held_out']} check)")
    for st in res["stages"]:
        thr = "none passes" if st["threshold"] is None else f"confidence >= {st['threshold']:.3f}"
        agree = st["held_out"]["agreement"]
        print(f"  {inert(st['judge'])}: {thr}; decides {st['all_items']['share_decided']:.1%} of all items; held-out "
              f"agreement {'—' if agree is None else format(agree, '.3f')} on {st['held_out']['decided']}")
    h = res["held_out"]
    cost = "unknown (" + res["cost_note"] + ")" if res["cost_per_item"] is None else f"${res['cost_per_item']:.6f}"
    print(f"  people: {res['share_to_people']:.1%} of items; held-out: judges decided {h['decided']} at agreement "
          f"{'—' if h['agreement'] is None else format(h['agreement'], '.3f')} (target {res['target']:g}, "
          f"guaranteed with probability {1 - res['delta']:g}); cost per item {cost}")
    print(f"send the people's share: judgecal annotate push --strategy escalate --judge '{inert(res['name'])}'; {path}")
    return 0


def add_parser(sub: Any) -> None:
    """Register the loop's commands (``gate``, ``regrade``, ``align``, ``cascade``, ``panel``) on ``judgecal``'s subparsers."""
    from judgecal.cli.common import (
        as_count,
        as_n_boot,
        as_open_unit,
        as_orders,
        as_seed,
        judge_opts,
        upto,
        workspace_arg,
    )

    n_boot = as_n_boot

    p = sub.add_parser("gate", help="may a new judge version replace the old? paired test on the same human labels "
                       "(exit 0 pass, 1 fail, 2 usage error)")
    p.add_argument("--baseline", required=True, help="the judge in use (its name in the workspace)")
    p.add_argument("--candidate", required=True, help="the new judge version")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--invalid-as", choices=("tie", "wrong"), default="tie")
    p.add_argument("--n-boot", type=n_boot, default=2000)
    p.add_argument("--seed", type=as_seed, default=0)
    p.add_argument("--markdown", metavar="FILE", help="write the pull-request summary here ('-': stdout)")
    workspace_arg(p)
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("regrade", help="run a judge on the items another judged, in the same orders and samples")
    p.add_argument("--judge", required=True, help="the new judge: <backend>/<model>, a spec YAML or a shipped spec")
    p.add_argument("--like", required=True, help="the judge whose items, orders and samples to repeat")
    p.add_argument("--base-url", help="OpenAI-compatible server URL for openai/<model>")
    judge_opts(p)
    workspace_arg(p)
    p.set_defaults(func=cmd_regrade)

    p = sub.add_parser("align", help="build a candidate judge from the human labels (train split) and compare it "
                       "with the original on held-out labels it never saw")
    p.add_argument("--judge", required=True, help="the judge to align: <backend>/<model>, a spec YAML or a shipped spec")
    p.add_argument("--method", choices=("fewshot", "guidelines", "optimizer"), required=True,
                   help="fewshot: examples from the judge's disagreements; guidelines: rules from the labels and "
                   "quotes from the annotators' rationales; optimizer: DSPy's random search over example sets "
                   "(the dspy extra)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--items", type=as_count, help="a stratified sample of this many labelled items (a small CPU run)")
    p.add_argument("--train-share", type=as_open_unit, default=0.5, help="share of the items in the train split")
    p.add_argument("--split-seed", type=as_seed, default=0, help="seeds the sample and the split")
    p.add_argument("--shots", type=upto(64, "examples"), default=4, help="fewshot, optimizer: how many examples "
                   "(at most)")
    p.add_argument("--candidates", type=upto(256, "example sets"), default=6, help="optimizer: how many bootstrapped example sets "
                   "the search scores (besides the labelled-only set)")
    p.add_argument("--orders", type=as_orders, default="AB,BA", help="presentation orders judged")
    p.add_argument("--evaluate-train", action="store_true", help="also judge the train split with the candidate "
                   "(shown apart, never called an improvement)")
    p.add_argument("--out", help="folder for the candidate's rubric and spec (default <workspace>/judges)")
    p.add_argument("--n-boot", type=n_boot, default=2000)
    p.add_argument("--invalid-as", choices=("tie", "wrong"), default="tie")
    p.add_argument("--base-url", help="OpenAI-compatible server URL for openai/<model>")
    judge_opts(p)
    workspace_arg(p)
    p.set_defaults(func=cmd_align)

    p = sub.add_parser("cascade", help="cheap judge -> stronger judge -> people, with the Trust-or-Escalate "
                       "agreement guarantee over the chain")
    p.add_argument("--stage", action="append", required=True, help="a judge, cheapest first (repeatable)")
    p.add_argument("--name", help="the cascade's name (default: its stages joined by ->)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--target", type=as_open_unit, default=0.9, help="agreement with the people the decided items must reach")
    p.add_argument("--delta", type=as_open_unit, default=0.1, help="the chance the guarantee may fail")
    p.add_argument("--cost", type=_cost, action="append", metavar="JUDGE=USD",
                   help="a stage's cost per item when its judgments recorded none (repeatable)")
    p.add_argument("--human-cost", type=_usd, help="cost of one item reviewed by people (USD)")
    p.add_argument("--seed", type=as_seed, default=0, help="seeds the calibration / held-out split")
    workspace_arg(p)
    p.set_defaults(func=cmd_cascade)

    p = sub.add_parser("panel", help="judge as a panel: several judges' stored verdicts and a strict majority; "
                       "the panel is then audited beside its members")
    p.add_argument("--spec", help="a panel spec YAML file (name, panel: {members, rule})")
    p.add_argument("--members", help="comma-separated judge names (instead of --spec)")
    p.add_argument("--name", help="with --members: the panel's name (default panel/<members>)")
    workspace_arg(p)
    p.set_defaults(func=cmd_panel)
