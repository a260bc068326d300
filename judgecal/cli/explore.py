"""Looking at it: `judgecal app` (the explorer) and `judgecal demo` (the main job on the embedded defaults)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from judgecal.cli.audit import _audit, print_summary
from judgecal.cli.common import (
    MAX_ITEMS,
    UsageError,
    as_n_boot,
    as_port,
    judge_opts,
    judgecal_command,
    open_workspace,
    upto,
    workspace_arg,
)
from judgecal.cli.judging import _select_items, make_engine
from judgecal.errors import require


def cmd_app(args: argparse.Namespace) -> int:
    import importlib.util

    require("streamlit", "plotly")  # before handing over to the server, which would end in a traceback
    from judgecal.apps.access import ENV, GENERATE, is_loopback, token_problem

    ws = Path(args.workspace or "")
    if not (ws / "judgecal.sqlite").exists():
        raise UsageError(f"{ws}: not a judgecal workspace")
    token = os.environ.get(ENV)
    problem = token_problem(token)
    if not is_loopback(args.address) and problem:  # model identities, annotators and labels to the whole network
        raise UsageError(f"--address {args.address} is not loopback and {problem}: set it to a secret of at least "
                         f"16 characters (e.g. {ENV}=$({GENERATE})) or keep the default 127.0.0.1 behind a "
                         f"reverse proxy with its own login")
    if token and problem:  # set but unusable: say so rather than serve without it
        raise UsageError(f"{problem}: use a secret of at least 16 characters, or unset it on loopback")
    spec = importlib.util.find_spec("judgecal.apps.explorer")
    script = spec.origin if spec and spec.origin else ""
    cmd = [sys.executable, "-m", "judgecal.apps.serve", "run", script, "--server.headless", "true",
           "--server.port", str(args.port), "--server.address", args.address,
           "--browser.gatherUsageStats", "false", "--client.toolbarMode", "viewer",
           "--browser.serverAddress", args.address,  # the URL it prints: no lookup of the machine's public address
           "--server.fileWatcherType", "none",  # a served workspace view, not a development server
           "--", "--workspace", str(ws.resolve())]
    if token:  # where to go; the token itself is never printed
        print(f"explorer on http://{args.address}:{args.port}/ — open it once as "
              f"http://{args.address}:{args.port}/?token=<your {ENV}>", file=sys.stderr)
    # become the server (no child process left behind when this one is stopped)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, cmd)
    return 0  # pragma: no cover


DEMO_ITEMS = 60  # live items of the embedded judge (120 calls, ~0.8 CPU-s each on 2 cores): the demo stays short


def cmd_demo(args: argparse.Namespace) -> int:
    import time

    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.ingest import import_dataset

    t0 = time.perf_counter()
    with open_workspace(args) as ws:
        if "pandalm" not in ws.items_repo.sources():
            counts = import_dataset(ws, "pandalm")
            print(f"imported PandaLM: {counts['items']} items, {counts['annotations']} human labels, "
                  f"2 recorded judges")
        compute_consensus(ws, ("ds", "mv"))
        items = _select_items(ws, "pandalm", args.items, args.sample_seed)
        n_all = len(ws.items_repo.items(source="pandalm"))
        args.judge, args.rubric, args.temperature = "local/smollm2", "pairwise", 0.0
        engine = make_engine(ws, args)
        st = engine.run(engine.plan(items, orders=("AB", "BA"), seed=args.seed))
        print(f"local/smollm2: {st.done} new calls, {st.cached} cached, {st.invalid} invalid, in {st.seconds:.1f}s")
        report, js, html = _audit(ws, ws.reports_dir, "ds", "tie", args.n_boot)
    print_summary(report, details=args.details)
    if len(items) < n_all:  # say what the live judge's figures rest on
        print(f"note: local/smollm2 judged {len(items)} of PandaLM's {n_all} items live (both orders) to keep the "
              f"demo short; its figures rest on those items, so its intervals are wider than the recorded "
              f"judges'. `judgecal demo --items {n_all}` judges every item (the calls already made are cached).")
    print(f"audit.json: {js}\naudit.html: {html}")
    from judgecal.report.pdf import PdfError, write_pdf

    try:
        pdf_line = f"trust report (PDF): {write_pdf(report, js.parent / 'audit.pdf')}"
    except PdfError as exc:  # the demo's results stand without the PDF: say what to install, and finish
        pdf_line = f"skipped the PDF trust report: {exc}"
    print(f"demo finished in {time.perf_counter() - t0:.0f}s")
    print(f"open the explorer: {judgecal_command()} app --workspace {shlex.quote(str(args.workspace))}")
    print(pdf_line)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``app``, ``demo`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("app", help="start the Streamlit explorer on a workspace")
    p.add_argument("--port", type=as_port, default=8501)
    p.add_argument("--address", default="127.0.0.1",
                   help="listen address (default loopback only, no login); any other address needs "
                        "JUDGECAL_APP_TOKEN, checked on every request")
    workspace_arg(p)
    p.set_defaults(func=cmd_app)

    p = sub.add_parser("demo", help="PandaLM + recorded judges + SmolLM2 live + Dawid-Skene + audit")
    p.add_argument("--items", type=upto(MAX_ITEMS, "items"), default=DEMO_ITEMS,
                   help=f"PandaLM items the embedded judge judges live, in both orders (default {DEMO_ITEMS})")
    p.add_argument("--n-boot", type=as_n_boot, default=2000)
    p.add_argument("--details", action="store_true", help="after the table of judges, each judge's figures, "
                   "other reasons, flags and untested probes")
    judge_opts(p)
    workspace_arg(p, default="demo-workspace")
    p.set_defaults(func=cmd_demo)
