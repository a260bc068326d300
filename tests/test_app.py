"""The explorer in a real browser: Debian's Chromium driven by Playwright."""

import json
import shutil
import subprocess
import sys

import pytest
from conftest import copy_workspace, free_port, wait_http

from judgecal.data.records import Candidate, Item, Judgment

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EVIL = "<img src=x onerror=alert(1)><script>alert('pwned')</script>"


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, pandalm_ws):
    from judgecal.audit.run import run_audit
    from judgecal.report.write import write_report

    ws_dir = tmp_path_factory.mktemp("app") / "ws"
    ws = copy_workspace(pandalm_ws, ws_dir)
    ws.add_items([Item("0", f"Evil prompt {EVIL}", [Candidate(EVIL, "evil-model"), Candidate("fine")])])
    ws.add_judgments([Judgment(key="evil", item_id="0", judge="replay/x/evil", spec_hash="s", verdict="A",
                               raw=EVIL)])
    # a judge recorded in both orders, so the position-bias plot is drawn
    ws.add_judgments([Judgment(key=f"both{k}{o}", item_id=f"pandalm/{k}", judge="replay/x/both-orders",
                               spec_hash="s", order=o, verdict="A" if (o == "AB" or k % 3) else "B")
                      for k in range(60) for o in ("AB", "BA")])
    write_report(run_audit(ws, n_boot=200), ws.reports_dir)
    ws.close()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(ws_dir),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/_stcore/health", proc, 90, "streamlit")
    yield url, ws_dir
    proc.terminate()
    proc.wait(timeout=20)


def test_page_shows_the_audit_figures_and_escapes_model_output(app_url):
    from playwright.sync_api import sync_playwright

    url, ws_dir = app_url
    report = json.loads((ws_dir / "reports" / "audit.json").read_text())
    errors, dialogs = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(url)
        page.get_by_text("Alignment with the humans").wait_for(timeout=60_000)
        page.get_by_text("Judge verdicts (item orientation)").wait_for(timeout=60_000)
        page.get_by_text("Krippendorff's alpha").wait_for(timeout=60_000)
        page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        table = page.locator("[data-testid='stTable']").first
        rows = table.locator("tr").all_inner_texts()
        for judge, entry in report["judges"].items():
            row = next((r for r in rows if r.split("\t")[0].strip() == judge), None)
            assert row is not None, f"{judge} missing from {rows}"
            for metric in ("accuracy", "macro_f1", "cohen_kappa", "invalid_rate"):
                m = entry["metrics"].get(metric)
                if m and m["estimate"] is not None:
                    assert f"{m['estimate']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}]" in row, (judge, metric)
        card = page.locator("[data-testid='stTable']").nth(1).locator("tr").all_inner_texts()
        first = report["judges"]["replay/x/both-orders"]["metrics"]["first_position_rate"]
        row = next(r for r in card if "replay/x/both-orders" in r and "first_position_rate" in r)
        assert f"{first['estimate']:.4f} [{first['ci_low']:.4f}, {first['ci_high']:.4f}]" in row
        q = first["q"]
        assert (f"{q:.1e}" if 0 < q < 0.001 else f"{q:.4f}") in row
        body = page.inner_text("body")
        from judgecal.aggregate.agreement import fleiss_kappa
        from judgecal.data.store import Workspace

        fk = fleiss_kappa(Workspace(ws_dir).annotations_frame(), 500)
        assert f"{fk['estimate']:.4f} [{fk['ci_low']:.4f}, {fk['ci_high']:.4f}]" in body
        assert page.locator(".js-plotly-plot").count() >= 4  # position plot + 3 confusion heatmaps
        assert "<script>alert('pwned')</script>" in body  # shown as text, not run
        assert page.locator("img[src='x']").count() == 0
        page.screenshot(path=str(ws_dir / "explorer.png"), full_page=True)
        browser.close()
    assert dialogs == []
    assert errors == [], errors


