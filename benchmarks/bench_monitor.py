"""How many human labels the drift rule of ``judgecal monitor`` needs, over 200 seeds.

A judge agrees with the truth at 0.85 (or at a rate drawn in [0.70, 0.90] per seed); from period ``k`` of 52 its
agreement drops by the effect of interest (0.10). For each budget (labels a period, baseline size) it reports the
share of seeds where drift is declared at ``k`` or ``k + 1`` ("within two periods"), the share with an alarm
before ``k`` and, with no drop at all, the share with any alarm over the 52 looks (the false-alarm rate, held at
``alpha`` = 0.05 by construction). Prints JSON; ``--out`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from judgecal.stats.sequential import drift_sequence

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine  # noqa: E402

PERIODS, EFFECT, ALPHA, SEEDS = 52, 0.10, 0.05, 200


def _rates(n0: int, n: int, start: int, drop: float, rate: float | None) -> dict[str, float]:
    found = early = 0
    for seed in range(SEEDS):
        rng = np.random.default_rng(seed)
        p0 = rng.uniform(0.70, 0.90) if rate is None else rate
        base = (rng.random(n0) < p0).astype(float)
        after = np.concatenate([rng.random(n) < r for r in [p0] * start + [p0 - drop] * (PERIODS - start)])
        first = drift_sequence(base, after.astype(float), np.arange(1, PERIODS + 1) * n, alpha=ALPHA,
                               effect=EFFECT)["first"]
        found += first is not None and start <= first <= start + 1
        early += first is not None and first < start
    return {"within_two_periods": found / SEEDS, "alarm_before_drop": early / SEEDS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = []
    for n0, n in ((500, 200), (1000, 300), (2000, 500), (2000, 600), (5000, 800)):
        for rate in (0.85, None):
            null = _rates(n0, n, PERIODS, 0.0, rate)["alarm_before_drop"]  # no drop in 52 looks: any alarm is false
            for start in (4, 26, 45):
                r = _rates(n0, n, start, EFFECT, rate)
                rows.append({"baseline_labels": n0, "labels_per_period": n, "agreement": rate or "U(0.70, 0.90)",
                             "drop_from_period": start, **r, "false_alarm_52_looks": null})
    out = {"benchmark": "monitor drift rule", "seeds": SEEDS, "periods": PERIODS, "effect_of_interest": EFFECT,
           "alpha": ALPHA, "rows": rows, "seconds": round(time.perf_counter() - t0, 1), "machine": machine()}
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")


if __name__ == "__main__":
    main()
