"""Span metrics with item-bootstrap CIs (B = 2,000) over 100,000 spans: 20,000 texts of ~400
characters, three annotators and one judge. Times each step (character and token level, span
matching, soft-label Spearman, consensus, the human ceiling, detection) and the peak memory of the
process. Prints JSON and writes benchmarks/results/spans.json."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.stats import spans as S  # noqa: E402

N_ITEMS, RATERS, SPANS_PER_RATER, N_BOOT = 20_000, 4, 1.25, 2000
WORDS = np.array(["the", "patient", "was", "given", "aspirin", "100", "mg", "daily", "for", "pain", "and", "fever",
                  "report", "says", "no", "side", "effects", "were", "seen", "."])


def data(rng: np.random.Generator) -> tuple[list[str], S.Intervals, np.ndarray]:
    n_words = rng.integers(50, 90, N_ITEMS)
    texts = [" ".join(WORDS[rng.integers(0, WORDS.size, k)]) for k in n_words]
    lengths = np.array([len(t) for t in texts])
    counts = rng.poisson(SPANS_PER_RATER, (N_ITEMS, RATERS))
    item = np.repeat(np.repeat(np.arange(N_ITEMS), RATERS), counts.ravel())
    rater = np.repeat(np.tile(np.arange(RATERS), N_ITEMS), counts.ravel())
    width = rng.integers(3, 60, item.size)
    start = (rng.random(item.size) * np.maximum(lengths[item] - width, 1)).astype(np.int64)
    end = np.minimum(start + width, lengths[item])
    return texts, S.intervals(item, start, end), rater


def timed(out: dict[str, float], name: str, fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    value = fn()
    out[name] = round(time.perf_counter() - t0, 3)
    return value


def main() -> None:
    rng = np.random.default_rng(0)
    texts, sp, rater = data(rng)
    lengths = np.array([len(t) for t in texts])
    human, judge = sp.take(rater < 3), sp.take(rater == 3)
    secs: dict[str, float] = {}
    t_all = time.perf_counter()
    cons = timed(secs, "consensus", lambda: S.consensus(human, rater[rater < 3]))
    char = timed(secs, "char_scores_with_ci", lambda: S.span_scores(judge, cons, N_ITEMS, n_boot=N_BOOT))
    toks = timed(secs, "token_bounds", lambda: S.token_bounds(texts))
    tok = timed(secs, "token_scores_with_ci", lambda: S.span_scores(
        S.to_tokens(judge, toks, N_ITEMS), S.to_tokens(cons, toks, N_ITEMS), N_ITEMS, n_boot=N_BOOT))
    match = timed(secs, "span_matches_with_ci", lambda: S.span_matches(judge, cons, N_ITEMS, 0.5, n_boot=N_BOOT))

    def soft() -> float:
        ref, off = S.char_counts(human, lengths)
        pred, _ = S.char_counts(judge, lengths, weight=rng.random(len(judge)))
        return float(np.nanmean(S.soft_spearman(pred, ref / 3, off)))

    rho = timed(secs, "soft_spearman", soft)
    ceiling = timed(secs, "human_ceiling_with_ci", lambda: S.human_ceiling(human, rater[rater < 3], n_boot=N_BOOT))
    det = timed(secs, "detection_with_ci", lambda: S.detection(S.marked(judge, N_ITEMS), S.marked(cons, N_ITEMS),
                                                               n_boot=N_BOOT))
    total = round(time.perf_counter() - t_all, 3)
    result = {
        "benchmark": "span_metrics_100k", "machine": machine(), "spans": len(sp), "items": N_ITEMS,
        "characters": int(lengths.sum()), "raters": RATERS, "n_boot": N_BOOT, "seconds": secs, "total_seconds": total,
        "peak_rss_mb": peak_rss_mb(),
        "figures": {"char_f1": char["f1"], "token_f1": tok["f1"], "span_f1": match["f1"], "soft_spearman_mean": rho,
                    "human_ceiling_f1": ceiling, "detection_balanced_accuracy": det["balanced_accuracy"],
                    "consensus_spans": len(cons)},
    }
    text = json.dumps(result, indent=1)
    print(text)
    out = Path(__file__).parent / "results" / "spans.json"
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
