"""Turning the local user's memory directories into stores (ownership rules: docs/design.md §1)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from memapp.memdir.memory_dirs import (
    FoundStore,
    discover_gemini_dirs,
    discover_memory_dirs,
    gemini_home,
)
from memapp.memdir.paths import memory_base, original_path, repo_slug_for
from memapp.stores.events import record_event
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project, Store


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
    """The project of a discovered directory, named once by the checkout it belongs to (its
    repo slug, else its path) when that checkout is still on this host."""
    project, _ = Project.objects.get_or_create(key=dirname)
    if not project.name and not project.repo_slug:
        checkout = original_path(dirname)
        if checkout is not None:
            project.name = repo_slug_for(checkout) or str(checkout)
            project.save(update_fields=["name"])
    return project


def discover_local_stores(base=None, progress=None, gemini=None) -> DiscoveryResult:
    """Create or update a store for every memory directory found under the memory base, and
    for Gemini CLI's memory dirs (under `gemini`, default `~/.gemini`).

    Stores discovered earlier whose directory is gone are removed from the mirror (disk is the
    truth; nothing on disk is touched). `progress`, when given, is called with each store.
    """
    started = time.monotonic()
    base = memory_base() if base is None else base
    owner = local_owner()
    found = discover_memory_dirs(base) + discover_gemini_dirs(
        gemini_home() if gemini is None else gemini
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
            rescan_store(store)
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
