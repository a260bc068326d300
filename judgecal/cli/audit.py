"""The audit and its reports: `judgecal audit`, `judgecal report`, `judgecal plan`, `judgecal validate`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgecal.cli.common import (
    MAX_SEEDS,
    MAX_SHARDS,
    UsageError,
    as_halfwidth,
    as_n_boot,
    as_open_unit,
    as_share,
    open_workspace,
    output_file,
    print_json,
    refuse_together,
    upto,
    workspace_arg,
)
from judgecal.inert import term

if TYPE_CHECKING:
    from judgecal.audit.schema import AuditReport


def _audit(ws: Any, out: Path, consensus: str, invalid_as: str, n_boot: int,
           selective: tuple[float, float] | None = None,
           cluster: dict[str, Any] | None = None, summary_only: bool = False,
           progress: Any = None) -> tuple[AuditReport, Path, Path]:
    """:func:`judgecal.audit.pipeline.audit_workspace`, then audit.json and audit.html written to ``out``."""
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.progress import Bar
    from judgecal.report.write import write_report

    bar = progress if progress is not None else Bar("audit", enabled=False)  # a judgecal.progress.Bar
    target, delta = selective if selective is not None else (None, None)
    executor = None
    if cluster is not None:  # --executor ray: the alignment figures from per-item sums on the cluster
        from judgecal.distributed.audit import RayExecutor

        executor = RayExecutor(cluster["address"], cluster["shard_dir"], cluster["n_shards"])
    options = AuditOptions(consensus=consensus, invalid_as=invalid_as, n_boot=n_boot, selective_target=target,
                           selective_delta=delta)
    report = audit_workspace(ws, options, executor, progress=bar.report)
    js, html = write_report(report, out, summary_only=summary_only)
    bar.report(bar.total or 0)  # the last step (the report: provenance, then these files) is done
    ws.reports_repo.record_report(js)  # the explorer opens the latest audit wherever --out put it
    return report, js, html


def print_summary(report: AuditReport, details: bool = False) -> None:
    from judgecal.report.terminal import print_summary as show

    show(report, details=details)


def retire_stale_pdf(out: Path) -> str | None:
    """A new audit.json written without a PDF: an ``audit.pdf`` beside it is from an earlier audit. It is
    renamed ``audit.stale.pdf`` (never left under the name of the current report), and the line says so."""
    old = out / "audit.pdf"
    if not old.exists():
        return None
    stale = out / "audit.stale.pdf"
    old.replace(stale)
    return (f"stale: the PDF of an earlier audit, renamed {stale}\n"
            f"  this audit's PDF: judgecal report pdf {out / 'audit.json'}")


def cmd_audit(args: argparse.Namespace) -> int:
    local = args.executor == "local"
    refuse_together([(flag, given and local, "applies to --executor ray only") for flag, given in (
        ("--address", args.address is not None), ("--shard-dir", args.shard_dir is not None),
        ("--shards", args.shards is not None))])
    from judgecal.progress import Bar

    with open_workspace(args, create=False) as ws, Bar("audit", enabled=not args.quiet) as bar:  # per probe and judge
        out = Path(args.out) if args.out else ws.reports_dir
        cluster = None if local else {"address": args.address, "shard_dir": args.shard_dir,
                                      "n_shards": args.shards or 16}
        report, js, html = _audit(ws, out, args.consensus, args.invalid_as, args.n_boot,
                                  (args.selective_target, args.selective_delta), cluster, args.summary_only, bar)
    written, no_pdf, stale = [js, html], None, None
    if not args.pdf:
        stale = retire_stale_pdf(out)
    else:
        from judgecal.report.pdf import PdfError, write_pdf

        try:
            written.append(write_pdf(report, out / "audit.pdf", summary_only=args.summary_only))
        except PdfError as exc:
            no_pdf = str(exc)
    if args.json:
        print_json(js.read_text("utf-8"))
    else:
        print_summary(report, details=args.details)
    print("\n".join(f"wrote {w}" for w in written), file=sys.stderr if args.json else sys.stdout)
    if stale:
        print("\n".join(term(line) for line in stale.splitlines()), file=sys.stderr if args.json else sys.stdout)
    if no_pdf:  # audit.json and audit.html are written; the PDF that was asked for is not
        raise UsageError(no_pdf)
    return 0


READABLE = ("judgecal.audit/1", "judgecal.audit/2")  # audit.json schemas `judgecal report` renders


def _staleness(audit_json: Path) -> str | None:
    """What changed in the workspace ``audit_json`` lies in, at any depth (``<workspace>/reports/audit.json``
    or wherever inside it its latest audit recorded writing it: ``--out``), since that audit; ``None`` when
    nothing did or there is no workspace. (An audit written outside its workspace names none: rendered as is.)"""
    from judgecal.data.store import DB_NAME, Workspace, WorkspaceError

    folder = next((p for p in audit_json.resolve().parents if (p / DB_NAME).is_file()), None)
    if folder is None:
        return None
    try:
        ws = Workspace(folder, create=False)
    except WorkspaceError:  # a workspace that cannot be opened says nothing about this file
        return None
    try:
        return ws.reports_repo.staleness(audit_json)
    finally:
        ws.close()


def cmd_report(args: argparse.Namespace) -> int:
    """Render a stored audit.json again: the HTML page or the printable PDF."""
    import json

    from pydantic import ValidationError

    from judgecal.audit.schema import SCHEMA, AuditReport, json_safe, read_report

    src = Path(args.audit)
    if src.exists() and not src.is_file():  # a folder, a device (/dev/zero never ends) or a pipe: not read
        from judgecal.data.importers import not_a_file

        raise UsageError(f"{src}: {not_a_file(src)}")
    if args.out:
        output_file(args.out, reading=(src,))  # refused before anything is read
    try:
        data = json.loads(src.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{src}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{src}: not UTF-8 text, so not an audit.json") from None
    if not isinstance(data, dict) or data.get("schema") not in READABLE or not isinstance(data.get("judges"), dict):
        raise UsageError(f"{src}: schema: not an audit.json of schema {SCHEMA} (write one with `judgecal audit`)")
    try:  # an earlier schema's file is upgraded: what it lacks is empty, what it holds must read as the types say
        report = AuditReport.from_json(json_safe(data)) if data["schema"] == SCHEMA else read_report(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"{src}: {where}: {err['msg']} (not an audit.json of schema {data['schema']})") from None
    stale = _staleness(src)
    out = output_file(args.out if args.out else src.with_suffix(f".stale.{args.format}" if stale else f".{args.format}"),
                      reading=(src,))
    if stale:  # named as stale, never under the name of a current report
        print(term(f"stale: {stale}; run `judgecal audit` for a current report (this one is written as {out})"),
              file=sys.stderr)
    if args.format == "pdf":
        from judgecal.report.pdf import PdfError, write_pdf

        try:
            write_pdf(report, out, summary_only=args.summary_only)
        except PdfError as exc:
            raise UsageError(str(exc)) from None
    else:
        from judgecal.report.write import render_html

        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_html(report, summary_only=args.summary_only), "utf-8")
    print(f"wrote {out}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Human labels needed for a target CI half-width: human-only vs PPI++ (judgecal.audit.models), or a uniform vs
    an active draw (judgecal.audit.uncertainty)."""
    import json

    from judgecal.audit.plan import format_active_plan, format_plan, plan_active_workspace, plan_workspace

    active = getattr(args, "strategy", "ppi") == "active"
    if active and args.unlabelled is not None:
        raise UsageError("--unlabelled applies to --strategy ppi: the active plan is for the workspace's own items")
    with open_workspace(args, create=False) as ws:
        if active:
            res = plan_active_workspace(ws, args.consensus, args.target_halfwidth, judges=args.judge, tau=args.tau)
        else:
            res = plan_workspace(ws, args.consensus, args.target_halfwidth, judges=args.judge,
                                 n_unlabelled=args.unlabelled)
    lines = format_active_plan(res) if active else format_plan(res)
    print(json.dumps(res, indent=1) if args.json else "\n".join(term(line) for line in lines))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from judgecal.audit.validate import validate
    from judgecal.catalogue import fmt_interval, fmt_p

    res = validate(n_items=args.items, seeds=args.seeds if args.slow else 1, n_boot=args.n_boot)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    if args.json:
        print_json(res)
        return 0 if res["ok"] else 1
    for c in res["checks"]:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['scenario']:16s} {c['check']}: "
              f"{fmt_interval(c['estimate'], c['ci'][0], c['ci'][1])} p {fmt_p(c['p'])}, q {fmt_p(c['q'])}")
    for key, c in res["coverage"].items():
        worst = min(c["by_scenario"].items(), key=lambda kv: kv[1])
        print(f"{'ok  ' if c['ok'] else 'FAIL'} coverage {key}: {c['coverage']:.3f} pooled (want 0.93-0.97), "
              f"lowest {worst[1]:.3f} ({worst[0]}, want >= 0.90)")
    if "battery" in res:
        print_battery(res["battery"])
    print("all checks passed" if res["ok"] else "some checks FAILED")
    return 0 if res["ok"] else 1


