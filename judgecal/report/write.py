"""Write ``audit.json`` and a self-contained ``audit.html`` rendered from a Jinja2 template with
autoescaping (inline CSS and SVG plots; every name and text from the workspace is escaped, its bidirectional and
invisible characters shown, and each name isolated with ``dir="auto"`` or ``<bdi>``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from judgecal.audit.schema import AuditReport, Figure, Judge, ReliabilityBin, json_safe, read_report
from judgecal.catalogue import METRICS, fmt_metric, fmt_number, fmt_p
from judgecal.inert import term
from judgecal.report.plots import heatmap_svg, label_rates_svg, metric_forest, prevalence_svg, reliability_svg
from judgecal.report.summary import COLUMNS, LEGEND, NOTE, fmt_gap, more_words, page_one
from judgecal.report.table import Json, at
from judgecal.report.view import ReportView, report_view


def write_report(report: AuditReport | dict[str, Json], out_dir: str | Path,
                 summary_only: bool = False) -> tuple[Path, Path]:
    """``audit.json`` (written atomically) and ``audit.html`` in ``out_dir`` (``summary_only``: the page
    without the per-judge detail, see :func:`render_html`)."""
    data = report.to_json() if isinstance(report, AuditReport) else json_safe(report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js, html_path = out / "audit.json", out / "audit.html"
    tmp = js.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False), "utf-8")
    tmp.replace(js)
    tmp_html = html_path.with_suffix(".html.tmp")
    tmp_html.write_text(render_html(report, summary_only=summary_only), "utf-8")
    tmp_html.replace(html_path)
    return js, html_path


def _num(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 10_000 else fmt_number(v)
    return "n/a" if v is None else str(v)


def _nowrap(text: str) -> Markup:
    """``0.710 (0.680–0.740)`` that may break only between the estimate and its interval."""
    head, sep, tail = str(text).partition(" (")
    parts = [escape(head)] + ([escape("(" + tail)] if sep else [])
    return Markup(" ").join(Markup('<span class="nw">') + p + Markup("</span>") for p in parts)


def _shown(v: Any) -> Any:
    """What a template prints: a text (a name or a model's output, in an element or an attribute) with its control,
    bidirectional and invisible characters shown escaped, as the PDF and the terminal show them
    (:func:`judgecal.inert.term`), so a ``U+202E`` cannot reverse what a reader sees; markup made here (the
    plots, already escaped) as it is."""
    return term(v, keep_lines=True) if isinstance(v, str) and not isinstance(v, Markup) else v


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The template environment: package templates, autoescaping always on, every printed text through
    :func:`_shown`."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("judgecal.report", "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.ChainableUndefined,
                             finalize=_shown)
    env.filters.update(num=_num, pval=fmt_p, metric=fmt_metric, nowrap=_nowrap, reliability=_reliability,
                       label_rates=label_rates_svg, prevalence=prevalence_svg)
    return env


@dataclass(frozen=True)
class PlotView:
    """A chart of audit.html with its title and what it shows."""

    title: str
    svg: Markup
    note: str


def _reliability(bins: list[Json]) -> Markup | None:
    """The reliability diagram of a calibration section as audit.json holds it (its bins read as typed)."""
    return reliability_svg([ReliabilityBin.model_validate(b) for b in bins if isinstance(b, dict)])


def _plots(report: AuditReport | dict[str, Json], view: ReportView) -> list[PlotView]:
    # the consensus figures have no like-for-like line: the humans' Fleiss' κ is another definition
    report = read_report(report)

    def humans_side(key: str) -> Callable[[Judge], Figure | None]:
        def get(entry: Judge) -> Figure | None:
            lfl = entry.reference.like_for_like if entry.reference else None
            humans = lfl.pairwise.humans if lfl and lfl.pairwise else None
            return (humans.kappa if key == "kappa" else humans.accuracy) if humans else None
        return get

    def span_side(entry: Judge) -> Figure | None:
        like = entry.spans.like_for_like if entry.spans else None
        return like.humans if like else None

    row_refs: dict[str, Callable[[Judge], Figure | None]] = {"pairwise_kappa": humans_side("kappa"), "pairwise_accuracy": humans_side("accuracy"),
                "span_f1_pairwise": span_side}
    specs = [("pairwise_kappa", -0.2, None, "the annotators with each other (pairwise, its items)"),
             ("pairwise_accuracy", 0.0, None, "the annotators with each other (pairwise, its items)"),
             ("span_f1_pairwise", 0.0, None, "the annotators with each other (pairwise, its items)"),
             ("cohen_kappa", -0.2, None, ""),
             ("accuracy", 0.0, None, ""),
             ("first_position_rate", 0.0, 0.5, "no position bias"),
             ("position_consistency", 0.0, None, ""),
             ("pad_pick_rate", 0.0, 0.5, "no preference for padding"),
             ("instability_rate", 0.0, 0.0, "perfectly stable"),
             ("prompt_flip_rate", 0.0, 0.0, "no flips"),
             ("weighted_kappa", -0.2, None, ""), ("spearman_rho", -0.2, None, "")]
    out = []
    for metric, lo, ref, ref_label in specs:
        svg = metric_forest(report, metric, lo=lo, ref=ref, ref_label=ref_label, row_ref=at(row_refs, metric))
        if svg is not None:
            m = METRICS[metric]
            note = m.definition + (f" Dashed line: {ref_label} ({fmt_number(ref)})." if ref is not None else "")
            if metric in row_refs:
                note += (f" Red dashed tick on each row (and its dashed interval): {ref_label}, measured the same "
                         "way on the same items — like with like.")
            if metric in ("cohen_kappa", "accuracy"):
                note += (" Against the consensus: no humans' line, because the humans' Fleiss' κ and leave-one-out "
                         "accuracy are other definitions; read the like-for-like figures above.")
            if metric in ("weighted_kappa", "spearman_rho"):  # each pointwise judge has its own ceiling
                note += (" No common line: each judge is read against the annotators' agreement on its own "
                         "items, in its row of the scores table.")
            out.append(PlotView(title=m.title, svg=svg, note=note))
    return out


def render_html(report: AuditReport | dict[str, Json], summary_only: bool = False, printable: bool = False) -> str:
    """The trust report as one self-contained HTML page: page one the summary (:mod:`judgecal.report.summary`:
    each judge's verdict, the reason that matters most, its figures beside the humans' like-for-like reference,
    chance and a trivial rater, what was not tested), ranked by the gap to the humans under a comparison of
    every judge that names the best one, then the detail, left out with ``summary_only``. ``printable`` (the
    PDF): a short decision document, the detail's audit.json sections and plots left to audit.html.
    ``audit.json``'s object is read as the typed report (an earlier schema's upgraded,
    :func:`judgecal.audit.schema.read_report`)."""
    report = read_report(report)
    view = report_view(report)
    matrix = at(report.models.matrix, "humans") if report.models else None
    heat = heatmap_svg(matrix.models, matrix.estimate) if matrix and matrix.models else None
    from judgecal.report.loop import TITLES, loop_tables

    one = page_one(report)
    page = {"summary": one.rows, "best": one.best, "best_words": one.best_words, "fmt_gap": fmt_gap,
            "summary_columns": COLUMNS, "summary_legend": LEGEND, "summary_note": NOTE, "more_words": more_words,
            "summary_only": summary_only, "printable": printable}
    if summary_only:
        return environment().get_template("audit.html.j2").render(**view.template_args(), **page, catalogue=METRICS)
    return environment().get_template("audit.html.j2").render(
        **view.template_args(), **page, catalogue=METRICS, plots=[] if printable else _plots(report, view), heatmap=heat,
        loop_parts=loop_tables(report.loop), loop_titles=TITLES)
