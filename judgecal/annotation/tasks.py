"""Push blind pairwise tasks to Label Studio and pull the labels back.

Blindness: a task carries only the prompt, the two texts and an opaque random key. A/B order is
randomised per copy and the mapping (key -> item, flipped) stays in the workspace. Model names, item
ids, dataset names and judge outputs never leave judgecal. The project title is the user's.

Independence: on the managed server each annotator has an organisation of their own (see
``ls_extension.py``) holding one project with only their copy of the tasks, in an order drawn for them
(seeded by ``seed`` and their email, recorded as ``position``). An item goes to ``overlap`` annotators
(the least loaded first, ties drawn at random); gold items go to every annotator. Without annotators
(an external server, after ``--allow-shared-visibility``) one shared project holds one task per item,
and Label Studio's ``maximum_annotations`` is the overlap.

"Both bad" is kept apart from "Tie" where the choice is recorded (``ws.labelstudio_repo.ls_labels_frame``,
column ``choice``); the label stored for aggregation and audit is ``tie``: neither response is
preferred (``AGGREGATE_AS``).

Span, Likert and label review (``kind``, see ``kinds.py``) go through the same push and pull: the same
opaque keys, organisations, orders and overlap. A pulled span annotation becomes human spans (source
``label-studio:<project>``, the annotator as rater; one empty span when they marked nothing), a rating
an annotation with an integer label, a label review's answer an annotation with the declared label. A
multi-criterion record is one task (key ``K``) whose criterion items are recorded as copies ``K:crit_0``,
``K:crit_1``, ...; its answer becomes one annotation per criterion item (``ls:<project>:<id>/crit_0``, ...).
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import httpx

from judgecal.annotation import kinds
from judgecal.annotation.kinds import SECTIONS
from judgecal.annotation.server import Connection, LabelStudioError
from judgecal.data.records import Annotation, Item, Span
from judgecal.data.store import Workspace
from judgecal.errors import InputError

CHOICES = {"A better": "A", "B better": "B", "Tie": "tie", "Both bad": "both_bad"}
AGGREGATE_AS = {"both_bad": "tie"}
CONTROLS = {"preference": "choices", "rationale": "textarea"}


def label_config(name: str = "pairwise") -> str:
    return kinds.label_config(name)


def guidelines(config: str | None = None) -> str:
    """The guidelines (markdown); with ``config``, without the sections written for other configs."""
    text = resources.files("judgecal.annotation_assets").joinpath("guidelines.md").read_text("utf-8")
    if config is None:
        return text
    if config not in SECTIONS:
        raise InputError(f"unknown labeling config {config!r}; choose from {', '.join(SECTIONS)}")
    others = {t for c, t in SECTIONS.items() if c != config}
    parts = text.split("\n## ")
    kept = [parts[0]] + [p for p in parts[1:] if p.split("\n", 1)[0].strip() not in others]
    return "\n## ".join(kept)


def markdown_html(text: str) -> str:
    """CommonMark to HTML with raw HTML disabled: any ``<``, ``>`` or ``&`` in ``text`` is escaped."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark", {"html": False}).render(text))


# every project's description points to the guidelines the server itself shows (the project's instructions:
# before the first task and under Instructions on each task), never to a file on the organiser's disk
REVIEW_NOTE = ("How to review: the guidelines open before your first task, and again with the Instructions "
               "button on any task. Questions go to the person who invited you.")


def guidelines_html(config: str = "pairwise") -> str:
    """The guidelines of ``config`` as HTML (Label Studio shows ``expert_instruction`` as HTML)."""
    return markdown_html(guidelines(config))


def client(conn: Connection, http: httpx.Client | None = None) -> Any:
    """A label-studio-sdk client (``http`` lets a caller observe or tune the transport)."""
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=conn.url, api_key=conn.token, httpx_client=http or httpx.Client(timeout=60))


def _base_url(ls: Any) -> str:
    return str(ls._client_wrapper.get_base_url()).rstrip("/")


def _unreachable(conn_url: str, exc: Exception) -> LabelStudioError:
    return LabelStudioError(f"cannot reach Label Studio at {conn_url} ({type(exc).__name__}); nothing was "
                            "changed in the workspace: try again when the server is up")