def print_battery(b: dict[str, Any]) -> None:
    """The battery's rows: flag rates at fixed N and sequential, agreement and calls, then the goals."""
    print(f"perturbation battery over {b['seeds']} seeds of {b['n_items']} items (effect of interest "
          f"{b['effect_of_interest']:g}, sequential batches of {b['batch']}): flagged fixed / sequential, agreement, "
          "calls per bias fixed / sequential")
    for r in b["rows"]:
        want = ">= 0.80" if r["judge"].startswith("planted") else "<= 0.05"
        print(f"{'ok  ' if r['ok'] else 'MISS'} {r['judge']:21s} {r['bias']:17s} {r['flagged_fixed']:.2f} / "
              f"{r['flagged_sequential']:.2f} (want {want}), agree {r['agreement']:.2f}, calls {r['calls_fixed']} / "
              f"{r['calls_sequential']:.0f}")
    g = b["goals"]
    print(f"{'ok  ' if g['saving'] else 'MISS'} sequential battery: {b['saving']:.0%} fewer calls on average than fixed "
          f"N (want >= 40%), decisions agree {b['agreement']:.1%}; planted biases found: "
          f"{'met' if g['detect'] else 'NOT met'}; clean judges flagged <= 5%: {'met' if g['false_flag'] else 'NOT met'}")


