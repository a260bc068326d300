"""What an annotator can see and do on a Label Studio server, asked as that annotator.

For each annotator session (their own login or API token): the projects, tasks, users and
organisation members they can list, whether any annotation by someone else is visible to them, and
whether the server lets them change a project's settings (an empty ``PATCH``, which changes nothing when
allowed). On the managed server, :func:`probe_writes` also tries, as each annotator against each other
one, the writes that would plant or move labels (drafts, data-manager tabs, annotations credited to
someone else or moved into their project), reads of their drafts, a product-tour record moved onto them, an
annotation's ``unique_id`` set (a taken one confirms it exists) and their ids written ``+N`` or `` N`` (an
answer that differs from a missing id's confirms it exists), and undoes whatever got through.
Labels are independent when every one of these was tried and refused. Without annotator logins nothing
was tried: the answer is "not checked", never "independent"; the organiser's own view can still show
that several annotators share one organisation (and so see each other's annotations).
"""

from __future__ import annotations

from typing import Any

import httpx

SERVICE_DOMAIN = "@judgecal.local"


def _json(c: httpx.Client, path: str) -> Any:
    r = c.get(path)
    return r.json() if r.status_code == 200 else None


def _results(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        return list(data.get("results") or data.get("tasks") or [])
    return list(data or [])


def probe(c: httpx.Client) -> dict[str, Any]:
    """What the annotator behind ``c`` (a logged-in session or a token client) can see and do."""
    me = _json(c, "/api/current-user/whoami") or {}
    my_id, my_email = me.get("id"), me.get("email")
    projects = _results(_json(c, "/api/projects/?page_size=1000"))
    users = _results(_json(c, "/api/users/"))
    members = _results(_json(c, f"/api/organizations/{me.get('active_organization')}/memberships?page_size=1000"))
    people = {u.get("email") for u in users} | {(m.get("user") or {}).get("email") for m in members}
    others = sorted(p for p in people if p and p != my_email and not p.endswith(SERVICE_DOMAIN))
    foreign_annotations = 0
    for p in projects:
        for t in _results(_json(c, f"/api/tasks/?project={p['id']}&fields=all&page_size=1000")):
            for a in t.get("annotations") or []:
                who = a.get("completed_by")
                who = who.get("id") if isinstance(who, dict) else who
                foreign_annotations += who is not None and who != my_id
    # a project is theirs when it lives in their own organisation; whether anyone else is in it is
    # what other_people_visible says
    not_theirs = [p["title"] for p in projects if p.get("organization") not in (None, me.get("active_organization"))]
    can_change = False
    if projects:
        can_change = c.patch(f"/api/projects/{projects[0]['id']}/", json={}).status_code < 300
    return {"email": my_email, "projects_visible": len(projects), "projects_not_theirs": not_theirs,
            "other_people_visible": others, "others_annotations_visible": foreign_annotations,
            "can_change_project_settings": can_change}


def verdict(report: dict[str, dict[str, Any]]) -> list[str]:
    """Why labels would not be independent (empty when they would be)."""
    why = []
    for email, r in report.items():
        if r["others_annotations_visible"]:
            why.append(f"{email} sees {r['others_annotations_visible']} annotation(s) by others")
        if r["other_people_visible"]:
            why.append(f"{email} sees other people: {', '.join(r['other_people_visible'][:5])}")
        if r["projects_not_theirs"]:
            why.append(f"{email} sees projects that are not theirs: {', '.join(r['projects_not_theirs'][:5])}")
    return why


def organiser_view(admin: httpx.Client) -> list[str]:
    """From the organiser's token alone: annotators sharing the organiser's organisation."""
    me = _json(admin, "/api/current-user/whoami") or {}
    users = _results(_json(admin, "/api/users/"))
    people = sorted(u["email"] for u in users if u.get("email") and u.get("email") != me.get("email")
                    and not u["email"].endswith(SERVICE_DOMAIN))
    if len(people) > 1:
        return [f"{len(people)} people share the organisation of {me.get('email')} ({', '.join(people[:5])}): "
                "in Label Studio's open-source edition each member sees every project and the others' "
                "annotations, and may change them"]
    return []


CHECK_KEY = "judgecal-access-check"
REFUSED = "refused"


def _id_of(r: httpx.Response) -> int | None:
    try:
        data = r.json()
    except ValueError:
        return None
    return int(data["id"]) if isinstance(data, dict) and isinstance(data.get("id"), int) else None


def _outcome(r: httpx.Response, what: str) -> str:
    return REFUSED if r.status_code in (401, 403, 404, 405) else f"FAILED: {what} (HTTP {r.status_code})"


def _first(c: httpx.Client, path: str) -> dict[str, Any] | None:
    found = _results(_json(c, path))
    return found[0] if found else None


def annotator_area(svc: httpx.Client) -> dict[str, Any] | None:
    """An annotator's project, one of its tasks and the annotator's user id, read with their service token."""
    project = _first(svc, "/api/projects/?page_size=1")
    if project is None:
        return None
    task = _first(svc, f"/api/tasks/?project={project['id']}&page_size=1")
    return {"project": int(project["id"]), "task": int(task["id"]) if task else None}


def probe_writes(c: httpx.Client, me: dict[str, Any], other: dict[str, Any], svc_mine: httpx.Client,
                 svc_theirs: httpx.Client) -> dict[str, str]:
    """Try, as the annotator behind ``c``, each write into ``other``'s work; undo whatever got through.

    ``me`` and ``other``: ``email``, ``user_id`` and :func:`annotator_area` (``project``, ``task``).
    Moving or re-crediting needs an annotation of one's own, changing or deleting one of theirs: each is
    made on a task that the project's service account adds for the check (data key :data:`CHECK_KEY`)
    and deletes after.
    Returns check -> ``refused`` or ``FAILED: what happened``.
    """
    out: dict[str, str] = {}
    who, task, pid = other["email"], other["task"], other["project"]
    if task is not None:
        r = c.get(f"/api/tasks/{task}/drafts")
        out[f"read {who}'s drafts"] = REFUSED if r.status_code in (403, 404) and who not in r.text else \
            f"FAILED: answered {r.status_code}" + (f" naming {who}" if who in r.text else "")
        r = c.post(f"/api/tasks/{task}/drafts", json={"result": [], "lead_time": 1})
        out[f"add a draft to {who}'s task"] = _outcome(r, "a draft was added to their task")
        if (draft := _id_of(r)) is not None and r.is_success:
            svc_theirs.delete(f"/api/drafts/{draft}/")
    r = c.post("/api/dm/views/", json={"project": pid, "data": {"title": "judgecal check"}})
    out[f"add a tab to {who}'s project"] = _outcome(r, "a tab was added to their project")
    if (view := _id_of(r)) is not None and r.is_success:
        svc_theirs.delete(f"/api/dm/views/{view}/")
    result: list[dict[str, Any]] = []  # an answer every labeling config accepts
    out.update(_their_annotation(c, other, svc_theirs))
    out.update(_tour_and_ids(c, other))
    tmp = _check_task(svc_mine, me["project"])
    if tmp is None:
        out["annotate their own task"] = "not checked: the service account could not add a task to their project"
        return out
    try:
        r = c.post(f"/api/tasks/{tmp}/annotations/", json={"result": result, "completed_by": other["user_id"]})
        credited = _id_of(r) if r.is_success else None
        got = _json(svc_mine, f"/api/annotations/{credited}/") if credited else None
        out[f"post an annotation credited to {who}"] = (
            f"FAILED: annotation {credited} credited to {who}" if got and _as_id(got.get("completed_by")) ==
            other["user_id"] else REFUSED
            if credited is None else "refused (the field was ignored)")
        r = c.post(f"/api/tasks/{tmp}/annotations/", json={"result": result})
        own = _id_of(r) if r.is_success else None
        out["annotate their own task"] = "ok" if own else f"FAILED: HTTP {r.status_code}"
        if own is None:
            return out
        out["set an annotation's unique_id"] = _unique_id(c, tmp, own)
        tries = {f"re-credit their annotation to {who}": {"completed_by": other["user_id"]},
                 f"mark their annotation as changed by {who}": {"updated_by": other["user_id"]},
                 f"move their annotation into {who}'s project": {"project": pid, **({"task": task} if task else {})}}
        for name, body in tries.items():
            r = c.patch(f"/api/annotations/{own}/", json=body)
            now = _json(svc_mine, f"/api/annotations/{own}/") or {}
            changed = [k for k, v in body.items() if _as_id(now.get(k)) == v]
            out[name] = f"FAILED: {', '.join(changed)} changed (HTTP {r.status_code})" if changed else \
                REFUSED if r.status_code in (400, 403, 404) else "refused (the fields were ignored)"
            if "task" in changed or "project" in changed:  # it left their project: take it out of the other's
                svc_mine.delete(f"/api/annotations/{own}/")
                break
    finally:
        svc_mine.delete(f"/api/tasks/{tmp}/")
    return out


TOUR = "prompts_page"  # a product tour Label Studio 1.23.2 knows
MISSING_ID = 2**31 - 1  # an id no object of the check's server has
_ODD_FORMS = {"+N": "+{}", "' N'": " {}", "'N '": "{} ", "N.0": "{}.0",
              "in Arabic-Indic digits": "{}"}  # the last one is translated below
_ARABIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


def _odd(form: str, n: int) -> str:
    text = _ODD_FORMS[form].format(n)
    return text.translate(_ARABIC) if form == "in Arabic-Indic digits" else text


def _tour_and_ids(c: httpx.Client, other: dict[str, Any]) -> dict[str, str]:
    """Move the annotator's product-tour record onto ``other`` (Label Studio lets a body set its ``user``), write
    an unbounded one, and ask for ``other``'s project by its id written oddly: a ``+N``/`` N`` id that answers
    otherwise than a missing id tells that it exists."""
    who, out = other["email"], {}
    r = c.patch("/api/current-user/product-tour", params={"name": TOUR}, json={"user": other["user_id"]})
    data = r.json() if r.is_success and "json" in r.headers.get("content-type", "") else {}
    moved = isinstance(data, dict) and _as_id(data.get("user")) == other["user_id"]
    out[f"move a product-tour record onto {who}"] = (
        "FAILED: the record is now theirs (it stays on their account)" if moved else REFUSED
        if r.status_code in (400, 403, 404) else "refused (the field was ignored)")
    big = {"state": "ready", "interaction_data": {"additional_data": {"x": "x" * 100_000}}}
    r = c.patch("/api/current-user/product-tour", params={"name": TOUR}, json=big)
    out["write a 100 KB product-tour record"] = _outcome(r, "the record was stored")
    for form in _ODD_FORMS:
        got = {n: c.get("/api/tasks/", params={"project": _odd(form, n)}) for n in (other["project"], MISSING_ID)}
        theirs, missing = got[other["project"]], got[MISSING_ID]
        same = theirs.status_code == missing.status_code and (theirs.status_code >= 400 or theirs.text == missing.text)
        out[f"tell whether {who}'s project exists (id written {form})"] = REFUSED if same and who not in theirs.text \
            else f"FAILED: their project answered {theirs.status_code}, a missing one {missing.status_code}"
    return out


def _unique_id(c: httpx.Client, task: int, own: int) -> str:
    """Set ``unique_id`` on a new annotation and on ``own`` (both on the check's ``task``), then reuse each: a 409
    means it was stored (and so that a taken id can be told apart); a malformed one must not break the server."""
    import uuid

    fresh, changed = str(uuid.uuid4()), str(uuid.uuid4())
    tries = [("a new annotation's", c.post(f"/api/tasks/{task}/annotations/", json={"result": [], "unique_id": fresh})),
             ("a changed annotation's", c.patch(f"/api/annotations/{own}/", json={"unique_id": changed})),
             ("a malformed", c.post(f"/api/tasks/{task}/annotations/", json={"result": [], "unique_id": "x"}))]
    failed = [f"{what} unique_id answered {r.status_code}" for what, r in tries if r.status_code >= 500]
    for what, value in (("a new annotation's", fresh), ("a changed annotation's", changed)):
        again = c.post(f"/api/tasks/{task}/annotations/", json={"result": [], "unique_id": value})
        if again.status_code == 409:
            failed.append(f"{what} unique_id was stored (reusing it answered 409)")
    if failed:
        return "FAILED: " + "; ".join(failed)
    return REFUSED if all(r.status_code in (400, 403) for _, r in tries) else "refused (the field was ignored)"


def _check_task(svc: httpx.Client, project: int) -> int | None:
    """A task the service account adds to ``project`` for the check (deleted after it)."""
    return _id_of(svc.post("/api/tasks/", json={"project": project, "data": {
        "prompt": "access check", "response_a": "-", "response_b": "-", "response": "-", "text": "-",
        "document": "-", "rubric": "-", "key": CHECK_KEY}}))


def _their_annotation(c: httpx.Client, other: dict[str, Any], svc_theirs: httpx.Client) -> dict[str, str]:
    """Read, change and delete an annotation of ``other``'s (one their service account makes for the check,
    credited to them, on a task of the check's own in their project; deleted after)."""
    who = other["email"]
    tmp = _check_task(svc_theirs, other["project"])
    if tmp is None:
        return {f"change {who}'s annotation": "not checked: no task could be added to their project"}
    try:
        made = svc_theirs.post(f"/api/tasks/{tmp}/annotations/", json={"result": [], "completed_by": other["user_id"]})
        theirs = _id_of(made)
        if theirs is None:
            return {f"change {who}'s annotation": f"not checked: no annotation could be made ({made.status_code})"}
        r = c.get(f"/api/annotations/{theirs}/")
        out = {f"read {who}'s annotation": REFUSED if r.status_code in (403, 404) else f"FAILED: answered {r.status_code}"}
        out[f"change {who}'s annotation"] = _outcome(c.patch(f"/api/annotations/{theirs}/", json={"result": []}),
                                                     "their annotation was changed")
        out[f"delete {who}'s annotation"] = _outcome(c.delete(f"/api/annotations/{theirs}/"),
                                                     "their annotation was deleted")
        return out
    finally:
        svc_theirs.delete(f"/api/tasks/{tmp}/")


def _as_id(v: Any) -> int | None:
    v = v.get("id") if isinstance(v, dict) else v
    return int(v) if isinstance(v, int) else None


def write_verdict(report: dict[str, dict[str, str]]) -> list[str]:
    """Each write (or draft read) that got through, as ``<annotator> could <what>: <how>``."""
    return [f"{email} could {what}: {how.removeprefix('FAILED: ')}" for email, checks in report.items()
            for what, how in checks.items() if how.startswith("FAILED")]