HOSTILE = {
    "model": "![pwn](http://evil.example/m.png) [click](http://evil.example/m) :red[red] :smile: [bold]x[/bold]",
    "model_b": "<img src=http://evil.example/i.png onerror=alert(3)> www.evil.example/b",
    "judge": "replay/[j](http://evil.example/j)![j](http://evil.example/j.png)<script>alert(2)</script>",
    "annotators": ("![a](http://evil.example/a.png)", "<a href='http://evil.example/a2'>a2</a>",
                   "[x](http://evil.example/x) $x^2$ www.evil.example/w mail@evil.example :smile:"),
    "item": "![i](http://evil.example/i.png)",  # the shortest id: the one the drill-down opens on
    "text": "Prompt ![p](http://evil.example/p.png) <img src=http://evil.example/q.png onerror=alert(4)> "
            "[link](http://evil.example/p) <script>alert(5)</script>",
}


@pytest.fixture(scope="module")
def hostile_app(tmp_path_factory):
    """A workspace whose names and texts are all hostile markup, audited, served by the explorer."""
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.run import run_audit
    from judgecal.data.records import Annotation
    from judgecal.data.store import Workspace
    from judgecal.report.write import write_report

    ws_dir = tmp_path_factory.mktemp("hostile") / "ws"
    ws = Workspace(ws_dir)
    def iid(k):
        return HOSTILE["item"] if k == 0 else f"item-{k:040d}"

    items = [Item(iid(k), HOSTILE["text"] if k == 0 else f"prompt {k}",
                  [Candidate(HOSTILE["text"], HOSTILE["model"]), Candidate(f"b{k}", HOSTILE["model_b"])],
                  source="hostile") for k in range(40)]
    ws.add_items(items)
    ws.add_annotations([Annotation(iid(k), a, "AB"[(k + n) % 5 == 0], "AB", None, "hostile", f"h/{k}/{n}")
                        for k in range(40) for n, a in enumerate(HOSTILE["annotators"])])
    ws.add_judgments([Judgment(key=f"h{k}{o}", item_id=iid(k), judge=HOSTILE["judge"], spec_hash="s", order=o,
                               verdict="A" if (o == "AB" or k % 3) else "B", raw=HOSTILE["text"])
                      for k in range(40) for o in ("AB", "BA")])
    compute_consensus(ws, ("ds",))
    write_report(run_audit(ws, n_boot=100), ws.reports_dir)
    ws.close()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(ws_dir),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(f"{url}/_stcore/health", proc, 90, "streamlit")
    yield url, ws_dir
    proc.terminate()
    proc.wait(timeout=20)


def test_untrusted_names_and_text_are_shown_as_plain_text(hostile_app):
    from playwright.sync_api import sync_playwright

    url, ws_dir = hostile_app
    dialogs, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        page = browser.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url) if "evil.example" in r.url else None)
        page.goto(url)
        page.get_by_text("Judge verdicts (item orientation)").wait_for(timeout=60_000)
        page.get_by_text("Krippendorff's alpha").wait_for(timeout=60_000)
        page.locator(".js-plotly-plot").nth(1).wait_for(timeout=60_000)
        page.wait_for_timeout(2000)
        # no element anywhere (img src, a href, svg xlink:href, iframe, css url) points at the hostile host
        pointing = page.evaluate("""() => [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(
            a => /^(src|srcset|href|xlink:href|action|formaction|data|poster|style)$/.test(a.name)
                 && a.value.includes('evil.example'))).map(e => e.outerHTML.slice(0, 200))""")
        assert pointing == []
        links = page.locator("img[src*='evil'], a[href*='evil']")
        assert links.count() == 0, [links.nth(i).evaluate("e => e.outerHTML") for i in range(links.count())]
        assert page.evaluate("() => [...document.scripts].filter(s => /alert\\([2-5]\\)/.test(s.text)).length") == 0
        body = page.inner_text("body").replace("\u2060", "")
        chosen = page.locator("[data-testid='stSelectbox'] input").input_value()
        page.screenshot(path=str(ws_dir / "explorer-hostile.png"), full_page=True)
        browser.close()
    assert dialogs == [] and requests == []
    # the literal text is visible: names in tables and captions, text in the drill-down
    for literal in (HOSTILE["model"], HOSTILE["model_b"], HOSTILE["judge"], HOSTILE["text"], *HOSTILE["annotators"]):
        assert literal in body, literal
    assert "\U0001f604" not in body  # ":smile:" stayed text, not an emoji
    assert chosen == HOSTILE["item"]  # the item picker shows the id as it is
