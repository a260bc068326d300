"""Panels: several judges and one rule, judged as one judge and audited beside its members.

A panel's verdict on one call slot (item, presentation order, sample, prompt mutation) is the label that a
*strict majority of its members* gave: more than half of all members, so a member that abstained there
(no verdict, an unparsable one, or no call at all) counts against every label. With no strict majority the
panel makes no decision: the slot is recorded with status ``invalid`` and its raw text names the votes
(``no majority: A 1, B 1, tie 0, abstained 1``), so the audit counts undecided slots in the panel's invalid
rate and the panel section reports them; a tie is never broken, and never by the members' order (the
panel's spec holds its members' spec hashes sorted, so the same members in any order are one judge).
``p_a``, ``p_b``, ``p_tie`` are the members' vote shares (the panel's confidence for calibration and
selective evaluation); the cost is the members' summed cost.

A panel spec file::

    name: three-judges            # optional; default panel/<members joined by +>
    panel:
      members: [replay/pandalm/gpt-3.5-turbo, replay/pandalm/pandalm-7b, local/smollm2]
      rule: majority
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.names import judge_name_problem
from judgecal.data.records import Judgment, stable_hash
from judgecal.data.store import Workspace
from judgecal.data.yamlfile import load_yaml
from judgecal.errors import ConfigError
from judgecal.loop import LoopError

RULES = ("majority",)
LABELS = ("A", "B", "tie")
SLOT = ["item_id", "order", "sample", "mutation"]


@dataclass(frozen=True)
class Panel:
    name: str
    members: tuple[str, ...]
    rule: str = "majority"


def load_panel(path: str | Path) -> Panel:
    """A panel from a spec file (see the module docstring); errors name the file and the field."""
    p = Path(path)
    try:  # the shared loader: a regular file of at most 1 MB, UTF-8, no duplicate key, no alias bomb
        data = load_yaml(p)
    except ConfigError as exc:
        raise LoopError(str(exc)) from None
    except OSError as exc:
        raise LoopError(f"{p}: cannot read the panel spec ({exc.strerror or exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("panel"), dict):
        raise LoopError(f"{p}: field 'panel' is required: a mapping with members and rule")
    if extra := set(data) - {"name", "description", "panel"}:
        raise LoopError(f"{p}: field {sorted(extra)[0]!r} is unknown; a panel spec has name, description, panel")
    body = data["panel"]
    if extra := set(body) - {"members", "rule"}:
        raise LoopError(f"{p}: field 'panel.{sorted(extra)[0]}' is unknown; a panel has members and rule")
    members = body.get("members")
    if not isinstance(members, list) or not all(isinstance(m, str) and m.strip() for m in members):
        raise LoopError(f"{p}: field 'panel.members' must be a list of judge names")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise LoopError(f"{p}: field 'name' must be a string")
    try:
        return make_panel(members, rule=body.get("rule", "majority"), name=name)
    except LoopError as exc:
        raise LoopError(f"{p}: {exc}") from None


def make_panel(members: list[str], *, rule: str = "majority", name: str = "") -> Panel:
    ms = [m.strip() for m in members]
    if len(ms) < 2 or len(set(ms)) != len(ms):
        raise LoopError(f"field 'panel.members' needs at least two different judges, got {ms}")
    if rule not in RULES:
        raise LoopError(f"field 'panel.rule' must be one of {', '.join(RULES)}, got {rule!r}")
    name = name.strip() or "panel/" + "+".join(sorted(ms))
    if why := judge_name_problem(name):
        raise LoopError(f"field 'name': {why}")
    return Panel(name, tuple(ms), rule)


def majority(votes: pd.DataFrame, n_members: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of vote counts (columns A, B, tie): the label more than half of ``n_members`` gave, else
    ``None``; and whether the row had a strict majority."""
    counts = votes.reindex(columns=list(LABELS), fill_value=0).to_numpy(dtype=np.int64)
    top = counts.argmax(1)
    won = counts.max(1) * 2 > n_members  # at most one label can hold more than half
    label = np.asarray(LABELS, dtype=object)[top]
    label[~won] = None
    return label, won


