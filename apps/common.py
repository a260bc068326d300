"""What every explorer page shares: the workspace, cached reads, safe text and tables with downloads.

Every string from the data (model, judge and annotator names, item text, raw judge output, metadata) is
untrusted. Tables go through ``st.dataframe`` (a canvas grid that renders no markdown or HTML), each text cell isolated
(``isolated_frame``: control characters shown, right-to-left text in its own direction); long text
through ``plain_text`` (``st.text``, bidirectional text isolated) and ``st.code``; the few names in markdown captions through ``md_plain``; plot labels
through ``chart_plain``. Numbers are formatted by :mod:`judgecal.catalogue` and each metric column
carries the catalogue's definition as hover help.

Reads are cached per workspace state (``stamp``: size and modification time of the database, its
write-ahead log and ``reports/audit.json``), so a page rerun touches SQLite only when the data changed.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from judgecal.audit.schema import AuditReport, read_report
from judgecal.catalogue import Estimated, fmt_interval, fmt_metric, fmt_number, fmt_p, info
from judgecal.data.store import DB_NAME, Workspace
from judgecal.inert import csv_frame, isolated, isolated_frame

if TYPE_CHECKING:
    from streamlit.elements.lib.column_types import ColumnConfig

Stamp = tuple[int, ...]

# The first element a Streamlit process draws asks whether it runs in a Python REPL (to print a "use
# streamlit run" warning) by walking inspect.stack(), which resolves the source file of every loaded module:
# 0.3-0.6 s on 2 busy cores, paid by the first reader of a freshly started explorer. The explorer runs
# under `streamlit run` only, so the question is answered here, once, before the server starts.
_dg = sys.modules.get("streamlit.delta_generator")
if _dg is not None and hasattr(_dg, "_use_warning_has_been_displayed"):
    setattr(_dg, "_use_warning_has_been_displayed", True)  # noqa: B010  (a private flag of Streamlit's)


def ws_path() -> Path:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True)
    return Path(ap.parse_known_args(sys.argv[1:])[0].workspace)


def stamp(path: Path) -> Stamp:
    """The workspace state a cached read is keyed by."""
    out: list[int] = []
    for p in (path / DB_NAME, path / f"{DB_NAME}-wal", path / "reports" / "audit.json"):
        try:
            s = p.stat()
            out += [s.st_size, s.st_mtime_ns]
        except FileNotFoundError:
            out += [-1, -1]
    return tuple(out)


@st.cache_resource(max_entries=8, show_spinner=False)
def _recorded(path: str, key: Stamp) -> str | None:
    """Where the latest audit of the workspace wrote its audit.json (recorded in the workspace), per state."""
    ws = Workspace(path, create=False)
    try:
        p = ws.reports_repo.latest_report()
    finally:
        ws.close()
    return None if p is None else str(p)


def report_candidates() -> list[Path]:
    """Where the explorer looks for audit.json, in order: where the latest audit recorded writing it, then
    ``<workspace>/reports/audit.json`` (audits from before the location was recorded)."""
    p = ws_path()
    recorded = _recorded(str(p), stamp(p))
    default = p / "reports" / "audit.json"
    return [Path(recorded), default] if recorded and Path(recorded) != default else [default]


def report_path() -> Path | None:
    """The audit.json the explorer shows: the first of :func:`report_candidates` that exists."""
    return next((c for c in report_candidates() if c.is_file()), None)


@st.cache_resource(max_entries=8, show_spinner=False)
def _report(path: str, key: tuple[int, int]) -> AuditReport | None:
    """The typed report of the audit.json at ``path`` (an earlier schema's upgraded), per state."""
    p = Path(path)
    return read_report(json.loads(p.read_text("utf-8"))) if p.exists() else None


def report() -> AuditReport | None:
    """The typed report the explorer shows (``None``: no audit yet); an audit.json that cannot be read as one
    stops the page with its path, the first field at fault and the command that writes a new one."""
    p = report_path()
    if p is None:
        return None
    s = p.stat()
    try:
        return _report(str(p), (s.st_size, s.st_mtime_ns))
    except ValidationError as exc:
        first = exc.errors()[0]
        why = f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    except (OSError, ValueError) as exc:  # unreadable, or not JSON
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    st.error(f"{md_plain(str(p))} cannot be read as an audit ({md_plain(why)}) — write a new one with "
             "`judgecal audit --workspace WS`.")
    st.stop()


def no_audit() -> None:
    """No audit.json: say exactly where the explorer looked and which command writes one."""
    looked = " and ".join(str(c) for c in report_candidates())
    st.info(md_plain(f"No audit found for this workspace: looked at {looked}. Write one with: judgecal audit "
                     f"--workspace {ws_path()} (an audit records where it wrote its report, so the explorer "
                     f"finds it even with --out)."))


# cache_resource, not cache_data: a frame of a million rows is handed out as it is, not unpickled on every
# rerun; callers never change a frame in place (they derive new ones).
@st.cache_resource(max_entries=64, show_spinner="Reading the workspace...")
def _query(path: str, key: Stamp, name: str, args: tuple[Any, ...],
           kwargs: tuple[tuple[str, Any], ...] = ()) -> Any:
    repo, _, method = name.partition(".")
    ws = Workspace(path, create=False)
    try:
        return getattr(getattr(ws, repo), method)(*args, **dict(kwargs))
    finally:
        ws.close()


def query(name: str, *args: Any, **kwargs: Any) -> Any:
    """``ws.<repository>.<method>(*args, **kwargs)`` for ``name`` ``"<repository>.<method>"`` (an explorer query
    of :mod:`judgecal.data.store`, e.g. ``"explorer_repo.explorer_item"``), cached per state and arguments."""
    p = ws_path()
    return _query(str(p), stamp(p), name, args, tuple(sorted(kwargs.items())))


# -- safe text ------------------------------------------------------------------------------------------
_MD_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
_AUTOLINK = re.compile(r"(?<=[:@])|(?=\.[^\W\d_])")  # where GFM autolinks and emoji shortcodes are found
WORD_JOINER = "\u2060"


def md_plain(value: Any) -> Any:
    """``value`` as literal text in Streamlit markdown: each ASCII punctuation character is
    backslash-escaped (CommonMark allows it for all of them), so no link, image, HTML, directive
    (``:red[...]``), math or table syntax is parsed; a word joiner after ``:``/``@`` and before ``.``+letter
    stops autolinks and emoji shortcodes; bidirectional and invisible characters are shown escaped and a
    right-to-left text isolated (:func:`judgecal.inert.isolated`). Non-strings pass through."""
    if not isinstance(value, str):
        return value
    return _MD_PUNCT.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, isolated(value)))


