"""The audit in the terminal: a verdict and the key figures per judge, never truncated.

At 150 columns or more one table (every cell folds instead of being cut) when it fits; otherwise one block
per judge (figures stacked one per line). Titles and definitions come from :mod:`judgecal.catalogue`, numbers in
its format (three decimals, ``0.710 (0.680–0.740)``). Names are data: shown as :class:`rich.text.Text`,
never read as markup, and inert (:func:`judgecal.inert.term`: escape sequences shown, never acted on).
"""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from judgecal.audit.schema import AuditReport, read_report
from judgecal.catalogue import SPAN_SUMMARY_METRICS, info
from judgecal.inert import inert_tree, term
from judgecal.report.labels import LabelView, RateRow
from judgecal.report.over_time import over_time_line
from judgecal.report.pageone import page_one_table
from judgecal.report.summary import PageOne, page_one
from judgecal.report.table import Json, at
from judgecal.report.view import FigureCell, JudgeView, ReportView, merged_reasons, new_flags, report_view

WIDE = 150
STYLE = {"aligned": "bold green", "caution": "bold yellow", "not aligned": "bold red"}


def _status(status: str) -> Text:
    return Text(status.upper(), style=STYLE.get(status, "bold"))


def _figures(j: JudgeView) -> list[FigureCell]:
    """A judge's summary figures: a span-only judge's are its span figures, never a row of pairwise ones
    that cannot be measured."""
    return j.span_summary if j.span_only else j.summary


def _wide_table(judges: list[JudgeView], metrics: tuple[str, ...], title: str) -> Table:
    t = Table(title=Text(title), show_lines=True, expand=False)
    longest = max((len(j.name) for j in judges), default=5)
    t.add_column("judge", overflow="fold", min_width=min(longest, 40))
    t.add_column("verdict", overflow="fold", min_width=11)
    for m in metrics:
        t.add_column(info(m).title, justify="right", overflow="fold")
    for j in judges:
        t.add_row(Text(j.name), _status(j.verdict.status), *(Text(f.value) for f in _figures(j)))
    return t


def _tables(view: ReportView, titles: tuple[str, str]) -> list[Table]:
    """One table of the judges read against the consensus, one of the span-only judges (each when any)."""
    rated = [j for j in view.judges if not j.span_only]
    spans = [j for j in view.judges if j.span_only]
    return ([_wide_table(rated, view.summary_metrics, titles[0])] if rated else []) + (
        [_wide_table(spans, SPAN_SUMMARY_METRICS, titles[1])] if spans else [])


def _fits(table: Table, width: int) -> bool:
    """Whether ``table`` renders within ``width`` columns: rich crops a table that cannot fold narrower
    (a mixed report's eleven columns at 200), cutting the last titles and figures."""
    probe = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    probe.print(table, crop=False)
    return max((cell_len(line) for line in probe.export_text().splitlines()), default=0) <= width


def _all_fit(tables: list[Table], width: int) -> bool:
    return all(_fits(t, width) for t in tables)


def _reasons(j: JudgeView, console: Console) -> None:
    """A judge's verdict, then what page one does not show: its other reasons (the first stands on page one),
    its flags that no reason states, its stability and the probes not tested."""
    console.print(Text.assemble(Text(j.name, style="bold"), ": ", _status(j.verdict.status)))
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for r in merged_reasons(j.verdict.reasons)[1:]:
        grid.add_row(Text("  -"), Text(r))
    for f in new_flags(j):
        grid.add_row(Text("  !"), Text(f"{f.title} ({f.severity}): {f.words}"))
    if j.stability_line:
        grid.add_row(Text("  ~"), Text(j.stability_line))
    for r in j.verdict.not_tested:
        grid.add_row(Text("  ?"), Text(r, style="dim"))
    console.print(grid)


TERMINAL_RATES = ("macro_f1", "tpr", "tnr", "precision", "balanced_accuracy")


def _label_ref(r: RateRow, part: LabelView) -> str:
    """What a label rate is read beside: the judge with each annotator and the annotators with each other
    (when two annotators labelled its items), and the trivial rater on the consensus."""
    out = []
    if r.like_judge:
        out.append(f"with each annotator {r.like_judge_text}; annotators with each other {r.humans_text}")
    if part.trivial_label is not None:
        out.append(f"trivial (always {part.trivial_label!r}): {r.trivial_text}")
    return "; ".join(out)


def _label_rows(j: JudgeView) -> list[tuple[Text, Text, Text]]:
    """A label judge's rates (macro F1; binary: TPR, TNR, precision, balanced accuracy; categorical: each
    label's recall) and its pass rate four ways, per criterion when it was read on several."""
    parts = [p for p in j.labels if p.criterion is not None] or j.labels[:1]
    rows = []
    for part in parts:
        if part.criterion is not None:
            rows.append((Text(f"on {part.criterion}", style="bold"), _status(part.verdict.status), Text("")))
        for r in part.rates:
            if r.name in TERMINAL_RATES or (part.task != "binary" and r.name.startswith("recall_by_label.")):
                rows.append((Text(r.title), Text(r.judge_text), Text(_label_ref(r, part))))
        if part.pass_rate_line:
            rows.append((Text(f"Pass rate ({part.positive!r})"), Text(part.pass_rate_line.split(": ", 1)[1]),
                         Text("judge-reported: its own share; corrected: by its TPR/TNR and by PPI++ on the "
                              "human-labelled items; human-only: those items alone")))
    if j.labels_trusted:
        rows.append((Text("Criteria"), Text(j.labels_trusted), Text("")))
    return rows


