"""Annotator accounts that can actually log in: created through the API, given a password with
``label-studio reset_password`` (API-created users have none) and the admin's organization.

Login details are kept in ``<workspace>/label-studio/annotators.json`` (mode 0600) so the
organiser can hand them out; they never enter the database or a report.
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


def create_annotator(ls: Any, server: ManagedServer, email: str, password: str | None = None) -> dict[str, Any]:
    """Create (or reuse) ``email`` as an annotator with a password; checks that the login works."""
    password = password or secrets.token_urlsafe(12)
    org = ls.users.whoami().active_organization
    existing = {u.email: u for u in ls.users.list()}
    user = existing.get(email) or ls.users.create(username=email, email=email, active_organization=org)
    done = server.manage("reset_password", "--username", email, "--password", password)
    if done.returncode != 0:
        raise LabelStudioError(f"could not set a password for {email}: {done.stderr[-300:]}")
    login(server.url, email, password).close()
    entry = {"email": email, "password": password, "user_id": int(user.id), "url": server.url}
    rows = [r for r in list_annotators(server.root.parent) if r["email"] != email] + [entry]
    path = _store(server.root.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(rows, fh, indent=1)
    return entry
