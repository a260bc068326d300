"""Stability runs on the real embedded judge and real PandaLM items: deterministic reruns are bit-identical,
no-op variants are not paid twice, the guard's exit codes and diff report, GPU run files, Prometheus."""

import json

import numpy as np
import pytest
from conftest import copy_workspace

from judgecal.cli import main
from judgecal.data.store import Workspace


def _raws(ws):
    df = ws.judgments_repo.judgments_frame(columns=["item_id", "order", "raw", "status", "env"])
    return df


def test_deterministic_reruns_of_the_embedded_judge_are_bit_identical(pandalm_ws, tmp_path):
    items = sorted(pandalm_ws.items_repo.items(), key=lambda it: it.item_id)[:10]
    texts = []
    for k in range(2):  # two fresh workspaces, each a new process-level backend
        ws = Workspace(tmp_path / f"ws{k}")
        ws.items_repo.add_items(items)
        ws.close()
        assert main(["judge", "--judge", "local/smollm2", "--deterministic", "--concurrency", "2", "--quiet",
                     "-w", str(tmp_path / f"ws{k}")]) == 0
        with Workspace(tmp_path / f"ws{k}") as ws:
            df = _raws(ws)
        assert len(df) == 20 and (df["status"] != "error").all()
        env = json.loads(df["env"].iloc[0])
        assert env["deterministic"] is True and env["backend"] == "local"
        texts.append({(r.item_id, r.order): r.raw.encode("utf-8") for r in df.itertuples()})
    assert texts[0] == texts[1]  # byte for byte


@pytest.fixture(scope="module")
def stab_ws(pandalm_ws, tmp_path_factory):
    ws = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("stab") / "ws")
    yield ws
    ws.close()


def test_noop_variants_are_not_paid_twice_and_reruns_hit_the_cache(stab_ws):
    from judgecal.stability.runs import run_stability

    res = run_stability(stab_ws, "local/smollm2", ["seed", "concurrency"], items=6, deterministic=True,
                        levels={"seed": (1, 2), "concurrency": (1,)})
    v = {r["name"]: r for r in res["variants"]}
    assert v["base"]["paid"] == 12 and v["base"]["reused_from"] is None
    for name in ("seed=1", "seed=2", "concurrency=1"):  # greedy + deterministic: nothing the backend computes changes
        assert v[name]["paid"] == 0 and v[name]["reused_from"] == 0 and v[name]["figures"] == v["base"]["figures"]
    n = stab_ws.judgments_repo.count_judgments()
    again = run_stability(stab_ws, "local/smollm2", ["seed", "concurrency"], items=6, deterministic=True,
                          levels={"seed": (1, 2), "concurrency": (1,)})
    assert again["run_id"] == res["run_id"] and all(r["paid"] == 0 for r in again["variants"])
    assert stab_ws.judgments_repo.count_judgments() == n  # the cache answered every call
    # without deterministic mode concurrency can matter (per-instance prefix reuse): measured, own cache key
    free = run_stability(stab_ws, "local/smollm2", ["concurrency", "batch_size"], items=6,
                         levels={"concurrency": (1,), "batch_size": (64,)})
    f = {r["name"]: r for r in free["variants"]}
    assert f["concurrency=1"]["reused_from"] is None and f["concurrency=1"]["paid"] == 12
    assert f["batch_size=64"]["paid"] == 12
    env = json.loads(f["batch_size=64"]["env"])
    assert env["batch_size"] == 64 and json.loads(f["base"]["env"])["batch_size"] == 512
    stored = stab_ws.stability_repo.stability_runs()
    assert {r["run_id"] for r in stored} == {res["run_id"], free["run_id"]}


def _run_file(path, flips: int, dtype_b: str = "bfloat16", items=None):
    """A GPU-style run file: variant 1 answers like variant 0 except on the first ``flips`` items."""
    outs = []
    for j in range(2):
        for k, it in enumerate(items):
            first, second = ("B", "A") if (j == 1 and k < flips) else ("A", "B")
            outs.append({"variant": j, "item_id": it, "AB": f"{first}", "BA": f"{second}"})
    data = {"format": "judgecal-stability-run/1", "judge": "hf/smollm2", "origin": "gpu", "run_id": f"t{flips}",
            "variants": [{"name": "base", "axis": "base", "level": "base", "env": {"dtype": "float32", "gpu": "X"},
                          "prompt": [["user", "Which is better?\nA or B"]]},
                         {"name": f"dtype={dtype_b}", "axis": "dtype", "level": dtype_b,
                          "env": {"dtype": dtype_b, "gpu": "X"}, "prompt": [["user", "Which is better?\nA or B "]]}],
            "outputs": outs}
    path.write_text(json.dumps(data))
    return path


