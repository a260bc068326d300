"""Annotator accounts that can actually log in, each in a Label Studio organisation of their own.

``ManagedServer.provision`` (Label Studio's own Python, see ``annotation/ls_extension.py``) creates the
user with a password, an organisation run by a judgecal service account, and that account's API token.
An annotator is a member of their organisation only, so they see no other annotator's project, tasks,
annotations or membership.

Login details and service tokens are kept in ``<workspace>/label-studio/annotators.json`` (mode 0600)
so the organiser can hand the logins out; they never enter the database or a report.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import httpx

from judgecal.annotation.server import LabelStudioError, ManagedServer


def _store(ws_path: str | os.PathLike[str]) -> Path:
    return Path(ws_path) / "label-studio" / "annotators.json"


def list_annotators(ws_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    p = _store(ws_path)
    data: list[dict[str, Any]] = json.loads(p.read_text()) if p.exists() else []
    return data


def login(url: str, email: str, password: str) -> httpx.Client:
    """A browser-like session logged in through Label Studio's login form (CSRF included)."""
    c = httpx.Client(base_url=url, follow_redirects=False, timeout=30)
    c.get("/user/login/")
    r = c.post("/user/login/", data={"email": email, "password": password,
                                      "csrfmiddlewaretoken": c.cookies.get("csrftoken") or ""},
               headers={"Referer": f"{url}/user/login/"})
    if r.status_code != 302:
        c.close()
        raise LabelStudioError(f"{email} could not log in to {url}")
    c.headers["X-CSRFToken"] = c.cookies.get("csrftoken") or ""
    c.headers["Referer"] = url
    return c


def _save(ws_path: Path, rows: list[dict[str, Any]]) -> None:
    path = _store(ws_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(rows, fh, indent=1)


def create_annotators(server: ManagedServer, emails: list[str],
                      passwords: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Create (or reuse) each annotator in an organisation of their own; checks that each login works."""
    known = {r["email"]: r for r in list_annotators(server.root.parent)}
    people = [{"email": e, "password": (passwords or {}).get(e) or known.get(e, {}).get("password")
               or secrets.token_urlsafe(12)} for e in emails]
    made = server.provision(people)
    out = []
    for p in people:
        login(server.url, p["email"], p["password"]).close()
        out.append({"email": p["email"], "password": p["password"], "url": server.public_url, **made[p["email"]]})
    fresh = {r["email"] for r in out}
    _save(server.root.parent, [r for r in known.values() if r["email"] not in fresh] + out)
    return out


def create_annotator(server: ManagedServer, email: str, password: str | None = None) -> dict[str, Any]:
    """One annotator (see ``create_annotators``)."""
    return create_annotators(server, [email], {email: password} if password else None)[0]


def reviewers(ws_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The annotators that have an organisation of their own (those a push sends tasks to)."""
    return [r for r in list_annotators(ws_path) if r.get("service_token")]
