"""Shared fixtures: the dataset mirror in ../shared/datasets, workspaces, the local model."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("JUDGECAL_DATA_MIRROR") or REPO.parent / "shared" / "datasets")


@pytest.fixture(autouse=True)
def _env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGECAL_DATA_MIRROR", str(MIRROR))
    monkeypatch.setenv("JUDGECAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.delenv("JUDGECAL_WORKSPACE", raising=False)


@pytest.fixture(scope="session")
def mirror() -> Path:
    if not (MIRROR / "WeOpenML" / "PandaLM").exists():
        pytest.fail(f"the dataset mirror {MIRROR} is missing; set JUDGECAL_DATA_MIRROR")
    return MIRROR


@pytest.fixture(scope="session")
def pandalm_ws(tmp_path_factory: pytest.TempPathFactory, mirror: Path):  # type: ignore[no-untyped-def]
    """A workspace with PandaLM imported and both consensus methods computed (read-only for tests)."""
    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.ingest import import_dataset
    from judgecal.data.store import Workspace

    ws = Workspace(tmp_path_factory.mktemp("pandalm") / "ws")
    import_dataset(ws, "pandalm")
    compute_consensus(ws, ("ds", "mv"))
    yield ws
    ws.close()


@pytest.fixture(scope="session")
def local_backend():  # type: ignore[no-untyped-def]
    """The real embedded judge (SmolLM2-135M via llama.cpp), loaded once."""
    from judgecal.judges.backends.local import LocalBackend

    return LocalBackend("smollm2", n_ctx=4096)


def recording_client() -> tuple[Any, list[str]]:
    """An httpx client that records every request it sends (``METHOD URL BODY``), to search for leaks."""
    import httpx

    bodies: list[str] = []

    def record(request: httpx.Request) -> None:
        request.read()
        bodies.append(f"{request.method} {request.url} {request.content.decode('utf-8', 'replace')}")

    return httpx.Client(timeout=60, event_hooks={"request": [record]}), bodies


@contextmanager
def annotator_page(url: str, person: dict[str, str]) -> Iterator[Any]:
    """A headless Chromium page logged in to Label Studio at ``url`` as ``person`` (email, password)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/user/login/")
            page.fill("input[name=email]", person["email"])
            page.fill("input[name=password]", person["password"])
            page.locator("button[type=submit], input[type=submit]").first.click()
            page.wait_for_load_state("networkidle", timeout=60_000)
            yield page
        finally:
            browser.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc, seconds: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll ``url`` until it answers 200; fail with the process output if it exits or times out."""
    import time

    import httpx

    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace")[-2000:] if proc.stdout else ""
            raise RuntimeError(f"{what} exited: {out}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"{what} did not become healthy in {seconds:.0f} s")


# Label Studio's own virtual environment (make test installs it there).
os.environ.setdefault("JUDGECAL_LS_VENV", str(REPO / ".venv" / "label-studio"))


def copy_workspace(src, dst):  # type: ignore[no-untyped-def]
    """A writable copy of workspace ``src`` at folder ``dst`` (the session fixture stays untouched)."""
    import shutil

    from judgecal.data.store import Workspace

    dst.mkdir(parents=True)
    src._db.conn.execute("PRAGMA wal_checkpoint(FULL)")
    shutil.copy(src.db_path, dst / "judgecal.sqlite")
    return Workspace(dst)


def json_differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ (floats equal to 1e-9, relative): the golden audits' comparison."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only in one" for k in set(a) ^ set(b)]
        return out + [d for k in set(a) & set(b) for d in json_differences(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} against {len(b)} entries"]
        return [d for k, (x, y) in enumerate(zip(a, b, strict=True)) for d in json_differences(x, y, f"{path}[{k}]")]
    if isinstance(a, float) and isinstance(b, int | float) and not isinstance(b, bool):
        return [] if b == pytest.approx(a, rel=1e-9, abs=1e-12) else [f"{path}: {a} against {b}"]
    return [] if a == b else [f"{path}: {a!r} against {b!r}"]


def audit_example_with(tmp: Path, env: dict[str, str], verdicts: Path) -> str:
    """The example files of ``data/`` and one more judge's ``verdicts`` (a JSONL file) imported into
    ``tmp/ws``, aggregated and audited with ``--details`` in a subprocess under ``env``: the terminal's text."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]

    def cli(*args: str) -> str:
        res = subprocess.run([sys.executable, "-m", "judgecal.cli", *args, "-w", str(tmp / "ws")], env=env,
                             cwd=tmp, capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    cli("import", str(root / "data/items.jsonl"))
    cli("import", str(root / "data/verdicts.jsonl"), "--as", "judgments", "--spec", str(root / "data/judge.yaml"))
    cli("import", str(verdicts), "--as", "judgments")
    cli("aggregate")
    return cli("audit", "--n-boot", "300", "--details")  # the per-judge blocks carry every reason
