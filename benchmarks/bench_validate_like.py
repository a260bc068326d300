"""The like-for-like validation scenarios of ``judgecal validate`` (:mod:`judgecal.audit.validate_like`) over
200 seeds each: an annotator of the same population as the judge (substantial and weak human agreement),
an order-consistent judge, trivial raters (majority label, mark everything / nothing / random spans), and
position and verbosity biases planted at the effect of interest. Prints JSON and writes
benchmarks/results/validate_like.json with each scenario's rate beside its target."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.audit.validate_like import rates  # noqa: E402

SEEDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def main() -> None:
    t0 = time.perf_counter()
    res = rates(SEEDS, n_boot=400, progress=lambda line: print(line, file=sys.stderr, flush=True))
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["peak_rss_mb"] = peak_rss_mb()
    res["machine"] = machine()
    out = json.dumps(res, indent=1)
    print(out)
    if SEEDS >= 200:
        (Path(__file__).parent / "results" / "validate_like.json").write_text(out + "\n")


if __name__ == "__main__":
    main()
