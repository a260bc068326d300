"""The printable trust report: ``audit.html`` printed to PDF with WeasyPrint.

WeasyPrint renders in-process from the same template (CSS paged media: A4, page numbers and the
configuration hash in the footer, the summary of every judge on page one, detail from page two). It runs no
JavaScript and, with :func:`_no_fetch`, loads nothing from outside the document, so untrusted model
text cannot make the renderer act; names and model text reach it inert (:mod:`judgecal.inert`); there is no
browser process to start, sandbox or clean up. WeasyPrint needs the Pango and HarfBuzz system libraries
(``make demo`` and ``make test`` install them on Debian when run as root); where they cannot be loaded,
every command says so in one line (:class:`PdfError`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.audit.schema import AuditReport
from judgecal.errors import ConfigError
from judgecal.inert import inert_tree
from judgecal.report.table import Json
from judgecal.report.write import json_safe, render_html

#: What a Debian/Ubuntu machine installs for the renderer (the Makefile's ``pdf-libs`` installs the same).
SYSTEM_PACKAGES = "libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0"


class PdfError(ConfigError, RuntimeError):
    """The PDF cannot be rendered here (WeasyPrint or its system libraries missing)."""


def _renderer() -> Any:
    """The ``weasyprint`` module, or :class:`PdfError` with one line saying what to install.

    WeasyPrint opens Pango, GObject and HarfBuzz with ``cffi`` when it is imported: a missing library
    is an ``OSError`` ("cannot load library ..."), a missing package an ``ImportError``. Both, and any
    other failure to load the renderer, become the same one-line message.
    """
    try:
        import weasyprint
    except ImportError as exc:
        raise PdfError(f"no PDF: WeasyPrint is not installed ({_first_line(exc)}); "
                       "install it with: pip install 'judgecal-toolkit[pdf]'") from None
    except Exception as exc:  # OSError from cffi's dlopen, or anything else the renderer's import raises
        raise PdfError(f"no PDF: WeasyPrint cannot load its system libraries ({_first_line(exc)}); "
                       f"install them with: apt-get install {SYSTEM_PACKAGES}") from None
    return weasyprint


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def _no_fetch(url: str, *args: Any, **kwargs: Any) -> Any:
    raise ValueError(f"the trust report loads no external resource ({url[:60]})")


def render_pdf(report: AuditReport | dict[str, Json], summary_only: bool = False) -> bytes:
    """The trust report of ``report`` (the typed report or audit.json's object) as PDF bytes: the summary on
    page one, the detail from page two (left out with ``summary_only``)."""
    weasyprint = _renderer()
    data = {**report.to_json(), "schema": report.schema_read} if isinstance(report, AuditReport) else json_safe(report)
    # control characters shown escaped in the PDF's text
    html = render_html(inert_tree(data), summary_only=summary_only, printable=True)
    return bytes(weasyprint.HTML(string=html, url_fetcher=_no_fetch, base_url=None).write_pdf())


def write_pdf(report: AuditReport | dict[str, Json], path: str | Path, summary_only: bool = False) -> Path:
    """Write the PDF atomically to ``path``."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".pdf.tmp")
    tmp.write_bytes(render_pdf(report, summary_only=summary_only))
    tmp.replace(out)
    return out
