"""The OpenAI backend against a real llama_cpp.server serving SmolLM2 on loopback."""

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from conftest import free_port, wait_http

from judgecal.data.records import Candidate, Item
from judgecal.data.store import Workspace
from judgecal.judges.engine import Engine
from judgecal.judges.registry import make_backend
from judgecal.judges.rubric import load_rubric


@pytest.fixture(scope="module")
def server():
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("llama_server.py")), str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/v1/models", proc, 120, "llama_cpp.server")
    yield base
    proc.terminate()
    proc.wait(timeout=20)


def _count(base: str) -> int:
    return int(httpx.get(f"{base}/test/count").json()["chat"])


ITEMS = [
    Item("math", "What is 2 + 2?", [Candidate("4"), Candidate("5")]),
    Item("capital", "What is the capital of France?", [Candidate("Paris."), Candidate("Berlin.")]),
    Item("xss", "Say hello", [Candidate("<script>alert(1)</script>hello"), Candidate("hello")]),
]


def test_both_orders_logprobs_and_zero_requests_on_rerun(tmp_path, server):
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(ITEMS)
    backend = make_backend("openai/smollm2", base_url=f"{server}/v1")
    engine = Engine(ws, backend, load_rubric("pairwise"), judge="openai/smollm2", concurrency=4, progress=False)
    before = _count(server)
    st = engine.run(engine.plan(ws.items_repo.items()))
    assert st.errors == 0, st.error_messages
    assert _count(server) - before == 6
    df = ws.judgments_repo.judgments_frame()
    assert sorted(df["order"]) == ["AB", "AB", "AB", "BA", "BA", "BA"]
    assert df["raw"].str.len().gt(0).all()
    assert df["p_a"].notna().all() and df["p_b"].notna().all()
    assert ((df["p_a"] + df["p_b"] + df["p_tie"] - 1).abs() < 1e-6).all()
    assert df["prompt_tokens"].gt(20).all() and df["completion_tokens"].ge(1).all()
    assert df["latency_s"].gt(0).all()
    assert (df["cost_usd"].isna()).all()  # no price for a self-hosted model name
    # the re-run is answered from the cache: the server sees no new request
    mid = _count(server)
    st2 = engine.run(engine.plan(ws.items_repo.items()))
    assert (st2.cached, st2.done) == (6, 0)
    assert _count(server) == mid
    assert ws.judgments_repo.count_judgments() == 6


def test_batch_manifest_round_trip(tmp_path, server):
    """Export a manifest, answer it as a batch runner would (POST each body), import, resume."""
    import json

    from judgecal.judges import batch

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(ITEMS[:2])
    backend = make_backend("openai/smollm2", base_url=f"{server}/v1")
    engine = Engine(ws, backend, load_rubric("pairwise"), judge="openai/smollm2", progress=False)
    calls = engine.plan(ws.items_repo.items())
    manifest = tmp_path / "batch.jsonl"
    assert batch.export_manifest(engine, calls, manifest) == 4
    lines = [json.loads(x) for x in manifest.read_text().splitlines()]
    assert {x["url"] for x in lines} == {"/v1/chat/completions"}
    results = tmp_path / "results.jsonl"
    with open(results, "w") as fh:
        for x in lines[:3]:
            r = httpx.post(f"{server}{x['url']}", json=x["body"], timeout=60)
            fh.write(json.dumps({"custom_id": x["custom_id"], "response": {"status_code": r.status_code,
                                                                             "body": r.json()}, "error": None}) + "\n")
        fh.write(json.dumps({"custom_id": "not-planned", "response": {"status_code": 200, "body": {}}}) + "\n")
    counts = batch.import_results(engine, manifest, results)
    assert counts == {"stored": 3, "already": 0, "unknown": 1, "failed": 0}
    assert ws.judgments_repo.count_judgments() == 3
    assert ws.judgments_repo.judgments_frame()["p_a"].notna().all()
    # resume: the next manifest holds only the call still missing; re-import stores nothing twice
    assert batch.export_manifest(engine, calls, tmp_path / "batch2.jsonl") == 1
    assert batch.import_results(engine, manifest, results)["already"] == 3
    assert ws.judgments_repo.count_judgments() == 3


@pytest.mark.skipif(not __import__("os").environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set")
def test_real_openai_api(tmp_path):
    import os

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(ITEMS[:1])
    model = os.environ.get("JUDGECAL_OPENAI_MODEL", "gpt-4o-mini")
    engine = Engine(ws, make_backend(f"openai/{model}"), load_rubric("pairwise"), progress=False)
    st = engine.run(engine.plan(ws.items_repo.items()))
    assert st.errors == 0
    df = ws.judgments_repo.judgments_frame()
    assert df["p_a"].notna().all() and df["cost_usd"].gt(0).all()
    assert os.environ["OPENAI_API_KEY"] not in "\n".join(ws._db.conn.iterdump())
