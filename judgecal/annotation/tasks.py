"""Push blind pairwise tasks to Label Studio and pull the labels back.

Blindness: a task carries only the prompt, the two texts and an opaque random key. A/B order is
randomised per task and the mapping (key -> item, flipped) stays in the workspace. Model names,
item ids, dataset names and judge outputs never leave judgecal. The project title is the user's.
"""

from __future__ import annotations

import random
import secrets
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import httpx
import pandas as pd

from judgecal.annotation.server import Connection, LabelStudioError
from judgecal.data.records import Annotation
from judgecal.data.store import Workspace

CHOICES = {"A better": "A", "B better": "B", "Tie": "tie"}
CONTROLS = {"preference": "choices", "rationale": "textarea"}


def label_config(name: str = "pairwise") -> str:
    return resources.files("judgecal.annotation_assets").joinpath(f"{name}.xml").read_text("utf-8")


def guidelines() -> str:
    return resources.files("judgecal.annotation_assets").joinpath("guidelines.md").read_text("utf-8")


def client(conn: Connection, http: httpx.Client | None = None) -> Any:
    """A label-studio-sdk client (``http`` lets a caller observe or tune the transport)."""
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=conn.url, api_key=conn.token, httpx_client=http or httpx.Client(timeout=60))


def _unreachable(conn_url: str, exc: Exception) -> LabelStudioError:
    return LabelStudioError(f"cannot reach Label Studio at {conn_url} ({type(exc).__name__}); nothing was "
                            "changed in the workspace: try again when the server is up")


def ensure_project(ls: Any, title: str, overlap: int) -> int:
    """The id of the project titled ``title`` (created with the blind pairwise config if missing)."""
    for p in ls.projects.list():
        if p.title == title:
            return int(p.id)
    p = ls.projects.create(title=title, label_config=label_config("pairwise"), maximum_annotations=overlap,
                           expert_instruction=guidelines(), show_instruction=True, show_skip_button=True)
    return int(p.id)


@dataclass
class PushResult:
    project_id: int
    created: int = 0
    already: int = 0
    gold: int = 0


