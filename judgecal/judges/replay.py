"""``replay/<dataset>/<judge>``: recorded verdicts from a registered dataset, named after their source.

For example ``replay/pandalm/gpt-3.5-turbo`` or ``replay/llmbar/GPT-4/Swap_CoT`` (evaluator and
strategy as the authors spell them). Importing a dataset brings every recorded judge; this puts
one judge's verdicts back for the workspace's items of that dataset (cached like any judgment).
"""

from __future__ import annotations

from judgecal.data.datasets import load
from judgecal.data.ingest import replay_specs
from judgecal.data.registry import LLMBAR_SUBSETS
from judgecal.data.store import Workspace
from judgecal.judges.registry import UnknownJudgeError

FAMILIES = {"pandalm": ("pandalm",), "llmbar": tuple(LLMBAR_SUBSETS), "prometheus": ("prometheus/mt-bench",)}


def replay(ws: Workspace, judge: str) -> dict[str, int]:
    """Store ``judge``'s recorded verdicts for the workspace's items; returns counts per dataset."""
    parts = judge.split("/")
    if len(parts) < 3 or parts[0] != "replay" or parts[1] not in FAMILIES:
        raise UnknownJudgeError(f"replay judges look like replay/<{'|'.join(FAMILIES)}>/<judge>, got {judge!r}")
    sources = [s for s in FAMILIES[parts[1]] if s in ws.items_repo.sources()]
    if not sources:
        raise UnknownJudgeError(f"{judge}: import its dataset first (`judgecal import {FAMILIES[parts[1]][0]}`)")
    counts = {}
    for name in sources:
        ds = load(name)
        rows = [j for j in ds.judgments if j.judge == judge]
        if not rows:
            known = sorted({j.judge for j in ds.judgments})
            raise UnknownJudgeError(f"{name} records no judge {judge!r}; it has: {', '.join(known)}")
        counts[name] = ws.judgments_repo.add_judgments(rows)
        ws.judgments_repo.add_judge_specs(replay_specs(rows))
    return counts