def create_project(ls: Any, title: str, maximum_annotations: int, kind: str = "pairwise",
                   scale_max: int | None = None, questions: tuple[kinds.Question, ...] = (),
                   rubric: bool = False) -> int:
    """A new blind project of ``kind``; its guidelines are that kind's section, as HTML."""
    p = ls.projects.create(title=title, label_config=kinds.label_config(kind, scale_max, questions, rubric),
                           maximum_annotations=maximum_annotations, expert_instruction=guidelines_html(kind),
                           show_instruction=True, show_skip_button=True, sampling="Sequential sampling",
                           description=REVIEW_NOTE)
    return int(p.id)


def _check_kind(ls: Any, pid: int, kind: str, project: str, shown: _Shown | None = None) -> None:
    """Refuse to add ``kind`` tasks to a Label Studio project made for another kind of review (a labels
    project: for other questions, labels or criteria, or with or without a rubric)."""
    have = kinds.read_config(ls.projects.get(id=pid).label_config)
    if have.kind != kind:
        raise InputError(f"project {project!r} holds {have.kind} tasks, not {kind}; push them to another "
                         f"project (e.g. {kinds.DEFAULT_PROJECT[kind]!r})", name="project")
    if kind == "labels" and shown is not None:
        want = kinds.read_config(kinds.labels_config(shown.questions, bool(shown.rubric)))
        if (have.questions, have.rubric) != (want.questions, want.rubric):
            def ask(c: kinds.Config) -> str:
                return "; ".join(f"{q.title[:40]!r}: {', '.join(q.labels[:6])}" for q in c.questions) + \
                    (" with a rubric" if c.rubric else "")
            raise InputError(f"project {project!r} asks {ask(have)}, not {ask(want)}; push these items to "
                             "another project", name="project")


@dataclass
class PushResult:
    project_ids: dict[str, int] = field(default_factory=dict)
    created: int = 0
    already: int = 0
    gold: int = 0
    messages: list[str] = field(default_factory=list)

    @property
    def project_id(self) -> int:
        return next(iter(self.project_ids.values()))


def _reviewer_rng(seed: int, who: str) -> random.Random:
    return random.Random(f"{seed}:{who}")


