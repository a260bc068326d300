"""Stopping judgecal's long-running commands leaves no process behind: `judgecal app` (SIGTERM and SIGINT) and
`judgecal annotate server start` stopped while Label Studio starts. Real processes, checked through /proc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import free_port, wait_http

ROOT = Path(__file__).resolve().parents[1]


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (Linux /proc children lists)."""
    out: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            for k in kids:
                if k not in out:
                    out.add(k)
                    todo.append(k)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _gone(pids: set[int], seconds: float = 20) -> set[int]:
    deadline = time.time() + seconds
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return {p for p in pids if _alive(p)}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "import", str(ROOT / "data/items.jsonl"), "-w", str(ws)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return ws


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_app_stops_with_every_process_it_started(workspace: Path, sig: signal.Signals) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(workspace),
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/_stcore/health", proc, 90, "streamlit")
        family = {proc.pid} | _descendants(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert _gone(family) == set()
        import socket

        with socket.socket() as s:  # the port is free again
            assert s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_annotate_server_start_stopped_while_starting_leaves_no_label_studio(workspace: Path) -> None:
    exe = Path(os.environ.get("JUDGECAL_LS_VENV", "")) / "bin" / "label-studio"
    if not exe.exists():
        pytest.skip("Label Studio is not installed (make test installs it)")
    info = workspace / "label-studio" / "server.json"
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "annotate", "server", "start", "-w", str(workspace),
                             "--port", str(free_port())], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not info.exists() and time.time() < deadline:
            time.sleep(0.1)
        assert info.exists(), proc.stderr.read() if proc.poll() is not None else "no server.json"
        ls_pid = int(json.loads(info.read_text())["pid"])
        time.sleep(2)  # Label Studio is importing Django: started, not yet healthy
        family = {ls_pid} | _descendants(ls_pid)
        assert _alive(ls_pid)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert _gone(family) == set()
        with pytest.raises(ProcessLookupError):
            os.killpg(ls_pid, 0)  # nothing is left in Label Studio's process group
        assert not info.exists()
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_then_stops_with_every_process_it_started(sig: signal.Signals) -> None:
    """`judgecal serve` (llama.cpp's OpenAI-compatible server) judges over HTTP, then stops cleanly."""
    import httpx

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "serve", "--port", str(port), "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", proc, 120, "judgecal serve")
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60, json={
            "model": "smollm2", "max_tokens": 2, "messages": [{"role": "user", "content": "Say A or B."}]})
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] is not None
        busy = subprocess.run([sys.executable, "-m", "judgecal.cli", "serve", "--port", str(port)],
                              capture_output=True, text=True, timeout=60)
        assert busy.returncode == 2 and f"127.0.0.1:{port} is already in use" in busy.stderr
        family = {proc.pid} | _descendants(proc.pid)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert _gone(family) == set()
        import socket

        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
