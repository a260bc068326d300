"""The Items page's selection, made in SQLite (``ws.explorer_repo.explorer_find_items``), against the same filters
computed row by row in pandas on PandaLM's real items, labels and judges (plus a judge recorded in both
orders, a scorer, spans, a second label source and items with categories, one of them a number)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from conftest import copy_workspace

from judgecal.data.records import Annotation, Candidate, Item, Judgment, Span

BOTH = "replay/x/both-orders"
GPT = "replay/pandalm/gpt-3.5-turbo"
SCORER = "replay/x/scorer"


@pytest.fixture(scope="module")
def ws(tmp_path_factory, pandalm_ws):  # type: ignore[no-untyped-def]
    w = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("items-query") / "ws")
    w.items_repo.add_items([Item(i, f"prompt {i}", [Candidate("a", ma), Candidate("b", mb)], metadata={"category": c})
                 for i, ma, mb, c in [("0", "m-x", "m-y", "coding"), ("9", "m-y", None, 3), ("10", "m-z", "m-x", "3"),
                                      ("zz", "m-x", "m-x", "coding"), ("ab", None, None, None)]])
    # both orders on 120 items and the new ones: agreeing, differing, invalid in one order, one order only
    verdicts = ["A", "B", "tie", "invalid"]
    rows = []
    for k, item in enumerate([f"pandalm/{n}" for n in range(120)] + ["0", "9", "10", "zz"]):
        ab, ba = verdicts[k % 4], verdicts[(k * 7 // 3) % 4]
        rows.append(Judgment(key=f"b{k}AB", item_id=item, judge=BOTH, spec_hash="s", order="AB", verdict=ab))
        if k % 5:
            rows.append(Judgment(key=f"b{k}BA", item_id=item, judge=BOTH, spec_hash="s", order="BA", verdict=ba))
        # a second sample and a reworded prompt, which the Items page does not read
        rows.append(Judgment(key=f"b{k}s1", item_id=item, judge=BOTH, spec_hash="s", order="AB", sample=1,
                             verdict="B" if ab == "A" else "A"))
        rows.append(Judgment(key=f"b{k}m", item_id=item, judge=BOTH, spec_hash="s", order="BA", mutation="reworded",
                             verdict="tie"))
    rows.append(Judgment(key="orphan", item_id="not-an-item", judge=BOTH, spec_hash="s", verdict="A"))
    # a scorer: no verdict at all (its item verdict is none, which is never the humans' label)
    rows += [Judgment(key=f"sc{k}", item_id=f"pandalm/{k}", judge=SCORER, spec_hash="s", score=float(k % 5))
             for k in range(40, 90)]
    w.judgments_repo.add_judgments(rows)
    w.annotations_repo.add_annotations([Annotation(i, "expert-1", "B", "AB", 12.0, "review-2026", f"x{i}")
                       for i in ("0", "pandalm/1", "pandalm/7", "pandalm/300")])
    w.spans_repo.add_spans([Span("0", "expert-1", 1, 0, 1, "bad", "experts", "human"),
                 Span("pandalm/2", "expert-1", 0, 0, 3, "bad", "experts", "human"),
                 Span("pandalm/3", BOTH, 0, 0, 0, "", "k1", "judge")])  # an empty mark: looked at, nothing marked
    yield w
    w.close()


def _iv(ab: Any, ba: Any) -> Any:
    """The item verdict, by hand: the orders' common verdict, a tie when they differ, the one order's verdict
    when only one was judged; invalid counts as a tie."""
    ab, ba = ("tie" if v == "invalid" else v for v in (ab, ba))
    if ab is None or ba is None:
        return ab if ba is None else ba
    return ab if ab == ba else "tie"


def _expected(ws, judge, consensus, *, humans=False, orders=False, judges=False, spans=False,  # type: ignore[no-untyped-def]
              categories=(), models=(), label_sources=()) -> pd.DataFrame:
    """The Items page's filters as a reader would write them over whole frames."""
    items = pd.DataFrame([{"item_id": it.item_id, "source": it.source, "task": it.task,
                           "category": it.metadata.get("category"),
                           "model_a": it.candidates[0].model if it.candidates else None,
                           "model_b": it.candidates[1].model if len(it.candidates) > 1 else None}
                          for it in ws.items_repo.items()])
    j = ws.judgments_repo.judgments_frame(columns=("item_id", "judge", "order", "mutation", "sample", "verdict"))
    j = j[(j["mutation"] == "none") & (j["sample"] == 0)]
    per: dict[tuple[str, str], list[Any]] = {}
    for r in j.itertuples():
        per.setdefault((r.judge, r.item_id), [None, None])[["AB", "BA"].index(r.order)] = (
            None if pd.isna(r.verdict) else r.verdict)
    split = {i for i in {i for _, i in per}
             if len({_iv(*v) for (_, i2), v in per.items() if i2 == i} - {None}) > 1}
    cons = ws.annotations_repo.consensus_frame(consensus) if consensus else pd.DataFrame(columns=["item_id", "label"])
    if cons.empty and consensus and ":" in consensus:
        cons = ws.annotations_repo.consensus_frame(consensus.split(":")[0])
    truth = dict(zip(cons["item_id"], cons["label"], strict=True))
    span_items = set(ws.spans_repo.spans_frame()["item_id"])
    ann = ws.annotations_repo.annotations_frame()
    sourced = set(ann[ann["source"].isin(label_sources)]["item_id"])
    rows = []
    for r in items.to_dict("records"):
        i = r["item_id"]
        if judge is not None:
            if (judge, i) not in per:
                continue
            ab, ba = per[(judge, i)]
            r |= {"judge AB": ab, "judge BA": ba}
            if humans and not (i in truth and _iv(ab, ba) != truth[i]):
                continue
            if orders and not (ab is not None and ba is not None and ab != ba):
                continue
        r["humans"] = truth.get(i)
        if ((judges and i not in split) or (spans and i not in span_items)
                or (categories and r["category"] not in categories)
                or (models and r["model_a"] not in models and r["model_b"] not in models)
                or (label_sources and i not in sourced)):
            continue
        rows.append(r)
    out = pd.DataFrame(rows, columns=[*items.columns, *(["judge AB", "judge BA"] if judge else []), "humans"])
    return out.assign(_n=out["item_id"].str.len()).sort_values(["_n", "item_id"]).drop(columns="_n")