def push(ws: Workspace, ls: Any, item_ids: list[str], *, project: str = "Blind review", overlap: int = 3,
         gold: dict[str, str] | None = None, gold_from: str | None = None, seed: int = 0,
         reviewers: list[dict[str, Any]] | None = None, http: httpx.Client | None = None,
         kind: str = "pairwise", rubric: Any = None) -> PushResult:
    """Send each item not yet in ``project`` (idempotent), plus gold items, as blind tasks.

    ``reviewers`` (entries of ``annotators.json``: ``email``, ``org_id``, ``service_token``) gives each
    annotator a project of their own; ``None`` pushes one shared project through ``ls``. ``gold`` maps
    item_id -> known label (item orientation), drawn from ``gold_from``; gold items are mixed in
    unmarked. A higher ``overlap`` than the project was pushed with is applied to the items already
    sent; a lower one is refused. ``http`` is the transport of the per-organisation clients.
    ``kind`` is ``pairwise``, ``spans``, ``likert`` or ``labels`` (see ``kinds.py``); a Likert task shows
    ``rubric`` (a :class:`judgecal.judges.rubric.Rubric`: its instructions and its scale), a labels task
    ``rubric``'s instructions (or the text itself) when one is given. A project holds one kind; a labels
    project one label set, or one set of criteria (``kinds.label_units``): items that differ are refused
    before anything is created. ``created``/``already`` count tasks (a record's criteria are one task).
    """
    if kind not in kinds.KINDS:
        raise InputError(f"unknown kind of review {kind!r}; choose from {', '.join(kinds.KINDS)}", name="kind")
    if kind == "likert" and (rubric is None or rubric.scale_min != 1):
        raise InputError("a Likert task needs a pointwise rubric whose scale starts at 1", name="rubric")
    if gold and kind != "pairwise":
        raise InputError(f"gold items are pairwise choices; {kind} review takes none", name="gold")
    if overlap < 1:
        raise InputError(f"overlap must be at least 1, not {overlap}", name="overlap")
    gold = gold or {}
    wanted = list(dict.fromkeys([*item_ids, *gold]))
    items = {it.item_id: it for it in ws.items_repo.items(ids=wanted)}
    missing = [i for i in wanted if i not in items]
    if missing:
        raise InputError(f"{len(missing)} item(s) are not in the workspace, e.g. {missing[0]!r}")
    for it in items.values():
        kinds.check_item(kind, it)
    questions, members = kinds.label_units(list(items.values())) if kind == "labels" else ((), {})
    if questions:
        kinds.labels_config(questions)  # a label the config cannot carry is refused here, before any change
    text = rubric if isinstance(rubric, str) else rubric.system if rubric is not None else ""
    shown = _Shown(kind, text.strip() if kind in ("likert", "labels") else "",
                   rubric.scale_max if kind == "likert" else None, questions, members)
    unit = shown.unit_of()
    wanted = list(dict.fromkeys(unit.get(i, i) for i in wanted))  # a record's criteria are one task
    res = PushResult()
    known = ws.labelstudio_repo.ls_projects(project)
    old_overlap = next((int(p["overlap"]) for p in known.values() if p["overlap"]), None)
    if old_overlap is not None and overlap < old_overlap:
        raise InputError(f"project {project!r} was pushed with overlap {old_overlap}; lowering it to {overlap} "
                         f"would withdraw tasks annotators already have. Push with overlap {old_overlap} (or "
                         "higher), or to another project", name="overlap")
    if old_overlap is not None and overlap > old_overlap:
        res.messages.append(f"overlap of {project!r} raised from {old_overlap} to {overlap}: items already sent "
                            "go to more annotators")
    copies = ws.labelstudio_repo.ls_copies_frame(project)
    base = _base_url(ls)
    if reviewers is None:
        return _push_shared(ws, ls, project, overlap, seed, wanted, items, gold, gold_from, known, copies, res,
                            shown)
    if not reviewers:
        raise InputError("no annotators yet: add them first with `judgecal annotate annotators --add EMAIL`")
    emails = [r["email"] for r in reviewers]
    holders: dict[str, set[str]] = {}
    for i, who in zip(copies["item_id"], copies["annotator"], strict=True):
        holders.setdefault(unit.get(str(i), str(i)), set()).add(str(who))
    load = {e: _tasks_of(copies, e) for e in emails}
    rng = random.Random(seed)
    plan: dict[str, list[str]] = {e: [] for e in emails}
    for item_id in wanted:
        have = holders.get(item_id, set())
        need = len(emails) if item_id in gold else min(overlap, len(emails))
        if have:
            res.already += 1
        free = [e for e in emails if e not in have]
        rng.shuffle(free)
        free.sort(key=lambda e: load[e])
        for e in free[:max(0, need - len(have))]:
            plan[e].append(item_id)
            load[e] += 1
    try:
        # every project that gets tasks is checked before any is created or filled: a refusal changes nothing
        for r in reviewers:
            if r["email"] in known and plan[r["email"]]:
                _check_kind(client(Connection(base, r["service_token"]), http), known[r["email"]]["project_id"],
                            kind, project, shown)
        for r in reviewers:
            email = r["email"]
            org_ls = client(Connection(base, r["service_token"]), http)
            pid = known[email]["project_id"] if email in known else None
            if pid is None:
                pid = create_project(org_ls, project, 1, kind, shown.scale_max, shown.questions, bool(shown.rubric))
            ws.labelstudio_repo.ls_save_project(project, email, pid, r.get("org_id"), overlap, seed)
            res.project_ids[email] = pid
            todo = plan[email]
            _reviewer_rng(seed, email).shuffle(todo)
            start = _tasks_of(copies, email)
            rows = _import(ws, org_ls, project, email, pid, todo, items, gold, gold_from, start, shown)
            res.created += rows
            res.gold += sum(1 for i in todo if i in gold)
    except httpx.HTTPError as exc:
        raise _unreachable(base, exc) from None
    return res


@dataclass(frozen=True)
class _Shown:
    """What a push shows beside each item: its kind, a Likert task's rubric text and scale; a labels task's
    questions and, per task (an item or a record), its items in question order (``kinds.label_units``)."""

    kind: str = "pairwise"
    rubric: str = ""
    scale_max: int | None = None
    questions: tuple[kinds.Question, ...] = ()
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def records(self) -> bool:
        """Whether each task is a record asked on its criteria (copies ``K:crit_0``, ...)."""
        return bool(self.questions) and self.questions[0].control != "label"

    def unit_of(self) -> dict[str, str]:
        """item id -> the task it is asked in (the record's id for a criterion item)."""
        return {i: u for u, ids in self.members.items() for i in ids} if self.records else {}