def test_guard_exit_codes_and_diff_report(stab_ws, tmp_path, capsys):
    truth = dict(zip(*stab_ws.annotations_repo.consensus_frame("ds")[["item_id", "label"]].to_numpy().T, strict=True))
    with_a = sorted(i for i in stab_ws.items_repo.item_ids() if truth.get(i) == "A")
    ids = with_a[:2] + sorted(i for i in stab_ws.items_repo.item_ids() if i not in with_a[:2])[:18]
    # shown "A" in AB and "B" in BA: both orders pick candidate A -> verdict A; the flipped items say B
    f = _run_file(tmp_path / "run.json", flips=2, items=ids)
    ws_arg = ["-w", str(stab_ws.path)]
    assert main(["stability", "import", str(f), *ws_arg]) == 0
    run = stab_ws.stability_repo.stability_runs()[-1]
    variants = stab_ws.stability_repo.stability_variants(run["run_id"])
    acc0 = np.mean([truth[i] == "A" for i in ids])
    acc1 = np.mean([truth[i] == ("B" if k < 2 else "A") for k, i in enumerate(ids)])
    assert variants[0]["figures"]["accuracy"] == pytest.approx(acc0)
    assert variants[1]["figures"]["accuracy"] == pytest.approx(acc1)
    shift = 100 * abs(acc1 - acc0)
    assert shift == pytest.approx(10.0)  # two of twenty items, both humans' A, now answered B
    out = tmp_path / "rep"
    capsys.readouterr()
    assert main(["stability", "guard", "--run", run["run_id"], "--threshold", "1.4", "--out", str(out), *ws_arg]) == 1
    md = (out / "stability-guard.md").read_text()
    assert "FAIL" in md and "dtype=bfloat16" in md
    assert "dtype: float32 -> bfloat16" in md  # the fingerprint change is named
    assert "-A or B" in md and "+A or B " in md  # the prompt diff
    rep = json.loads((out / "stability-guard.json").read_text())
    changed = rep["violations"][0]["changed_items"]
    assert [c["item_id"] for c in changed] == ids[:2]
    assert changed[0]["before"] == "A" and changed[0]["after"] == "B"
    assert json.loads(changed[0]["output_after"]) == {"AB": "B", "BA": "A"}
    # a threshold above every shift passes, and so does one above the gated figure's own shift
    assert main(["stability", "guard", "--run", run["run_id"], "--threshold", "50", "--out", str(out), *ws_arg]) == 0
    assert "PASS" in (out / "stability-guard.md").read_text()
    assert main(["stability", "guard", "--run", run["run_id"], "--threshold", str(shift + 1), "--figure", "accuracy",
                 "--out", str(out), *ws_arg]) == 0
    assert main(["stability", "guard", "--run", run["run_id"], "--threshold", str(shift - 1), "--figure", "accuracy",
                 "--out", str(out), *ws_arg]) == 1
    assert main(["stability", "guard", "--run", run["run_id"], "--figure", "nope", *ws_arg]) == 2
    # the business-loss backcalculation (0.7 / 0.5 = 1.4 points) gates like --threshold 1.4
    assert main(["stability", "guard", "--run", run["run_id"], "--tolerated-error-increase", "0.7",
                 "--error-per-point", "0.5", "--out", str(out), *ws_arg]) == 1
    assert main(["stability", "guard", "--run", run["run_id"], "--threshold", "1", "--error-per-point", "0.5",
                 *ws_arg]) == 2
    assert main(["stability", "guard", "--run", "nope", *ws_arg]) == 2
    err = capsys.readouterr().err
    assert "no run 'nope'" in err and "Traceback" not in err


