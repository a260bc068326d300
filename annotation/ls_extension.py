"""judgecal's settings for its managed Label Studio server; runs inside Label Studio's own Python.

What Label Studio 1.23.2 (open source) enforces, measured: list endpoints are scoped to the user's
active organisation, but object access is not (``ProjectMixin.has_permission`` only rejects revoked
members: "LSO always runs a single organization"), so ``/api/tasks/?project=<another org's>`` answers;
a user may set their own ``active_organization`` to any organisation; every member may create, change
or delete any project, task or member of the organisation (views' ``permission_required`` is not
checked); a task's drafts (``/api/tasks/<id>/drafts``) are listed and created for any task without an
object check; and an annotation's or draft's body may set its ``task``, ``project``, ``completed_by`` or
``updated_by`` (or a draft's ``user``), moving or re-crediting it. judgecal therefore gives each annotator
an organisation of their own, holding only their copy of the tasks and run by a judgecal service account
(group ``judgecal-service``), and this module:

- ``GuardedProjectMixin``: an object of a project (the project, its tasks, annotations, drafts, views,
  exports) is open only to members of the project's organisation who have it active, or to a service
  account;
- ``annotators_write_annotations_only``, for every user who is not a service account: each project,
  task, annotation, draft, data-manager view or uploaded file named in a request's path or query must
  belong to a project open to them, and a draft must be their own (else 404, so nothing tells whether it
  exists); a write (POST, PUT, PATCH, DELETE) must match one rule of :data:`WRITES`, an allow-list of what
  annotating needs: their own annotations and drafts on tasks of their project, tabs of their project,
  their next task, their own user record. A write's JSON body may hold only the fields its rule lists
  (the labeling page's own fields, from Label Studio's frontend); a field outside the list (``task``,
  ``project``, ``completed_by``, ``updated_by``, ``ground_truth``, a draft's ``user``...), a reference to
  another task's draft, annotation or prediction, or a body that is not JSON answers 403 naming it, and is
  logged to the server log. Every id in a path or query is read as the server reads it (``+2`` and `` 2``
  are 2), so an id written oddly is scoped like any other and a missing id answers as another's does; a
  product tour's body may set only its ``state`` and ``interaction_data``, on the requester's own record; an
  annotation's ``unique_id`` is kept only as the id of the annotator's own lock on the task. On an annotator's pages the controls they cannot use (create project, project
  menu and settings, organisation, import, export) are hidden;
- ``/data/upload/<file>`` answers 404 for a file no upload record names (Label Studio answers 500).

Loaded as ``DJANGO_SETTINGS_MODULE=judgecal_ls``. Run as a script with a JSON request on stdin, it
provisions annotators (user, password, organisation, service account and token) and prints JSON.
"""
# ruff: noqa: F403, F405, I001

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

SERVICE_GROUP = "judgecal-service"
_NOT_PAGES = ("/api/", "/static/", "/react-app/", "/data/", "/storage-data/")
_STATIC = ("/static/", "/react-app/", "/label-studio-frontend/", "/dm/", "/favicon.ico", "/health", "/version")

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


