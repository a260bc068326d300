"""Shared fixtures: the dataset mirror in ../shared/datasets, workspaces, the local model."""

from __future__ import annotations

import os
from pathlib import Path

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
