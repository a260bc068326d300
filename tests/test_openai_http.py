"""The plain-HTTP path for OpenAI-compatible servers (``openai-http/<model>``) is the same judge as the
SDK path: same keys, spec and judgments, same handling of malformed replies, 429/Retry-After, context
overflow and credential echoes. A scripted server on 127.0.0.1 stands in for the vendor."""

from __future__ import annotations

from typing import Any

from test_hardening_engine import MALFORMED, completion, vendor  # noqa: F401 - the fixture

from judgecal.data.records import Candidate, Item
from judgecal.data.store import Workspace
from judgecal.judges.engine import Engine
from judgecal.judges.registry import make_backend
from judgecal.judges.rubric import load_rubric


def _items(markers: list[str]) -> list[Item]:
    return [Item(m, f"{m}: which answer is right?", [Candidate("x"), Candidate("y")]) for m in markers]


def test_same_judge_same_keys_same_judgments_as_the_sdk(tmp_path, vendor):  # noqa: F811
    srv = vendor(lambda prompt, headers, n: (200, {}, completion("[[A]]" if "ONE" in prompt else "[[B]]")))
    runs = {}
    for name in ("openai", "openai-http"):
        w = Workspace(tmp_path / name)
        w.items_repo.add_items(_items(["ONE", "TWO", "THREE"]))
        eng = Engine(w, make_backend(f"{name}/m", base_url=srv.url, api_key="sk-test-123456"),
                     load_rubric("pairwise"), progress=False)
        st = eng.run(eng.plan(w.items_repo.items()))
        assert (st.done, st.errors) == (6, 0)
        df = w.judgments_repo.judgments_frame().sort_values("key")
        runs[name] = (eng.spec_hash, df[["key", "item_id", "order", "verdict", "status", "raw",
                                         "prompt_tokens"]].to_dict("records"))
    assert runs["openai"] == runs["openai-http"]
    # the SDK run's workspace answers the plain-HTTP plan from its cache: no request
    w = Workspace(tmp_path / "openai")
    eng = Engine(w, make_backend("openai-http/m", base_url=srv.url, api_key="sk-test-123456"),
                 load_rubric("pairwise"), progress=False)
    before = srv.total()
    assert eng.run(eng.plan(w.items_repo.items())).cached == 6 and srv.total() == before


def test_errors_retries_and_secrets(tmp_path, vendor):  # noqa: F811
    key = "sk-test-abcdef123456"

    def script(prompt: str, headers: Any, n: int):
        for marker, (ctype, body) in MALFORMED.items():
            if marker in prompt:
                return 200, {"Content-Type": ctype}, body
        if "BUSY" in prompt and n == 1:
            return 429, {"Retry-After": "0.05"}, {"error": {"message": "slow down"}}
        if "LONG" in prompt:
            return 400, {}, {"error": {"message": "This model's maximum context length is 8 tokens"}}
        if "ECHO" in prompt:
            return 401, {}, {"error": {"message": f"Incorrect API key provided: {headers['Authorization']}"}}
        return 200, {}, completion("[[A]]")

    srv = vendor(script)
    w = Workspace(tmp_path / "ws")
    w.items_repo.add_items(_items([*MALFORMED, "BUSY", "LONG", "ECHO"]))
    eng = Engine(w, make_backend("openai-http/m", base_url=srv.url, api_key=key), load_rubric("pairwise"),
                 progress=False, backoff_base=0.001)
    st = eng.run(eng.plan(w.items_repo.items(), orders=("AB",)))
    df = w.judgments_repo.judgments_frame().set_index("item_id")
    for m in MALFORMED:
        assert df.loc[m, "status"] == "error" and df.loc[m, "raw"].startswith("BackendError: malformed reply"), m
    assert (df.loc["BUSY", "status"], df.loc["BUSY", "verdict"], st.retries) == ("ok", "A", 1)
    assert df.loc["LONG", "status"] == "too_long"
    assert df.loc["ECHO", "status"] == "error" and "HTTP 401" in df.loc["ECHO", "raw"]
    assert key not in df.to_json() and "[REDACTED]" in df.loc["ECHO", "raw"]