class Refused(Exception):
    """A request an annotator may not make: HTTP ``status`` and why (logged, and sent as ``detail``)."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


def _models() -> Any:
    from data_import.models import FileUpload
    from data_manager.models import View
    from projects.models import Project
    from tasks.models import Annotation, AnnotationDraft, Prediction, Task

    return {"project": Project, "task": Task, "annotation": Annotation, "draft": AnnotationDraft, "view": View,
            "prediction": Prediction, "upload": FileUpload}


def _project_of(kind: str, pk: Any) -> Any:
    """The project that the ``kind`` object ``pk`` belongs to (``None`` when there is no such object)."""
    m = _models()
    pk = server_id(pk)
    if not _in_range(pk):
        return None
    if kind == "project":
        return m["project"].objects.filter(pk=pk).first()
    if kind == "draft":
        obj = m["draft"].objects.filter(pk=pk).select_related("task__project").first()
        return obj.task.project if obj is not None else None
    obj = m[kind].objects.filter(pk=pk).select_related("project").first()
    return obj.project if obj is not None else None


def _open(user: Any, kind: str, pk: Any) -> bool:
    project = _project_of(kind, pk)
    return project is not None and bool(project.has_permission(user))


# what a path or query names, and the kind of object it is: each must be open to the user. A path segment is
# matched whatever it holds (Label Studio's routers take ``[^/.]+``) and read by :func:`server_id`
_SCOPES = (
    (re.compile(r"^/api/projects/([^/]+)(/|$)"), "project"),
    (re.compile(r"^/projects/([^/]+)(/|$)"), "project"),
    (re.compile(r"^/api/tasks/([^/]+)(/|$)"), "task"),
    (re.compile(r"^/api/tasks/[^/]+/annotations/([^/]+)(/|$)"), "annotation"),
    (re.compile(r"^/api/annotations/([^/]+)(/|$)"), "annotation"),
    (re.compile(r"^/api/drafts/([^/]+)(/|$)"), "draft"),
    (re.compile(r"^/api/dm/views/([^/]+)(/|$)"), "view"),
    (re.compile(r"^/api/predictions/([^/]+)(/|$)"), "prediction"),
)
_QUERY_SCOPES = {"project": "project", "view": "view", "tab": "view", "task": "task"}
_DRF_DECIMAL = re.compile(r"\.0*\s*$")  # rest_framework.fields.IntegerField.re_decimal
_MAX_ID = 2**63 - 1  # the largest id a database lookup takes


def server_id(value: Any) -> int | None:
    """The id Label Studio reads from ``value``, or ``None`` when it reads none: Python's ``int()`` as Django's
    lookups use it (surrounding whitespace, a sign, any Unicode decimal digits, ``_`` between digits: ``+2``,
    `` 2``, ``\u0662`` are all 2), else after DRF's ``IntegerField`` strips a trailing ``.0``. Not
    ``str.isdigit()``, which refuses ``+2`` and accepts ``\u00b2``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    for text in (value, _DRF_DECIMAL.sub("", value)):
        try:
            return int(text)
        except ValueError:
            continue
    return None


def _names_id(value: Any) -> bool:
    """Whether the server reads an id of an object that could exist from ``value`` (a negative one never does)."""
    pk = server_id(value)
    return pk is not None and pk >= 0


def _in_range(pk: int | None) -> bool:
    return pk is not None and 0 < pk <= _MAX_ID


def _check_scope(request: Any, user: Any) -> None:
    """Every object the request names belongs to a project open to ``user``; a draft is their own. Each id is
    read as the server reads it, so ``+2`` is scoped as 2 and a missing id answers as another's does."""
    path = request.path
    for pattern, kind in _SCOPES:
        if (m := pattern.match(path)) and _names_id(m.group(1)) and not _open(user, kind, m.group(1)):
            raise Refused(404, f"{kind} {m.group(1)!r} is not in a project of theirs")
    for key, kind in _QUERY_SCOPES.items():
        for value in request.GET.getlist(key):
            # what is no id to the server is Label Studio's to refuse
            if _names_id(value) and not _open(user, kind, value):
                raise Refused(404, f"{kind} {value!r} (query {key}) is not in a project of theirs")
    m = re.match(r"^/api/drafts/([^/]+)(/|$)", path)
    if m and _names_id(m.group(1)) and not (_in_range(pk := server_id(m.group(1))) and _models()["draft"].objects
                                              .filter(pk=pk, user=user).exists()):
        raise Refused(404, f"draft {m.group(1)!r} is not theirs")


