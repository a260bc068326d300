"""The stability gate: fail (exit 1) when a variant moves a headline figure by more than the threshold, and
write a diff report of each such move — what changed in the environment, the prompt diff, the items whose
verdict changed and their output diff — so the change can be reviewed like a code diff.

The threshold (pp) is given, or back-calculated from business loss:
``threshold = tolerated error-rate increase / error-rate increase per point`` (see
:func:`judgecal.stats.stability.threshold_from_business`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgecal.audit.stability_section import StabilityError, summarise_run
from judgecal.judges import fingerprint as fp


def _prompt_text(prompt: str | None) -> list[str]:
    if not prompt:
        return []
    try:
        msgs = json.loads(prompt)
    except ValueError:
        return prompt.splitlines()
    return [line for role, content in msgs for line in [f"[{role}]", *str(content).splitlines()]]


def _quoted(text: Any) -> str:
    """Untrusted model output as one JSON string literal (newlines, backticks and markup stay inert)."""
    return json.dumps(text, ensure_ascii=False)


def guard_report(ws: Any, run: dict[str, Any], threshold_pp: float, out_dir: Path, *, n_boot: int = 200,
                 max_items: int = 20, figures: Sequence[str] | None = None) -> tuple[int, Path, dict[str, Any]]:
    """Check one run against ``threshold_pp`` (on ``figures`` only, when given; default every headline
    figure); write ``stability-guard.md`` and ``.json`` into ``out_dir``.
    Returns (exit code: 0 pass, 1 fail, the Markdown path, the JSON report)."""
    summary = summarise_run(ws, run, n_boot=n_boot, threshold_pp=threshold_pp)
    if figures:
        unknown = [f for f in figures if f not in summary["figures"]]
        if unknown:
            raise StabilityError(f"no figure {unknown[0]!r} in run {run['run_id']}; figures: "
                                 f"{', '.join(summary['figures'])}")
        kept = [v for v in summary["guard"]["violations"] if v["figure"] in figures]
        summary["guard"] = {**summary["guard"], "violations": kept, "status": "fail" if kept else "pass"}
    variants = {v["variant"]: v for v in ws.stability_repo.stability_variants(run["run_id"])}
    vf = ws.stability_repo.stability_verdicts(run["run_id"])
    verdict = vf.pivot(index="item_id", columns="variant", values="verdict")
    raw = vf.pivot(index="item_id", columns="variant", values="raw")
    base = variants[0]
    checks = []
    for j in sorted({v["variant"] for v in summary["guard"]["violations"]}):
        var = variants[j]
        changed = verdict.index[(verdict[0].astype(str) != verdict[j].astype(str))].tolist()
        checks.append({
            "variant": var["name"], "axis": var["axis"],
            "moves": [{"figure": v["figure"], "shift_pp": v["shift_pp"]}
                      for v in summary["guard"]["violations"] if v["variant"] == j],
            "environment_changes": fp.diff(base["env"], var["env"]),
            "prompt_diff": list(difflib.unified_diff(_prompt_text(base["prompt"]), _prompt_text(var["prompt"]),
                                                     "base", var["name"], lineterm="", n=1)),
            "changed_items": [{"item_id": i, "before": verdict.at[i, 0], "after": verdict.at[i, j],
                               "output_before": raw.at[i, 0], "output_after": raw.at[i, j]} for i in changed],
        })
    report = {"run_id": run["run_id"], "judge": run["judge"], "threshold_pp": threshold_pp, "figures": list(figures or []),
              "status": summary["guard"]["status"], "violations": checks,
              "largest_shifts": {k: r["decomposition"]["largest_shift"] for k, r in summary["figures"].items()}}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "stability-guard.json").write_text(json.dumps(report, indent=2, default=str), "utf-8")
    md = out_dir / "stability-guard.md"
    md.write_text(_markdown(report, max_items), "utf-8")
    return (1 if checks else 0), md, report


def _markdown(r: dict[str, Any], max_items: int) -> str:
    lines = [f"# Stability guard: {r['status'].upper()}", "",
             f"Judge `{r['judge']}`, run `{r['run_id']}`, threshold {r['threshold_pp']:g} points.", ""]
    if not r["violations"]:
        lines.append("No variant moved a headline figure by more than the threshold.")
    for c in r["violations"]:
        lines += [f"## {c['variant']} (axis {c['axis']})", ""]
        lines += [f"- {m['figure']}: {m['shift_pp']:+.2f} points" for m in c["moves"]]
        lines += ["", f"**Environment:** {fp.describe(c['environment_changes'])}", "", "**Prompt diff:**", ""]
        lines += ["```diff", *(c["prompt_diff"] or ["(same prompt)"]), "```", ""]
        lines += [f"**Items whose verdict changed:** {len(c['changed_items'])}", ""]
        for it in c["changed_items"][:max_items]:
            lines += [f"- `{it['item_id']}`: {it['before']} -> {it['after']}",
                      f"  - before: {_quoted(it['output_before'])}", f"  - after: {_quoted(it['output_after'])}"]
        if len(c["changed_items"]) > max_items:
            lines.append(f"- ... and {len(c['changed_items']) - max_items} more (see stability-guard.json)")
        lines.append("")
    return "\n".join(lines) + "\n"
