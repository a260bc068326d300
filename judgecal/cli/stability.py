"""``judgecal stability run|guard|score|repeats|import|export-items``: a thin layer over the stability APIs."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judgecal.inert import term
from judgecal.stability.runs import AXES, STABILITY_AXES, StabilityError


def _share(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, int | float) and not isinstance(x, bool) else "n/a"


def cross_judge_line(c: dict[str, Any]) -> str:
    """The other judge beside this one; κ is undefined (0/0) when both answer one label throughout."""
    kappa = c.get("kappa")
    words = (f"{kappa:.3f}" if isinstance(kappa, int | float) and not isinstance(kappa, bool)
             else "undefined" + (" (every verdict on one label)" if c.get("n") else ""))
    return (f"  beside {c['judge']}: {c['figure']} {c['difference_pp']:+.2f} pp, item agreement "
            f"{_share(c.get('item_agreement'))}, kappa {words} on {c.get('n')} items both answered")

def _csv(cast: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            return tuple(cast(x.strip()) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: give a comma list") from None
    return parse


def _axes(text: str) -> tuple[str, ...]:
    axes = tuple(a.strip() for a in text.split(",") if a.strip())
    bad = [a for a in axes if a not in AXES]
    if bad or not axes:
        raise argparse.ArgumentTypeError(f"unknown axis {bad[0] if bad else text!r}; axes: {', '.join(AXES)}")
    return axes


def _positive(text: str) -> float:
    from judgecal.cli.common import parsed
    from judgecal.cli.common import within as ok_if

    v = parsed(text, float, "a number")
    return float(ok_if(v, 0 < v < math.inf, f"{text!r}: give a finite number > 0"))


def _within(lo: float, hi: float, integer: bool = False) -> Callable[[str], Any]:
    """A finite number from ``lo`` to ``hi`` (a whole one when ``integer``): a level a run can use."""
    from judgecal.cli.common import parsed
    from judgecal.cli.common import within as ok_if

    def check(text: str) -> Any:
        v = parsed(text, int if integer else float, "a whole number" if integer else "a number")
        bounds = f"{lo} to {hi}" if integer else f"{lo:g} to {hi:g}"
        return ok_if(v, lo <= v <= hi, f"{text} is not allowed; give {bounds}")  # NaN fails too
    return check


def _at_most(count: Callable[[str], int], hi: int) -> Callable[[str], int]:
    def check(text: str) -> int:
        v = count(text)
        if v > hi:
            raise argparse.ArgumentTypeError(f"{v:,} is more than {hi:,}, the most one run takes")
        return v
    return check


TEMPERATURE = _within(0, 100)
SEED = _within(0, 2**31 - 1, integer=True)


def add_parser(sub: Any) -> None:
    """Register ``judgecal stability`` on ``judgecal``'s subparsers."""
    from judgecal.cli.common import as_count as count
    from judgecal.cli.common import workspace_arg as ws_arg

    p = sub.add_parser("stability", help="is the judge stable: runs over axes, Stability Score, guard, GPU imports")
    ssub = p.add_subparsers(dest="action", required=True)
    r = ssub.add_parser("run", help="one judgment set per variant (cached, resumable) and its headline figures")
    r.add_argument("--judge", required=True, help="<backend>/<model>, a judge spec file or a shipped spec name")
    r.add_argument("--axes", type=_axes, default=STABILITY_AXES,
                   help=f"comma list of {', '.join(AXES)} (default: all but judge)")
    r.add_argument("--items", type=_at_most(count, 10_000_000), default=40, help="a seeded sample of this many items (default 40)")
    r.add_argument("--source", help="only items from this source")
    r.add_argument("--sample-seed", type=SEED, default=0)
    r.add_argument("--consensus", default="ds", help="the stored human consensus to score against (default ds)")
    r.add_argument("--deterministic", action="store_true", help="greedy decoding, every seed set, no prefix reuse")
    r.add_argument("--concurrency", type=_at_most(count, 4096), default=2)
    r.add_argument("--rubric", default="pairwise")
    r.add_argument("--max-tokens", type=_at_most(count, 1_000_000), help="reply length (default: the rubric's, else 8)")
    r.add_argument("--temperature", type=TEMPERATURE, default=0.0, help="the base variant's temperature")
    r.add_argument("--seeds", type=_csv(SEED), help="seed levels (default 1,2)")
    r.add_argument("--temperatures", type=_csv(TEMPERATURE), help="temperature levels (default 0.7,1.0)")
    r.add_argument("--mutations", type=_csv(str), help="mutation levels (default whitespace,instruction_after,"
                   "paraphrase,option_order)")
    r.add_argument("--batch-sizes", type=_csv(_within(1, 65536, integer=True)), help="llama.cpp n_batch levels (default 8,64)")
    r.add_argument("--concurrencies", type=_csv(_within(1, 4096, integer=True)), help="concurrency levels (default 1)")
    r.add_argument("--judges", type=_csv(str), help="judge axis: other models on the same backend, e.g. "
                   "local/gemma3 (default: the other embedded judge); agreement is reported, not scored")
    r.add_argument("--quiet", action="store_true")
    for name, helptext in (("guard", "exit 1 when a variant moves a headline figure by more than the threshold; "
                                     "writes a diff report"),
                           ("score", "Stability Scores with bootstrap CIs, per-axis decomposition, cross-backend")):
        g = ssub.add_parser(name, help=helptext)
        g.add_argument("--run", help="a run id (default: the latest run, of --judge when given)")
        g.add_argument("--judge", help="the latest run of this judge")
        g.add_argument("--n-boot", type=_at_most(count, 100_000), default=1000)
        g.add_argument("--out", help="report folder (default: <workspace>/reports)")
        g.add_argument("--threshold", type=_positive, help="points a headline figure may move (default 1.4)")
        g.add_argument("--tolerated-error-increase", type=_positive,
                       help="with --error-per-point: threshold = tolerated increase / increase per point")
        g.add_argument("--error-per-point", type=_positive, help="error-rate increase caused by one point")
        g.add_argument("--tolerance", type=_positive, default=0.8, help="cross-backend tolerance (points)")
        g.add_argument("--figure", action="append", help="gate only these headline figures (repeatable; e.g. "
                       "accuracy, kappa, winrate:<model>; default: all)")
        g.add_argument("--json", action="store_true", help="print the result as JSON instead of the table")
    i = ssub.add_parser("import", help="store a run file written elsewhere (benchmarks/gpu_stability.py)")
    i.add_argument("file")
    i.add_argument("--consensus", help="score against this stored consensus (default: the file's, else ds)")
    e = ssub.add_parser("export-items", help="items + rendered prompts as JSONL for benchmarks/gpu_stability.py")
    e.add_argument("file")
    e.add_argument("--items", type=_at_most(count, 10_000_000), default=100)
    e.add_argument("--consensus", default="ds")
    e.add_argument("--rubric", default="pairwise")
    e.add_argument("--source")
    rp = ssub.add_parser("repeats", help="a stability run from a judge's stored repeated scores (e.g. "
                         "replay/prometheus/gpt-4's three scores per response)")
    rp.add_argument("--judge", required=True)
    rp.add_argument("--scale", type=_csv(_within(-1e6, 1e6)), default=(1.0, 5.0), help="score range, e.g. 1,5")
    for sp in ssub.choices.values():
        ws_arg(sp)
    p.set_defaults(func=cmd_stability)


