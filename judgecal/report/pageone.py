"""Page one in the terminal: one table, a row per judge ranked by its gap to the humans, then the best judge.

Every surface shows the same rows (:func:`judgecal.report.summary.page_one`): the verdict, the headline figure
beside the annotators' own measured the same way, the gap, the reason that matters most and how many probes
were not tested. Names are data (:class:`rich.text.Text`, inert).
"""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from judgecal.report.summary import PageOne, SummaryRow, fmt_gap

STYLE = {"aligned": "bold green", "caution": "bold yellow", "not aligned": "bold red"}


def _without_the(words: str) -> str:
    return words.removeprefix("the judge ").removeprefix("the ")


def figure_cell(row: SummaryRow, narrow: bool) -> Text:
    """``κ with each annotator 0.305 (…)`` over ``annotators with each other 0.774 (…)`` (narrow: each
    value on a line of its own)."""
    head = row.headline
    if head is None:
        return Text(row.basis, style="dim")
    sep = "\n" if narrow else " "
    says = any(w in head.title for w in ("annotator", "majority"))  # the title names how it is measured
    title = head.title if says else f"{head.title} {_without_the(row.headers['judge'])}"
    return Text.assemble(f"{title}:{sep}", (head.judge, "bold"),
                         f"\n{_without_the(head.humans_words)}:{sep}{head.humans}")


def untested(row: SummaryRow) -> str:
    """How many probes were not tested, in words (the details name them)."""
    n = len(row.not_tested_probes) or (0 if row.not_tested.startswith("nothing") else
                                        len(row.not_tested.split("; ")))
    return f"{n} not tested" if n else "every probe run"


def page_one_table(one: PageOne, title: str, width: int) -> Table:
    """The judges, closest to the humans first (``one``: :func:`judgecal.report.summary.page_one`); below 120
    columns the verdict, gap and untested count stand under the judge's name."""
    narrow = width < 120
    t = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD, show_lines=True, pad_edge=False,
              collapse_padding=True, show_edge=False)
    name_w = min(max((len(r.judge) for r in one.rows), default=5), 20 if narrow else 32)
    t.add_column("judge", overflow="fold", width=max(name_w, 18 if narrow else 11))
    if not narrow:
        t.add_column("verdict", overflow="fold", width=11)
    t.add_column("agreement, beside the annotators'", overflow="fold", width=23 if narrow else 52)
    if not narrow:
        t.add_column("gap", justify="right", width=6)
    t.add_column("the reason that matters most", overflow="fold", ratio=1)
    if not narrow:
        t.add_column("not tested", justify="right", width=10)
    for r in one.rows:
        status = Text(r.status.upper(), style=STYLE.get(r.status, "bold"))
        n = len(r.not_tested_probes) or len([x for x in r.not_tested.split("; ") if not x.startswith("nothing")])
        if narrow:
            t.add_row(Text.assemble(Text(r.judge, style="bold"), "\n", status, f"\ngap {fmt_gap(r.gap)}\n",
                                    untested(r)),
                      figure_cell(r, True), Text(r.reason))
        else:
            t.add_row(Text(r.judge, style="bold"), status, figure_cell(r, False), Text(fmt_gap(r.gap)),
                      Text(r.reason), Text(str(n)))
    return t
