"""Gold items for blind review: where their answers come from is named, and the draw is seeded.

``--gold-from`` names the answers: an annotator, a label source (its labels must agree on an item for
the item to count), or ``consensus:METHOD`` (a consensus stored by ``judgecal aggregate``). Items are
drawn at random with ``seed`` among those not already sent to the project; a project that already holds
``n`` gold items gets none more, so a repeated push adds nothing.
"""

from __future__ import annotations

import random

from judgecal.data.store import Workspace
from judgecal.errors import InputError

LABELS = ("A", "B", "tie")


def draw_gold(ws: Workspace, source: str | None, n: int, *, project: str, exclude: set[str] | None = None,
              seed: int = 0) -> dict[str, str]:
    """item_id -> answer for the gold items still to send so that ``project`` holds ``n``."""
    if n < 0:
        raise InputError(f"gold must be 0 or more items, not {n}", name="gold")
    if n == 0:
        return {}
    if not source:
        raise InputError("gold items need a source: an annotator or label source whose answers are the gold "
                         "(e.g. llmbar-gold), or consensus:METHOD for a seeded draw from a stored consensus "
                         "(e.g. consensus:ds)", name="gold_from")
    have = ws.labelstudio_repo.ls_gold(project)
    if len(have) >= n:
        return {}
    if source.startswith("consensus:"):
        method = source.split(":", 1)[1]
        cons = ws.annotations_repo.consensus_frame(method)
        if cons.empty:
            raise InputError(f"{source}: no consensus {method!r} is stored; run "
                             f"`judgecal aggregate --method {method}` first", name="gold_from")
        answers = dict(zip(cons["item_id"].astype(str), cons["label"].astype(str), strict=True))
    else:
        ann = ws.annotations_repo.annotations_frame()
        ann = ann[(ann["annotator"] == source) | (ann["source"] == source)]
        if ann.empty:
            raise InputError(f"{source}: no labels by that annotator or from that source", name="gold_from")
        agreed = ann.groupby("item_id")["label"].nunique() == 1
        first = ann.drop_duplicates("item_id").set_index("item_id")["label"]
        answers = {str(k): str(first[k]) for k in agreed[agreed].index}
    taken = ws.labelstudio_repo.ls_pushed_items(project) | (exclude or set())
    pairwise = {it.item_id for it in ws.items_repo.items(ids=list(answers)) if it.task == "pairwise" and len(it.candidates) == 2}
    pool = sorted(i for i, lab in answers.items() if lab in LABELS and i not in taken and i in pairwise)
    want = n - len(have)
    if len(pool) < want:
        raise InputError(f"{source}: only {len(pool)} unsent pairwise item(s) have an agreed answer, {want} "
                         "asked for", name="gold_from")
    return {i: answers[i] for i in random.Random(seed).sample(pool, want)}
