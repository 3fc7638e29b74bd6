"""The dashboard: the state of the memory a person may see, at a glance, drawn as SVG."""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import mark_safe

from memapp.stores.models import (
    Event,
    EventTotal,
    MemoryFile,
    Project,
    Store,
    event_visibility,
)
from memapp.web.charts import Series, column_chart, meter, stacked_bar
from memapp.web.consolidation_figures import consolidation_figures
from memapp.web.dashboard_data import (
    AGE_COLOURS,
    ExtractionActivity,
    RecallActivity,
    SyncHistory,
    age_buckets,
    day_range,
    extraction_activity,
    index_usage,
    memory_ages,
    recall_activity,
    sync_history,
)

WINDOWS = (7, 30, 90)


def _svg(markup: str) -> str:
    return mark_safe(markup)  # charts.py escapes every text it draws


def _window(request: HttpRequest) -> int:
    raw = request.GET.get("days", "")
    return int(raw) if raw.isdigit() and int(raw) in WINDOWS else 30


def _projects_for(user):
    """The projects to filter by: the user's own, staff included (docs/design.md §12)."""
    return Project.objects.filter(members=user).order_by("key")


def _columns(days, series: list[Series], title: str, width: int = 520) -> str:
    labels = [f"{day:%b} {day.day}" for day in days]
    every = 1 if len(days) <= 14 else 7 if len(days) <= 60 else 14
    return _svg(column_chart(labels, series, title=title, width=width, label_every=every))


def _age_section(stores: list[Store]) -> dict:
    stale_days = settings.MEMHUB_STALE_DAYS
    buckets = age_buckets(stale_days)
    colours = AGE_COLOURS[-len(buckets) :]
    labels = [label for _, label in buckets]
    ages = memory_ages(stores, int(time.time() * 1000), stale_days)
    rows = []
    for row in ages:
        segments = list(zip(labels, row.counts, colours, strict=True))
        rows.append((row, _svg(stacked_bar(segments, title=f"Memory ages: {row.store.label}"))))
    return {
        "legend": list(zip(labels, colours, strict=True)),
        "age_rows": rows,
        "stale_total": sum(row.stale for row in ages),
        "memory_total": sum(row.total for row in ages),
        "stale_days": stale_days,
    }


def _cap_rows(stores: list[Store]) -> list:
    return [
        (
            row,
            _svg(meter(row.lines, row.max_lines, title="MEMORY.md lines")),
            _svg(meter(row.bytes, row.max_bytes, title="MEMORY.md bytes")),
        )
        for row in index_usage(stores)
    ]


def _recall_chart(recall: RecallActivity) -> str:
    series = [Series("answered", recall.answered, "ok"), Series("empty", recall.empty, "muted")]
    return _columns(recall.days, series, "Recall queries per day")


def _sync_charts(sync: SyncHistory) -> list[tuple[str, int, str]]:
    charts = [
        ("Pushes", [("pushed", "pushes_ok", "ok"), ("failed", "pushes_failed", "bad")]),
        (
            "Pulls",
            [
                ("brought changes", "pulls_changed", "team"),
                ("nothing new", "pulls_unchanged", "muted"),
            ],
        ),
        ("Conflicts", [("conflicts", "conflicts", "warn")]),
        ("Files blocked for secrets", [("files blocked", "secret_blocks", "bad")]),
    ]
    return [
        (
            title,
            sum(sync.total(attr) for _, attr, _ in parts),
            _columns(
                sync.days,
                [Series(name, getattr(sync, attr), colour) for name, attr, colour in parts],
                f"{title} per day",
                width=380,  # drawn half as wide as the page: text stays readable
            ),
        )
        for title, parts in charts
    ]


def _extraction_charts(activity: ExtractionActivity) -> list[tuple[str, str]]:
    runs = [
        Series("proposed", activity.proposed, "ok"),
        Series("nothing new", activity.nothing, "muted"),
        Series("skipped", activity.skipped, "team"),
        Series("failed", activity.failed, "bad"),
    ]
    decisions = [
        Series("approved", activity.approved, "ok"),
        Series("rejected", activity.rejected, "muted"),
    ]
    return [
        ("Extraction runs", _columns(activity.days, runs, "Extraction runs per day", 380)),
        ("Proposals decided", _columns(activity.days, decisions, "Proposals decided per day", 380)),
    ]


NEVER_RECALLED_SHOWN = 15


def _never_recalled(stores: list[Store]) -> dict:
    memories = MemoryFile.objects.filter(store__in=stores).matching(
        {"problem": "never_recalled", "sort": "newest"}, 0, 0
    )
    return {
        "never_recalled": memories.select_related("store__project").order_by("mtime_ms")[
            :NEVER_RECALLED_SHOWN
        ],
        "never_recalled_count": memories.count(),
        "memory_count": MemoryFile.objects.filter(store__in=stores).count(),
        "now_ms": int(time.time() * 1000),
    }


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    user = request.user
    window = _window(request)
    projects = _projects_for(user)
    raw_project = request.GET.get("project", "")
    project = projects.filter(pk=raw_project).first() if raw_project.isdigit() else None
    stores = Store.objects.visible_to(user).select_related("project").order_by("project__key")
    seen = event_visibility(user)  # read once: it lists the person's stores and projects
    events = Event.objects.filter(seen)
    totals = EventTotal.objects.filter(seen)
    if project is not None:
        stores, events = stores.filter(project=project), events.filter(project=project)
        totals = totals.filter(project=project)
    stores = list(stores)
    days = day_range(timezone.localdate(), window)
    totals = totals.filter(day__gte=days[0])
    consolidation = consolidation_figures(events, totals, days)
    recall = recall_activity(totals, days)
    sync = sync_history(totals, days)
    extraction = extraction_activity(totals, days)
    context = {
        "window": window,
        "windows": WINDOWS,
        "project": project,
        "projects": projects,
        **_age_section(stores),
        "caps": _cap_rows(stores),
        "recall": recall,
        "recall_chart": _recall_chart(recall),
        "sync": sync,
        "sync_charts": _sync_charts(sync),
        "extraction": extraction,
        "extraction_charts": _extraction_charts(extraction),
        **_never_recalled(stores),
        **consolidation,
    }
    return render(request, "memapp/admin/dashboard.html", context)
