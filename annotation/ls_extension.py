"""judgecal's settings for its managed Label Studio server; runs inside Label Studio's own Python.

What Label Studio 1.23.2 (open source) enforces, measured: list endpoints are scoped to the user's
active organisation, but object access is not (``ProjectMixin.has_permission`` only rejects revoked
members: "LSO always runs a single organization"), so ``/api/tasks/?project=<another org's>`` answers;
a user may set their own ``active_organization`` to any organisation; every member may create, change
or delete any project, task or member of the organisation (views' ``permission_required`` is not
checked). judgecal therefore gives each annotator an organisation of their own, holding only their
copy of the tasks and run by a judgecal service account (group ``judgecal-service``), and this module:

- ``GuardedProjectMixin``: an object of a project (the project, its tasks, annotations, drafts, views,
  exports) is open only to members of the project's organisation who have it active, or to a service
  account;
- ``annotators_write_annotations_only``: a user who is not a service account may write (POST, PUT,
  PATCH, DELETE) only their own annotations and drafts, data-manager tabs, their own user record
  (not its organisation), ask for their next task and log in or out; everything else answers 403
  (and is logged to the server log); on an annotator's pages the controls they cannot use (create
  project, project menu and settings, organisation, import, export) are hidden.

Loaded as ``DJANGO_SETTINGS_MODULE=judgecal_ls``. Run as a script with a JSON request on stdin, it
provisions annotators (user, password, organisation, service account and token) and prints JSON.
"""
# ruff: noqa: F403, F405, I001

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

SERVICE_GROUP = "judgecal-service"
_ALLOWED = re.compile(r"^/(user/login|user/logout|api/dm/views|api/current-user)(/|$)")
_ANNOTATION = re.compile(r"^/api/annotations/(\d+)(/|$)")
_NEW_ANNOTATION = re.compile(r"^/api/tasks/(\d+)/(annotations|drafts)/?$")
_DRAFT = re.compile(r"^/api/drafts/(\d+)/?$")
_USER = re.compile(r"^/api/users/(\d+)/?$")
_NOT_PAGES = ("/api/", "/static/", "/react-app/", "/data/", "/storage-data/")

if __name__ != "__main__":
    # Label Studio's settings read django.conf.settings while they load; let that see its own module
    os.environ["DJANGO_SETTINGS_MODULE"] = "label_studio.core.settings.label_studio"
    from label_studio.core.settings.label_studio import *

    os.environ["DJANGO_SETTINGS_MODULE"] = __name__
    # in place, so that whichever module Django snapshots carries it
    MIDDLEWARE.append("judgecal_ls.annotators_write_annotations_only")
    PROJECT_MIXIN = "judgecal_ls.GuardedProjectMixin"


def is_service(user: Any) -> bool:
    if user.is_superuser or user.email == os.environ.get("LABEL_STUDIO_USERNAME"):
        return True
    return bool(user.groups.filter(name=SERVICE_GROUP).exists())


def __getattr__(name: str) -> Any:
    """``GuardedProjectMixin``, built when Label Studio's project model asks for it (apps loaded)."""
    if name != "GuardedProjectMixin":
        raise AttributeError(name)
    from organizations.models import OrganizationMember
    from projects.mixins import ProjectMixin

    class GuardedProjectMixin(ProjectMixin):  # type: ignore[misc, valid-type]
        def has_permission(self, user: Any) -> bool:
            if not super().has_permission(user):
                return False
            if is_service(user):
                return True
            return bool(self.organization_id and self.organization_id == user.active_organization_id
                        and OrganizationMember.objects.filter(user=user, organization_id=self.organization_id,
                                                              deleted_at__isnull=True).exists())

    globals()["GuardedProjectMixin"] = GuardedProjectMixin
    return GuardedProjectMixin


