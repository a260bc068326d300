"""Regenerate the documentation's explorer screenshots from a real run, never by hand.

    python docs/screenshots.py                 # the example files of data/ (seconds, no judge is run)
    python docs/screenshots.py --workspace demo-workspace   # an existing workspace, e.g. after `make demo`

Without ``--workspace`` the example items and verdicts of ``data/`` are imported into a fresh temporary
workspace, aggregated and audited with the real CLI; then ``judgecal app`` serves it and Debian's Chromium
(Playwright, ``/usr/bin/chromium``) captures the Overview and the Items page into ``docs/img/``. The Labels
page is captured from a second workspace: a binary (pass/fail) example written here, two annotators and a
recorded judge with its probability of "pass", imported, aggregated and audited the same way.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update"]


def _cli(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "judgecal.cli", *args], check=True, cwd=cwd, stdout=subprocess.DEVNULL)


def example_workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    _cli("import", str(ROOT / "data/items.jsonl"), "-w", str(ws), cwd=tmp)
    for name in ("families.yaml", "thresholds.yaml"):
        shutil.copy(ROOT / "data" / name, ws / name)
    _cli("import", str(ROOT / "data/verdicts.jsonl"), "--as", "judgments", "--spec", str(ROOT / "data/judge.yaml"),
         "-w", str(ws), cwd=tmp)
    _cli("aggregate", "-w", str(ws), cwd=tmp)
    _cli("audit", "-w", str(ws), cwd=tmp)
    return ws


def label_workspace(tmp: Path, n: int = 48) -> Path:
    """A binary label task: does a support answer cite its source? Two annotators (one careful, one who misses
    a few), and a judge that agrees with the first most of the time and says how sure it is."""
    import json
    import random

    rng = random.Random(3)
    items, verdicts = tmp / "answers.jsonl", tmp / "answer-verdicts.jsonl"
    with items.open("w", encoding="utf-8") as fi, verdicts.open("w", encoding="utf-8") as fv:
        for k in range(n):
            cites = k % 3 != 0
            truth = "pass" if cites else "fail"
            second = truth if rng.random() < 0.85 else ("fail" if cites else "pass")
            answer = (f"Your plan renews on the 1st of each month (see Billing FAQ, section {k % 7 + 1})." if cites
                      else "Your plan renews every month, I believe.")
            fi.write(json.dumps({"id": f"answer-{k:02d}", "prompt": f"Customer question {k}: when does my plan renew?",
                                 "response": answer, "human_labels": {"ann-1": truth, "ann-2": second}}) + "\n")
            said = truth if rng.random() < 0.8 else ("fail" if cites else "pass")
            p_pass = round(rng.uniform(0.6, 0.95) if said == "pass" else rng.uniform(0.05, 0.4), 3)
            fv.write(json.dumps({"item_id": f"answer-{k:02d}", "judge": "example/policy-judge", "label": said,
                                 "p_pass": p_pass, "p_fail": round(1 - p_pass, 3), "raw": f"{said.upper()}"}) + "\n")
    ws = tmp / "labels-ws"
    _cli("import", str(items), "--task", "binary", "--positive", "pass", "-w", str(ws), cwd=tmp)
    _cli("import", str(verdicts), "--as", "judgments", "-w", str(ws), cwd=tmp)
    _cli("aggregate", "-w", str(ws), cwd=tmp)
    _cli("audit", "-w", str(ws), cwd=tmp)
    return ws


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _settle(page: object) -> None:
    """Wait until the script run has finished: no 'Running' widget, nothing stale, then a moment to paint."""
    page.locator("[data-testid='stMain'] h1").first.wait_for(timeout=120_000)  # type: ignore[attr-defined]
    for _ in range(2):  # the status widget may appear only once the first elements are drawn
        page.wait_for_timeout(1500)  # type: ignore[attr-defined]
        page.wait_for_function(  # type: ignore[attr-defined]
            "() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
            "!document.querySelector('[data-stale=\"true\"]')", timeout=120_000)
    page.wait_for_timeout(1500)  # type: ignore[attr-defined]


PAGES = (("", "explorer-overview.png"), ("items", "explorer-items.png"))


def capture(ws: Path, out: Path, pages: tuple[tuple[str, str], ...] = PAGES) -> list[Path]:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(ws), "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    written = []
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise SystemExit("the explorer did not start") from None
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            for path, name in pages:
                page.goto(f"{url}/{path}")
                _settle(page)
                target = out / name
                page.screenshot(path=str(target), full_page=False)
                written.append(target)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", help="an existing workspace with an audit (default: the example files)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(args.workspace) if args.workspace else example_workspace(Path(tmp))
        written = capture(ws, out)
        if not args.workspace:
            written += capture(label_workspace(Path(tmp)), out, (("labels", "explorer-labels.png"),))
        for p in written:
            print(f"wrote {p}")


if __name__ == "__main__":
    main()
