"""The commands a page shows are run, and the output it shows is what they print: each ```bash block of the
tutorial and the no-labels guide runs with the real CLI in a fresh folder holding `data/` and
`docs/examples/` (after the page's earlier blocks), exits 0, and every line of the ```text block that follows it appears in its output
(whitespace and line wrapping aside; a `...` or `…` line stands for lines left out). A block that needs
Label Studio, people or a browser says so in an HTML comment above it and is not run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/tutorial.md", "docs/how-to/no-labels.md")
SKIP = "not run by tests/test_docs_commands.py"
FENCE = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<body>.*?)\n```", re.S)


def blocks(page: str) -> list[tuple[str, str, str | None, bool]]:
    """(page, commands, the text block right after them or None, skipped) for each ```bash block."""
    text = (ROOT / page).read_text("utf-8")
    found = [(m.group("lang"), m.group("body"), m.group("before"), m.start("lang"), m.end())
             for m in FENCE.finditer(text)]
    out = []
    for k, (lang, body, before, _, end) in enumerate(found):
        if lang != "bash":
            continue
        follows = found[k + 1] if k + 1 < len(found) else None
        shown = follows[1] if follows and follows[0] == "text" and not text[end:follows[3] - 3].strip() else None
        out.append((page, body, shown, SKIP in before))
    return out


def _words(text: str) -> str:
    return " ".join(text.split())


CASES = [b for page in PAGES for b in blocks(page)]


def test_the_pages_have_commands_to_run() -> None:
    for page in PAGES:
        run = [b for b in CASES if b[0] == page and not b[3]]
        assert run and any(b[2] for b in run), page  # something is run and some output is checked
    # the blocks that are not run say why, and are the ones that need what a test cannot start here
    for page, body, _, skipped in CASES:
        needs_more = any(w in body for w in ("annotate ", "make demo", "judgecal app", "git clone"))
        assert skipped == needs_more, (page, body)


def _run(body: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)  # this environment's `judgecal`
    env = {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]), "COLUMNS": "110",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", body], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("case", [c for c in CASES if not c[3]],
                         ids=lambda c: f"{Path(c[0]).stem}:{c[1].splitlines()[0][:50]}")
def test_a_shown_command_prints_what_the_page_shows(case: tuple[str, str, str | None, bool],
                                                    tmp_path: Path) -> None:
    """The block runs in a fresh folder holding `data/` and `docs/examples/`, after the page's earlier blocks."""
    page, body, shown, _ = case
    shutil.copytree(ROOT / "data", tmp_path / "data")
    shutil.copytree(ROOT / "docs" / "examples", tmp_path / "docs" / "examples")
    earlier = [c[1] for c in CASES[:CASES.index(case)] if c[0] == page and not c[3]]
    for step in earlier:
        assert _run(step, tmp_path).returncode == 0, step
    res = _run(body, tmp_path)
    assert res.returncode == 0, f"{page}: {body}\n{res.stderr[-2000:]}"
    if shown is None:
        return
    printed = _words(res.stdout + "\n" + res.stderr)
    for line in shown.splitlines():
        if line.strip() in ("", "...", "…"):
            continue
        assert _words(line) in printed, f"{page}: shown but not printed: {line!r}\n--- printed:\n{res.stdout}"