def _body(request: Any) -> dict[str, Any]:
    """The JSON object a write sends (``{}`` when it sends nothing); anything else is refused."""
    raw = request.body
    if not raw.strip():
        return {}
    if "json" not in request.content_type:
        raise Refused(403, f"the body of {request.method} {request.path} must be JSON, not {request.content_type}")
    try:
        body = json.loads(raw)
    except ValueError:
        raise Refused(403, "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise Refused(403, "the body is not a JSON object")
    return body


def _only(body: dict[str, Any], allowed: frozenset[str], what: str) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise Refused(403, f"an annotator may not set {', '.join(repr(k) for k in extra)} of {what} "
                           f"(allowed: {', '.join(sorted(allowed))})")


def _same_task(body: dict[str, Any], task_id: int, user: Any) -> None:
    """References in a labeling body point into ``task_id`` only: its ``project`` is the task's, a draft it
    names is the user's own."""
    m = _models()
    if "project" in body and str(body["project"]) != str(m["task"].objects.get(pk=task_id).project_id):
        raise Refused(403, f"project {body['project']!r} is not the project of task {task_id}")
    refs = {"draft_id": ("draft", {"user": user}), "parent_annotation": ("annotation", {}),
            "parent_prediction": ("prediction", {}), "annotation": ("annotation", {"completed_by": user})}
    for key, (kind, extra) in refs.items():
        value = body.get(key)
        if value in (None, "", 0):
            continue
        if not isinstance(value, int) or not m[kind].objects.filter(pk=value, task_id=task_id, **extra).exists():
            raise Refused(403, f"{key} {value!r} is not a {kind} of this task" + (" of theirs" if extra else ""))


# the fields the labeling page sends (Label Studio 1.23.2 frontend: prepareData, saveDraft, skip); ``project``
# only as the task's own (see _same_task); an annotation's ``unique_id`` only as _unique_id keeps it
ANNOTATION_FIELDS = frozenset({"result", "lead_time", "was_cancelled", "draft_id", "parent_prediction",
                               "parent_annotation", "started_at", "id", "project", "unique_id"})
DRAFT_FIELDS = frozenset({"result", "lead_time", "was_postponed", "draft_id", "parent_prediction",
                          "parent_annotation", "started_at", "annotation", "id", "project", "unique_id"})
VIEW_FIELDS = frozenset({"data", "ordering", "order", "selected_items", "filter_group", "filters", "project",
                         "id", "user"})
USER_FIELDS = frozenset({"first_name", "last_name", "phone", "allow_newsletters"})
# what the product tour sends (updateProductTour: state, interaction_data), to the requester's own record
TOUR_FIELDS = frozenset({"state", "interaction_data"})
MAX_TOUR_BODY = 4096  # bytes; a tour's state and where it stopped fit in far less


def _own_annotation(user: Any, pk: Any) -> Any:
    a = _models()["annotation"].objects.filter(pk=int(pk), completed_by=user).first()
    if a is None:
        raise Refused(403, f"annotation {pk} is not theirs")
    return a


def _replace_body(request: Any, body: dict[str, Any]) -> None:
    """Let the view read ``body`` instead of what was sent (DRF reads a consumed request's ``body``)."""
    raw = json.dumps(body).encode()
    request._body = raw
    request.META["CONTENT_LENGTH"] = str(len(raw))


def _unique_id(request: Any, user: Any, body: dict[str, Any], task_id: int | None) -> None:
    """An annotation's ``unique_id`` is the server's: kept only on a new annotation, and only when it is the id
    of the annotator's own lock on the task (what the labeling page sends, so a repeated submit is still a
    duplicate), dropped otherwise. Set freely it was an existence oracle (a taken one answers 409, a
    malformed one 500) and a way to claim ids."""
    if "unique_id" not in body:
        return
    value, keep = body["unique_id"], False
    if task_id is not None and isinstance(value, str):
        import uuid

        from tasks.models import TaskLock

        try:
            keep = TaskLock.objects.filter(unique_id=uuid.UUID(value), user=user, task_id=task_id).exists()
        except ValueError:
            keep = False
    if not keep:
        del body["unique_id"]
        _replace_body(request, body)


def _annotation_new(request: Any, user: Any, m: re.Match[str]) -> None:
    body = _body(request)
    _only(body, ANNOTATION_FIELDS - {"id"}, "an annotation")
    _same_task(body, int(m.group(1)), user)
    _unique_id(request, user, body, int(m.group(1)))


def _annotation_change(request: Any, user: Any, m: re.Match[str]) -> None:
    a = _own_annotation(user, m.group(1))
    if request.method in ("PATCH", "PUT"):
        body = _body(request)
        _only(body, ANNOTATION_FIELDS, "an annotation")
        _same_task(body, a.task_id, user)
        _unique_id(request, user, body, None)


def _annotation_to_draft(request: Any, user: Any, m: re.Match[str]) -> None:
    _own_annotation(user, m.group(1))
    _only(_body(request), frozenset(), "a conversion to a draft")


def _draft_new(request: Any, user: Any, m: re.Match[str]) -> None:
    task_id = int(m.group(1))
    if m.group(2) is not None and _own_annotation(user, m.group(2)).task_id != task_id:
        raise Refused(403, f"annotation {m.group(2)} is not of task {task_id}")
    body = _body(request)
    _only(body, DRAFT_FIELDS, "a draft")
    _same_task(body, task_id, user)


def _draft_change(request: Any, user: Any, m: re.Match[str]) -> None:
    draft = _models()["draft"].objects.filter(pk=int(m.group(1)), user=user).first()
    if draft is None:
        raise Refused(403, f"draft {m.group(1)} is not theirs")
    if request.method in ("PATCH", "PUT"):
        body = _body(request)
        _only(body, DRAFT_FIELDS, "a draft")
        _same_task(body, draft.task_id, user)


def _view_fields(body: dict[str, Any], user: Any, project: Any) -> None:
    _only(body, VIEW_FIELDS, "a data-manager tab")
    if body.get("user") not in (None, user.id, str(user.id)):
        raise Refused(403, "a tab's user is the annotator who makes it")
    if "project" in body and str(body["project"]) != str(project):
        raise Refused(403, f"a tab of project {project} cannot be moved to project {body['project']!r}")


def _view_new(request: Any, user: Any, m: re.Match[str]) -> None:
    body = _body(request)
    if not _open(user, "project", body.get("project")):
        raise Refused(403, f"project {body.get('project')!r} is not a project of theirs")
    _view_fields(body, user, body["project"])


def _view_change(request: Any, user: Any, m: re.Match[str]) -> None:
    if request.method in ("PATCH", "PUT"):
        view = _models()["view"].objects.get(pk=int(m.group(1)))
        _view_fields(_body(request), user, view.project_id)


def _views_reset(request: Any, user: Any, m: re.Match[str]) -> None:
    body = _body(request)
    project = body.get("project", request.GET.get("project"))
    if not _open(user, "project", project):
        raise Refused(403, f"project {project!r} is not a project of theirs")
    _only(body, frozenset({"project"}), "a reset of tabs")


def _views_order(request: Any, user: Any, m: re.Match[str]) -> None:
    body = _body(request)
    _only(body, frozenset({"project", "ids"}), "an order of tabs")
    if not _open(user, "project", body.get("project")):
        raise Refused(403, f"project {body.get('project')!r} is not a project of theirs")
    ids = body.get("ids") or []
    if not isinstance(ids, list) or _models()["view"].objects.filter(pk__in=[i for i in ids if isinstance(i, int)]
                                                                    ).exclude(project_id=body["project"]).exists():
        raise Refused(403, "a tab named in ids is not of that project")


def _next_task(request: Any, user: Any, m: re.Match[str]) -> None:
    if request.GET.get("id") != "next_task":
        raise Refused(403, f"an annotator may ask only for their next task, not run {request.GET.get('id')!r}")
    if not _open(user, "project", request.GET.get("project")):
        raise Refused(403, f"project {request.GET.get('project')!r} is not a project of theirs")


def _own_user(request: Any, user: Any, m: re.Match[str]) -> None:
    if int(m.group(1)) != user.id:
        raise Refused(403, f"user {m.group(1)} is someone else")
    _only(_body(request), USER_FIELDS, "their user record")


def _own_tour(request: Any, user: Any, m: re.Match[str]) -> None:
    """A product tour's ``state`` and ``interaction_data`` only (the view finds the requester's own record by
    ``?name=``; a ``user`` in the body would move that record onto someone else), in a bounded body."""
    if len(request.body) > MAX_TOUR_BODY:
        raise Refused(403, f"a product tour's body is {len(request.body):,} bytes; the limit is {MAX_TOUR_BODY:,}")
    _only(_body(request), TOUR_FIELDS, "a product tour")


def _anyone(request: Any, user: Any, m: re.Match[str]) -> None:
    return None


# The writes an annotator may make: (methods, path, check). Anything else answers 403.
WRITES: tuple[tuple[frozenset[str], re.Pattern[str], Callable[[Any, Any, re.Match[str]], None]], ...] = (
    (frozenset({"POST"}), re.compile(r"^/user/login/?$"), _anyone),
    (frozenset({"POST"}), re.compile(r"^/logout/?$"), _anyone),
    (frozenset({"POST"}), re.compile(r"^/api/tasks/(\d+)/annotations/?$"), _annotation_new),
    (frozenset({"PATCH", "PUT", "DELETE"}), re.compile(r"^/api/annotations/(\d+)/?$"), _annotation_change),
    (frozenset({"POST"}), re.compile(r"^/api/annotations/(\d+)/convert-to-draft/?$"), _annotation_to_draft),
    (frozenset({"POST"}), re.compile(r"^/api/tasks/(\d+)/(?:annotations/(\d+)/)?drafts/?$"), _draft_new),
    (frozenset({"PATCH", "PUT", "DELETE"}), re.compile(r"^/api/drafts/(\d+)/?$"), _draft_change),
    (frozenset({"POST"}), re.compile(r"^/api/dm/views/?$"), _view_new),
    (frozenset({"PATCH", "PUT", "DELETE"}), re.compile(r"^/api/dm/views/(\d+)/?$"), _view_change),
    (frozenset({"DELETE"}), re.compile(r"^/api/dm/views/reset/?$"), _views_reset),
    (frozenset({"POST"}), re.compile(r"^/api/dm/views/order/?$"), _views_order),
    (frozenset({"POST"}), re.compile(r"^/api/dm/actions/?$"), _next_task),
    (frozenset({"PATCH", "PUT"}), re.compile(r"^/api/users/(\d+)/?$"), _own_user),
    (frozenset({"POST", "PATCH", "PUT"}), re.compile(r"^/api/current-user/(reset-token/|hotkeys/)$"), _anyone),
    (frozenset({"PATCH", "PUT"}), re.compile(r"^/api/current-user/product-tour/?$"), _own_tour),
)


def check_annotator(request: Any, user: Any) -> None:
    """Raise :class:`Refused` unless a user who is not a service account may make ``request``."""
    _check_scope(request, user)
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return
    for methods, pattern, check in WRITES:
        if (m := pattern.match(request.path)) and request.method in methods:
            check(request, user, m)
            return
    raise Refused(403, "judgecal: annotators may change only their own annotations")


def _upload_missing(request: Any) -> bool:
    """``/data/upload/<file>`` with no upload record for it (Label Studio would answer 500)."""
    if not request.path.startswith("/data/upload/"):
        return False
    from django.conf import settings as dj

    name = dj.UPLOAD_DIR.rstrip("/") + "/" + request.path[len("/data/upload/"):]
    return not _models()["upload"].objects.filter(file=name).exists()


# controls an annotator cannot use (the server refuses them): hidden from their pages rather than left to fail
# (the home page's "Create Project" and "Invite Members" are the only elements of Label Studio's web app with the
# class min-w-[250px]; the invite link they would show is refused at sign-up anyway)
ANNOTATOR_CSS = (
    '<style id="judgecal-annotator">button[aria-label="Create new project"], .lsf-project-card__menu, '
    'a[href^="/projects/"][href$="/settings"], a[href^="/organization"], [data-testid="dm-import-button"], '
    '[data-testid="dm-export-button"], main.p-6 .min-w-\\[250px\\] { display: none !important; }</style>'
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
        if request.path.startswith(_STATIC):
            return get_response(request)
        if _upload_missing(request):
            return JsonResponse({"detail": "Not found."}, status=404)
        user = _user(request)
        if user is not None and not is_service(user):
            try:
                check_annotator(request, user)
            except Refused as exc:
                print(f"judgecal_ls: refused {request.method} {request.path} for user {user.id}: {exc}",
                      file=sys.stderr)
                detail = "Not found." if exc.status == 404 else f"judgecal: {exc}".replace("judgecal: judgecal: ",
                                                                                         "judgecal: ")
                return JsonResponse({"detail": detail}, status=exc.status)
        response = get_response(request)
        # pages are session-based
        if request.method == "GET" and not request.path.startswith(_NOT_PAGES) and user is not None \
                and not is_service(user):
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
                          "service_user_id": svc.id, "service_token": token.key}
    return out


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import label_studio

    sys.path.insert(0, os.path.dirname(label_studio.__file__))
    os.environ["DJANGO_SETTINGS_MODULE"] = "judgecal_ls"
    import django

    django.setup()
    print(json.dumps(provision(json.load(sys.stdin))))
