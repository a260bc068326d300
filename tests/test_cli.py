"""The CLI: --help everywhere, the workspace option, and a small end-to-end demo."""

import json
import subprocess
import sys

import pytest

from judgecal.cli import main

COMMANDS = ["import", "judge", "aggregate", "audit", "app", "datasets", "demo", "export"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_help(cmd):
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", cmd, "--help"], capture_output=True, text=True)
    assert res.returncode == 0
    assert "usage: judgecal" in res.stdout
    if cmd not in ("datasets",):
        assert "--workspace" in res.stdout


def test_workspace_from_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JUDGECAL_WORKSPACE", str(tmp_path / "ws"))
    assert main(["import", "llmbar/Natural"]) == 0
    assert "100 items" in capsys.readouterr().out


def test_missing_workspace_is_a_clear_error(tmp_path, capsys):
    assert main(["audit", "--workspace", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_small_demo_end_to_end(tmp_path, capsys):
    ws = tmp_path / "demo"
    assert main(["demo", "--workspace", str(ws), "--items", "4", "--n-boot", "200", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "audit.json" in out and "local/smollm2" in out
    rep = json.loads((ws / "reports" / "audit.json").read_text())
    assert set(rep["judges"]) == {"local/smollm2", "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"}
    local = rep["judges"]["local/smollm2"]
    assert local["n_judgments"] == 8 and local["orders"] == ["AB", "BA"]
    assert "first_position_rate" in local["metrics"]
    assert (ws / "reports" / "audit.html").exists()
    # a second run makes no new calls
    assert main(["demo", "--workspace", str(ws), "--items", "4", "--n-boot", "200", "--quiet"]) == 0
    assert "0 new calls, 8 cached" in capsys.readouterr().out


def test_export(tmp_path, capsys):
    assert main(["import", "pandalm", "-w", str(tmp_path / "ws")]) == 0
    assert main(["export", "annotations", str(tmp_path / "a.parquet"), "-w", str(tmp_path / "ws")]) == 0
    import pandas as pd

    assert len(pd.read_parquet(tmp_path / "a.parquet")) == 2997


def test_replay_judge_restores_recorded_verdicts(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", "llmbar/Natural", "-w", ws]) == 0
    from judgecal.data.store import Workspace

    with Workspace(ws) as w:
        w._db.conn.execute("DELETE FROM judgments WHERE judge = 'replay/llmbar/GPT-4/Swap_CoT'")
    assert main(["judge", "--judge", "replay/llmbar/GPT-4/Swap_CoT", "-w", ws]) == 0
    assert "200 recorded judgments stored from llmbar/Natural" in capsys.readouterr().out
    assert main(["judge", "--judge", "replay/llmbar/GPT-5/Nope", "-w", ws]) == 2
    assert "records no judge" in capsys.readouterr().err
    assert main(["judge", "--judge", "replay/pandalm/gpt-3.5-turbo", "-w", ws]) == 2
    assert "import its dataset first" in capsys.readouterr().err


def test_annotate_and_annotators_commands(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    assert main(["annotate", "server", "status", "-w", ws]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"running": False}
    assert main(["annotate", "pull", "-w", ws, "--port", "9"]) == 69  # EX_UNAVAILABLE: no server to pull from
    assert "not running" in capsys.readouterr().err
    assert main(["annotators", "-w", ws, "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    assert "pandalm-annotator1" in out and "Fleiss' kappa 0.86" in out
    rep = json.loads((tmp_path / "ws" / "reports" / "annotators.json").read_text())
    assert set(rep) == {"source", "annotators", "fleiss_kappa", "krippendorff_alpha", "pairwise_cohen_kappa",
                        "n_labels", "n_items", "n_annotators", "sources"}
    assert rep["source"] == "pandalm"


@pytest.mark.parametrize("given", [None, "jemalloc"])
def test_the_cli_uses_the_c_allocator_for_arrow_unless_told_otherwise(given):
    """The command line sets pyarrow's allocator before pandas loads it (lower peak memory, faster audits); a
    value the user set is kept."""
    import os

    import pyarrow

    if given and given not in pyarrow.supported_memory_backends():
        pytest.skip(f"this pyarrow has no {given} allocator")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if given:
        env["ARROW_DEFAULT_MEMORY_POOL"] = given
    code = "import judgecal.cli, pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (given or "system")
