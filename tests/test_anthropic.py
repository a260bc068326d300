"""The Anthropic backend: scripted HTTP responses (the paid API cannot be reached here), and a
real call whenever ANTHROPIC_API_KEY is set."""

import json
import os

import pytest

try:  # the Anthropic SDK moved to the httpx2 fork; older releases take httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from judgecal.data.records import Candidate, Item
from judgecal.data.store import Workspace
from judgecal.judges.engine import Engine
from judgecal.judges.registry import make_backend
from judgecal.judges.rubric import load_rubric

ITEM = Item("q", "What is 2 + 2?", [Candidate("4"), Candidate("5")])


def _message(text: str) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 120, "output_tokens": 3}}


def _engine(tmp_path, handler, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    backend = make_backend("anthropic/claude-haiku-4-5", http_client=client)
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([ITEM])
    # one call at a time: the scripted replies below then meet the calls in a fixed order
    return Engine(ws, backend, load_rubric("pairwise"), judge="anthropic/claude-haiku-4-5", progress=False,
                  backoff_base=0.001, concurrency=1)


def test_request_shape_retries_and_cost(tmp_path, monkeypatch):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((request, body))
        if len(seen) == 1:
            return httpx.Response(429, headers={"retry-after": "0"}, json={"type": "error", "error": {
                "type": "rate_limit_error", "message": "slow down"}})
        if len(seen) == 2:
            return httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error",
                                                                          "message": "overloaded"}})
        return httpx.Response(200, json=_message("[[A]]" if len(seen) == 3 else "B"))

    eng = _engine(tmp_path, handler, monkeypatch)
    st = eng.run(eng.plan([ITEM]))
    assert st.errors == 0 and st.retries == 2 and len(seen) == 4
    req, body = seen[-1]
    assert req.url.path == "/v1/messages"
    assert body["system"].startswith("You are an impartial judge")
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["max_tokens"] == 8 and body["model"] == "claude-haiku-4-5"
    assert body.get("temperature", 0.0) == 0.0
    assert "sk-ant-test-not-a-real-key" in " ".join(req.headers.values())
    df = eng.ws.judgments_repo.judgments_frame().set_index("order")
    assert df.loc["AB", "verdict"] == "A" and df.loc["BA", "verdict"] == "A"  # "B" shown second-first
    assert df["cost_usd"].iloc[0] == pytest.approx((120 * 1.0 + 3 * 5.0) / 1e6)
    # the key never reaches the database
    dump = "\n".join(eng.ws._db.conn.iterdump())
    assert "sk-ant-test" not in dump


def test_auth_error_is_recorded_not_retried(tmp_path, monkeypatch):
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(401, json={"type": "error", "error": {"type": "authentication_error",
                                                                      "message": "invalid x-api-key"}})

    eng = _engine(tmp_path, handler, monkeypatch)
    st = eng.run(eng.plan([ITEM], orders=("AB",)))
    assert st.errors == 1 and len(calls) == 1
    assert "HTTP 401" in eng.ws.judgments_repo.judgments_frame()["raw"].iloc[0]


def test_missing_key_is_a_clear_error(monkeypatch):
    from judgecal.judges.base import BackendError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(BackendError, match="ANTHROPIC_API_KEY"):
        make_backend("anthropic/claude-haiku-4-5")


@pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="ANTHROPIC_API_KEY is not set")
def test_real_anthropic_api(tmp_path):
    backend = make_backend(f"anthropic/{os.environ.get('JUDGECAL_ANTHROPIC_MODEL', 'claude-haiku-4-5')}")
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([ITEM])
    eng = Engine(ws, backend, load_rubric("pairwise"), progress=False)
    st = eng.run(eng.plan([ITEM]))
    assert st.errors == 0
    assert ws.judgments_repo.judgments_frame()["prompt_tokens"].gt(0).all()
