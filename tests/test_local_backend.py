"""The embedded judge, for real: SmolLM2-135M in process via llama.cpp."""

import asyncio
import math

from judgecal.data.records import Candidate, Item
from judgecal.data.store import Workspace
from judgecal.judges.base import Request
from judgecal.judges.engine import Engine
from judgecal.judges.rubric import load_rubric


def test_generate_returns_text_tokens_and_first_token_logprobs(local_backend):
    req = Request((("user", "Which is larger, 3 or 7? Reply with one number."),), 4, 0.0, 0, True, 5)
    out = asyncio.run(local_backend.generate(req))
    assert out.status == "ok" and out.text
    assert out.prompt_tokens and out.prompt_tokens > 5 and out.completion_tokens >= 1
    assert out.top_logprobs is not None and len(out.top_logprobs) == 5
    lps = [lp for _, lp in out.top_logprobs]
    assert lps == sorted(lps, reverse=True) and all(lp <= 0 for lp in lps)
    assert 0 < sum(math.exp(lp) for lp in lps) <= 1 + 1e-6
    # greedy decoding of the same request is repeatable
    assert asyncio.run(local_backend.generate(req)).text == out.text


def test_too_long_prompt_is_a_recorded_status(local_backend):
    req = Request((("user", "word " * 5000),), 4, 0.0, 0, False)
    out = asyncio.run(local_backend.generate(req))
    assert out.status == "too_long" and out.text == ""


def test_engine_records_both_orders_with_probabilities(tmp_path, local_backend):
    ws = Workspace(tmp_path / "ws")
    items = [Item("m", "What is 2 + 2?", [Candidate("4"), Candidate("5")]),
             Item("long", "x " * 5000, [Candidate("a"), Candidate("b")])]
    ws.items_repo.add_items(items)
    eng = Engine(ws, local_backend, load_rubric("pairwise"), judge="local/smollm2", progress=False)
    st = eng.run(eng.plan(items))
    assert st.done == 4 and st.errors == 0
    df = ws.judgments_repo.judgments_frame().set_index(["item_id", "order"])
    ok = df.loc["m"]
    assert set(ok.index) == {"AB", "BA"}
    assert ok["verdict"].isin(["A", "B", "tie", "invalid"]).all()
    assert ok["p_a"].notna().all()
    assert (df.loc["long", "status"] == "too_long").all()
    assert (df.loc["long", "verdict"] == "invalid").all()
    assert ok["rubric_version"].iloc[0] == load_rubric("pairwise").version
    assert '"backend": "local"' in ok["env"].iloc[0]


def test_pointwise_rubric_scores_with_expected_score(tmp_path, local_backend):
    ws = Workspace(tmp_path / "ws")
    items = [Item("p1", "Name the capital of France.", [Candidate("Paris is the capital of France.")],
                  task="pointwise"),
             Item("p2", "Name the capital of France.", [Candidate("Bananas are yellow.")], task="pointwise")]
    ws.items_repo.add_items(items)
    eng = Engine(ws, local_backend, load_rubric("pointwise-5"), judge="local/smollm2", progress=False)
    calls = eng.plan(items)
    assert [c.order for c in calls] == ["AB", "AB"]  # one presentation for a single response
    st = eng.run(calls)
    assert st.done == 2 and st.errors == 0
    df = ws.judgments_repo.judgments_frame()
    assert df["verdict"].isna().all()
    ok = df[df["status"] == "ok"]
    assert ok["score"].between(1, 5).all()
    assert (df["status"] == "ok").eq(df["score"].notna()).all()
    scored = df["expected_score"].dropna()
    assert scored.between(1, 5).all()
