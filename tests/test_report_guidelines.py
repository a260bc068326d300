"""The annotators' "how to review" page from annotation/guidelines.md: formatted, escaped, and the same
text Label Studio shows as each project's instructions."""

import re

import pytest

from judgecal.annotation import tasks
from judgecal.report import guidelines as page


def test_page_is_the_formatted_guidelines(tmp_path):
    html = page.review_page()
    md = tasks.guidelines()
    title = md.splitlines()[0].lstrip("# ").strip()
    assert f"<h1>{title}</h1>" in html and html.startswith("<!doctype html>")
    for section in re.findall(r"^## (.+)$", md, re.M):
        assert f"<h2>{section}</h2>" in html
    assert "<strong>A better</strong>" in html and "<ol>" in html
    assert "**" not in html  # markdown is converted, not shown literally
    out = page.write_review_page(tmp_path / "reports")
    assert out == tmp_path / "reports" / "how-to-review.html" and out.read_text() == html


@pytest.mark.parametrize("kind", ["pairwise", "likert", "spans"])
def test_each_projects_instructions_are_on_the_page(kind):
    shown_in_label_studio = tasks.guidelines_html(kind)
    assert shown_in_label_studio in page.review_page(kind)
    # the full page has every kind's section
    for block in re.findall(r"<h2>.*?</h2>", shown_in_label_studio):
        assert block in page.review_page()


def test_hostile_guidelines_stay_text(monkeypatch):
    evil = ("# Guide <script>alert(1)</script>\n\n<img src=x onerror=alert(1)>\n\n"
            "[click](javascript:alert(1)) and **bold**\n")
    monkeypatch.setattr(page, "guidelines", lambda config=None: evil)
    html = page.review_page()
    assert "<script>" not in html and "<img" not in html and "javascript:" not in html.split("</style>")[1] \
        .replace("[click](javascript:alert(1))", "")
    assert "&lt;script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<strong>bold</strong>" in html and 'href="javascript' not in html