def panel_judgments(ws: Workspace, panel: Panel) -> tuple[list[Judgment], dict[str, Any]]:
    """The panel's judgments over every slot any member judged, and a summary of its decisions."""
    known = set(ws.judgments_repo.judges())
    missing = [m for m in panel.members if m not in known]
    if missing:
        raise LoopError(f"panel member {missing[0]!r} has no judgments in this workspace "
                        f"(judges there: {', '.join(sorted(known)) or 'none'})")
    names = ws.judgments_repo.judge_names()
    hashes = sorted({h for (_, h), n in names.items() if n in panel.members})
    spec = {"backend": "panel", "model": panel.name, "options": {"members": ",".join(hashes), "rule": panel.rule}}
    spec_hash = stable_hash(spec)
    if other := sorted(h for (_, h), n in names.items() if n == panel.name and h != spec_hash):
        raise LoopError(f"a judge named {panel.name!r} is already in this workspace (spec {other[0][:12]}), and this "
                        "panel is another judge; name the panel otherwise", name="name")
    frames = []
    for m in panel.members:
        f = ws.judgments_repo.judgments_frame(judge=m, columns=(*SLOT, "verdict", "cost_usd", "latency_s"))
        frames.append(f.assign(member=m).drop_duplicates(SLOT + ["member"]))
    allj = pd.concat(frames, ignore_index=True)
    allj["vote"] = allj["verdict"].where(allj["verdict"].isin(LABELS), "abstain")
    votes = pd.crosstab([allj[c] for c in SLOT], allj["vote"])
    n = len(panel.members)
    label, won = majority(votes, n)
    cost = allj.groupby(SLOT)["cost_usd"].sum(min_count=1).reindex(votes.index)
    latency = allj.groupby(SLOT)["latency_s"].max().reindex(votes.index)
    cnt = votes.reindex(columns=[*LABELS, "abstain"], fill_value=0)
    abstained = n - cnt[list(LABELS)].sum(axis=1)  # a member with no call on the slot abstains too
    out = []
    slots: list[tuple[Any, ...]] = list(cnt.index)
    for k, (row, (item_id, order, sample, mutation)) in enumerate(zip(cnt.to_dict("records"), slots, strict=True)):
        tally = f"A {row['A']}, B {row['B']}, tie {row['tie']}, abstained {abstained.iloc[k]}"
        c, lat = cost.iloc[k], latency.iloc[k]
        out.append(Judgment(
            key=stable_hash([spec_hash, item_id, order, int(sample), mutation]), item_id=str(item_id),
            judge=panel.name, spec_hash=spec_hash, order=str(order), mutation=str(mutation), sample=int(sample),
            raw=(f"majority {label[k]}: " if won[k] else "no majority: ") + tally,
            verdict=label[k] if won[k] else "invalid", status="ok" if won[k] else "invalid",
            p_a=row["A"] / n, p_b=row["B"] / n, p_tie=row["tie"] / n,
            cost_usd=None if pd.isna(c) else float(c), latency_s=None if pd.isna(lat) else float(lat)))
    summary = {"panel": panel.name, "members": list(panel.members), "rule": panel.rule, "spec_hash": spec_hash,
               "slots": len(out), "decided": int(won.sum()), "no_majority": int((~won).sum()),
               "unanimous": int((cnt[list(LABELS)].max(axis=1) == n).sum())}
    return out, {"spec": spec, **summary}


def run_panel(ws: Workspace, panel: Panel) -> dict[str, Any]:
    """Store the panel's spec and judgments (replacing an earlier run's, since members may have judged
    more since) and return its summary."""
    js, summary = panel_judgments(ws, panel)
    with ws.transaction() as tx:
        ws.judgments_repo.add_judge_specs([(summary["spec_hash"], panel.name, summary["spec"])], conn=tx)
        ws.judgments_repo.add_judgments(js, conn=tx, replace=True)
    return summary
