"""Bidirectional text in audit.html and the PDF: a judge, model or annotator name holding U+202E (right-to-left
override) is shown with the override escaped and inside an isolating element (``<bdi>`` or ``dir="auto"``), so it
never reads reversed nor reorders the text around it."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from judgecal.aggregate.consensus import compute_consensus
from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.data.records import Annotation, Candidate, Item, Judgment
from judgecal.data.store import Workspace
from judgecal.report.write import render_html

RLO = "\u202e"
JUDGE, MODEL, ANNOTATOR = f"judge{RLO}lave", f"model{RLO}xe", f"ann{RLO}ab"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("bidi") / "ws")
    ws.items_repo.add_items([Item(f"i{k}", f"q{k}", [Candidate(f"a{k}", model=MODEL), Candidate(f"b{k}", model="plain")])
                  for k in range(24)])
    ws.annotations_repo.add_annotations([Annotation(f"i{k}", who, "A" if (k + n) % 4 else "B") for k in range(24)
                        for n, who in enumerate((ANNOTATOR, "h2"))])
    ws.judgments_repo.add_judgments([Judgment(key=f"{k}{o}", item_id=f"i{k}", judge=JUDGE, spec_hash="s", order=o,
                               verdict="A" if o == "AB" or k % 3 else "B") for k in range(24) for o in ("AB", "BA")])
    compute_consensus(ws, ("ds",))
    return audit_workspace(ws, AuditOptions(n_boot=200)).to_json()


class _Shown(HTMLParser):
    """Every text chunk outside SVG, with whether an enclosing element isolates it (``bdi``, ``dir="auto"``)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool]] = []
        self.chunks: list[tuple[str, bool, bool]] = []  # (text, isolated, in svg)

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br", "col", "input", "img", "link"):
            self.stack.append((tag, tag == "bdi" or dict(attrs).get("dir") == "auto"))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        self.chunks.append((data, any(iso for _, iso in self.stack), any(t == "svg" for t, _ in self.stack)))


def test_names_with_an_override_are_isolated_and_escaped_in_audit_html(report):
    html = render_html(report)
    assert RLO not in html  # nowhere, attributes and plots included: shown as the escape \u202e
    shown = _Shown()
    shown.feed(html)
    for name in (JUDGE, MODEL):
        visible = name.replace(RLO, "\\u202e")
        hits = [(iso, svg) for text, iso, svg in shown.chunks if text.strip() == visible]
        assert hits, name  # each name is shown, escaped, as an element's whole text
        assert all(iso for iso, svg in hits if not svg), (name, hits)  # and isolated wherever it stands alone


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils (make pdf-libs)")
def test_the_pdf_shows_the_override_escaped(report, tmp_path):
    from judgecal.report.pdf import PdfError, write_pdf

    try:
        pdf = write_pdf(report, tmp_path / "audit.pdf")
    except PdfError as exc:
        pytest.skip(str(exc))
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, check=True, text=True).stdout
    assert RLO not in text
    assert "judge\\u202elave" in text.replace("\n", "")