CASES = [
    (BOTH, {}), (BOTH, {"humans": True}), (BOTH, {"orders": True}), (BOTH, {"judges": True}),
    (BOTH, {"spans": True}), (BOTH, {"label_sources": ("review-2026",)}), (BOTH, {"categories": ("coding",)}),
    (BOTH, {"categories": (3,)}), (BOTH, {"categories": ("3",)}), (BOTH, {"models": ("m-x",)}),
    (BOTH, {"models": ("m-y", "llama-7b")}), (BOTH, {"humans": True, "orders": True, "judges": True}),
    (GPT, {}), (GPT, {"humans": True}), (GPT, {"orders": True}), (GPT, {"judges": True}),
    (GPT, {"label_sources": ("review-2026", "pandalm"), "models": ("llama-7b",)}),
    (SCORER, {"humans": True}), (None, {}), (None, {"judges": True, "spans": True}),
    (None, {"humans": True, "orders": True}),  # no judge: these two do not apply
    (None, {"categories": ("coding", 3)}), ("nobody/at-all", {}),
]


@pytest.mark.parametrize(("judge", "filters"), CASES, ids=[f"{j}-{sorted(f)}" for j, f in CASES])
@pytest.mark.parametrize("consensus", ["ds", "ds:no-such-subset", "mv", None])
def test_the_sql_selection_is_the_pandas_one(ws, judge, filters, consensus):  # type: ignore[no-untyped-def]
    want = _expected(ws, judge, consensus, **filters)
    n, got = ws.explorer_repo.explorer_find_items(judge, consensus, **filters, limit=5000)
    assert n == len(want)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got.reset_index(drop=True).astype(object).where(got.notna().to_numpy(), None),
                                  want.reset_index(drop=True).astype(object).where(want.notna().to_numpy(), None),
                                  check_dtype=False)
    n5, head = ws.explorer_repo.explorer_find_items(judge, consensus, **filters, limit=5)
    assert n5 == n and list(head["item_id"]) == list(want["item_id"][:5])


