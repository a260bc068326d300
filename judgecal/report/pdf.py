"""The printable trust report: ``audit.html`` printed to PDF with WeasyPrint.

WeasyPrint renders in-process from the same template (CSS paged media: A4, page numbers and the
configuration hash in the footer, verdicts and scores on page one, detail from page two). It runs no
JavaScript and, with :func:`_no_fetch`, loads nothing from outside the document, so untrusted model
text cannot make the renderer act; names and model text reach it inert (:mod:`judgecal.inert`); there is no browser process to start, sandbox or clean up.
WeasyPrint needs the Pango and HarfBuzz system libraries (``make setup`` installs them on Debian).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.inert import inert_tree
from judgecal.report.write import json_safe, render_html


class PdfError(RuntimeError):
    """The PDF cannot be rendered here (WeasyPrint or its system libraries missing)."""


def _no_fetch(url: str, *args: Any, **kwargs: Any) -> Any:
    raise ValueError(f"the trust report loads no external resource ({url[:60]})")


def render_pdf(report: dict[str, Any]) -> bytes:
    """The trust report of ``report`` (an audit.json dict) as PDF bytes."""
    try:
        import weasyprint
    except ImportError as exc:  # the package is missing, or Pango cannot be loaded
        raise PdfError(f"the PDF report needs WeasyPrint and the Pango libraries: pip install "
                       f"'judgecal-toolkit[pdf]' and apt-get install libpango-1.0-0 libpangoft2-1.0-0 ({exc})") from None
    html = render_html(inert_tree(json_safe(report)))  # control characters shown escaped in the PDF's text
    return bytes(weasyprint.HTML(string=html, url_fetcher=_no_fetch, base_url=None).write_pdf())


def write_pdf(report: dict[str, Any], path: str | Path) -> Path:
    """Write the PDF atomically to ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".pdf.tmp")
    tmp.write_bytes(render_pdf(report))
    tmp.replace(out)
    return out
