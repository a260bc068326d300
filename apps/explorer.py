"""judgecal explorer: a multi-page Streamlit app over one workspace (``judgecal app --workspace DIR``).

Pages: Overview (the lead's comparison of the judges, then the trust dashboard), Judges, Labels (binary and
categorical judges), Biases, Models, Stability, Loop, Over time, Spans, Annotators, Items; the pages with nothing to show yet
are folded into one "Not run yet" page with the commands that fill them. It reads
``<workspace>/reports/audit.json`` and the workspace database through small cached queries
(:mod:`judgecal.apps.common`); it never calls a judge. How untrusted text is kept plain is described in
:mod:`judgecal.apps.common`.
"""

from __future__ import annotations

import streamlit as st
from judgecal.apps.common import md_plain, report, report_path, ws_path
from judgecal.apps.page_biases import biases
from judgecal.apps.page_items import annotators_page, items_page
from judgecal.apps.page_judges import judges_page
from judgecal.apps.page_labels import labels_page
from judgecal.apps.page_loop import loop_page
from judgecal.apps.page_models import models_page, spans_page, stability_page
from judgecal.apps.page_not_run import TITLE, folded, not_run_page
from judgecal.apps.page_over_time import over_time_page
from judgecal.apps.page_overview import overview

PAGES = (
    (overview, "Overview", "overview"),
    (judges_page, "Judges", "judges"),
    (labels_page, "Labels", "labels"),
    (biases, "Biases", "biases"),
    (models_page, "Models", "models"),
    (stability_page, "Stability", "stability"),
    (loop_page, "Loop", "loop"),
    (over_time_page, "Over time", "over-time"),
    (spans_page, "Spans", "spans"),
    (annotators_page, "Annotators", "annotators"),
    (items_page, "Items", "items"),
)


def main() -> None:
    st.set_page_config(page_title="judgecal explorer", layout="wide")
    # no page icons: Streamlit fetches Material icons from a third-party host
    empty = folded(report())
    pages = [st.Page(fn, title=title, url_path=path, default=k == 0) for k, (fn, title, path) in enumerate(PAGES)
             if title not in empty]
    if empty:
        pages.append(st.Page(not_run_page, title=f"{TITLE} ({len(empty)})", url_path="not-run"))
    nav = st.navigation(pages)
    with st.sidebar:
        st.caption(f"Workspace: {md_plain(str(ws_path()))}")
        path = report_path()
        if path is not None:  # read when clicked (a deferred download), not on every run of every page
            st.download_button("Download audit.json", path.read_bytes, file_name="audit.json",
                               mime="application/json", key="dl-audit-json", on_click="ignore")
    nav.run()


main()