def _threshold(args: argparse.Namespace) -> float:
    from judgecal.audit.stability_section import GUARD_THRESHOLD_PP
    from judgecal.stats.stability import threshold_from_business

    given = (args.tolerated_error_increase, args.error_per_point)
    if any(x is not None for x in given):
        if args.threshold is not None or None in given:
            raise StabilityError("give --threshold, or both --tolerated-error-increase and --error-per-point")
        return threshold_from_business(*given)  # type: ignore[arg-type]
    return args.threshold if args.threshold is not None else GUARD_THRESHOLD_PP


def _pick_run(ws: Any, args: argparse.Namespace) -> dict[str, Any]:
    runs = ws.stability_repo.stability_runs()
    if args.run:
        runs = [r for r in runs if r["run_id"] == args.run]
    elif args.judge:
        runs = [r for r in runs if r["judge"] == args.judge]
    if not runs:
        what = f"run {args.run!r}" if args.run else f"run of {args.judge!r}" if args.judge else "stability run"
        raise StabilityError(f"no {what} in this workspace: `judgecal stability run` first")
    return runs[-1]


def cmd_stability(args: argparse.Namespace) -> int:
    from judgecal.cli.common import open_workspace

    with open_workspace(args, create=False) as ws:  # a StabilityError is a JudgecalError: one line, exit 2
        return _dispatch(ws, args)