def _tasks_of(copies: Any, annotator: str) -> int:
    """How many tasks ``annotator`` ('' for a shared project) holds: the next free position."""
    mine = copies.loc[copies["annotator"] == annotator, "position"]
    return int(mine.max()) + 1 if len(mine) else 0


def _push_shared(ws: Workspace, ls: Any, project: str, overlap: int, seed: int, wanted: list[str],
                 items: dict[str, Any], gold: dict[str, str], gold_from: str | None, known: dict[str, Any],
                 copies: Any, res: PushResult, shown: _Shown) -> PushResult:
    base = _base_url(ls)
    try:
        if "" in known:
            pid = int(known[""]["project_id"])
            _check_kind(ls, pid, shown.kind, project, shown)
            if int(known[""]["overlap"] or overlap) != overlap:
                ls.projects.update(id=pid, maximum_annotations=overlap)
        else:
            pid = next((int(p.id) for p in ls.projects.list() if p.title == project), None) or \
                create_project(ls, project, overlap, shown.kind, shown.scale_max, shown.questions, bool(shown.rubric))
            _check_kind(ls, pid, shown.kind, project, shown)
        ws.labelstudio_repo.ls_save_project(project, "", pid, None, overlap, seed)
        res.project_ids[""] = pid
        unit = shown.unit_of()
        have = {unit.get(str(i), str(i)) for i in copies["item_id"]}
        todo = [i for i in wanted if i not in have]
        res.already = len(wanted) - len(todo)
        _reviewer_rng(seed, "").shuffle(todo)
        res.created = _import(ws, ls, project, "", pid, todo, items, gold, gold_from, _tasks_of(copies, ""), shown)
        res.gold = sum(1 for i in todo if i in gold)
    except httpx.HTTPError as exc:
        raise _unreachable(base, exc) from None
    return res


def _import(ws: Workspace, ls: Any, project: str, annotator: str, pid: int, todo: list[str], items: dict[str, Item],
            gold: dict[str, str], gold_from: str | None, start: int, shown: _Shown) -> int:
    """Import ``todo`` in this order (Label Studio serves a project's tasks in import order), then record;
    returns how many tasks. A record's task is recorded as one copy per criterion item (``K:crit_0``, ...)."""
    rng = secrets.SystemRandom()
    tasks: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for pos, unit in enumerate(todo, start):
        parts = list(zip([f":{q.control}" for q in shown.questions], shown.members[unit], strict=True)) \
            if shown.records else [("", unit)]
        it = items[parts[0][1]]
        flipped = shown.kind == "pairwise" and rng.random() < 0.5
        key = secrets.token_hex(12)
        tasks.append({"data": kinds.task_data(shown.kind, it, key, flipped, shown.rubric)})
        rows.extend({"task_key": key + suffix, "project": project, "annotator": annotator, "project_id": pid,
                     "item_id": item_id, "flipped": int(flipped), "gold_label": gold.get(item_id),
                     "gold_from": gold_from if item_id in gold else None, "position": pos, "pushed_at": time.time()}
                    for suffix, item_id in parts)
    for s in range(0, len(tasks), 500):
        ls.projects.import_tasks(id=pid, request=tasks[s:s + 500])
    if rows:
        ws.labelstudio_repo.ls_add_copies(rows)
    return len(tasks)


@dataclass
class PullResult:
    """``new``/``updated``: annotations read, new or changed since the last pull (one that repeats or
    contradicts the person's label on the item is among them, and counted again in ``duplicates`` or
    ``conflicts``); ``flagged``: annotations by someone else, never counted."""

    new: int = 0
    updated: int = 0
    cancelled: int = 0
    duplicates: int = 0  # a person's second annotation of an item with the same label: one label
    conflicts: int = 0  # items a person annotated twice with different labels: none of those counted
    deleted: int = 0  # labels an earlier pull counted whose annotation their annotator has since deleted: withdrawn
    problems: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)  # which were deleted, and by whom
    flagged: list[str] = field(default_factory=list)


