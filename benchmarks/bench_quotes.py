"""Quote alignment speed on real FaithBench summaries (judgecal.judges.quotes).

The quotes are the annotators' own hallucination spans (``summary[start:end]``), given to the aligner
four ways: as they are (the ``exact`` path); with their case changed and their whitespace runs
replaced by line breaks and double spaces (``normalised``); lower-cased with about one character in 25
deleted or substituted (``fuzzy``, quotes of at least 20 characters); and quotes taken from another
summary that are not in this one (``unaligned``: every path is tried and fails). One annotator's quotes
of one summary share one :class:`~judgecal.judges.quotes.Aligner` (as one judgment's quotes do), so the
normalised text is built once per group and its cost is counted. For each path: quotes per second
(best of five rounds), the share that took the intended path, and how well the offsets recover the
annotator's span, less surrounding spaces and quotation marks (share exact; mean character IoU; ``ambiguous``: quotes found more than once in
their summary, where the first free occurrence need not be the one the annotator meant). Needs JUDGECAL_DATA_MIRROR (or the network) for
FaithBench. Prints JSON and writes benchmarks/results/quotes.json.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.data.span_datasets import load_faithbench  # noqa: E402
from judgecal.judges.quotes import Aligner, _clean_quote  # noqa: E402

ROUNDS = 5


def perturb_normalised(q: str, rng: random.Random) -> str:
    words = q.split()
    out = [w.upper() if rng.random() < 0.3 else w.lower() if rng.random() < 0.5 else w.swapcase() for w in words]
    return "".join(w + rng.choice(["\n", "  ", " \t "]) for w in out).strip()


def perturb_fuzzy(q: str, rng: random.Random) -> str:
    chars = list(q.lower())
    for _ in range(max(1, len(chars) // 25)):
        k = rng.randrange(1, len(chars) - 1)
        if rng.random() < 0.5:
            del chars[k]
        else:
            chars[k] = rng.choice("abcdefghijklmnopqrstuvwxyz")
    return "".join(chars)


Case = tuple[tuple[str, str], str, int, int]  # ((item, rater), quote, start, end)


def cases(rng: random.Random) -> tuple[dict[str, str], dict[str, list[Case]]]:
    """item -> summary; path -> [((item, rater), quote, start, end)] with the annotator's span."""
    ds = load_faithbench()
    texts = {it.item_id: it.candidates[0].text for it in ds.items}
    spans = sorted({(s.item_id, s.rater, s.start, s.end) for s in ds.spans if s.end - s.start >= 3})
    out: dict[str, list[Case]] = defaultdict(list)
    others = [texts[i][s:e] for i, _, s, e in spans]
    for item, rater, s, e in spans:
        text, key = texts[item], (item, rater)
        cq = _clean_quote(text[s:e])  # the aligner drops surrounding spaces and quotation marks
        if len(cq) < 3:
            continue
        s += text[s:e].find(cq)
        e, q = s + len(cq), cq
        out["exact"].append((key, q, s, e))
        nq = perturb_normalised(q, rng)
        if nq not in text:
            out["normalised"].append((key, nq, s, e))
        if len(q) >= 20:
            fq = perturb_fuzzy(q, rng)
            if fq not in text.lower():
                out["fuzzy"].append((key, fq, s, e))
        other = rng.choice(others)
        if other.lower() not in text.lower():
            out["unaligned"].append((key, other, 0, 0))
    return texts, out


def run_path(texts: dict[str, str], quotes: list[Case]) -> tuple[float, list]:
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in quotes:
        groups[c[0]].append(c)
    t0 = time.perf_counter()
    results = []
    for (item, _), cs in groups.items():
        al = Aligner(texts[item])
        results.extend((c, al.align(c[1])) for c in cs)
    return time.perf_counter() - t0, results


def iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 1.0


def main() -> None:
    rng = random.Random(0)
    texts, paths = cases(rng)
    report: dict[str, dict[str, object]] = {}
    for path, quotes in paths.items():
        best, results = min((run_path(texts, quotes) for _ in range(ROUNDS)), key=lambda r: r[0])
        took = [a.match for _, a in results]
        found = [(c, a) for c, a in results if a.aligned]
        report[path] = {
            "quotes": len(quotes), "seconds": round(best, 4), "quotes_per_s": round(len(quotes) / best),
            "took_intended_path": round(sum(m == path for m in took) / len(took), 4),
            "paths_taken": {m: took.count(m) for m in sorted(set(took))},
        }
        if path != "unaligned":
            report[path]["offsets_equal_annotator_span"] = round(
                sum((a.start, a.end) == (c[2], c[3]) for c, a in found) / len(results), 4)
            report[path]["mean_char_iou"] = round(
                sum(iou((a.start, a.end), (c[2], c[3])) for c, a in found) / len(results), 4)
            report[path]["ambiguous"] = round(
                sum(texts[c[0][0]].count(texts[c[0][0]][c[2]:c[3]]) > 1 for c, _ in results) / len(results), 4)
    lengths = [len(q) for q in (c[1] for c in paths["exact"])]
    result = {
        "benchmark": "quote_alignment_faithbench", "machine": machine(), "rounds": ROUNDS,
        "summaries": len(texts), "mean_summary_chars": round(sum(map(len, texts.values())) / len(texts), 1),
        "mean_quote_chars": round(sum(lengths) / len(lengths), 1), "fuzzy_threshold": 85.0,
        "paths": report, "peak_rss_mb": peak_rss_mb(),
    }
    text = json.dumps(result, indent=1)
    print(text)
    (Path(__file__).parent / "results" / "quotes.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
