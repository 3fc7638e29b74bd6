"""Turning the local user's memory directories into stores (ownership rules: docs/design.md §1)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from memapp.memdir.memory_dirs import (
    FoundStore,
    codex_home,
    discover_codex_dirs,
    discover_gemini_dirs,
    discover_memory_dirs,
    gemini_home,
)
from memapp.memdir.paths import memory_base, original_path, repo_slug_for
from memapp.stores.changes import announce_disk_change
from memapp.stores.events import record_event
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project, ProjectAlias, Store
from memapp.stores.projects import REPO_SLUG_RE, adopt_slug, find_project


@dataclass(frozen=True)
class DiscoveryResult:
    found: int
    removed: int


def local_owner():
    """`MEMHUB_LOCAL_OWNER`, else the first superuser; None until such a user exists."""
    users = get_user_model().objects
    if settings.MEMHUB_LOCAL_OWNER:
        return users.filter(username=settings.MEMHUB_LOCAL_OWNER).first()
    return users.filter(is_superuser=True).order_by("pk").first()


def _store_fields(found: FoundStore, owner, project: Project | None) -> dict:
    fields = {
        "kind": found.kind,
        "origin": Store.Origin.DISCOVERED,
        "project": project,
        "owner": None if found.kind == Store.Kind.TEAM else owner,
        "mount": found.mount,
        "agent_type": found.agent_type,
        "agent_scope": Store.AgentScope.USER if found.kind == Store.Kind.AGENT else "",
        "exclude": list(found.exclude),
    }
    return fields


def _project(dirname: str) -> Project:
    """The project of a discovered directory (docs/design.md §1): the repo slug of its checkout
    when that is on this host and has one, the directory name an alias of it; else the
    directory name, shown as the checkout's path. A project known only by the directory name
    takes the slug once the checkout has one, unless another project holds it (staff merge
    the two on the project page)."""
    project = find_project(dirname)
    if project is not None and project.repo_slug:
        return project
    # The checkout's path once found is kept as the name: walking the disk for it again on
    # every discovery would cost up to 2,000 directory reads per project.
    known = project is not None and project.name.startswith("/")
    checkout = Path(project.name) if known else original_path(dirname)
    slug = repo_slug_for(checkout) if checkout is not None else None
    slug = slug if slug and REPO_SLUG_RE.fullmatch(slug) else None
    if project is None and slug:
        project = find_project(slug)
        if project is None:
            project = Project.objects.create(key=slug, repo_slug=slug, name=slug)
        ProjectAlias.objects.create(name=dirname, project=project)
        return project
    if project is None:
        return Project.objects.create(key=dirname, name=str(checkout) if checkout else "")
    if slug and find_project(slug) is None:
        adopt_slug(project, slug)
    elif not project.name and checkout is not None:
        project.name = str(checkout)
        project.save(update_fields=["name"])
    return project


def discover_local_stores(base=None, progress=None, gemini=None, codex=None) -> DiscoveryResult:
    """Create or update a store for every memory directory found under the memory base, for
    Gemini CLI's memory dirs (under `gemini`, default `~/.gemini`) and for Codex CLI's own
    memories (under `codex`, default `$CODEX_HOME`), which are mirrored read-only.

    Stores discovered earlier whose directory is gone are removed from the mirror (disk is the
    truth; nothing on disk is touched). `progress`, when given, is called with each store.
    """
    started = time.monotonic()
    base = memory_base() if base is None else base
    owner = local_owner()
    found = (
        discover_memory_dirs(base)
        + discover_gemini_dirs(gemini_home() if gemini is None else gemini)
        + discover_codex_dirs(codex_home() if codex is None else codex)
    )
    seen: list[str] = []
    with transaction.atomic():
        for item in found:
            project = None
            if item.project_dirname:
                project = _project(item.project_dirname)
                if owner is not None:
                    project.members.add(owner)
            store, _ = Store.objects.update_or_create(
                path=str(item.path), defaults=_store_fields(item, owner, project)
            )
            seen.append(store.path)
        stale = Store.objects.filter(origin=Store.Origin.DISCOVERED).exclude(path__in=seen)
        # Project- and local-scope agent stores live in registered checkouts, not under the
        # memory base: the snapshots app keeps those.
        stale = stale.exclude(agent_scope__in=[Store.AgentScope.PROJECT, Store.AgentScope.LOCAL])
        removed = stale.count()
        stale.delete()
    for store in Store.objects.filter(path__in=seen):
        with store_lock(store):  # not between a write and its own rescan
            rescanned = rescan_store(store)
        if rescanned.added or rescanned.changed or rescanned.removed:
            announce_disk_change(store)  # found behind memhub's back, as the live mirror does
        if progress is not None:
            progress(store)
    result = DiscoveryResult(found=len(found), removed=removed)
    record_event(
        "stores_discovered",
        found=result.found,
        removed=result.removed,
        duration_ms=round((time.monotonic() - started) * 1000),
    )
    return result