def plain_text(value: Any) -> None:
    """``value`` as plain text (``st.text``: no markup), bidirectional and invisible characters shown and a
    right-to-left text isolated (:func:`judgecal.inert.isolated`)."""
    st.text(isolated(value))


def chart_plain(value: Any) -> str:
    """``value`` as literal text in a plotly label (which understands ``<a>``, ``<b>``, entities), bidirectional
    text shown and isolated (:func:`judgecal.inert.isolated`)."""
    return html.escape(isolated(value), quote=False)


# -- numbers ----------------------------------------------------------------------------------------------
def fmt_m(m: Estimated | None) -> str:
    """A metric object as ``0.710 (0.680–0.740)``; ``not tested`` when absent, ``undefined`` without a value."""
    return fmt_metric(m)


def fmt_ci(est: Any, ci: Any) -> str:
    lo, hi = (ci or [None, None])[:2] if isinstance(ci, list | tuple) else (None, None)
    return fmt_interval(est, lo, hi) if est is not None else "n/a"


__all__ = ["fmt_interval", "fmt_number", "fmt_p"]


# -- tables -----------------------------------------------------------------------------------------------
def metric_help(columns: dict[str, str]) -> dict[str, ColumnConfig]:
    """column -> a column config whose hover help is the catalogue definition of ``metric``."""
    out = {}
    for col, metric in columns.items():
        m = info(metric)
        text = m.definition + (f" Reference: {m.reference}." if m.reference else "")
        out[col] = st.column_config.Column(help=text or None)
    return out