def test_the_cases_select_something_and_not_everything(ws):  # type: ignore[no-untyped-def]
    """Each filter above changes the selection (a test of filters that all selected everything would pass)."""
    everything = ws.explorer_repo.explorer_find_items(BOTH, "ds")[0]
    for filters in ({"humans": True}, {"orders": True}, {"judges": True}, {"spans": True},
                    {"label_sources": ("review-2026",)}, {"categories": (3,)}, {"models": ("m-x",)}):
        n = ws.explorer_repo.explorer_find_items(BOTH, "ds", **filters)[0]
        assert 0 < n < everything, filters
    assert ws.explorer_repo.explorer_find_items(SCORER, "ds", humans=True)[0] == 50  # a scorer's missing verdict is never right
    assert ws.explorer_repo.explorer_find_items(BOTH, "ds")[1]["item_id"].tolist()[:4] == ["0", "9", "10", "zz"]


def test_the_item_verdict_is_the_audits(ws):  # type: ignore[no-untyped-def]
    """The Items page's SQL item verdict is the rule of the audit's item-by-item section (the Judges page's
    confusion, :func:`judgecal.audit.models.item_verdicts` with an unreadable answer as a tie), so its "disagrees
    with the humans" filter selects that confusion's off-diagonal."""
    from judgecal.audit.models import item_verdicts

    sql = ws.explorer_repo.explorer_verdicts(judge=BOTH).set_index("item_id")
    assert set(sql["judge"]) == {BOTH} and ws.explorer_repo.explorer_verdicts(judge="nobody").empty
    assert sql["BA"].isna().any()  # one order only on some items
    j = ws.judgments_repo.judgments_frame(BOTH)
    audit = item_verdicts(j[j["mutation"] == "none"], "tie")
    mine = {i: _iv(*(None if pd.isna(r[o]) else r[o] for o in ("AB", "BA"))) for i, r in sql.iterrows()}
    assert set(mine.values()) <= {"A", "B", "tie"}
    assert mine == {i: audit[i] for i in mine}, "the SQL rule and the audit's differ"
    disagree = ws.explorer_repo.explorer_find_items(BOTH, "ds", humans=True, limit=5000)[1]["item_id"]
    truth = ws.annotations_repo.consensus_frame("ds").set_index("item_id")["label"]
    assert set(disagree) == {i for i, v in mine.items() if i in truth.index and v != truth[i]}


def test_filter_choices_and_judges(ws):  # type: ignore[no-untyped-def]
    items = ws.items_repo.items()
    assert sorted(map(repr, ws.explorer_repo.explorer_categories())) == sorted(
        {repr(it.metadata["category"]) for it in items if it.metadata.get("category") is not None})
    assert set(ws.explorer_repo.explorer_models()) == {c.model for it in items for c in it.candidates[:2] if c.model is not None}
    assert len(ws.explorer_repo.explorer_models()) == len(set(ws.explorer_repo.explorer_models()))
    assert ws.explorer_repo.explorer_label_source_names() == sorted(set(ws.annotations_repo.annotations_frame()["source"]))
    j = ws.judgments_repo.judgments_frame(columns=("judge", "mutation", "sample"))
    assert ws.explorer_repo.explorer_judges() == sorted(set(j[(j["mutation"] == "none") & (j["sample"] == 0)]["judge"]))


def test_judge_pairs_are_every_distinct_pair(tmp_path):  # type: ignore[no-untyped-def]
    """judge_names() seeks from one (judge, spec_hash) to the next: the same pairs as a scan of every row."""
    from judgecal.data.store import Workspace

    w = Workspace(tmp_path / "ws")
    w.items_repo.add_items([Item("i", "p", [Candidate("a"), Candidate("b")])])
    specs = [("j", "h2"), ("j", ""), ("j", "h1"), ("a/b", "x"), ("k", "h1"), ("", "z"), ("j", "h1")]
    w.judgments_repo.add_judgments([Judgment(key=f"{n}", item_id="i", judge=j, spec_hash=h, verdict="A")
                     for n, (j, h) in enumerate(specs * 3)])
    scan = w._db.conn.execute("SELECT DISTINCT judge, spec_hash FROM judgments ORDER BY judge, spec_hash").fetchall()
    assert w.judgments_repo._judge_pairs() == scan and len(scan) == 6
    assert set(w.judgments_repo.judge_names()) == set(scan)
    w.close()
