"""``judgecal monitor`` in the terminal: a judge's agreement period by period, the drift boundary, the decision.

Names (periods, judges) are data: shown as :class:`rich.text.Text`, inert (:func:`judgecal.inert.term`).
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from judgecal.audit.schema import MonitorSeries
from judgecal.inert import inert_tree


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_monitor(series: MonitorSeries, console: Console | None = None) -> None:
    """The table (period, n, agreement with its interval, Cohen's κ, the annotators', invalid rate, the drop below the
    baseline with its anytime-valid interval, the decision) and one line saying where drift was declared and from
    which period on the agreement fell (the row's ``window_from``)."""
    console = console or Console()
    s = MonitorSeries.model_validate(inert_tree(series.to_json()))  # every name made inert once
    level = round(100 * (1 - s.alpha))
    t = Table(title=Text(f"{s.judge}: agreement with the truth ({s.consensus}) by {s.by}, {level}% "
                         f"intervals; drift: the drop below the baseline, anytime-valid"),
              title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name, justify in (("period", "left"), ("n", "right"), ("agreement", "right"), ("κ", "right"),
                          ("annotators", "right"),
                          ("invalid", "right"), ("drop below baseline", "right"), ("decision", "left")):
        t.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in s.periods:
        agree = f"{r.agreement:.3f} ({r.agreement_low:.3f}-{r.agreement_high:.3f})"
        humans = _pct(r.humans.estimate) if r.humans else "-"
        if r.role == "after" and r.drop is not None and r.drop_low is not None and r.drop_high is not None:
            drop = f"{r.drop:+.3f} ({r.drop_low:+.3f} to {r.drop_high:+.3f})"
            decision = Text("DRIFT", style="bold red") if r.drift else Text("no drift")
        else:
            drop, decision = "", Text(r.role)
        t.add_row(Text(r.period), str(r.n), agree, _pct(r.kappa), humans, f"{r.invalid_rate:.3f}", drop, decision)
    console.print(t)
    b = s.baseline_agreement
    console.print(Text(f"baseline {s.baseline}: {b.estimate:.3f} ({b.low:.3f}-{b.high:.3f}), "
                       f"n {b.n}; effect of interest {s.effect_of_interest:.2f}, alpha {s.alpha:.2f}"))
    if s.items_without_period:
        console.print(Text(f"{s.items_without_period} item(s) without a {'period' if s.by == 'period' else 'time'}"
                           " left out"))
    if s.first_drift is not None:
        since = next(r.window_from for r in s.periods if r.period == s.first_drift)
        console.print(Text(f"drift declared at {s.first_drift}: the agreement from {since} on is below "
                           f"the baseline's ({level}% confidence, valid over every look)", style="bold red"))
    else:
        console.print(Text("no drift declared"))
