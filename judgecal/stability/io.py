"""Stability runs made elsewhere (a GPU machine): the items they need out, their results back in.

``export_items`` writes a small JSONL of items with the judge's rendered messages in both orders, so a
script with only torch and transformers can judge them (``benchmarks/gpu_stability.py``).
``import_run`` reads the run file such a script writes — format ``judgecal-stability-run/1``::

    {"format": "judgecal-stability-run/1", "judge": "hf/smollm2", "origin": "gpu", "config": {...},
     "variants": [{"name": "base", "axis": "base", "level": "base", "env": {...}, "prompt": [...]}, ...],
     "outputs": [{"variant": 0, "item_id": "...", "AB": "raw text", "BA": "raw text"}, ...]}

Verdicts are parsed here, by the same parser as every judgment (so a run file carries raw text only),
turned to item orientation, swap-debiased, and scored against this workspace's consensus like any run.
A bad file is refused with one line naming the file and the field; nothing is stored then.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.stability_section import StabilityError, figures, point_figures, truth_labels
from judgecal.data.records import stable_hash, to_item_orientation
from judgecal.stats.winrate import swap_debiased

FORMAT = "judgecal-stability-run/1"
ITEMS_FORMAT = "judgecal-stability-items/1"


def export_items(ws: Any, path: str | Path, *, n: int = 100, consensus: str = "ds", rubric: str = "pairwise",
                 source: str | None = None, seed: int = 0) -> int:
    """Write ``n`` pairwise items with a consensus (a seeded sample) and their rendered prompts."""
    from judgecal.judges.rubric import load_rubric

    truth = truth_labels(ws, consensus)
    rub = load_rubric(rubric)
    pool = [it for it in ws.items_repo.items(source=source) if it.task == "pairwise" and it.item_id in truth]
    chosen = sorted(random.Random(seed).sample(pool, min(n, len(pool))), key=lambda it: it.item_id)
    with open(path, "w", encoding="utf-8") as fh:
        for it in chosen:
            fh.write(json.dumps({"format": ITEMS_FORMAT, "item_id": it.item_id, "rubric": rub.name,
                                 "rubric_hash": rub.version, "AB": rub.messages(it, "AB"),
                                 "BA": rub.messages(it, "BA")}, ensure_ascii=False) + "\n")
    return len(chosen)


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj or not isinstance(obj[key], kind):
        raise StabilityError(f"{where}: field {key!r} is missing or not a {getattr(kind, '__name__', kind)}")
    return obj[key]


def import_run(ws: Any, path: str | Path, *, consensus: str | None = None) -> dict[str, Any]:
    """Validate and store a run file; returns ``{"run_id", "variants"}``."""
    from judgecal.judges.parse import parse_verdict

    p = Path(path)
    try:
        data = json.loads(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise StabilityError(f"{p}: cannot read the run file ({exc})") from None
    except ValueError as exc:
        raise StabilityError(f"{p}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StabilityError(f"{p}: field 'format' must be {FORMAT!r}")
    judge = _need(data, "judge", str, str(p))
    variants = _need(data, "variants", list, str(p))
    outputs = _need(data, "outputs", list, str(p))
    if not variants:
        raise StabilityError(f"{p}: field 'variants' is empty")
    for k, v in enumerate(variants):
        for key in ("name", "axis", "level"):
            _need(v, key, str, f"{p}: variants[{k}]")
        reused = v.get("reused_from")
        if reused is not None and (not isinstance(reused, int) or isinstance(reused, bool)
                                   or not 0 <= reused < len(variants)):
            raise StabilityError(f"{p}: variants[{k}]: field 'reused_from' must be the number of another variant "
                                 f"(0 to {len(variants) - 1}) or null, got {reused!r}")
    raws: dict[tuple[int, str], dict[str, Any]] = {}
    for k, o in enumerate(outputs):
        j = _need(o, "variant", int, f"{p}: outputs[{k}]")
        item = _need(o, "item_id", str, f"{p}: outputs[{k}]")
        if not 0 <= j < len(variants):
            raise StabilityError(f"{p}: outputs[{k}]: field 'variant' is {j}, but there are {len(variants)} variants")
        raws[(j, item)] = {"AB": o.get("AB"), "BA": o.get("BA")}
    ids = sorted({i for _, i in raws})
    known = {it.item_id: it for it in ws.items_repo.items(ids=ids)}
    missing = [i for i in ids if i not in known]
    if missing:
        raise StabilityError(f"{p}: item {missing[0]!r} is not in this workspace (import its dataset first)")
    config = data.get("config") or {}
    if not isinstance(config, dict):
        raise StabilityError(f"{p}: field 'config' must be an object")
    notes = config.get("notes", {})
    if not isinstance(notes, dict) or not all(isinstance(k, str) and isinstance(n, str) for k, n in notes.items()):
        raise StabilityError(f"{p}: field 'config.notes' must map a variant's name to a note (text)")
    cfg = dict(config)
    cfg["consensus"] = consensus or cfg.get("consensus") or "ds"
    truth = truth_labels(ws, cfg["consensus"])
    cols, verdict_rows = [], []
    for j in range(len(variants)):
        def side(i: str, order: str, j: int = j) -> str | None:
            text = raws.get((j, i), {}).get(order)
            if text is None:
                return None
            shown = parse_verdict(str(text))
            return to_item_orientation(shown, order) if shown else "invalid"
        deb = swap_debiased(np.array([side(i, "AB") for i in ids], dtype=object),
                            np.array([side(i, "BA") for i in ids], dtype=object))
        cols.append(pd.Series(deb, index=ids))
        verdict_rows += [(j, i, d, json.dumps(raws.get((j, i)))) for i, d in zip(ids, deb, strict=True)]
    frame = pd.concat(cols, axis=1, keys=range(len(variants)))
    names, sums = figures(frame, [known[i] for i in ids], truth)
    cfg["figures"] = names
    rows = []
    for j, (v, figs) in enumerate(zip(variants, point_figures(sums), strict=True)):
        env = v.get("env")
        prompt = v.get("prompt")
        rows.append({"variant": j, "name": v["name"], "axis": v["axis"], "level": v["level"],
                     "spec_hash": v.get("spec_hash"), "reused_from": v.get("reused_from"),
                     "calls": int(v.get("calls") or 2 * len(ids)), "paid": int(v.get("calls") or 2 * len(ids)),
                     "env": json.dumps(env, sort_keys=True) if isinstance(env, dict) else env,
                     "prompt": json.dumps(prompt) if isinstance(prompt, list) else prompt, "figures": figs})
    run_id = stable_hash({"import": data.get("run_id") or stable_hash(data), "judge": judge})
    ws.stability_repo.add_stability_run({"run_id": run_id, "judge": judge, "spec_hash": rows[0]["spec_hash"],
                          "origin": str(data.get("origin") or "import"), "created_at": float(data.get("created_at")
                                                                                               or time.time()),
                          "config": cfg}, rows, verdict_rows)
    return {"run_id": run_id, "variants": rows}
