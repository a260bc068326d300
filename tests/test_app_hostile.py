"""Untrusted text on every explorer page: names and texts that are markdown, HTML and scripts stay plain text
(no element points at the hostile host, no script runs, no request leaves), in Debian's Chromium."""

import pytest
from explorer_browser import Browser, serve

from judgecal.data.records import Annotation, Candidate, Item, Judgment, Span

HOSTILE = {
    "model": "![pwn](http://evil.example/m.png) [click](http://evil.example/m) :red[red] :smile: [bold]x[/bold]",
    "model_b": "<img src=http://evil.example/i.png onerror=alert(3)> www.evil.example/b",
    "judge": "replay/[j](http://evil.example/j)![j](http://evil.example/j.png)<script>alert(2)</script>",
    "annotators": ("![a](http://evil.example/a.png)", "<a href='http://evil.example/a2'>a2</a>",
                   "[x](http://evil.example/x) $x^2$ www.evil.example/w mail@evil.example :smile:",
                   '=HYPERLINK("http://evil.example/f","open")'),  # a spreadsheet formula
    "item": "![i](http://evil.example/i.png)",  # the shortest id: the one the drill-down opens on
    "text": "Prompt ![p](http://evil.example/p.png) <img src=http://evil.example/q.png onerror=alert(4)> "
            "[link](http://evil.example/p) <script>alert(5)</script>",
    "category": "<b onmouseover=alert(6)>cat</b> [c](http://evil.example/c)",
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A workspace whose names and texts are all hostile markup, audited, served by the explorer."""
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.data.store import Workspace
    from judgecal.report.write import write_report

    ws_dir = tmp_path_factory.mktemp("hostile") / "ws"
    ws = Workspace(ws_dir)

    def iid(k):
        return HOSTILE["item"] if k == 0 else f"item-{k:040d}"

    ws.items_repo.add_items([Item(iid(k), HOSTILE["text"] if k == 0 else f"prompt {k}",
                       [Candidate(HOSTILE["text"], HOSTILE["model"]), Candidate(f"b{k}", HOSTILE["model_b"])],
                       source="hostile", metadata={"category": HOSTILE["category"], "note": HOSTILE["text"]})
                  for k in range(40)])
    ws.annotations_repo.add_annotations([Annotation(iid(k), a, "AB"[(k + n) % 5 == 0], "AB", None, "hostile", f"h/{k}/{n}")
                        for k in range(40) for n, a in enumerate(HOSTILE["annotators"])])
    ws.judgments_repo.add_judgments([Judgment(key=f"h{k}{o}", item_id=iid(k), judge=HOSTILE["judge"], spec_hash="s", order=o,
                               verdict="A" if (o == "AB" or k % 3) else "B", raw=HOSTILE["text"])
                      for k in range(40) for o in ("AB", "BA")])
    ws.spans_repo.add_spans([Span(iid(0), HOSTILE["annotators"][0], 0, 0, 30, HOSTILE["category"], "hostile", "human"),
                  Span(iid(0), HOSTILE["judge"], 0, 7, 40, HOSTILE["category"], "k", "judge")])
    compute_consensus(ws, ("ds",))
    write_report(audit_workspace(ws, AuditOptions(n_boot=100)).to_json(), ws.reports_dir)
    ws.close()
    with serve(ws_dir) as url:
        b = Browser(url)
        yield b, ws_dir
        b.close()


POINTING = """() => [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(
    a => /^(src|srcset|href|xlink:href|action|formaction|data|poster|style)$/.test(a.name)
         && a.value.includes('evil.example'))).map(e => e.outerHTML.slice(0, 200))"""


def test_untrusted_names_and_text_stay_plain_on_every_page(hostile):
    b, ws_dir = hostile
    seen = ""
    for title in b.pages():
        b.open(title)
        if title == "Spans":
            b.select("spans-item", HOSTILE["item"])
        if title == "Items":
            chosen = b.page.locator(".st-key-items-pick input").input_value()
            assert chosen == HOSTILE["item"]  # the item picker shows the id as it is
            for k in range(3):  # the raw outputs, opened
                b.page.locator("[data-testid='stExpander'] summary").nth(k).click()
            b.page.wait_for_timeout(500)
        assert b.page.evaluate(POINTING) == [], title
        links = b.page.locator("img[src*='evil'], a[href*='evil']")
        assert links.count() == 0, (title, [links.nth(i).evaluate("e => e.outerHTML") for i in range(links.count())])
        assert b.page.evaluate("() => [...document.scripts].filter(s => /alert\\([2-6]\\)/.test(s.text)).length") == 0
        assert b.page.locator("b[onmouseover]").count() == 0
        seen += b.text()
        b.page.screenshot(path=str(ws_dir / f"hostile-{title.lower()}.png"), full_page=True)
    assert b.dialogs == [] and b.requests == []
    # the literal text is visible: names in grids and captions, texts in the item view and spans
    for literal in (HOSTILE["model"], HOSTILE["model_b"], HOSTILE["judge"], HOSTILE["text"], *HOSTILE["annotators"]):
        assert literal in seen, literal
    assert "\U0001f604" not in seen  # ":smile:" stayed text, not an emoji


def test_hostile_names_in_downloads_are_the_literal_text(hostile):
    b, _ = hostile
    b.open("Overview")
    csv = b.csv("overview")
    assert HOSTILE["judge"] in set(csv["judge"])
    b.open("Annotators")
    q = b.csv("annotators-quality")
    formula = HOSTILE["annotators"][-1]
    assert set(HOSTILE["annotators"][:-1]) <= set(q["annotator"])
    # in a spreadsheet the formula stays text: the download holds it behind a quote, never as a formula
    assert "'" + formula in set(q["annotator"]) and formula not in set(q["annotator"])
