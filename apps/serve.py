"""``python -m judgecal.apps.serve run explorer.py ...``: Streamlit's command line with the explorer's
modules (pandas, pyarrow, plotly, the pages) imported before the server starts, so the first reader's page does
not wait for them."""

from __future__ import annotations

import sys

import judgecal.apps.page_items  # noqa: F401
import judgecal.apps.page_judges  # noqa: F401
import judgecal.apps.page_labels  # noqa: F401
import judgecal.apps.page_models  # noqa: F401
import plotly.graph_objects  # noqa: F401  (the pages' charts: half a second to import on a busy machine)
import pyarrow  # noqa: F401  (what Streamlit serialises every table with)
import streamlit.emojis  # noqa: F401  (the first st.info compiles its emoji pattern: a third of a second)
from streamlit.web import cli

if __name__ == "__main__":
    sys.exit(cli.main())
