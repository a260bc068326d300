"""The annotators' "how to review" page: ``annotation/guidelines.md`` as one self-contained HTML page.

The markdown is rendered by :func:`judgecal.annotation.tasks.markdown_html` (CommonMark with raw HTML
disabled, so any ``<``, ``>`` or ``&`` in the guidelines is escaped) — the same rendering Label Studio
shows as each project's instructions — inside an autoescaped template. ``judgecal annotate push``
writes it to ``<workspace>/reports/how-to-review.html``.
"""

from __future__ import annotations

from pathlib import Path

from markupsafe import Markup

from judgecal.annotation.tasks import guidelines, markdown_html
from judgecal.report.write import environment

PAGE = "how-to-review.html"


def review_page(config: str | None = None) -> str:
    """The page for one labeling config's section (``pairwise``, ``likert``, ``spans``), or all of them."""
    body = Markup(markdown_html(guidelines(config)))  # noqa: S704 - markdown-it with html disabled escapes
    return environment().get_template("how-to-review.html.j2").render(body=body, config=config)


def write_review_page(reports_dir: str | Path, config: str | None = None) -> Path:
    """Write the page to ``reports_dir/how-to-review.html`` (atomically) and return its path."""
    out = Path(reports_dir) / PAGE
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".html.tmp")
    tmp.write_text(review_page(config), "utf-8")
    tmp.replace(out)
    return out
