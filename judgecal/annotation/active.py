"""Active labelling: draw the items people label with known inclusion probabilities (Zrnic & Candès, 2024).

Every pairwise item that could be sent gets ``pi_i = min(1, budget (tau u_i / sum(u) + (1 - tau) / N))``
(:func:`judgecal.stats.active.inclusion_probabilities`) with ``u_i = sqrt(err2_i)``, the judge's uncertainty
(:mod:`judgecal.audit.uncertainty`; with ``judge`` its spread counts the other judges' verdicts, without it all
judges are pooled), and is drawn independently with that probability, seeded. The push records every ``pi_i``
and draw in the workspace (``ls_active``) so that the corrected estimates weigh each label by ``1 / pi_i``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgecal.audit.uncertainty import spread_around, workspace_uncertainty
from judgecal.data.store import Workspace
from judgecal.errors import InputError
from judgecal.stats.active import DEFAULT_TAU, draw, inclusion_probabilities


def active_draw(ws: Workspace, budget: int, *, seed: int = 0, tau: float = DEFAULT_TAU, judge: str | None = None,
                source: str | None = None, exclude: set[str] | None = None) -> pd.DataFrame:
    """item_id -> ``pi``, ``drawn`` (and the judge's ``f``, ``err2``) over the two-candidate pairwise items
    (``source`` only, ``exclude`` left out). an :class:`~judgecal.errors.InputError` names what is missing: no items, or an unknown
    judge."""
    ids = [it.item_id for it in ws.items_repo.items(source=source)
           if it.task == "pairwise" and len(it.candidates) == 2 and not (exclude and it.item_id in exclude)]
    if not ids:
        raise InputError("no pairwise item to draw from" + (f" in source {source!r}" if source else ""))
    if judge is not None and judge not in ws.judgments_repo.judges():
        raise InputError(f"no judge {judge!r} in this workspace (judges there: {', '.join(ws.judgments_repo.judges()) or 'none'})",
                         name="judge")
    pooled = workspace_uncertainty(ws, ids)
    unc = pooled if judge is None else spread_around(workspace_uncertainty(ws, ids, judge), pooled)
    pi = inclusion_probabilities(np.sqrt(unc["err2"].to_numpy(dtype=np.float64)), budget, tau=tau)
    return pd.DataFrame({"pi": pi, "drawn": draw(pi, seed), "f": unc["f"].to_numpy(), "err2": unc["err2"].to_numpy()},
                        index=pd.Index(ids, name="item_id"))
