"""Finding a project and a user's store in it from what an agent knows (docs/design.md §1, §3)."""

from __future__ import annotations

import re

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.http import Http404

from memapp.memdir.memory_dirs import PRIVATE_EXCLUDE
from memapp.memdir.paths import sanitize_path
from memapp.stores.models import Project, Store

# A repo slug names the project's folder in the shared team repository, so `..`, `.` and an
# owner starting with a dot (`.git/…`) would put it outside that repository or in its metadata.
REPO_SLUG_RE = re.compile(r"(?![.])[^/\\\s\x00-\x1f\x7f]+/(?!\.\.?$)[^/\\\s\x00-\x1f\x7f]+")
# A sanitized memory directory name (docs/design.md §3) is made of letters, digits and dashes only.
DIRNAME_RE = re.compile(r"[A-Za-z0-9-]+")


def valid_project_key(key: str) -> bool:
    """A repo slug `owner/repo`, or the sanitized name of a memory directory."""
    return bool(REPO_SLUG_RE.fullmatch(key) or DIRNAME_RE.fullmatch(key))


def find_project(ref: str) -> Project | None:
    """By key (`owner/repo` or a sanitized directory name) or by a linked repo slug."""
    return Project.objects.filter(Q(key=ref) | Q(repo_slug=ref)).order_by("pk").first()


def managed_store_dir(project: Project, scope: str, user=None):
    """Where memhub keeps a store uploaded by remote agents: inside its data dir. The project's
    id makes the name unique (`acme/app` and `acme-app` sanitize alike)."""
    base = settings.MEMHUB_DATA_DIR / "stores" / f"{project.pk}-{sanitize_path(project.key)}"
    return base / (f"private-{user.pk}" if scope == Store.Kind.PRIVATE else "team")


def resolve_store(user, project_ref: str, scope: str, *, alias: str = "", create: bool = True):
    """Like `_resolve_store`, with a read-only fast path for the common case: the user's own
    private store of a known project (no write transaction, so no SQLite write lock)."""
    if scope == Store.Kind.PRIVATE and not alias:
        store = (
            Store.objects.filter(
                Q(project__key=project_ref) | Q(project__repo_slug=project_ref),
                kind=Store.Kind.PRIVATE,
                owner=user,
                agent_type="",  # not another agent's (Gemini CLI's) mirrored memory dir
            )
            .select_related("project")
            .order_by("pk")  # not Meta.ordering, which joins and sorts on every call
            .first()
        )
        if store is not None:
            return store
    return _resolve_store(user, project_ref, scope, alias=alias, create=create)


@transaction.atomic
def _resolve_store(user, project_ref: str, scope: str, *, alias: str = "", create: bool = True):
    """The user's private store, or the project's team store, for an agent's project.

    `alias` is the sanitized directory name the agent also knows; a project first discovered
    under it is linked to the slug. A team store needs membership (else 404, so nothing
    leaks); a private store is the user's own and is created on first use. With `create`
    false nothing is written, not even that link: a missing store is a 404.
    """
    project = find_project(project_ref) or (find_project(alias) if alias else None)
    linkable = create and project is not None and alias and project.key == alias != project_ref
    if linkable and not project.repo_slug and project.members.filter(pk=user.pk).exists():
        project.repo_slug = project_ref
        project.save(update_fields=["repo_slug"])
    if scope == Store.Kind.TEAM:
        if project is None or not project.members.filter(pk=user.pk).exists():
            raise Http404("No such project.")
        store = project.stores.filter(kind=Store.Kind.TEAM, mount="").first()
        if store is None and create:
            path = managed_store_dir(project, scope)
            path.mkdir(parents=True, exist_ok=True)
            store = Store.objects.create(
                kind=Store.Kind.TEAM, origin=Store.Origin.MANAGED, path=str(path), project=project
            )
        if store is None:
            raise Http404("No team store.")
        return store
    if project is None:
        if not create or not valid_project_key(project_ref):
            raise Http404("No such project.")
        project = Project.objects.create(key=project_ref)
        project.members.add(user)
    store = project.stores.filter(kind=Store.Kind.PRIVATE, owner=user, agent_type="").first()
    if store is None:
        if not create:
            raise Http404("No private store.")
        path = managed_store_dir(project, scope, user)
        path.mkdir(parents=True, exist_ok=True)
        store = Store.objects.create(
            kind=Store.Kind.PRIVATE,
            origin=Store.Origin.MANAGED,
            path=str(path),
            project=project,
            owner=user,
            exclude=list(PRIVATE_EXCLUDE),
        )
    return store