def _parse(result: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(shown choice A/B/tie/both_bad, problem) from one annotation's result list, checked against the config."""
    choice, problem = None, None
    for r in result:
        name, kind = r.get("from_name"), r.get("type")
        if name not in CONTROLS or CONTROLS[name] != kind:
            return None, f"unknown field {name!r} ({kind})"
        if name == "preference":
            if choice is not None:
                return None, "the preference is answered twice"
            picked = (r.get("value") or {}).get("choices") or []
            if len(picked) != 1 or picked[0] not in CHOICES:
                return None, f"choice {picked!r} is not in the labeling config"
            choice = CHOICES[picked[0]]
    if choice is None:
        problem = "no preference given"
    return choice, problem


def _user_id(v: Any) -> int | None:
    if isinstance(v, dict):
        v = v.get("id")
    return int(v) if v not in (None, "", 0) else None


def pull(ws: Workspace, ls: Any, *, project: str = "Blind review", page_size: int = 100,
         reviewers: list[dict[str, Any]] | None = None, http: httpx.Client | None = None,
         progress: Callable[[int], None] | None = None) -> PullResult:
    """Fetch new and updated annotations, check them, map them back to items; one transaction.

    A project of one annotator counts only that annotator's annotations: one made (``completed_by``)
    or last changed (``updated_by``) by anyone else is flagged with who made and changed it, and never
    enters aggregation (an earlier pull's copy of it is withdrawn). In a shared project an annotation
    counts when its author is its last editor. People are named by email (``names``: user id -> email,
    e.g. the annotators' and service accounts' of ``annotators.json``, which a project's organisation
    does not list). Cancelled (skipped) annotations are reported. An annotation an earlier pull stored and
    that is no longer on the server (its annotator deleted it) is withdrawn, and recorded as ``deleted``.
    Each project's answers are checked against its own labeling config (``kinds.read_config``); span
    regions also against the item's text in the workspace. A rejected annotation is reported and no
    part of it is stored. ``progress(n)`` hears each page of ``n`` tasks as it arrives.
    """
    res = PullResult()
    known = ws.labelstudio_repo.ls_projects(project)
    copies = ws.labelstudio_repo.ls_copies_frame(project)
    if copies.empty:
        return res
    by_key = {str(k): (str(i), bool(f), str(a)) for k, i, f, a in
              zip(copies["task_key"], copies["item_id"], copies["flipped"], copies["annotator"], strict=True)}
    records: dict[str, dict[str, str]] = {}  # a record's task key -> control (crit_0, ...) -> criterion item
    for k, (i, _, _) in by_key.items():
        head, sep, control = k.partition(":")
        if sep:
            records.setdefault(head, {})[control] = i
    record_ids: dict[str, str] = {}
    tokens = {r["email"]: r["service_token"] for r in reviewers or [] if r.get("service_token")}
    known_people = _known_people(ls, reviewers or [])
    base = _base_url(ls)
    withdrawn: list[str] = []
    seen = ws.labelstudio_repo.ls_seen(int(p["project_id"]) for p in known.values())
    anns: list[Annotation] = []
    labels: list[dict[str, Any]] = []
    spans: dict[str, list[Span]] = {}
    texts: dict[str, str] = {}
    latest: dict[tuple[str, str], str] = {}
    source = f"label-studio:{project}"
    for owner, info in known.items():
        pid = int(info["project_id"])
        if owner and owner not in tokens:
            res.problems.append(f"project {pid} of {owner}: no login for it in annotators.json, not pulled")
            continue
        org_ls = client(Connection(base, tokens[owner]), http) if owner else ls
        try:
            users = {**known_people, **{int(u.id): str(u.email or u.username) for u in org_ls.users.list()}}
            tasks = []
            for t in org_ls.tasks.list(project=pid, fields="all", page_size=page_size):
                tasks.append(t)
                if progress is not None and len(tasks) % page_size == 0:
                    progress(page_size)
            if progress is not None and len(tasks) % page_size:
                progress(len(tasks) % page_size)
            cfg = kinds.read_config(org_ls.projects.get(id=pid).label_config)
        except httpx.HTTPError as exc:
            raise _unreachable(base, exc) from None
        if cfg.kind == "spans" and not texts:
            texts = {it.item_id: it.candidates[0].text for it in ws.items_repo.items(ids=sorted(set(copies["item_id"])))}
        # each task's annotations as the dicts the server sent (the SDK may give its models)
        given = [[a if isinstance(a, dict) else a.dict() for a in t.annotations or []] for t in tasks]
        present = {int(a["id"]) for task_anns in given for a in task_anns}
        _deleted(ws, project, pid, present, seen, records, labels, withdrawn, res)
        for task, task_anns in zip(tasks, given, strict=True):
            if not (task.total_annotations or task.cancelled_annotations or task.annotations):
                continue
            key = (task.data or {}).get("key")
            key = key if isinstance(key, str) else ""
            members = records.get(key)
            if key not in by_key and members is None:
                res.problems.append(f"task {task.id}: unknown key, skipped")
                continue
            if members is not None:  # a record asked on its criteria: its row names the record
                if not record_ids:
                    record_ids = {str(k): str(v) for k, v in ws.items_repo.item_metadata("record").items()}
                first = next(iter(members.values()))
                item_id, flipped = record_ids.get(first, first), False
            else:
                item_id, flipped, _ = by_key[key]
            for a in task_anns:
                aid, updated = int(a["id"]), str(a.get("updated_at") or a.get("created_at"))
                if seen.get((pid, aid)) == updated:
                    continue
                author = _name(users, a.get("completed_by"))
                changer = _name(users, a.get("updated_by")) if _user_id(a.get("updated_by")) else author
                row = {"project_id": pid, "annotation_id": aid, "task_key": key, "item_id": item_id,
                       "annotator": changer, "completed_by": author, "updated_by": changer, "updated_at": updated}
                ref = f"ls:{pid}:{aid}"
                refs = [ref, *(f"{ref}/{c}" for c in members or ())]  # what an earlier pull stored of it
                if {author, changer} != {owner or author}:
                    note = f"made by {author}, last changed by {changer}"
                    res.flagged.append(f"annotation {aid} on task {task.id} in "
                                       f"{f'the project of {owner}' if owner else 'the shared project'}: {note}; "
                                       "not counted")
                    labels.append({**row, "status": "flagged", "note": note})
                    withdrawn.extend(refs)
                    continue
                if a.get("was_cancelled"):
                    res.cancelled += 1
                    res.problems.append(f"annotation {aid} on task {task.id} by {author}: cancelled (skipped by the "
                                        "annotator), not counted")
                    labels.append({**row, "status": "cancelled"})
                    withdrawn.extend(refs)
                    continue
                result = a.get("result") or []
                if cfg.kind == "spans":
                    regions, problem = kinds.parse_spans(result, cfg, texts[item_id])
                elif cfg.kind == "likert":
                    rating, problem = kinds.parse_rating(result, cfg)
                elif cfg.kind == "labels":
                    picked, problem = kinds.parse_labels(result, cfg)
                    asked = [q.control for q in cfg.questions]
                    if not problem and sorted(members or {asked[0]: item_id}) != sorted(asked):
                        problem = "the task does not match its project's labeling config"
                else:
                    shown, problem = _parse(result)
                rationale, bad = kinds.parse_rationale(result) if cfg.kind != "spans" else (None, None)
                problem = problem or bad
                if problem:
                    res.problems.append(f"annotation {aid} on task {task.id} by {author}: {problem}, skipped")
                    labels.append({**row, "status": "rejected", "note": problem})
                    withdrawn.extend(refs)
                    continue
                if cfg.kind == "spans":
                    tag = json.dumps({"annotation_id": ref})
                    spans[ref] = [Span(item_id, changer, 0, st, en, lab, source, "human", note=tag)
                                  for st, en, lab in regions] or [Span(item_id, changer, 0, 0, 0, "", source, "human",
                                                                       note=tag)]
                    choice = f"{len(regions)} region(s)"
                    superseded = latest.pop((item_id, changer), None)  # the rater's later annotation wins
                    spans.pop(superseded or "", None)
                    latest[(item_id, changer)] = ref
                elif cfg.kind == "likert":
                    choice = str(rating)
                    anns.append(Annotation(item_id, changer, choice, None, a.get("lead_time"), source, ref,
                                           rationale))
                elif cfg.kind == "labels" and members is None:
                    choice = picked[asked[0]]
                    anns.append(Annotation(item_id, changer, choice, None, a.get("lead_time"), source, ref,
                                           rationale))
                elif cfg.kind == "labels" and members is not None:  # one per criterion item, one rationale
                    choice = json.dumps({q.title: picked[q.control] for q in cfg.questions}, ensure_ascii=False)
                    anns.extend(Annotation(members[c], changer, picked[c], None, a.get("lead_time"), source,
                                           f"{ref}/{c}", rationale) for c in asked)
                else:
                    choice = {"A": "B", "B": "A"}.get(str(shown), str(shown)) if flipped else str(shown)
                    anns.append(Annotation(item_id, changer, AGGREGATE_AS.get(choice, choice),
                                           "BA" if flipped else "AB", a.get("lead_time"), source, ref, rationale))
                labels.append({**row, "choice": choice, "status": "ok", "note": None})
                res.updated += (pid, aid) in seen
                res.new += (pid, aid) not in seen
    anns, reopened = _one_label_each(ws, anns, labels, withdrawn, source, seen, res)
    ws.labelstudio_repo.ls_record_pull(anns, labels, spans, withdrawn, reopened)
    return res


def _deleted(ws: Workspace, project: str, pid: int, present: set[int], seen: dict[tuple[int, int], str],
             records: dict[str, dict[str, str]], labels: list[dict[str, Any]], withdrawn: list[str],
             res: PullResult) -> None:
    """Withdraw what an earlier pull stored of project ``pid``'s annotations that are no longer on the server
    (``present``: the ids its tasks list now), and record each as ``deleted`` (once)."""
    gone = sorted(aid for p, aid in seen if p == pid and aid not in present)
    if not gone:
        return
    mine = ws.labelstudio_repo.ls_labels_frame(project)
    mine = mine[mine["project_id"] == pid]
    stored = mine[mine["annotation_id"].isin(gone)]
    for record in stored.to_dict("records"):
        row = {str(k): v for k, v in record.items()}
        if row["status"] == "deleted":
            continue
        ref = f"ls:{pid}:{int(row['annotation_id'])}"
        withdrawn.extend([ref, *(f"{ref}/{c}" for c in records.get(str(row["task_key"]), {}))])
        labels.append({**row, "project_id": pid, "annotation_id": int(row["annotation_id"]), "status": "deleted",
                       "note": f"deleted in Label Studio (was {row['status']})"})
        if row["status"] != "ok":  # a skip, a rejected or flagged answer: it never counted, nothing to say
            continue
        # the person's annotations that repeated its label are read again: one of them is their label now
        for aid in mine[(mine["status"] == "duplicate") & (mine["note"] == f"the same label as {ref}")]["annotation_id"]:
            seen.pop((pid, int(aid)), None)
        res.deleted += 1
        res.withdrawn.append(f"annotation {int(row['annotation_id'])} by {row['annotator']} (item "
                             f"{row['item_id']}): deleted in Label Studio, no longer counted")


def _one_label_each(ws: Workspace, anns: list[Annotation], labels: list[dict[str, Any]], withdrawn: list[str],
                    source: str, seen: dict[tuple[int, int], str],
                    res: PullResult) -> tuple[list[Annotation], list[tuple[int, int, str]]]:
    """One person gives one label per item, as in every imported file (:meth:`Mapped.label
    <judgecal.data.formats.base.Mapped.label>`): a person's annotations of one item in this pull and the one an
    earlier pull stored (a task annotated twice, a copy of it in another project) are one label when they agree
    (counted in ``duplicates``); when they differ none counts (each is marked rejected and read again by the next
    pull, until the person deletes one), reported, never the last one taken. ``withdrawn`` grows by what an
    earlier pull stored of them; returns the labels to store and the earlier annotations to reopen."""
    def ls_ref(annotation_id: str | None) -> str:
        return (annotation_id or "").split("/", 1)[0]  # a record's criterion labels share their annotation

    groups: dict[tuple[str, str], list[Annotation]] = {}
    for a in anns:
        groups.setdefault((a.item_id, a.annotator), []).append(a)
    gone = {ls_ref(w) for w in withdrawn}  # deleted, cancelled or flagged since: no longer a label of theirs
    for a in ws.annotations_repo.annotations_on({i for i, _ in groups}, source):
        if ls_ref(a.annotation_id) in gone:
            continue
        mine = groups.get((a.item_id, a.annotator))
        if mine is not None and ls_ref(a.annotation_id) not in {ls_ref(b.annotation_id) for b in mine}:
            mine.insert(0, a)  # stored by an earlier pull: it came first
    rows = {f"ls:{r['project_id']}:{r['annotation_id']}": r for r in labels}
    drop: set[int] = set()
    reopened: list[tuple[int, int, str]] = []
    for (item, who), group in groups.items():
        refs = list(dict.fromkeys(ls_ref(a.annotation_id) for a in group))
        if len(refs) < 2:
            continue
        given = list(dict.fromkeys(a.label for a in group))
        if len(given) == 1:  # the same label again: the first one stands for it
            res.duplicates += len(refs) - 1
            drop.update(id(a) for a in group[1:])
            for ref in refs[1:]:
                if ref in rows:
                    rows[ref].update(status="duplicate", note=f"the same label as {refs[0]}")
            continue
        res.conflicts += 1
        why = (f"{who} labels item {item!r} {' and '.join(repr(g) for g in given)} in annotations "
               f"{', '.join(refs)}: one person gives one label per item, none counted until one is deleted")
        res.problems.append(why)
        drop.update(id(a) for a in group)
        for a in group:
            ref = ls_ref(a.annotation_id)
            if ref in rows:
                row = rows[ref]
                if row["status"] == "ok":
                    new = (row["project_id"], row["annotation_id"]) not in seen
                    res.new -= new
                    res.updated -= not new
                row.update(status="rejected", note=why, updated_at="")  # read again by the next pull
            else:  # an earlier pull's
                withdrawn.append(str(a.annotation_id))
                _, pid, aid = ref.split(":")
                reopened.append((int(pid), int(aid), why))
    return [a for a in anns if id(a) not in drop], reopened


def _known_people(ls: Any, reviewers: list[dict[str, Any]]) -> dict[int, str]:
    """user id -> email of the organiser, the annotators and their service accounts (``annotators.json``)."""
    out = {int(r["user_id"]): str(r["email"]) for r in reviewers if r.get("user_id") is not None}
    out.update({int(r["service_user_id"]): str(r["service_email"]) for r in reviewers
                if r.get("service_user_id") is not None})
    try:
        me = ls.users.whoami()
        out[int(me.id)] = str(me.email or me.username)
    except Exception:  # noqa: BLE001 - only a name; an unreachable server is reported by the reads below
        pass
    return out


def _name(users: dict[int, str], v: Any) -> str:
    """The email of user ``v`` (an id or a user object); a user judgecal cannot name is said so, by id."""
    if isinstance(v, dict) and v.get("email"):
        return str(v["email"])
    uid = _user_id(v)
    if uid is None:
        return "nobody"
    return users.get(uid, f"an unknown user (id {uid}, not in this project's organisation)")


def skipped(ws: Workspace, source: str | None) -> dict[str, int]:
    """annotator -> how many tasks they skipped (cancelled annotations as the last pull found them) in the Label
    Studio project of ``source`` (``label-studio:<project>``); empty for any other source."""
    if not source or not source.startswith("label-studio:"):
        return {}
    rows = ws.labelstudio_repo.ls_labels_frame(source.split(":", 1)[1])
    counts = rows[rows["status"] == "cancelled"].groupby("annotator").size()
    return {str(k): int(v) for k, v in counts.items()}


def gold_labels(ws: Workspace, project: str | None = None) -> dict[str, str]:
    """item_id -> known label of the gold items pushed to ``project`` (all projects when ``None``)."""
    return ws.labelstudio_repo.ls_gold(project)


def annotation_json(label: str) -> list[dict[str, Any]]:
    """The result payload of a pairwise choice, as Label Studio's UI submits it."""
    inverse = {v: k for k, v in CHOICES.items()}
    return [{"from_name": "preference", "to_name": "prompt", "type": "choices",
             "value": {"choices": [inverse.get(label, label)]}}]


__all__ = ["PullResult", "PushResult", "annotation_json", "client", "gold_labels", "guidelines_html", "pull",
           "push"]