def _figure_table() -> Table:
    t = Table(show_header=False, box=None, pad_edge=False, padding=(0, 1))
    t.add_column("figure", overflow="fold", no_wrap=False, min_width=14)
    t.add_column("value", overflow="fold", min_width=19)
    t.add_column("reference", overflow="fold", style="dim")
    return t


def _stacked(view: ReportView, console: Console, titles: tuple[str, str]) -> None:
    console.print(Text(titles[0] if any(not j.span_only for j in view.judges) else titles[1], style="bold"))
    for j in view.judges:
        console.rule(style="dim")
        labelled = (f"{j.n_span_items} items with human spans" if j.span_only else
                    f"{j.n_labelled} items with a human label")
        console.print(Text.assemble(Text(j.name, style="bold"), f"  ({j.n_judgments} judgments, {labelled})"))
        t = _figure_table()
        for f in _figures(j):
            if f.applies:
                t.add_row(Text(f.title), Text(f.value), Text(at(j.references, f.name) or ""))
        for row in _label_rows(j):
            t.add_row(*row)
        console.print(t)
        _reasons(j, console)


def truth_lines(report: AuditReport, view: ReportView) -> list[str]:
    """The truth each kind of judge was read against, named: the label consensus (its scale when the
    labels are ratings) for judges read against it, the human spans for span judges."""
    from judgecal.audit.truth import describe, describe_spans

    cons = report.consensus
    rated = [j for j in view.judges if not j.span_only]
    lines = []
    if rated or not view.judges:
        scale = next((e.pointwise.scale for e in report.judges.values() if e.pointwise and e.pointwise.scale), None)
        if rated and {j.kind for j in rated} == {"pointwise"} and not cons.n_labels:
            lines.append(f"truth: no human ratings of the judged responses ({cons.method or 'ds'} holds "
                         "none): a pointwise judge's agreement is not measured")
        elif scale:
            levels = (" < " if scale.kind == "ordinal" else ", ").join(str(v) for v in scale.levels)
            lines.append(f"truth: {describe(cons.to_json())}; ratings on the {scale.kind or 'nominal'} scale {levels}")
        else:
            lines.append(f"truth: {describe(cons.to_json())}")
    spans = report.spans
    if spans and any(j.span_summary for j in view.judges):
        lines.append(f"truth for spans: {describe_spans(spans.to_json())}")
    return [term(line) for line in lines]


def _details(report: AuditReport, view: ReportView, console: Console) -> None:
    """Each judge's figures, other reasons, flags and untested probes (``--details``)."""
    source = report.spans.source if report.spans else None
    titles = (f"Every figure of each judge (truth {term(report.settings.consensus)}, 95% CI)",
              f"Span judges against the human spans (source {term(str(source))}, 95% CI)")
    if console.width >= WIDE and _all_fit(tables := _tables(view, titles), console.width):
        for t in tables:
            console.print(t)
        for j in view.judges:
            if rows := _label_rows(j):  # the label rates, beside the references the wide table has no room for
                console.print(Text.assemble(Text(j.name, style="bold"), ": labels"))
                t = _figure_table()
                for row in rows:
                    t.add_row(*row)
                console.print(t)
            _reasons(j, console)
    else:
        _stacked(view, console, titles)
    likes = {(j.like.words, j.like.definition_text) for j in view.judges if j.like}
    for words, text in sorted(likes):  # said once, not under every judge
        console.print(Text(f"like with like ({words}): {text}", style="dim"))


def print_summary(report: AuditReport | dict[str, Json], console: Console | None = None,
                  details: bool = False) -> None:
    """Page one (:func:`judgecal.report.summary.page_one`: one table, the judges closest to the humans first,
    and the best judge), with ``details`` each judge's figures, reasons and flags, then the truth the audit
    used (``audit.json``'s object is read as the typed report, :func:`judgecal.audit.schema.read_report`)."""
    console = console or Console()
    report = read_report(report)
    view: ReportView = inert_tree(report_view(report))  # names and reasons come from files and models
    if not view.judges:
        console.print(Text("no judge in this workspace yet: run `judgecal judge` or import verdicts"))
    else:
        one: PageOne = inert_tree(page_one(report))
        title = f"Judges against the humans (truth {term(report.settings.consensus)}, 95% CI), closest first"
        console.print(page_one_table(one, title, console.width))
        for row in one.rows:  # each judge's bias profile, counted (the report and the explorer chart it)
            if row.biases:
                console.print(Text(f"{row.judge}: {row.biases}"))
        console.print(Text(one.best_words))
        line = over_time_line(report)
        if line is not None:  # only when records carry a time or a period
            console.print(Text(term(line)))
        if details:
            _details(report, view, console)
    for line in truth_lines(report, view):
        console.print(Text(line))