def add_parser(sub: Any) -> None:
    """Register ``audit``, ``plan``, ``validate``, ``report`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("audit", help="audit every judge against the human consensus")
    p.add_argument("--out", help="folder for audit.json and audit.html (default: <workspace>/reports)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE]: ds, mv, onecoin, glad "
                   "(computed when missing), e.g. ds:experts or mv:pandalm, or any other stored method, e.g. "
                   "gold; a plain METHOD only while the labels come from one source")
    p.add_argument("--invalid-as", choices=("tie", "wrong"), default="tie")
    p.add_argument("--n-boot", type=as_n_boot, default=2000)
    p.add_argument("--pdf", action="store_true", help="also write the printable trust report audit.pdf")
    p.add_argument("--summary-only", action="store_true", help="audit.html and audit.pdf hold page one only (each "
                   "judge's verdict, the reason that matters most, its like-for-like reference, what was not tested), "
                   "without the per-judge detail")
    p.add_argument("--json", action="store_true", help="print audit.json to stdout instead of the summary")
    p.add_argument("--details", action="store_true", help="after the table of judges, each judge's figures, "
                   "other reasons, flags and untested probes")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--selective-target", type=as_open_unit, default=0.9, help="selective evaluation: the "
                   "agreement with the humans the kept items must reach (default 0.9)")
    p.add_argument("--selective-delta", type=as_open_unit, default=0.1, help="selective evaluation: the "
                   "chance the guarantee may fail (default 0.1)")
    p.add_argument("--executor", choices=("local", "ray"), default="local", help="ray: the alignment metrics "
                   "from per-item sums computed by Ray tasks over Parquet shards of the judgments (extra 'ray'); "
                   "the rest on this machine, as audit.json's executor section says")
    p.add_argument("--address", help="--executor ray: the cluster (auto, <head>:<port>, or ray://<head>:10001 "
                   "with ray[client]); default RAY_ADDRESS or auto")
    p.add_argument("--shard-dir", help="--executor ray: where the judgment shards go, a folder every node reads "
                   "at the same path (default: a temporary folder in the workspace, removed afterwards)")
    p.add_argument("--shards", type=upto(MAX_SHARDS, "shards"), help="--executor ray: number of Parquet shards "
                   "(default 16)")
    workspace_arg(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("plan", help="how many human labels a CI half-width needs, human-only and with PPI++")
    p.add_argument("--target-halfwidth", type=as_halfwidth, default=0.03,
                   help="the confidence interval's half-width on a win rate, between 0 and 1 (default 0.03)")
    p.add_argument("--judge", action="append", help="only this judge (repeatable)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--unlabelled", type=upto(10**12, "items"), help="items the judge covers (default: as many as needed)")
    p.add_argument("--strategy", choices=("ppi", "active"), default="ppi", help="ppi: human-only vs PPI++ (default); "
                   "active: a uniform vs an active draw over the workspace's pairwise items (annotate push --strategy "
                   "active), from the judge's own uncertainty")
    p.add_argument("--tau", type=as_share, default=0.5, help="with --strategy active: the share of the budget drawn by "
                   "the judge's uncertainty, the rest uniform (default 0.5)")
    p.add_argument("--json", action="store_true")
    workspace_arg(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("validate", help="check the bias probes on a simulated judge with planted biases")
    p.add_argument("--slow", action="store_true", help="also measure 95%% CI coverage over many seeds")
    p.add_argument("--seeds", type=upto(MAX_SEEDS, "seeds"), default=200)
    p.add_argument("--items", type=upto(1_000_000, "simulated items"), default=1000)
    p.add_argument("--n-boot", type=as_n_boot, default=1000)
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the checks")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("report", help="render a stored audit.json as the printable PDF or the HTML page")
    p.add_argument("format", choices=("pdf", "html"))
    p.add_argument("audit", help="an audit.json written by `judgecal audit`")
    p.add_argument("--out", help="output file (default: beside audit.json, audit.pdf or audit.html)")
    p.add_argument("--summary-only", action="store_true", help="page one only: the summary of every judge, "
                   "without the per-judge detail")
    p.set_defaults(func=cmd_report)
