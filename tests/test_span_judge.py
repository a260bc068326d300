"""The embedded judge (SmolLM2-135M via llama.cpp) as a span judge, end to end through the CLI, on real
FaithBench items; and how the engine stores a span judge's answers (spans replaced, never left behind)."""

from __future__ import annotations

import collections
import json
import os

import pytest

from judgecal.data.records import Candidate, Item
from judgecal.judges.base import Response
from judgecal.judges.quotes import MATCHES, normalise, parse_quotes, quote_counts

JUDGE = "local/smollm2"


@pytest.fixture(scope="module")
def judged(tmp_path_factory, mirror):  # type: ignore[no-untyped-def]
    """FaithBench imported, then the embedded judge run on five items with the hallucination-spans rubric."""
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)  # module scope: before the per-test environment
    path = tmp_path_factory.mktemp("spanjudge") / "ws"
    assert main(["import", "faithbench", "-w", str(path)]) == 0
    argv = ["judge", "--judge", JUDGE, "--rubric", "spans-hallucination", "--items", "5", "--max-tokens", "128",
            "--concurrency", "1", "--quiet", "-w", str(path)]
    assert main(argv) == 0
    w = Workspace(path)
    yield w, argv
    w.close()


def _texts(ws, ids):  # type: ignore[no-untyped-def]
    return {it.item_id: it.candidates[0].text for it in ws.items_repo.items(ids=list(ids))}


def test_span_judge_stores_judgments_and_spans(judged) -> None:  # type: ignore[no-untyped-def]
    ws, _ = judged
    j = ws.judgments_repo.judgments_frame(judge=JUDGE)
    assert len(j) == 5 and set(j["order"]) == {"AB"}
    assert set(j["status"]) <= {"ok", "invalid", "too_long"} and (j["status"] == "ok").any()
    assert j.loc[j.status == "ok", "raw"].str.len().min() > 0  # the raw answer is kept
    sp = ws.spans_repo.spans_frame(kind="judge")
    assert set(sp["rater"]) == {JUDGE} and set(sp["source"]) <= set(j["key"])
    ok = j[j.status == "ok"]
    assert set(sp["source"]) == set(ok["key"])  # every readable answer left at least one row
    assert set(zip(sp.item_id, sp.source, strict=True)) <= set(zip(j.item_id, j.key, strict=True))
    texts = _texts(ws, sp["item_id"].unique())
    for row in sp.itertuples():
        text = texts[row.item_id]
        assert 0 <= row.start <= row.end <= len(text)
        note = json.loads(row.note) if row.note else {}
        if row.end > row.start:
            assert row.label == "hallucination" and note["match"] in MATCHES[:3]
            quote = note["quotes"][0].strip().strip("\"'`\u201c\u201d")
            if note["match"] == "exact":
                assert text[row.start:row.end] == quote
            elif note["match"] == "fuzzy":
                assert 85 <= note["similarity"] < 100
        else:  # an empty row: the judge looked; its unaligned quotes are really nowhere in the text
            for q in note.get("unaligned", []):
                assert q.strip().strip("\"'`\u201c\u201d") not in text
                assert normalise(q)[0].strip(" \"'`") not in normalise(text)[0]


def test_unaligned_quotes_are_counted_not_dropped(judged) -> None:  # type: ignore[no-untyped-def]
    ws, _ = judged
    j = ws.judgments_repo.judgments_frame(judge=JUDGE)
    sp = ws.spans_repo.spans_frame(kind="judge")
    # every quote parsed again from the raw answers is in the spans table, aligned or not
    parsed = collections.Counter(q for raw in j.loc[j.status == "ok", "raw"] for q in parse_quotes(raw) or [])
    stored: collections.Counter[str] = collections.Counter()
    for note in sp["note"].dropna():
        d = json.loads(note)
        stored.update(d.get("quotes", []) + d.get("unaligned", []))
    assert stored == parsed
    counts = quote_counts(sp)[JUDGE]
    assert counts["quotes"] == sum(parsed.values())
    assert counts["quotes"] == sum(counts[m] for m in MATCHES)
    print(f"\nembedded span judge on 5 FaithBench items: {counts}")


def test_span_metrics_against_the_human_consensus(judged) -> None:  # type: ignore[no-untyped-def]
    from judgecal.audit.spans import workspace_span_alignment

    ws, _ = judged
    figures = workspace_span_alignment(ws, n_boot=200)
    assert JUDGE in figures
    mine = figures[JUDGE]
    for name in ("span_iou", "span_f1", "span_precision", "span_recall"):
        m = mine[name]
        assert m["n"] >= 1, name
        assert 0.0 <= m["ci_low"] <= m["estimate"] <= m["ci_high"] <= 1.0, (name, m)
    assert mine["span_iou"]["estimate"] <= mine["span_f1"]["estimate"]  # IoU <= F1 item by item
    print({k: round(v["estimate"], 3) for k, v in mine.items()
           if isinstance(v, dict) and isinstance(v.get("estimate"), float)})


