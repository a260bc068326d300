"""The engine's orchestration: retries, Retry-After, timeouts, errors as data, cache, concurrency.

A scripted in-process backend stands in for a flaky network here; real backends are tested in
test_local_backend.py and test_openai_server.py.
"""

import asyncio
import time

from judgecal.data.records import Candidate, Item
from judgecal.data.store import Workspace
from judgecal.judges.base import BackendError, Request, Response, TransientError, retry_after_seconds
from judgecal.judges.engine import Engine, cache_key
from judgecal.judges.rubric import load_rubric


class Scripted:
    name = "scripted"
    model = "m"
    max_concurrency = 8

    def __init__(self, script=None, delay=0.0):
        self.script = list(script or [])
        self.calls = 0
        self.active = 0
        self.peak = 0
        self.delay = delay

    async def generate(self, request: Request) -> Response:
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(self.delay)
            step = self.script.pop(0) if self.script else "A"
            if isinstance(step, Exception):
                raise step
            return Response(step, [("A", -0.2), ("B", -1.8)], 100, 1)
        finally:
            self.active -= 1


def _items(n=3):
    return [Item(f"i{k}", f"prompt {k}", [Candidate("x"), Candidate("y")]) for k in range(n)]


def _engine(tmp_path, backend, **kw):
    ws = Workspace(tmp_path / "ws")
    kw.setdefault("progress", False)
    return Engine(ws, backend, load_rubric("pairwise"), backoff_base=0.001, **kw)


def test_retries_then_succeeds_and_honours_retry_after(tmp_path):
    be = Scripted([TransientError("429", retry_after=0.2), TransientError("503"), "B"])
    eng = _engine(tmp_path, be)
    t0 = time.perf_counter()
    st = eng.run(eng.plan(_items(1), orders=("AB",)))
    assert time.perf_counter() - t0 >= 0.2
    assert (st.done, st.retries, st.errors) == (1, 2, 0)
    j = eng.ws.judgments_repo.judgments_frame().iloc[0]
    assert j["verdict"] == "B" and j["status"] == "ok"


def test_exhausted_retries_and_bad_requests_become_recorded_errors(tmp_path):
    be = Scripted([TransientError("500")] * 3 + [BackendError("HTTP 401")])
    eng = _engine(tmp_path, be, max_retries=2, concurrency=1)
    st = eng.run(eng.plan(_items(2), orders=("AB",)))
    assert st.errors == 2
    df = eng.ws.judgments_repo.judgments_frame()
    assert set(df["status"]) == {"error"}
    assert any("HTTP 401" in r for r in df["raw"])
    # errors are retried on the next run, not cached
    st2 = eng.run(eng.plan(_items(2), orders=("AB",)))
    assert st2.cached == 0 and st2.errors == 0
    assert set(eng.ws.judgments_repo.judgments_frame()["status"]) == {"ok"}
    assert eng.ws.judgments_repo.count_judgments() == 2


def test_timeout_is_retried(tmp_path):
    be = Scripted(delay=0.3)
    eng = _engine(tmp_path, be, timeout_s=0.05, max_retries=1)
    st = eng.run(eng.plan(_items(1), orders=("AB",)))
    assert st.errors == 1 and st.retries == 1
    assert "TimeoutError" in eng.ws.judgments_repo.judgments_frame()["raw"].iloc[0]


def test_cache_and_order_undoing(tmp_path):
    be = Scripted(["A", "A", "garbage", "tie"])
    eng = _engine(tmp_path, be)
    calls = eng.plan(_items(2))
    assert [c.order for c in calls] == ["AB", "BA", "AB", "BA"]
    st = eng.run(calls)
    assert st.done == 4 and st.invalid == 1
    df = eng.ws.judgments_repo.judgments_frame().set_index(["item_id", "order"])
    # "A" shown first in BA order is the item's B
    assert df.loc[("i0", "AB"), "verdict"] == "A"
    assert df.loc[("i0", "BA"), "verdict"] == "B"
    assert df.loc[("i1", "AB"), "verdict"] == "invalid"
    assert df.loc[("i1", "AB"), "raw"] == "garbage"
    # probabilities are stored in item orientation too
    assert df.loc[("i0", "BA"), "p_b"] > df.loc[("i0", "BA"), "p_a"]
    again = eng.run(eng.plan(_items(2)))
    assert again.cached == 4 and again.done == 0 and be.calls == 4


def test_concurrency_is_bounded(tmp_path):
    be = Scripted(delay=0.02)
    eng = _engine(tmp_path, be, concurrency=3)
    eng.run(eng.plan(_items(10)))
    assert be.peak == 3


def test_cache_key_changes_with_what_changes_the_output():
    r = Request((("user", "hi"),), 8, 0.0, 0, True)
    assert cache_key("b", "m", r) == cache_key("b", "m", Request((("user", "hi"),), 8, 0.0, 0, True))
    assert cache_key("b", "m", r) != cache_key("b", "m", Request((("user", "hi"),), 8, 0.0, 1, True))
    assert cache_key("b", "m", r) != cache_key("b", "m2", r)
    assert cache_key("b", "m", r) != cache_key("b", "m", Request((("user", "hi "),), 8, 0.0, 0, True))


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
