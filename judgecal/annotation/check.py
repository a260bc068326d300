"""What an annotator can see and do on a Label Studio server, asked as that annotator.

For each annotator session (their own login or API token): the projects, tasks, users and
organisation members they can list, whether any annotation by someone else is visible to them, and
whether the server lets them change a project's settings (an empty ``PATCH``, which changes nothing when
allowed). Labels are independent when no annotator sees another's annotations, projects or membership.
Without annotator logins the organiser's own view decides: several annotators in one organisation of
Label Studio's open-source edition see each other's annotations.
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
            "can_change_project_settings": can_change,
            "can_change_others_annotations": "not tested (the test would change one)"}


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
