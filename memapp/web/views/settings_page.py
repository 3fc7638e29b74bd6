"""The staff-only Settings page: every flag, its values per scope, changing one, its history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from memapp.stores.flags import FLAGS, FlagSpec, clear_flag_override, flag_spec, get_flag, set_flag
from memapp.stores.models import Event, FlagValue, Project
from memapp.web.forms import FlagForm, show_value

HISTORY = 25


def _require_staff(request: HttpRequest) -> None:
    """Flags are for staff; to anyone else the pages do not exist."""
    if not request.user.is_staff:
        raise Http404("No such page.")


def _spec_or_404(name: str) -> FlagSpec:
    if name not in FLAGS:
        raise Http404("No such flag.")
    return flag_spec(name)


@dataclass
class FlagRow:
    spec: FlagSpec
    global_value: Any = None
    is_set: bool = False
    overrides: list[tuple[Project, str]] = field(default_factory=list)

    @property
    def type_name(self) -> str:
        return (
            "choice"
            if self.spec.choices
            else {bool: "on/off", int: "number"}.get(self.spec.kind, "text")
        )

    @property
    def default(self) -> str:
        return show_value(self.spec, self.spec.default)

    @property
    def value(self) -> str:
        return show_value(self.spec, self.global_value if self.is_set else self.spec.default)


def _rows() -> list[FlagRow]:
    rows = {name: FlagRow(spec) for name, spec in FLAGS.items()}
    for stored in FlagValue.objects.select_related("project").order_by("project__key"):
        row = rows.get(stored.name)
        if row is None:
            continue  # a flag memhub no longer has
        if stored.project is None:
            row.global_value, row.is_set = row.spec.clean(stored.value), True
        else:
            row.overrides.append((stored.project, show_value(row.spec, stored.value)))
    return list(rows.values())


@dataclass
class Change:
    event: Event
    old: str
    new: str


def _shown(name: str, value: Any) -> str:
    spec = FLAGS.get(name)
    return show_value(spec, value) if spec is not None else str(value)


def _history(name: str | None = None) -> list[Change]:
    """The latest changes (who, when, where, old → new, note), newest first."""
    events = Event.objects.filter(kind="flag_changed")
    if name is not None:
        events = events.filter(fields__name=name)
    return [
        Change(
            e,
            _shown(e.fields.get("name"), e.fields.get("old")),
            _shown(e.fields.get("name"), e.fields.get("new")),
        )
        for e in events.select_related("user", "project")[:HISTORY]
    ]


@login_required
def settings_page(request: HttpRequest) -> HttpResponse:
    _require_staff(request)
    rows = _rows()
    context = {
        "rows": rows,
        "not_in_effect": sum(not row.spec.in_effect for row in rows),
        "history": _history(),
    }
    return render(request, "memapp/admin/settings.html", context)


@login_required
def flag_detail(request: HttpRequest, name: str) -> HttpResponse:
    _require_staff(request)
    spec = _spec_or_404(name)
    projects = Project.objects.order_by("key")
    form = FlagForm(spec, projects, request.POST or None, current=get_flag(name))
    if request.method == "POST" and form.is_valid():
        project = form.cleaned_data["scope"]
        value = set_flag(
            name,
            form.cleaned_data["value"],
            project=project,
            user=request.user,
            note=form.cleaned_data["note"],
        )
        where = f"for {project}" if project is not None else "globally"
        messages.success(request, f"{name} is now {show_value(spec, value)} {where}.")
        return redirect("flag", name=name)
    row = next(row for row in _rows() if row.spec.name == name)
    context = {"row": row, "spec": spec, "form": form, "history": _history(name)}
    return render(request, "memapp/admin/flag.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def flag_clear(request: HttpRequest, name: str) -> HttpResponse:
    """Remove a project's override, or reset the global value to the default."""
    _require_staff(request)
    _spec_or_404(name)
    project_id = request.POST.get("project", "")
    if project_id and not project_id.isdigit():
        raise Http404("No such project.")
    project = get_object_or_404(Project, pk=project_id) if project_id else None
    note = request.POST.get("note", "")[:500]
    clear_flag_override(name, project, user=request.user, note=note)
    if project is not None:
        messages.success(request, f"{project} follows the global value of {name} again.")
    else:
        messages.success(request, f"{name} is back to its default.")
    return redirect("flag", name=name)
