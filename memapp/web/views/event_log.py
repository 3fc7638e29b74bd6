"""The events page: what happened (docs/design.md §12), filtered, a page at a time, each event
told as a sentence (routine ones folded, `memapp.web.event_story`).

Everyone signed in has one; each sees only the events they may (`event_visibility`):
events about a private store reach its owner alone, those of a team store its members alone,
staff included.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memapp.stores.events import ordered_fields
from memapp.stores.models import Event, EventTotal, Project, event_visibility
from memapp.web.event_story import story
from memapp.web.forms import EventFilterForm, event_filter_users
from memapp.web.keyset import event_page

PAGE_SIZE = 50


def _projects_for(user):
    """The projects to filter by: the user's own, staff included (docs/design.md §12)."""
    return Project.objects.filter(members=user).order_by("key")


def _filtered(events, data: dict):
    if data.get("kind"):
        events = events.filter(kind=data["kind"])
    if data.get("project"):
        events = events.filter(project_id=data["project"])
    if data.get("user"):
        events = events.filter(user_id=data["user"])
    if data.get("since"):
        events = events.filter(created_at__date__gte=data["since"])
    if data.get("until"):
        events = events.filter(created_at__date__lte=data["until"])
    return events


@login_required
def event_list(request: HttpRequest) -> HttpResponse:
    seen = event_visibility(request.user)  # read once: it lists the person's stores and projects
    form = EventFilterForm(
        request.GET or None,
        projects=_projects_for(request.user),
        # the people of the events' totals: the same, from fewer rows (docs/design.md §12.2)
        users=event_filter_users(EventTotal.objects.filter(seen)),
    )
    data = form.cleaned_data if form.is_valid() else {}
    events = _filtered(Event.objects.all(), data).select_related(
        "project", "store__project", "user"
    )
    page = event_page(events, seen, request.GET, PAGE_SIZE)
    page.object_list = story(page.object_list, ordered_fields)
    context = {"form": form, "page": page}
    template = (
        "memapp/admin/partials/event_list.html" if request.htmx else "memapp/admin/events.html"
    )
    return render(request, template, context)
