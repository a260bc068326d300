"""Regenerate the documentation's explorer screenshots from a real run, never by hand.

    python docs/screenshots.py                 # the example files of data/ (seconds, no judge is run)
    python docs/screenshots.py --workspace demo-workspace   # an existing workspace, e.g. after `make demo`

Without ``--workspace`` the example items and verdicts of ``data/`` are imported into a fresh temporary
workspace, aggregated and audited with the real CLI; then ``judgecal app`` serves it and Debian's Chromium
(Playwright, ``/usr/bin/chromium``) captures the Overview and the Items page into ``docs/img/``.
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


def capture(ws: Path, out: Path) -> list[Path]:
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
            for path, name in (("", "explorer-overview.png"), ("items", "explorer-items.png")):
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
        for p in capture(ws, out):
            print(f"wrote {p}")


if __name__ == "__main__":
    main()