def test_rerun_is_cached_and_leaves_spans_as_they_were(judged, capsys) -> None:  # type: ignore[no-untyped-def]
    from judgecal.cli import main

    ws, argv = judged
    before = ws.spans_repo.spans_frame(kind="judge")
    capsys.readouterr()
    assert main(argv) == 0
    assert "5 cached, 0 run" in capsys.readouterr().out
    after = ws.spans_repo.spans_frame(kind="judge")
    assert after.equals(before)


# -- the engine's handling of span answers (real backend, answers written by hand) ------------------------
SOURCE = "The council approved the new library on Monday. It will open in 2027 and cost 12 million euros."
SUMMARY = "The council approved a new library on Friday. It opens in 2027 and costs 20 million euros."


@pytest.fixture()
def engine(tmp_path, local_backend):  # type: ignore[no-untyped-def]
    from judgecal.data.store import Workspace
    from judgecal.judges.engine import Engine
    from judgecal.judges.rubric import load_rubric

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([Item("lib", SOURCE, [Candidate(SUMMARY, "m")], task="pointwise", source="hand")])
    eng = Engine(ws, local_backend, load_rubric("spans-hallucination"), max_tokens=128, progress=False)
    yield eng
    ws.close()


def test_engine_turns_quotes_into_spans_and_replaces_them(engine) -> None:  # type: ignore[no-untyped-def]
    ws = engine.ws
    (call,) = engine.plan(ws.items_repo.items(), orders=("AB", "BA"))  # a span judge reads one text: one order
    j = engine.to_judgment(call, Response('- "on Friday"\n- costs 20 MILLION euros\n- in Berlin'), 0.1)
    engine.store([j])
    stored = ws.judgments_repo.judgments_frame()
    assert list(stored["status"]) == ["ok"] and stored["score"].isna().all()
    sp = ws.spans_repo.spans_frame(kind="judge")
    marked = sorted(SUMMARY[s:e] for s, e in zip(sp.start, sp.end, strict=True) if e > s)
    assert marked == ["costs 20 million euros", "on Friday"]
    assert quote_counts(sp)[engine.judge] == {"exact": 1, "normalised": 1, "fuzzy": 0, "unaligned": 1, "quotes": 3}
    # the same call answered again (e.g. after an error) keeps only the new answer's spans
    engine.store([engine.to_judgment(call, Response("NONE"), 0.1)])
    sp = ws.spans_repo.spans_frame(kind="judge")
    assert list(zip(sp.start, sp.end, sp.note, strict=True)) == [(0, 0, None)]
    # an answer with nothing to read is invalid and leaves no spans
    engine.store([engine.to_judgment(call, Response("  \n"), 0.1)])
    assert list(ws.judgments_repo.judgments_frame()["status"]) == ["invalid"]
    assert ws.spans_repo.spans_frame(kind="judge").empty
    # a prompt too long for the model: its status is kept, no spans
    engine.store([engine.to_judgment(call, Response("", status="too_long"), 0.1)])
    assert list(ws.judgments_repo.judgments_frame()["status"]) == ["too_long"] and ws.spans_repo.spans_frame(kind="judge").empty


def test_keyfacts_coverage_judge_scores_and_quotes(tmp_path, local_backend, capsys) -> None:  # type: ignore[no-untyped-def]
    from judgecal.data.store import Workspace
    from judgecal.judges.engine import Engine
    from judgecal.judges.rubric import load_rubric

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([Item("kf", "library", [Candidate(SUMMARY, "m")], task="pointwise", source="hand",
                       reference="The library will cost 12 million euros.")])
    # answers written by hand (a spec of its own: max_tokens 1, never called)
    eng = Engine(ws, local_backend, load_rubric("keyfacts-coverage"), max_tokens=1, progress=False)
    (call,) = eng.plan(ws.items_repo.items())
    assert "max_tokens 1 leaves a span judge little room to quote" in capsys.readouterr().err
    eng.store([eng.to_judgment(call, Response('Partial\n"costs 20 million euros"'), 0.1)])
    assert ws.judgments_repo.judgments_frame()["score"].tolist() == [0.5]
    sp = ws.spans_repo.spans_frame(kind="judge")
    assert [(SUMMARY[s:e], lab) for s, e, lab in zip(sp.start, sp.end, sp.label, strict=True)] == \
        [("costs 20 million euros", "covers")]
    eng.store([eng.to_judgment(call, Response("I am not sure."), 0.1)])  # "not" reads as none
    assert ws.judgments_repo.judgments_frame()["score"].tolist() == [0.0]
    eng.store([eng.to_judgment(call, Response("Maybe."), 0.1)])
    assert ws.judgments_repo.judgments_frame()["status"].tolist() == ["invalid"]


