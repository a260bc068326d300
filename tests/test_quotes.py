"""Quote alignment and answer parsing for span judges (hand-made cases for every path)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from judgecal.judges.quotes import (
    Aligner,
    align_quotes,
    judge_spans,
    normalise,
    parse_coverage,
    parse_quotes,
    quote_counts,
    read_span_answer,
)
from judgecal.judges.rubric import RubricError, load_rubric

TEXT = ("The  Mayor of São Paulo said on Tuesday that the bridge, built in 1998, will close in May. "
        "The bridge will reopen in 2026.")


def one(text: str, quote: str, **kw):  # type: ignore[no-untyped-def]
    return align_quotes(text, [quote], **kw)[0]


def test_exact_path_gives_the_offsets_of_the_quote() -> None:
    a = one(TEXT, "built in 1998")
    assert (a.match, a.similarity) == ("exact", 100.0)
    assert TEXT[a.start:a.end] == "built in 1998"
    # surrounding quotation marks and spaces are not part of the quote
    b = one(TEXT, '  "built in 1998"  ')
    assert (b.start, b.end, b.match) == (a.start, a.end, "exact")
    assert b.quote == '  "built in 1998"  '  # the judge's own words are kept


def test_normalised_path_maps_back_to_original_offsets() -> None:
    a = one(TEXT, "the MAYOR of sao\npaulo")  # case, a line break for the double space, no accent
    assert a.match == "normalised"
    assert TEXT[a.start:a.end] == "The  Mayor of São Paulo"
    # typographic quotes and dashes in the text, plain ones in the quote
    t = "He said it\u2019s the mayor\u2019s \u201cbest \u2014 ever\u201d bridge."
    b = one(t, 'it\'s the mayor\'s "best - ever" bridge')
    assert b.match == "normalised" and t[b.start:b.end] == "it\u2019s the mayor\u2019s \u201cbest \u2014 ever\u201d bridge"
    # a decomposed accent in the text (e + combining acute) against a composed one in the quote
    t2 = "Le cafe\u0301 est ferme\u0301 le lundi."
    c = one(t2, "café est fermé")
    assert c.match == "normalised" and t2[c.start:c.end] == "cafe\u0301 est ferme\u0301"


def test_normalise_index_points_at_original_characters() -> None:
    norm, index = normalise("A\u00a0 B\u2014\u00c9x")
    assert norm == "a b-ex"
    assert list(index) == [0, 1, 3, 4, 5, 6]
    ascii_norm, ascii_index = normalise("A \t B\nc")
    assert ascii_norm == "a b c" and list(ascii_index) == [0, 1, 4, 5, 6]
    assert normalise("") == ("", pytest.approx([]))


def test_elided_quote_spans_from_first_to_last_piece() -> None:
    a = one(TEXT, "said on Tuesday ... will close in May")
    assert a.match == "normalised"
    assert TEXT[a.start:a.end] == "said on Tuesday that the bridge, built in 1998, will close in May"
    # pieces out of order are not a match
    assert not one(TEXT, "will close in May ... said on Tuesday", min_fuzzy=1000).aligned


def test_fuzzy_path_above_threshold_widened_to_words() -> None:
    a = one(TEXT, "the bridge build in 1998 will clse")
    assert a.match == "fuzzy" and 85 <= a.similarity < 100
    assert TEXT[a.start:a.end] == "the bridge, built in 1998, will close"
    # the same quote with a threshold above its similarity is recorded as unaligned
    b = one(TEXT, "the bridge build in 1998 will clse", threshold=a.similarity + 1)
    assert (b.match, b.start, b.end) == ("unaligned", 0, 0)
    # a quote shorter than min_fuzzy never goes fuzzy: "1999" would otherwise land on "1998"
    assert one(TEXT, "1999", threshold=70).match == "unaligned"
    c = one(TEXT, "1999", threshold=70, min_fuzzy=1)
    assert c.match == "fuzzy" and TEXT[c.start:c.end] == "1998"


def test_not_found_is_recorded_not_dropped() -> None:
    out = align_quotes(TEXT, ["built in 1998", "the president resigned", "", "Lisbon"])
    assert [a.match for a in out] == ["exact", "unaligned", "unaligned", "unaligned"]
    assert [a.quote for a in out] == ["built in 1998", "the president resigned", "", "Lisbon"]
    spans = judge_spans("i1", "j", "k1", out, label="hallucination")
    assert [(s.start, s.end) for s in spans] == [(TEXT.index("built"), TEXT.index("built") + 13), (0, 0)]
    assert json.loads(spans[1].note or "") == {"unaligned": ["the president resigned", "", "Lisbon"]}
    assert spans[0].label == "hallucination" and spans[1].label == "" and spans[1].kind == "judge"
    frame = pd.DataFrame([s.__dict__ for s in spans])
    assert quote_counts(frame) == {"j": {"exact": 1, "normalised": 0, "fuzzy": 0, "unaligned": 3, "quotes": 4}}


def test_repeated_substrings_take_successive_occurrences() -> None:
    t = "the cat sat; the cat ran; the cat slept"
    out = align_quotes(t, ["the cat", "the cat", "the cat", "the cat"])
    assert [a.start for a in out] == [0, 13, 26, 0]  # a fourth quote falls back to the first place
    # the free place may only be found after normalisation
    out = align_quotes(TEXT, ["the bridge", "the bridge"])
    assert [a.match for a in out] == ["exact", "normalised"]
    assert TEXT[out[1].start:out[1].end] == "The bridge"
    spans = judge_spans("i", "j", "k", align_quotes(t, ["the cat", "the cat", "the cat", "the cat"]))
    assert len(spans) == 3 and json.loads(spans[0].note or "")["quotes"] == ["the cat", "the cat"]


def test_overlapping_quotes_both_align() -> None:
    t = "the cat sat on the mat"
    a, b = align_quotes(t, ["the cat sat", "sat on the mat"])
    assert (a.start, a.end, b.start, b.end) == (0, 11, 8, 22)
    assert a.match == b.match == "exact"


def test_aligner_builds_the_normalised_text_lazily() -> None:
    al = Aligner(TEXT)
    al.align("built in 1998")
    assert al._norm is None  # the exact path did not need it
    al.align("BUILT IN 1998")
    assert al._norm is not None


@pytest.mark.parametrize(("raw", "quotes"), [
    ("NONE", []),
    ("none.", []),
    ("- NONE", []),
    ("No unsupported spans.", []),
    ('"built in 1998"', ["built in 1998"]),
    ("1. built in 1998\n2) will close in May\n3: x", ["built in 1998", "will close in May", "x"]),
    ("- built in 1998\n* will close\n\u2022 in May", ["built in 1998", "will close", "in May"]),
    ("Unsupported spans:\n- \u201cbuilt in 1998\u201d and \u201cin May\u201d", ["built in 1998", "in May"]),
    ("Quote 1: `the bridge`\nQuote: 'reopen'", ["the bridge", "reopen"]),
    ("The summary says \"in May\" but the source says June.", ["in May"]),
    ("a\na", ["a", "a"]),
    ("", None),
    ("   \n  ", None),
    ("Spans:", None),
])
def test_parse_quotes(raw: str, quotes: list[str] | None) -> None:
    assert parse_quotes(raw) == quotes


@pytest.mark.parametrize(("raw", "label", "quotes"), [
    ("partial\n\"the bridge\"", "partial", ["the bridge"]),
    ("Coverage: FULL \"built in 1998\"", "full", ["built in 1998"]),
    ("Fully covered.\n- the bridge will reopen", "full", ["the bridge will reopen"]),
    ("The fact is not covered.", "none", []),
    ("none\n\"ignored\"", "none", []),
    ("I cannot tell.", None, []),
])
def test_parse_coverage(raw: str, label: str | None, quotes: list[str]) -> None:
    assert parse_coverage(raw, ["full", "partial", "none"]) == (label, quotes)


def test_read_span_answer_statuses() -> None:
    assert read_span_answer("NONE", TEXT) == ("ok", None, [])
    assert read_span_answer("", TEXT) == ("invalid", None, [])
    status, score, al = read_span_answer("- built in 1998\n- Lisbon", TEXT)
    assert status == "ok" and score is None and [a.match for a in al] == ["exact", "unaligned"]
    cov = (("full", 1.0), ("partial", 0.5), ("none", 0.0))
    status, score, al = read_span_answer('partial\n"will close in May"', TEXT, cov)
    assert (status, score, [a.match for a in al]) == ("ok", 0.5, ["exact"])
    assert read_span_answer("maybe", TEXT, cov) == ("invalid", None, [])


def test_span_rubrics_load_and_render(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from judgecal.data.records import Candidate, Item

    r = load_rubric("spans-hallucination")
    assert r.kind == "spans" and r.span_label == "hallucination" and r.coverage == ()
    user = r.messages(Item("i", "SOURCE TEXT", [Candidate("SUMMARY TEXT")]))[-1]["content"]
    assert "SOURCE TEXT" in user and "SUMMARY TEXT" in user and "NONE" in user
    k = load_rubric("keyfacts-coverage")
    assert dict(k.coverage) == {"full": 1.0, "partial": 0.5, "none": 0.0}
    assert "THE FACT" in k.messages(Item("i", "p", [Candidate("s")], reference="THE FACT"))[-1]["content"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nkind: pairwise\nsystem: s\ntemplate: '{first}'\nspan_label: x\n")
    with pytest.raises(RubricError, match="bad.yaml: field 'span_label' applies to rubrics of kind spans"):
        load_rubric(str(bad))
    bad.write_text("name: b\nkind: spans\nsystem: s\ntemplate: '{first}'\ncoverage: {full: 2}\n")
    with pytest.raises(RubricError, match="field 'coverage' must map"):
        load_rubric(str(bad))
    bad.write_text("name: b\nkind: quotes\nsystem: s\ntemplate: '{first}'\n")
    with pytest.raises(RubricError, match="kind must be pairwise, pointwise or spans"):
        load_rubric(str(bad))
