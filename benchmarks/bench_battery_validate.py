"""The perturbation battery validated over 200 seeds (:mod:`judgecal.audit.validate_battery`): each template bias
and manipulability planted at its effect of interest and a clean judge, deterministic and sampled (temperature 0.7's noise between
unperturbed runs), decided at fixed N (1,000 items) and by the sequential rule (batches of 20 items). Prints JSON
and writes benchmarks/results/battery_validate.json with the flag rates, their agreement, the calls saved and which
goals are met (found >= 80%, clean flagged <= 5%, >= 40% fewer calls). A third argument names the probes decided
(comma-separated, e.g. ``manipulability``): Benjamini–Hochberg over those only, written to
results/battery_validate_<names>.json."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.audit.validate_battery import BIASES, validate_battery  # noqa: E402

SEEDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
ITEMS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
ONLY = tuple(sys.argv[3].split(",")) if len(sys.argv) > 3 else BIASES


def main() -> None:
    t0 = time.perf_counter()
    res = validate_battery(n_items=ITEMS, seeds=SEEDS, n_boot=400, batch=20, biases=ONLY)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["peak_rss_mb"] = peak_rss_mb()
    res["machine"] = machine()
    out = json.dumps(res, indent=1)
    print(out)
    if SEEDS >= 200:
        name = "battery_validate" if ONLY == BIASES else "battery_validate_" + "_".join(ONLY)
        (Path(__file__).parent / "results" / f"{name}.json").write_text(out + "\n")


if __name__ == "__main__":
    main()