def _user(request: Any) -> Any:
    """The request's user: session (Django) or API token (Label Studio's REST authenticators)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user
    from rest_framework.request import Request
    from rest_framework.settings import api_settings

    for auth in api_settings.DEFAULT_AUTHENTICATION_CLASSES:
        try:
            found = auth().authenticate(Request(request))
        except Exception:  # noqa: BLE001 - an invalid credential is the view's to refuse
            continue
        if found:
            return found[0]
    return None


def _write_allowed(request: Any, user: Any) -> bool:
    path = request.path
    if _ALLOWED.match(path) or _NEW_ANNOTATION.match(path):
        return True
    if path.rstrip("/") == "/api/dm/actions":  # the label stream asks for its next task this way
        return request.GET.get("id") == "next_task"
    if m := _ANNOTATION.match(path):
        from tasks.models import Annotation

        return Annotation.objects.filter(pk=int(m.group(1)), completed_by=user).exists()
    if m := _DRAFT.match(path):
        from tasks.models import AnnotationDraft

        return AnnotationDraft.objects.filter(pk=int(m.group(1)), user=user).exists()
    if m := _USER.match(path):
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return False
        return int(m.group(1)) == user.id and isinstance(body, dict) and "active_organization" not in body
    return False


# controls an annotator cannot use (the server refuses them): hidden from their pages rather than left to fail
ANNOTATOR_CSS = (
    '<style id="judgecal-annotator">button[aria-label="Create new project"], .lsf-project-card__menu, '
    'a[href^="/projects/"][href$="/settings"], a[href^="/organization"], [data-testid="dm-import-button"], '
    '[data-testid="dm-export-button"] { display: none !important; }</style>'
)


def _hide_controls(response: Any) -> Any:
    """An HTML page for an annotator, with :data:`ANNOTATOR_CSS` in its head."""
    if getattr(response, "streaming", False) or "text/html" not in response.get("Content-Type", ""):
        return response
    body = response.content
    if b"</head>" not in body:
        return response
    response.content = body.replace(b"</head>", ANNOTATOR_CSS.encode() + b"</head>", 1)
    if response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))
    return response


def annotators_write_annotations_only(get_response: Any) -> Any:
    from django.http import JsonResponse

    def middleware(request: Any) -> Any:
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            user = _user(request)
            if user is not None and not is_service(user) and not _write_allowed(request, user):
                print(f"judgecal_ls: refused {request.method} {request.path} for user {user.id}", file=sys.stderr)
                return JsonResponse({"detail": "judgecal: annotators may change only their own annotations"},
                                    status=403)
        response = get_response(request)
        if request.method == "GET" and not request.path.startswith(_NOT_PAGES):  # pages are session-based
            user = getattr(request, "user", None)
            if user is not None and user.is_authenticated and not is_service(user):
                return _hide_controls(response)
        return response

    return middleware


def provision(req: dict) -> dict:  # type: ignore[type-arg]
    """Create (or reuse) each annotator with a password, an organisation of their own and a service
    account that owns it; returns per annotator: user id, org id, service email and service token."""
    from django.contrib.auth.models import Group
    from django.db import transaction
    from organizations.functions import create_organization
    from organizations.models import Organization
    from rest_framework.authtoken.models import Token
    from users.models import User

    group, _ = Group.objects.get_or_create(name=SERVICE_GROUP)
    admin = User.objects.get(email=req["admin"])
    admin.groups.add(group)
    out = {}
    for person in req["annotators"]:
        email, password = person["email"], person["password"]
        with transaction.atomic():
            user = User.objects.filter(email=email).first()
            if user is None:
                user = User.objects.create_user(email=email, username=email, password=password)
            else:
                user.set_password(password)
                user.save()
            svc_email = f"service+{user.id}@judgecal.local"
            svc = User.objects.filter(email=svc_email).first()
            if svc is None:
                svc = User.objects.create_user(email=svc_email, username=svc_email,
                                               password=os.urandom(24).hex())
            svc.groups.add(group)
            org = Organization.objects.filter(created_by=svc).first()
            if org is None:
                org = create_organization(title=f"Review: {email}", created_by=svc)
            # the annotator belongs to their own organisation only
            for other in user.organizations.exclude(pk=org.pk):
                other.members.filter(user=user).delete()
            org.add_user(user)
            user.active_organization = org
            user.save()
            svc.active_organization = org
            svc.save()
            token, _ = Token.objects.get_or_create(user=svc)
            out[email] = {"user_id": user.id, "org_id": org.id, "service_email": svc_email,
                          "service_token": token.key}
    return out


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import label_studio

    sys.path.insert(0, os.path.dirname(label_studio.__file__))
    os.environ["DJANGO_SETTINGS_MODULE"] = "judgecal_ls"
    import django

    django.setup()
    print(json.dumps(provision(json.load(sys.stdin))))