def _dispatch(ws: Any, args: argparse.Namespace) -> int:
    from judgecal.audit.stability_section import summarise_run
    from judgecal.stability import score

    if args.action == "run":
        from judgecal.judges.mutations import MUTATIONS
        from judgecal.stability.runs import run_stability

        levels = {k: v for k, v in (("seed", args.seeds), ("temperature", args.temperatures),
                                    ("mutation", args.mutations), ("batch_size", args.batch_sizes),
                                    ("concurrency", args.concurrencies), ("judge", args.judges)) if v}
        bad = [m for m in levels.get("mutation", ()) if m not in MUTATIONS]
        if bad:
            raise StabilityError(f"unknown mutation {bad[0]!r}; known: {', '.join(MUTATIONS)}")
        res = run_stability(ws, args.judge, args.axes, items=args.items, source=args.source,
                            sample_seed=args.sample_seed, consensus=args.consensus, deterministic=args.deterministic,
                            levels=levels, concurrency=args.concurrency, rubric=args.rubric,
                            max_tokens=args.max_tokens, temperature=args.temperature, progress=not args.quiet)
        print("headline figures per variant: swap-debiased verdicts (the two orders' common verdict, else a tie; "
              "an invalid answer wrong) against the consensus, so not judgecal audit's per-order accuracy")
        for v in res["variants"]:
            how = f"reused ({v['note']})" if v["reused_from"] is not None else f"{v['paid']} of {v['calls']} calls paid"
            figs = ", ".join(f"{k} {x:.3f}" for k, x in v["figures"].items() if x is not None and ":" not in k)
            print(f"  {v['name']:<28} {figs}  [{how}]")
        print(f"stability run {res['run_id']}: {len(res['variants'])} variants stored")
        return 0
    if args.action == "import":
        from judgecal.stability.io import import_run

        res = import_run(ws, args.file, consensus=args.consensus)
        print(f"stability run {res['run_id']}: {len(res['variants'])} variants imported from {args.file}")
        return 0
    if args.action == "export-items":
        from judgecal.stability.io import export_items

        n = export_items(ws, args.file, n=args.items, consensus=args.consensus, rubric=args.rubric, source=args.source)
        print(f"wrote {n} items to {args.file}")
        return 0
    if args.action == "repeats":
        if len(args.scale) != 2 or args.scale[1] <= args.scale[0]:
            raise StabilityError("--scale: give LOW,HIGH with LOW < HIGH, e.g. 1,5")
        res = score.repeats_run(ws, args.judge, scale=(args.scale[0], args.scale[1]))
        print(f"stability run {res['run_id']}: {len(res['variants'])} repeats of {term(args.judge)} stored")
        return 0
    run = _pick_run(ws, args)
    out = Path(args.out) if args.out else ws.reports_dir
    threshold = _threshold(args)
    if args.action == "guard":
        from judgecal.stability.guard import guard_report

        code, md, report = guard_report(ws, run, threshold, out, n_boot=min(args.n_boot, 200), figures=args.figure)
        if args.json:
            print(score.dumps({**report, "report": str(md)}))
            return code
        print(f"{term(run['judge'])} (run {run['run_id']}): guard {report['status']} at {threshold:g} points; "
              f"{len(report['violations'])} variant(s) over it. Report: {md}")
        for c in report["violations"]:
            moves = ", ".join(f"{m['figure']} {m['shift_pp']:+.2f}" for m in c["moves"])
            print(f"  {c['variant']}: {moves} points; {len(c['changed_items'])} verdicts changed")
        return code
    summary = summarise_run(ws, run, n_boot=args.n_boot, threshold_pp=threshold, tolerance_pp=args.tolerance)
    out.mkdir(parents=True, exist_ok=True)
    (out / "stability.json").write_text(score.dumps(summary), "utf-8")
    if args.json:
        print(score.dumps(summary))
        return 0
    print(f"{term(run['judge'])} (run {run['run_id']}, {summary['n_items']} items, {len(summary['variants'])} variants, "
          f"{summary['calls']['paid']} of {summary['calls']['planned']} calls paid)")
    for name, r in summary["figures"].items():
        if r["sigma_pp"] is None:
            continue
        top = r["decomposition"]["largest_shift"]
        lo, hi = r["score_ci"]
        moved = (f"largest shift {top['shift_pp']:+.2f} pp ({summary['variants'][top['variant']]['name']}); top axis "
                 f"{r['decomposition']['top_axis']}") if r["decomposition"]["top_axis"] else "no variant moved it"
        print(f"  {term(name):<32} sigma {r['sigma_pp']:6.2f} pp  score {r['score']:5.1f} [{lo:.1f}, {hi:.1f}]  {moved}")
    if all(r["sigma_pp"] is None for r in summary["figures"].values()):
        print("  no Stability Score: the run holds no variant of the judge itself (another judge is a "
              "reference, kept out of sigma); add --axes seed,temperature,mutation,...")
    for c in summary["cross_backend"]:
        print(f"  cross-backend {c['variant']}: {c['figure']} {c['difference_pp']:+.2f} pp "
              f"({'within' if c['within_tolerance'] else 'outside'} {c['tolerance_pp']:g}), "
              f"item agreement {_share(c.get('item_agreement'))}")
    for c in summary["cross_judge"]:
        print(term(cross_judge_line(c)))
    print(f"wrote {out / 'stability.json'}")
    return 0
