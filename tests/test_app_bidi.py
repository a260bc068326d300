"""Bidirectional text in the explorer, in Debian's Chromium: a judge or model name holding U+202E (right-to-left
override) is shown with the override escaped, never acting, in markdown, plain text and pickers; a right-to-left
name is isolated (U+2068 … U+2069, plain text's dir="auto") so it does not reorder the text around it."""

import pytest
from explorer_browser import Browser, serve

from judgecal.data.records import Annotation, Candidate, Item, Judgment

RLO = "\u202e"
JUDGE, MODEL, RTL_JUDGE = f"judge{RLO}lave", f"model{RLO}xe", "מודל-שופט"

# what the page shows outside the grids (canvas cells are their own isolated runs): markdown, text, pickers
SHOWN = """() => [...document.querySelectorAll("[data-testid='stMarkdown'], [data-testid='stText'], "
    + "[data-testid='stCaptionContainer'], [data-testid='stSelectbox'], [data-testid='stExpander'] summary")]
    .map(e => e.innerText).join('\\n')"""


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.data.store import Workspace
    from judgecal.report.write import write_report

    ws_dir = tmp_path_factory.mktemp("bidi-app") / "ws"
    ws = Workspace(ws_dir)
    ws.items_repo.add_items([Item(f"i{k:02d}", f"prompt {k}", [Candidate(f"a{k}", MODEL), Candidate(f"b{k}", "plain")])
                  for k in range(30)])
    ws.annotations_repo.add_annotations([Annotation(f"i{k:02d}", who, "AB"[(k + n) % 4 == 0], "AB", None, "people", f"p/{k}/{n}")
                        for k in range(30) for n, who in enumerate(("h1", "h2"))])
    ws.judgments_repo.add_judgments([Judgment(key=f"{j}{k}{o}", item_id=f"i{k:02d}", judge=j, spec_hash=f"s{j}", order=o,
                               verdict="A" if (o == "AB" or k % 3) else "B")
                      for j in (JUDGE, RTL_JUDGE) for k in range(30) for o in ("AB", "BA")])
    compute_consensus(ws, ("ds",))
    write_report(audit_workspace(ws, AuditOptions(n_boot=100)).to_json(), ws.reports_dir)
    ws.close()
    with serve(ws_dir) as url:
        b = Browser(url)
        yield b
        b.close()


def test_an_override_in_a_name_is_shown_escaped_and_rtl_names_are_isolated(explorer):
    b = explorer
    seen = ""
    for title in ("Overview", "Judges", "Items"):
        b.open(title)
        if title == "Items":
            b.page.locator("[data-testid='stExpander'] summary").first.click()
            b.page.wait_for_timeout(500)
        seen += b.page.evaluate(SHOWN) + "\n"
    assert RLO not in seen  # nowhere acting
    assert "judge\\u202elave" in seen and "model: model\\u202exe" in seen  # shown, as the escape
    assert f"\u2068{RTL_JUDGE}\u2069" in seen  # a right-to-left name in its own isolate
    at = [k for k in range(len(seen)) if seen.startswith(RTL_JUDGE, k)]
    # and never outside one (a sentence naming it is isolated as a whole)
    assert at and all(seen[:k].count("\u2068") > seen[:k].count("\u2069") for k in at)


def test_a_grid_cell_is_isolated_and_its_controls_shown() -> None:
    """The grids are a canvas the page's text cannot be read from: the frame a grid is given is read instead. A
    right-to-left cell is in its own isolate, an override shown escaped; numbers stay numbers and the CSV download
    keeps the text as it is (made inert for a spreadsheet only)."""
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import pandas as pd

        from apps.common import table

        table(pd.DataFrame({"judge": ["מודל-שופט", "judge\u202elave", "plain", None], "n": [1, 2, 3, 4]}), "t")
        # headers too: a model named as another column, a right-to-left one, an override
        m = pd.DataFrame([["a", "b", "c", "d"]], columns=["model", "model", "מודל", "x\u202ey"])
        table(m, "m")

    at = AppTest.from_function(page).run(timeout=60)
    assert not at.exception
    shown = at.dataframe[0].value
    assert shown["judge"].tolist()[:3] == [f"\u2068{RTL_JUDGE}\u2069", "judge\\u202elave", "plain"]
    assert shown["judge"].isna().tolist()[3] and shown["n"].tolist() == [1, 2, 3, 4]
    assert list(at.dataframe[1].value.columns) == ["model", "model (2)", "\u2068מודל\u2069", "x\\u202ey"]
