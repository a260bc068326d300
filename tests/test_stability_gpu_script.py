"""benchmarks/gpu_stability.py without a GPU: it refuses cleanly, its item file errors are one line, and its
plan run on the CPU (real transformers, real PandaLM items) writes a run file judgecal imports like any run."""

import json
import sys
from pathlib import Path

import pytest
from conftest import copy_workspace

from judgecal.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import gpu_stability  # noqa: E402


def test_refuses_without_cuda(tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text("")
    out = tmp_path / "run.json"
    assert gpu_stability.main(["--items-file", str(items), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no CUDA device" in err and "nothing written" in err
    assert not out.exists()


def test_item_file_errors_name_file_line_and_field(tmp_path):
    f = tmp_path / "items.jsonl"
    f.write_text('{"format": "judgecal-stability-items/1", "item_id": "x", "AB": []}\n')
    with pytest.raises(gpu_stability.ScriptError, match=r"items.jsonl:1: field 'BA' is missing"):
        gpu_stability.load_items(f)
    f.write_text("\n{oops\n")
    with pytest.raises(gpu_stability.ScriptError, match=r"items.jsonl:2: not valid JSON"):
        gpu_stability.load_items(f)
    names = [v["name"] for v in gpu_stability.plan([1, 8], ["float32", "bfloat16"], vllm=True)]
    assert names == ["base", "batch_size=8", "dtype=bfloat16", "deterministic", "backend=vllm"]


@pytest.mark.timeout(1800)  # transformers on a loaded 2-core machine: minutes; idle, well under one
def test_cpu_plan_writes_a_run_that_judgecal_imports(pandalm_ws, tmp_path):
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    ws.close()
    items = tmp_path / "items.jsonl"
    assert main(["stability", "export-items", str(items), "--items", "1", "-w", str(tmp_path / "ws")]) == 0
    rows = [json.loads(line) for line in items.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["AB"][0]["role"] == "system" and rows[0]["AB"] != rows[0]["BA"]
    out = tmp_path / "run.json"
    assert gpu_stability.main(["--items-file", str(items), "--out", str(out), "--cpu", "--batch-sizes", "1,2",
                               "--dtypes", "float32", "--max-new-tokens", "4"]) == 0
    run = json.loads(out.read_text())
    assert [v["name"] for v in run["variants"]] == ["base", "batch_size=2", "deterministic"]
    assert len(run["outputs"]) == 3 and all(o["AB"] is not None and o["BA"] is not None for o in run["outputs"])
    assert run["variants"][1]["env"]["batch_size"] == 2 and run["variants"][0]["env"]["dtype"] == "float32"
    assert main(["stability", "import", str(out), "-w", str(tmp_path / "ws")]) == 0
    from judgecal.data.store import Workspace

    with Workspace(tmp_path / "ws") as ws2:
        stored = ws2.stability_repo.stability_runs()[-1]
        assert stored["origin"] == "gpu" and stored["judge"] == "hf/smollm2"
        assert len(ws2.stability_repo.stability_verdicts(stored["run_id"])) == 3
        assert main(["stability", "score", "--run", stored["run_id"], "--n-boot", "100", "-w", str(tmp_path / "ws")]) == 0