def test_embedded_keyfacts_judge_on_summary_of_a_haystack(tmp_path, mirror) -> None:  # type: ignore[no-untyped-def]
    """The embedded judge decides coverage of real key facts through the CLI; its agreement with the
    person is computable (two items: the point is the path, not the figure)."""
    import numpy as np

    from judgecal.cli import main
    from judgecal.data.store import Workspace
    from judgecal.stats import keyfacts as K

    path = str(tmp_path / "ws")
    assert main(["import", "summary-of-a-haystack", "-w", path]) == 0
    assert main(["judge", "--judge", JUDGE, "--rubric", "keyfacts-coverage", "--items", "2", "--max-tokens", "64",
                 "--concurrency", "1", "--quiet", "-w", path]) == 0
    with Workspace(path, create=False) as ws:
        j = ws.judgments_repo.judgments_frame(judge=JUDGE).set_index("item_id")
        sp = ws.spans_repo.spans_frame(kind="judge", raters=[JUDGE])
        human = ws.annotations_repo.annotations_frame().set_index("item_id").loc[j.index, "label"]
    assert len(j) == 2 and j["raw"].str.len().gt(0).all()
    ok = j.status == "ok"
    assert set(j.loc[ok, "score"]) <= {0.0, 0.5, 1.0} and j.loc[~ok, "score"].isna().all()
    assert set(sp["source"]) == set(j.loc[ok, "key"])
    truth = human.map({c: k for k, c in enumerate(K.COVERAGE)}).to_numpy()
    pred = np.where(ok, (j["score"].fillna(0) * 2).astype(int), -1)
    agree = K.agreement(truth, pred, n_boot=200)
    assert agree["accuracy"]["n"] == int(ok.sum()) and agree["n_invalid"]["estimate"] == int((~ok).sum())
    if ok.any():
        assert 0.0 <= agree["accuracy"]["estimate"] <= 1.0
    print(f"\nembedded coverage judge: {dict(zip(j.index, j.raw.str[:60], strict=True))}, person {list(human)}")


# -- the same rubric over the OpenAI-compatible API (a real llama_cpp.server), directly and as a batch ----
@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    import subprocess
    import sys
    from pathlib import Path

    from conftest import free_port, wait_http

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("llama_server.py")), str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/v1/models", proc, 120, "llama_cpp.server")
    yield base
    proc.terminate()
    proc.wait(timeout=20)


def test_span_judge_over_the_openai_api_and_batch(tmp_path, server) -> None:  # type: ignore[no-untyped-def]
    import httpx

    from judgecal.data.store import Workspace
    from judgecal.judges import batch
    from judgecal.judges.engine import Engine
    from judgecal.judges.registry import make_backend
    from judgecal.judges.rubric import load_rubric

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([Item("lib", SOURCE, [Candidate(SUMMARY, "m")], task="pointwise", source="hand"),
                  Item("lib2", SOURCE, [Candidate(SUMMARY.replace("Friday", "Monday"), "m")], task="pointwise",
                       source="hand")])
    rubric = load_rubric("spans-hallucination")

    def engine() -> Engine:
        backend = make_backend("openai/smollm2", base_url=f"{server}/v1")
        return Engine(ws, backend, rubric, judge="openai/smollm2", max_tokens=64, logprobs=False, progress=False)

    direct = engine()
    st = direct.run(direct.plan(ws.items_repo.items(ids=["lib"])))
    assert st.errors == 0 and st.done == 1, st.error_messages
    # the batch route: a manifest answered by POSTing each body, imported by an engine that planned nothing
    calls = engine().plan(ws.items_repo.items(ids=["lib2"]))
    manifest = tmp_path / "batch.jsonl"
    assert batch.export_manifest(engine(), calls, manifest) == 1
    line = json.loads(manifest.read_text())
    r = httpx.post(f"{server}{line['url']}", json=line["body"], timeout=120)
    (tmp_path / "results.jsonl").write_text(json.dumps(
        {"custom_id": line["custom_id"], "response": {"status_code": r.status_code, "body": r.json()}}) + "\n")
    assert batch.import_results(engine(), manifest, tmp_path / "results.jsonl")["stored"] == 1
    j = ws.judgments_repo.judgments_frame()
    assert sorted(j["item_id"]) == ["lib", "lib2"] and set(j["judge"]) == {"openai/smollm2"}
    assert j["raw"].str.len().gt(0).all()
    sp = ws.spans_repo.spans_frame(kind="judge")
    ok = j[j.status == "ok"]
    assert set(sp["source"]) == set(ok["key"])  # each readable answer stored its spans, batch included
    parsed = sum(len(parse_quotes(raw) or []) for raw in ok["raw"])
    assert quote_counts(sp).get("openai/smollm2", {"quotes": 0})["quotes"] == parsed
