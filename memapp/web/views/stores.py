"""A store: its index as an agent receives it, its memories, its health."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import RFC3986_SUBDELIMS
from django.views.decorators.http import require_POST

from memapp.memdir.frontmatter import parse_memory
from memapp.memdir.index import index_health, load_index
from memapp.memdir.keys import validate_key
from memapp.memdir.lint import near_duplicates
from memapp.stores.access import get_store_for_user
from memapp.stores.actions import do_rebuild_index_entries
from memapp.stores.flags import project_index_caps
from memapp.stores.locks import store_lock
from memapp.stores.memory_search import search_memories
from memapp.stores.mirror import rescan_store
from memapp.stores.models import MemoryFile, Store
from memapp.stores.prompting import team_store_for
from memapp.web.forms import FilterForm, unknown_type, unknown_type_warning
from memapp.web.highlight import highlight, snippet
from teamsync.protocol import index_for_agents

PAGE_SIZE = 50


def _filtered(request: HttpRequest, stores):
    """The filtered (and, with a query, ranked) page of the stores' memories, matches marked."""
    form = FilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    now_ms = int(time.time() * 1000)
    found = search_memories(stores, filters, now_ms, settings.MEMHUB_STALE_DAYS)
    page = Paginator(found, PAGE_SIZE).get_page(request.GET.get("page"))
    _link(page.object_list)
    if text := (filters.get("q") or "").strip():
        for memory in page.object_list:
            memory.marked_title = highlight(text, memory.title)
            memory.marked_description = highlight(text, memory.description)
            memory.snippet = snippet(text, memory.body)
    query = request.GET.copy()
    query.pop("page", None)
    return form, page, query.urlencode(), now_ms


def _link(memories) -> None:
    """Give each memory its page's link and its store's (`url`, `store_url`): reversed once a
    store and quoted as `reverse` quotes, since a reversal a row was 1.3 ms of a page of 50."""
    stores: dict[int, tuple[str, str]] = {}
    for memory in memories:
        if (links := stores.get(memory.store_id)) is None:
            kwargs = {"store_id": memory.store_id}
            page = reverse("memory", kwargs={**kwargs, "path": "-"}).removesuffix("-")
            links = stores[memory.store_id] = (page, reverse("store", kwargs=kwargs))
        memory.url = links[0] + quote(memory.path, safe=RFC3986_SUBDELIMS + "/~:@")
        memory.store_url = links[1]


@login_required
def store_detail(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    form, page, query, now_ms = _filtered(request, [store])
    context = {
        "store": store,
        "form": form,
        "page": page,
        "query": query,
        "now_ms": now_ms,
        "stale_days": settings.MEMHUB_STALE_DAYS,
        "bulk": True,
        "can_share": store.kind == Store.Kind.PRIVATE
        and team_store_for(request.user, store.project) is not None,
    }
    if request.htmx:
        return render(request, "memapp/partials/memory_list.html", context)
    context["trash_count"] = store.trash.count()
    max_lines, max_bytes = project_index_caps(store.project)
    truncation = load_index(store.path, max_lines, max_bytes)
    context.update(
        index=truncation,
        # The warning the client appends, shown where it is seen without scrolling the index.
        index_warning=truncation.content.rpartition("\n\n")[2] if truncation.was_truncated else "",
        max_lines=max_lines,
        max_bytes=max_bytes,
        line_pct=min(100, round(100 * truncation.line_count / max_lines)),
        byte_pct=min(100, round(100 * truncation.byte_count / max_bytes)),
        # What keeps a team index from every agent (docs/design.md §10), said where it is shown.
        for_agents=index_for_agents(store) if store.kind == Store.Kind.TEAM else None,
    )
    return render(request, "memapp/store.html", context)


@login_required
def search(request: HttpRequest) -> HttpResponse:
    """Every memory the user may see, across stores, with the same filters."""
    form, page, query, now_ms = _filtered(request, Store.objects.visible_to(request.user))
    context = {
        "form": form,
        "page": page,
        "query": query,
        "now_ms": now_ms,
        "across": True,
        "stale_days": settings.MEMHUB_STALE_DAYS,
    }
    template = "memapp/partials/memory_list.html" if request.htmx else "memapp/search.html"
    return render(request, template, context)


@login_required
@require_POST
def store_rescan(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    with store_lock(store):
        result = rescan_store(store)
    messages.success(
        request,
        f"Rescanned: {result.added} new, {result.changed} changed, {result.removed} removed, "
        f"{result.unchanged} unchanged.",
    )
    return redirect("store", store_id=store.pk)


def _frontmatter_problems(store: Store, files) -> list[tuple[MemoryFile, list[str]]]:
    """Each file whose header has something wrong, with every problem it has: those the mirror
    keeps (joined by "; ") and a type memhub does not know, which the file keeps as written."""
    found = []
    suspects = files.filter(~Q(problem="") | Q(type="", type_form__gt=""))
    for file in suspects.order_by("path"):
        problems = [p for p in file.problem.split("; ") if p]
        if not file.type and file.type_form:
            try:
                memory = parse_memory(validate_key(Path(store.path), file.path).read_bytes())
            except (OSError, ValueError):
                memory = None
            if memory is not None and (odd := unknown_type(memory)):
                problems.append(unknown_type_warning(odd))
        if problems:
            found.append((file, problems))
    return found


@login_required
def store_health(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    max_lines, max_bytes = project_index_caps(store.project)
    health = index_health(
        Path(store.path), exclude=tuple(store.exclude), max_lines=max_lines, max_bytes=max_bytes
    )
    files = store.files.all()
    described = [(f.path, f.description) for f in files if f.description]
    context = {
        "store": store,
        "health": health,
        "duplicates": near_duplicates(described),
        "relative": files.exclude(relative_dates=[]),
        "why_how": files.filter(type__in=["feedback", "project"]).exclude(missing_sections=[]),
        "broken": _frontmatter_problems(store, files),
        "dangling": files.exclude(dangling_links=[]),
        # User memories are private: one in team memory is a mistake to move back.
        "personal": files.filter(type="user") if store.kind == Store.Kind.TEAM else [],
    }
    return render(request, "memapp/health.html", context)


@login_required
@require_POST
def rebuild_index(request: HttpRequest, store_id: int) -> HttpResponse:
    store: Store = get_store_for_user(request.user, store_id)
    added = do_rebuild_index_entries(store, request.user)
    if added:
        messages.success(
            request, f"Added {len(added)} index entr{'y' if len(added) == 1 else 'ies'}."
        )
    else:
        messages.info(request, "Every memory already has an index entry.")
    return redirect("store_health", store_id=store.pk)