#: the store's column names as column labels: words, not codes (the grid and its CSV both read these)
COLUMN_WORDS = {"item_id": "item", "model_a": "model A", "model_b": "model B", "shown_order": "order shown",
                "time_spent_s": "time spent (s)", "latency_s": "latency (s)", "cost_usd": "cost (USD)"}


def table(df: pd.DataFrame, key: str, *, help: dict[str, str] | None = None, height: int | None = None,
          metrics: dict[str, str] | None = None) -> None:
    """``df`` as a grid (text never rendered as markup) and a CSV download of exactly that frame (its text cells inert in a spreadsheet: :func:`judgecal.inert.csv_frame`).
    ``metrics`` maps a column to its catalogue metric (hover help); ``help`` gives other columns' help."""
    config: dict[str, ColumnConfig] = metric_help(metrics or {})
    for col, text in (help or {}).items():
        config[col] = st.column_config.Column(help=text)
    shown = df.reset_index(drop=True).rename(columns=COLUMN_WORDS)
    with st.container(key=f"tbl-{key}"):
        # each text cell isolated: a right-to-left name or answer never reorders its row, a control character shows
        st.dataframe(isolated_frame(shown), hide_index=True, column_config=config, height=height or "auto")
    # the CSV is written when the button is clicked (a callable: Streamlit's deferred download), not on every
    # run of the page: making each table's inert CSV took 0.2 s of the Items page's first run at 100k items
    st.download_button("Download CSV", lambda: csv_frame(shown).to_csv(index=False).encode("utf-8"),
                       file_name=f"{key}.csv", mime="text/csv", key=f"dl-{key}", help=f"{key}.csv: this table as shown",
                       on_click="ignore")  # a download needs no rerun (a rerun would also replace the deferred file)


def needs(what: str, command: str) -> None:
    """Say that an analysis is missing and which command produces it."""
    st.info(f"{what} — produced by `{command}`.")


@st.cache_resource(max_entries=8, show_spinner=False)
def _staleness(path: str, audit_json: str, key: Stamp) -> str | None:
    """Why the shown audit.json no longer shows the workspace (new or changed evidence since), per state."""
    ws = Workspace(path, create=False)
    try:
        return ws.reports_repo.staleness(Path(audit_json))
    finally:
        ws.close()


def audit_caption(rep: AuditReport) -> None:
    """The audit's date, truth and settings; first, when the workspace has changed since, a warning naming
    what changed and the command that brings the pages up to date."""
    p, shown = ws_path(), report_path()
    why = _staleness(str(p), str(shown), stamp(p)) if shown is not None else None
    if why:
        st.warning(f"**This audit is stale**: {md_plain(why)}. Run "
                   f"{md_plain(f'judgecal audit -w {p}')} for figures that include it.")
    s = rep.settings
    st.caption(f"Audit {md_plain(rep.generated_at)} · truth: consensus {md_plain(s.consensus)} over "
               f"{rep.consensus.n_items} items · {s.n_boot} bootstrap replicates · "
               f"{int(float(s.ci_level) * 100)}% intervals (item bootstrap)")


def titled_report(title: str, caption: bool = True) -> AuditReport | None:
    """A page's start: its ``title``, then the workspace's audit (with its caption, unless ``caption`` is false),
    or ``None`` after saying where the explorer looked and which command writes one."""
    st.title(title)
    rep = report()
    if rep is None:
        no_audit()
        return None
    if caption:
        audit_caption(rep)
    return rep