def push(ws: Workspace, ls: Any, item_ids: list[str], *, project: str = "Blind review", overlap: int = 3,
         gold: dict[str, str] | None = None, seed: int | None = None) -> PushResult:
    """Create one blind task per item not yet in ``project`` (idempotent), plus gold items.

    ``gold`` maps item_id -> known label (item orientation); those items are mixed in unmarked.
    """
    pid = ensure_project(ls, project, overlap)
    res = PushResult(pid)
    rng = secrets.SystemRandom() if seed is None else random.Random(seed)
    done = {r[0] for r in ws.conn.execute("SELECT item_id FROM ls_tasks WHERE project = ?", (project,))}
    wanted = list(dict.fromkeys([*item_ids, *(gold or {})]))
    items = {it.item_id: it for it in ws.items(ids=wanted)}
    missing = [i for i in wanted if i not in items]
    if missing:
        raise LabelStudioError(f"{len(missing)} item(s) are not in the workspace, e.g. {missing[0]!r}")
    rows, tasks = [], []
    for item_id in wanted:
        if item_id in done:
            res.already += 1
            continue
        it = items[item_id]
        flipped = rng.random() < 0.5
        first, second = (it.candidates[1], it.candidates[0]) if flipped else (it.candidates[0], it.candidates[1])
        key = secrets.token_hex(12)
        tasks.append({"data": {"prompt": it.prompt, "response_a": first.text, "response_b": second.text,
                               "key": key}})
        g = (gold or {}).get(item_id)
        rows.append((key, project, pid, item_id, int(flipped), g, None, time.time()))
        res.gold += g is not None
    # shuffle so that gold items do not sit at the end
    order = list(range(len(tasks)))
    rng.shuffle(order)
    tasks, rows = [tasks[i] for i in order], [rows[i] for i in order]
    try:
        for start in range(0, len(tasks), 500):
            ls.projects.import_tasks(id=pid, request=tasks[start:start + 500])
    except httpx.HTTPError as exc:
        raise _unreachable(str(ls._client_wrapper.get_base_url()), exc) from None
    with ws.transaction() as tx:
        tx.executemany("INSERT INTO ls_tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    res.created = len(rows)
    return res


@dataclass
class PullResult:
    new: int = 0
    updated: int = 0
    problems: list[str] = field(default_factory=list)


def _parse(result: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(shown label A/B/tie, problem) from one annotation's result list, validated against the config."""
    choice, problem = None, None
    for r in result:
        name, kind = r.get("from_name"), r.get("type")
        if name not in CONTROLS or CONTROLS[name] != kind:
            return None, f"unknown field {name!r} ({kind})"
        if name == "preference":
            picked = (r.get("value") or {}).get("choices") or []
            if len(picked) != 1 or picked[0] not in CHOICES:
                return None, f"choice {picked!r} is not in the labeling config"
            choice = CHOICES[picked[0]]
    if choice is None:
        problem = "no preference given"
    return choice, problem


def pull(ws: Workspace, ls: Any, *, project: str = "Blind review", page_size: int = 100) -> PullResult:
    """Fetch new and updated annotations, validate them, map them back to items; one transaction."""
    res = PullResult()
    mapping = pd.read_sql_query("SELECT task_key, item_id, flipped, project_id FROM ls_tasks WHERE project = ?",
                                ws.conn, params=[project])
    if mapping.empty:
        return res
    pid = int(mapping["project_id"].iloc[0])
    by_key = {str(k): (str(i), bool(f)) for k, i, f in zip(mapping["task_key"], mapping["item_id"],
                                                           mapping["flipped"], strict=True)}
    seen = {int(a): u for a, u in ws.conn.execute(
        "SELECT annotation_id, updated_at FROM ls_pulled WHERE project_id = ?", (pid,))}
    base = str(ls._client_wrapper.get_base_url())
    try:
        users = {int(u.id): (u.email or u.username) for u in ls.users.list()}
        tasks = list(ls.tasks.list(project=pid, fields="all", page_size=page_size))
    except httpx.HTTPError as exc:
        raise _unreachable(base, exc) from None
    anns: list[Annotation] = []
    pulled: list[tuple[int, int, str, str]] = []
    for task in tasks:
        if not task.total_annotations:
            continue
        key = (task.data or {}).get("key")
        if key not in by_key:
            res.problems.append(f"task {task.id}: unknown key, skipped")
            continue
        item_id, flipped = by_key[key]
        for a in task.annotations or []:
            a = a if isinstance(a, dict) else a.dict()
            aid, updated = int(a["id"]), str(a.get("updated_at") or a.get("created_at"))
            if seen.get(aid) == updated:
                continue
            if a.get("was_cancelled"):
                res.problems.append(f"annotation {aid} on task {task.id}: cancelled, skipped")
                pulled.append((aid, pid, updated, "cancelled"))
                continue
            shown, problem = _parse(a.get("result") or [])
            if problem or shown is None:
                res.problems.append(f"annotation {aid} on task {task.id}: {problem}, skipped")
                pulled.append((aid, pid, updated, "rejected"))
                continue
            label = {"A": "B", "B": "A"}.get(shown, shown) if flipped else shown
            who = users.get(int(a.get("completed_by") or 0), f"user-{a.get('completed_by')}")
            anns.append(Annotation(item_id, who, label, "BA" if flipped else "AB", a.get("lead_time"),
                                   f"label-studio:{project}", f"ls:{pid}:{aid}"))
            pulled.append((aid, pid, updated, "ok"))
            res.updated += aid in seen
            res.new += aid not in seen
    with ws.transaction() as tx:
        ws.add_annotations(anns, conn=tx)
        tx.executemany("INSERT OR REPLACE INTO ls_pulled VALUES (?, ?, ?, ?)", pulled)
    return res


def gold_labels(ws: Workspace, project: str | None = None) -> dict[str, str]:
    """item_id -> known label of the gold items pushed to ``project`` (all projects when ``None``)."""
    q = "SELECT item_id, gold_label FROM ls_tasks WHERE gold_label IS NOT NULL"
    rows = ws.conn.execute(q, ()) if project is None else ws.conn.execute(q + " AND project = ?", (project,))
    return dict(rows.fetchall())


def annotation_json(label: str) -> list[dict[str, Any]]:
    """The result payload of a pairwise choice, as Label Studio's UI submits it."""
    inverse = {v: k for k, v in CHOICES.items()}
    return [{"from_name": "preference", "to_name": "prompt", "type": "choices",
             "value": {"choices": [inverse.get(label, label)]}}]


__all__ = ["PullResult", "PushResult", "annotation_json", "client", "gold_labels", "pull", "push"]
