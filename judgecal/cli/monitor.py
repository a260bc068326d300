"""``judgecal monitor``: a judge's agreement with the humans period by period and an anytime-valid drift
decision (:mod:`judgecal.audit.monitor`); exit status 1 when drift is declared."""

from __future__ import annotations

import argparse
import json
from typing import Any

from judgecal.cli.common import open_workspace


def _unit(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not 0 < x < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}")
    return x


def add_parser(sub: Any) -> None:
    """Register ``judgecal monitor`` on ``judgecal``'s subparsers."""
    from judgecal.cli.common import workspace_arg as ws_arg
    from judgecal.data.times import BY

    p = sub.add_parser("monitor", help="a judge's agreement with the humans over time; exit 1 on drift")
    p.add_argument("--judge", help="the judge (default: the workspace's one judge)")
    p.add_argument("--by", choices=BY, default="week", help="group by the records' time (day, week, month) "
                   "or their period name (default: week)")
    p.add_argument("--baseline", metavar="PERIOD", help="the period to compare with (default: the first)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--effect", type=_unit, help="the drop in agreement that matters (default: thresholds.yaml's "
                   "accuracy_gap.caution_above)")
    p.add_argument("--json", action="store_true", help="print the series as JSON")
    ws_arg(p)
    p.set_defaults(func=cmd_monitor)


def cmd_monitor(args: argparse.Namespace) -> int:
    from judgecal.audit.decision import load_thresholds
    from judgecal.audit.monitor import monitor
    from judgecal.audit.schema import MonitorSeries
    from judgecal.report.monitor import print_monitor

    with open_workspace(args, create=False) as ws:
        limits = load_thresholds(ws.path)
        effect = args.effect if args.effect is not None else float(limits["accuracy_gap"]["caution_above"])
        # a MonitorError names its input (the judge, the period): the command line adds the flag
        series = monitor(ws, args.judge, by=args.by, baseline=args.baseline, consensus=args.consensus,
                         alpha=float(limits["alpha"]), effect=effect)
    if args.json:
        print(json.dumps(series, indent=1))
    else:
        print_monitor(MonitorSeries.model_validate(series))
    return 1 if series["drift"] else 0