def test_run_file_errors_name_the_file_and_field(stab_ws, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "judgecal-stability-run/1", "judge": "x", "variants": [{"name": "b"}],
                               "outputs": []}))
    assert main(["stability", "import", str(bad), "-w", str(stab_ws.path)]) == 2
    assert f"{bad}: variants[0]: field 'axis'" in capsys.readouterr().err
    bad.write_text("{not json")
    assert main(["stability", "import", str(bad), "-w", str(stab_ws.path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    # what the report reads is checked at the door, not when an audit of the workspace meets it
    variant = {"name": "b", "axis": "seed", "level": "0"}
    for extra, words in (({"variants": [{**variant, "reused_from": "0"}]}, "variants[0]: field 'reused_from'"),
                         ({"variants": [{**variant, "reused_from": 3}]}, "variants[0]: field 'reused_from'"),
                         ({"config": {"notes": {"b": 3}}}, "field 'config.notes'"),
                         ({"config": [1]}, "field 'config' must be an object")):
        bad.write_text(json.dumps({"format": "judgecal-stability-run/1", "judge": "x", "variants": [variant],
                                   "outputs": [], **extra}))
        assert main(["stability", "import", str(bad), "-w", str(stab_ws.path)]) == 2
        assert words in capsys.readouterr().err, words


def test_stability_score_on_prometheus_repeated_gpt4_scores(tmp_path, mirror):
    import pandas as pd

    from judgecal.audit.stability_section import stability_summary
    from judgecal.data.datasets import load_prometheus_mtbench

    assert main(["import", "prometheus/mt-bench", "-w", str(tmp_path / "ws")]) == 0
    assert main(["stability", "repeats", "--judge", "replay/prometheus/gpt-4", "-w", str(tmp_path / "ws")]) == 0
    with Workspace(tmp_path / "ws") as ws:
        summary = stability_summary(ws, n_boot=200)
    s = summary["replay/prometheus/gpt-4"]["runs"][0]
    # by hand from the dataset's own records: mean 1-5 score per repeat on 0-1, sample sd in points
    recs = load_prometheus_mtbench(offline=True).judgments
    df = pd.DataFrame({"sample": [j.sample for j in recs], "score": [j.score for j in recs]})
    means = ((df.groupby("sample")["score"].mean() - 1) / 4).to_numpy()
    assert len(means) == 3
    sigma = 100 * np.std(means, ddof=1)
    fig = s["figures"]["mean_score"]
    assert fig["sigma_pp"] == pytest.approx(sigma) and fig["score"] == pytest.approx(max(0, 100 - 50 * sigma))
    assert fig["sigma_ci"][0] is not None and fig["sigma_ci"][1] >= fig["sigma_ci"][0]
    assert s["kind"] == "scores" and s["n_items"] == len(df) // 3
    assert any(k.startswith("mean_score:") for k in s["figures"])


def test_cross_backend_and_summary_for_reports(stab_ws, tmp_path):
    from judgecal.audit.stability_section import stability_summary

    truth = dict(zip(*stab_ws.annotations_repo.consensus_frame("ds")[["item_id", "label"]].to_numpy().T, strict=True))
    with_a = sorted(i for i in stab_ws.items_repo.item_ids() if truth.get(i) == "A")
    ids = with_a[:1] + sorted(i for i in stab_ws.items_repo.item_ids() if i not in with_a[:1])[:39]
    f = _run_file(tmp_path / "xb.json", flips=1, items=ids)
    data = json.loads(f.read_text())
    data["run_id"] = "xb"
    data["variants"][1].update(name="backend=local", axis="backend", level="local")
    f.write_text(json.dumps(data))
    assert main(["stability", "import", str(f), "-w", str(stab_ws.path)]) == 0
    summary = stability_summary(stab_ws, n_boot=100)["hf/smollm2"]
    run = next(r for r in summary["runs"] if any(v["axis"] == "backend" for v in r["variants"]))
    (xb,) = run["cross_backend"]
    # one of forty items, a human "A", answered B: accuracy moves 2.5 points, outside the 0.8 tolerance
    assert xb["difference_pp"] == pytest.approx(-2.5) and xb["within_tolerance"] is False
    assert xb["item_agreement"] == pytest.approx(39 / 40) and xb["n"] == 40
    assert run["variants"][1]["identical_outputs"] == pytest.approx(39 / 40)
    assert run["guard"]["status"] == "fail" and summary["guard"] in ("pass", "fail")
    assert summary["score"]["score"] == min(r["score"] for r in summary["runs"][-1]["figures"].values()
                                            if r["score"] is not None)
    assert run["fingerprint_diffs"][0]["changes"][0]["field"] == "dtype"
    # the same summary as every surface shows it: the per-axis breakdown, the environment change, the agreement
    from judgecal.audit.schema import JudgeStability, json_safe
    from judgecal.report.stability import stability_tables
    from judgecal.report.write import render_html

    typed = JudgeStability.model_validate(json_safe(summary))  # as audit.json's reader types it
    assert typed.to_json() == json_safe(summary)  # typing keeps every key and value as written
    parts = stability_tables(typed)
    rid = run["run_id"][:12]
    [ax] = [r for r in parts["axes"] if r["run"] == rid and r["figure"] == "accuracy"]
    assert ax["axis"] == "backend" and ax["share"] == 1.0 and ax["max_shift_pp"] == pytest.approx(-2.5)
    assert ax["at"] == "backend=local"
    [env] = [r for r in parts["environment"] if r["run"] == rid]
    assert env["changes"].startswith("dtype: float32 -> ")
    [ag] = [r for r in parts["agreement"] if r["run"] == rid]
    assert ag["kind"] == "backend" and ag["difference_pp"] == pytest.approx(-2.5) and ag["within_tolerance"] is False
    assert {r["origin"] for r in parts["runs"]} >= {"gpu"}
    html = render_html({"judges": {"hf/smollm2": {"kind": "pairwise", "metrics": {}, "stability": summary}}})
    assert "Which axis moves the figures" in html and "What changed in the environment" in html
    assert "dtype: float32 -&gt; " in html  # escaped like every text


def test_deterministic_mode_is_refused_for_vendor_apis(stab_ws, capsys):
    assert main(["judge", "--judge", "openai/gpt-4o-mini", "--deterministic", "--items", "1", "-w",
                 str(stab_ws.path)]) == 2
    err = capsys.readouterr().err
    assert "--deterministic: deterministic decoding is not available for openai/" in err and "Traceback" not in err
