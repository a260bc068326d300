"""The demo's last line opens the explorer when pasted where the demo ran, with the environment's ``bin``
folder not on PATH (as after ``make demo``): the line names this environment's ``judgecal``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import free_port, wait_http
from explorer_browser import Browser

REPO = Path(__file__).resolve().parents[1]
BARE_PATH = "/usr/bin:/bin"  # no virtual environment's bin folder


def _bare_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = BARE_PATH
    return env


def _command(cwd: Path, path: str) -> str:
    code = "from judgecal.cli.common import judgecal_command; print(judgecal_command())"
    env = {**_bare_env(), "PATH": path}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_command_is_plain_judgecal_only_when_path_finds_this_one(tmp_path: Path) -> None:
    scripts = Path(sys.executable).parent
    assert _command(tmp_path, f"{scripts}{os.pathsep}{BARE_PATH}") == "judgecal"
    outside = _command(tmp_path, BARE_PATH)
    assert Path(outside).is_absolute() and Path(outside).name == "judgecal"
    if scripts.is_relative_to(REPO):  # the checkout's .venv, as after `make demo`: relative to the checkout
        assert _command(REPO, BARE_PATH) == str((scripts / "judgecal").relative_to(REPO))


def test_the_demos_last_line_pasted_opens_the_explorer(tmp_path: Path) -> None:
    ws = tmp_path / "demo-ws"
    demo = subprocess.run([sys.executable, "-m", "judgecal.cli", "demo", "--items", "2", "--n-boot", "50",
                           "--quiet", "-w", str(ws)], cwd=REPO, env=_bare_env(), capture_output=True, text=True,
                          timeout=600)
    assert demo.returncode == 0, demo.stderr[-2000:]
    lines = [s for s in demo.stdout.splitlines() if s.startswith("open the explorer: ")]
    assert len(lines) == 1, demo.stdout[-2000:]
    line = lines[0].removeprefix("open the explorer: ")
    assert line.split()[0] != "judgecal" and line.endswith(f"app --workspace {ws}")
    port = free_port()
    proc = subprocess.Popen(["bash", "-c", f"exec {line} --port {port}"], cwd=REPO, env=_bare_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/_stcore/health", proc, 90, "the pasted line")
        b = Browser(f"http://127.0.0.1:{port}")
        try:
            assert "local/smollm2" in b.text() and b.errors == []
        finally:
            b.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
