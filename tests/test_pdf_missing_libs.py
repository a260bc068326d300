"""The PDF on a machine without its system libraries: WeasyPrint cannot open Pango/GObject/HarfBuzz.

The libraries are made unloadable the way a minimal Debian lacks them: ``cffi``'s ``dlopen`` refuses
their names (``OSError: cannot load library ...``), loaded through a ``sitecustomize`` in the child
process only. ``judgecal demo`` skips the PDF with one line and exits 0; ``audit --pdf`` writes
audit.json/html and then says the same line (exit 2); ``report pdf`` says it too (exit 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgecal.report import pdf as pdf_mod

REFUSE = '''
import cffi

_dlopen = cffi.FFI.dlopen


def _refuse(self, name, *args, **kwargs):
    if any(lib in str(name) for lib in ("gobject", "pango", "harfbuzz")):
        raise OSError(f"cannot load library '{name}': {name}: cannot open shared object file")
    return _dlopen(self, name, *args, **kwargs)


cffi.FFI.dlopen = _refuse
'''


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("judgecal")  # the installed command, as a user runs it
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def no_pango_env(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> dict[str, str]:
    site = tmp_path_factory.mktemp("no-pango")
    (site / "sitecustomize.py").write_text(REFUSE, "utf-8")
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "JUDGECAL_DATA_MIRROR": str(mirror),
           "PYTHONPATH": os.pathsep.join([str(site), str(repo), os.environ.get("PYTHONPATH", "")])}
    probe = subprocess.run([sys.executable, "-c", "import weasyprint"], capture_output=True, text=True, env=env)
    assert probe.returncode != 0 and "cannot load library" in probe.stderr, "the simulation did not take effect"
    return env


def _one_line_about_the_libraries(text: str) -> str:
    lines = [ln for ln in text.splitlines() if "no PDF" in ln]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    line = lines[0]
    assert "cannot load library" in line and f"apt-get install {pdf_mod.SYSTEM_PACKAGES}" in line
    return line[line.index("no PDF"):]


def test_demo_audit_and_report_say_one_line(no_pango_env: dict[str, str], tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    demo = _run(["demo", "--items", "2", "--n-boot", "50", "-w", str(ws)], no_pango_env)
    assert demo.returncode == 0, demo.stderr
    said = _one_line_about_the_libraries(demo.stdout)
    assert "skipped the PDF trust report: " + said in demo.stdout
    assert "demo finished" in demo.stdout
    reports = ws / "reports"
    assert (reports / "audit.json").is_file() and (reports / "audit.html").is_file()
    assert not (reports / "audit.pdf").exists()

    out = tmp_path / "out"
    audit = _run(["audit", "--pdf", "--n-boot", "50", "--out", str(out), "-w", str(ws)], no_pango_env)
    assert audit.returncode == 2
    assert _one_line_about_the_libraries(audit.stderr) == said
    assert audit.stderr.strip().splitlines() == [f"judgecal audit: {said}"]
    assert (out / "audit.json").is_file() and (out / "audit.html").is_file()  # what could be written, was
    assert not list(out.glob("audit.pdf*"))

    report = _run(["report", "pdf", str(out / "audit.json")], no_pango_env)
    assert report.returncode == 2
    assert report.stderr.strip().splitlines() == [f"judgecal report: {said}"]
    assert not list(out.glob("audit.pdf*"))


def test_render_pdf_without_weasyprint_is_a_pdf_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "weasyprint", None)  # import weasyprint -> ImportError
    with pytest.raises(pdf_mod.PdfError, match=r"pip install 'judgecal-toolkit\[pdf\]'"):
        pdf_mod.render_pdf({"judges": {}})
