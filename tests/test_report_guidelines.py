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


def test_every_label_studio_project_points_to_the_page(tmp_path):
    """A real Label Studio: `annotate push` writes the page; each annotator's project (seen as that
    annotator) carries the note in its description and the page's guidelines as its instructions."""
    from conftest import free_port

    from judgecal.annotation.annotators import login
    from judgecal.annotation.server import ManagedServer
    from judgecal.cli import main
    from judgecal.data.records import Candidate, Item
    from judgecal.data.store import Workspace

    ws_dir = tmp_path / "ws"
    with Workspace(ws_dir) as ws:
        ws.items_repo.add_items([Item(f"i{k}", f"question {k}", [Candidate(f"answer a{k}", model="m1"),
                                                      Candidate(f"answer b{k}", model="m2")]) for k in range(4)])
    port = free_port()
    server = ManagedServer(ws_dir, port=port)
    server.start()
    try:
        common = ["--port", str(port), "-w", str(ws_dir)]
        assert main(["annotate", "annotators", "--add", "r1@example.org", "r2@example.org", *common]) == 0
        assert main(["annotate", "push", "--budget", "4", "--overlap", "1", *common]) == 0
        written = ws_dir / "reports" / "how-to-review.html"
        assert written.read_text() == page.review_page()
        with Workspace(ws_dir) as ws:
            projects = ws.labelstudio_repo.ls_projects("Blind review")
        from judgecal.annotation.annotators import list_annotators

        people = {p["email"]: p for p in list_annotators(ws_dir)}
        assert set(projects) == set(people) == {"r1@example.org", "r2@example.org"}
        for email, proj in projects.items():
            session = login(server.url, email, people[email]["password"])
            try:
                shown = session.get(f"/api/projects/{proj['project_id']}").json()
            finally:
                session.close()
            # the note sends annotators to what the server shows them, not to a file on the organiser's disk
            assert shown["description"] == tasks.REVIEW_NOTE and "Instructions" in shown["description"]
            assert "how-to-review.html" not in shown["description"] and "folder" not in shown["description"]
            assert shown["expert_instruction"] == tasks.guidelines_html("pairwise")
            assert shown["expert_instruction"] in page.review_page("pairwise")
            for block in re.findall(r"<h2>.*?</h2>", shown["expert_instruction"]):
                assert block in written.read_text()
    finally:
        server.stop()
