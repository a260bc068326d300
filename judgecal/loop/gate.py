"""``judgecal gate``: may a new judge version replace the old one? A paired test on the same human labels.

Each metric of :mod:`judgecal.loop.compare` fails the gate when the candidate is *worse beyond its
tolerance* (``worse_by`` above the tolerance in ``thresholds.yaml``'s ``gate``) *and significantly worse*
(the one-sided paired-bootstrap bound of ``worse_by`` at ``alpha / m`` is above 0; Bonferroni over the
``m`` metrics compared). Both conditions, as for the audit's flags: a noisy small drop does not fail a
candidate, nor does a significant drop too small to matter. The gate passes (exit 0) when no metric fails,
fails (exit 1) otherwise; a metric one of the judges lacks is listed as not compared, never as passed.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pandas as pd

from judgecal.audit.decision import load_thresholds
from judgecal.catalogue import METRICS as CATALOGUE
from judgecal.data.store import Workspace
from judgecal.loop.compare import METRICS, compare_judges

SCHEMA = "judgecal.gate/1"


def decide(comparison: dict[str, Any], tolerances: dict[str, float]) -> dict[str, Any]:
    """The comparison with each metric's ``tolerance`` and ``result`` (``worse``, ``not worse``,
    ``undefined``) and the overall ``passed``."""
    out = dict(comparison)
    rows = {}
    for name, row in comparison["metrics"].items():
        tol = float(tolerances[METRICS[name][2]])
        worse, bound = row.get("worse_by"), row.get("worse_bound")
        if worse is None or bound is None:
            result = "undefined"
        elif worse > tol and bound > 0:
            result = "worse"
        else:
            result = "not worse"
        rows[name] = {**row, "tolerance": tol, "result": result}
    out["metrics"] = rows
    out["failed"] = [n for n, r in rows.items() if r["result"] == "worse"]
    out["passed"] = not out["failed"]
    out["rule"] = ("worse when worse_by > tolerance and the one-sided paired-bootstrap bound of worse_by at "
                   "alpha_each (Bonferroni) is above 0")
    return out


def run_gate(ws: Workspace, baseline: str, candidate: str, truth: pd.Series, *, consensus: str,
             invalid_as: str = "tie", n_boot: int = 2000, seed: int = 0, level: float = 0.95,
             items: list[str] | None = None) -> dict[str, Any]:
    """The gate's result as JSON (schema ``judgecal.gate/1``), thresholds from the workspace."""
    th = load_thresholds(ws.path)
    cmp = compare_judges(ws, baseline, candidate, truth, items=items, invalid_as=invalid_as, n_boot=n_boot,
                         seed=seed, level=level, alpha=float(th["alpha"]))
    res = decide(cmp, th["gate"])
    return {"schema": SCHEMA, "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "consensus": consensus, **res}


def save(result: dict[str, Any], folder: Path) -> Path:
    """Write the result as ``<folder>/gate.json`` (the audit's report shows the last one)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gate.json"
    path.write_text(json.dumps(result, indent=2, allow_nan=False), "utf-8")
    return path


def _f(v: Any, signed: bool = False) -> str:
    return "—" if v is None else (f"{v:+.3f}" if signed else f"{v:.3f}")


def _md(text: str) -> str:
    """A name from a file or a model made inert in a Markdown table cell."""
    return "".join(c if c.isprintable() else "?" for c in str(text)).replace("|", "\\|").replace("`", "'")\
        .replace("<", "&lt;").replace(">", "&gt;").replace("[", "\\[").replace("]", "\\]")


def _code(text: str) -> str:
    """A name from a file or a model as a Markdown code span: shown literally (a code span reads no escape, no markup
    and no HTML), fenced by more backticks than it holds in a row; unprintable characters as ``?``."""
    shown = "".join(c if c.isprintable() else "?" for c in str(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def markdown(result: dict[str, Any]) -> str:
    """A pull-request summary: the verdict, what was compared, one row per metric."""
    head = "✅ **judge gate passed**" if result["passed"] else "❌ **judge gate failed**: " + ", ".join(
        CATALOGUE[m].title if m in CATALOGUE else m for m in result["failed"])
    lines = [head, "",
             f"Candidate {_code(result['candidate'])} against baseline {_code(result['baseline'])} on the same "
             f"{result['n_items']} human-labelled items (truth: {_md(result['consensus'])}); paired item bootstrap "
             f"({result['n_boot']} resamples), {round(100 * result['ci_level'])}% intervals; a metric fails when the "
             f"candidate is worse beyond its tolerance and significantly worse (one-sided, α {result['alpha']:g} "
             f"split over {len(result['metrics'])} metrics).", "",
             "| metric | baseline | candidate | Δ (candidate − baseline) | CI | tolerance | result |",
             "|---|---|---|---|---|---|---|"]
    for name, r in result["metrics"].items():
        title = CATALOGUE[name].title if name in CATALOGUE else name
        if r["direction"] == "null":
            title += f" (ideal {r['null']:g})"
        mark = {"worse": "❌ worse", "not worse": "✅ not worse"}.get(r["result"], r["result"])
        lines.append(f"| {title} | {_f(r['baseline'])} | {_f(r['candidate'])} | {_f(r['difference'], True)} | "
                     f"[{_f(r['ci_low'], True)}, {_f(r['ci_high'], True)}] | {r['tolerance']:g} | {mark} |")
    if result.get("not_compared"):
        lines += ["", "Not compared (a judge lacks the data): " + ", ".join(result["not_compared"]) + "."]
    return "\n".join(lines) + "\n"
