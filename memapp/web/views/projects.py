"""Staff manage each project: who belongs to it, and its identity (its repo slug, the aliases
that resolve to it, merging a project that turns out to be the same one; docs/design.md §1)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from memapp.stores.identity import (
    IdentityError,
    do_merge_projects,
    do_set_project_aliases,
    do_set_project_slug,
)
from memapp.stores.members import do_add_member, do_remove_member
from memapp.stores.models import Project


class AddMemberForm(forms.Form):
    user = forms.ModelChoiceField(
        queryset=None, label="Add a member", empty_label="choose a person"
    )

    def __init__(self, *args, project: Project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        users = get_user_model().objects.filter(is_active=True).exclude(memhub_projects=project)
        self.fields["user"].queryset = users.order_by("username")


class IdentityForm(forms.Form):
    slug = forms.CharField(
        label="Repo slug",
        max_length=255,
        required=False,
        widget=forms.TextInput(
            attrs={"placeholder": "owner/repo", "aria-describedby": "slug-help"}
        ),
        help_text="owner/repo, as in the checkout's git remote. Its team memory lives in this "
        "folder of the shared repository; changing it moves the folder.",
    )
    aliases = forms.CharField(
        label="Aliases",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Other names that lead here, one per line: Claude Code's directory names "
        "(-home-ana-payments) or old slugs.",
    )


class MergeForm(forms.Form):
    source = forms.ModelChoiceField(
        queryset=None, label="Project to merge into this one", empty_label="choose a project"
    )
    confirm = forms.BooleanField(
        label="Merge: its stores, members, history and sessions move here; its names become "
        "aliases of this project.",
    )

    def __init__(self, *args, project: Project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["source"].queryset = Project.objects.exclude(pk=project.pk).order_by("key")


def _staff_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise Http404("No such page.")


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    _staff_only(request)
    projects = Project.objects.annotate(member_count=Count("members")).order_by("key")
    return render(request, "memapp/projects.html", {"projects": projects})


@login_required
def project_members(request: HttpRequest, project_id: int) -> HttpResponse:
    _staff_only(request)
    project = get_object_or_404(Project, pk=project_id)
    form = AddMemberForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        member = form.cleaned_data["user"]
        do_add_member(project, member, request.user)
        messages.success(request, f"{member} is now a member of {project}.")
        return redirect("project_members", project_id=project.pk)
    return _project_page(request, project, form=form)


def _project_page(request: HttpRequest, project: Project, **forms_given) -> HttpResponse:
    aliases = list(project.aliases.values_list("name", flat=True))
    identity = IdentityForm(initial={"slug": project.repo_slug, "aliases": "\n".join(aliases)})
    context = {
        "project": project,
        "aliases": aliases,
        "members": project.members.order_by("username"),
        "form": AddMemberForm(project=project),
        "identity": identity,
        "merge": MergeForm(project=project),
        **forms_given,
    }
    status = 400 if any(f.errors for f in forms_given.values()) else 200
    return render(request, "memapp/project_members.html", context, status=status)


@login_required
@require_POST
def project_identity(request: HttpRequest, project_id: int) -> HttpResponse:
    _staff_only(request)
    project = get_object_or_404(Project, pk=project_id)
    form = IdentityForm(request.POST)
    if form.is_valid():
        names = form.cleaned_data["aliases"].splitlines()
        old_key = project.key
        try:
            with transaction.atomic():
                slug = form.cleaned_data["slug"]
                moved = bool(slug) and do_set_project_slug(project, slug, request.user)
                # The name it had is an alias now, whatever the form listed: agents and
                # discovery still know the project by it.
                kept = [*names, old_key] if moved else names
                do_set_project_aliases(project, kept, request.user)
        except IdentityError as exc:
            form.add_error(None, str(exc))
        else:
            note = " Team sync moves its team folder to the new name." if moved else ""
            messages.success(request, f"Saved: this project is {project.key}.{note}")
            return redirect("project_members", project_id=project.pk)
    project.refresh_from_db()
    return _project_page(request, project, identity=form)


@login_required
@require_POST
def project_merge(request: HttpRequest, project_id: int) -> HttpResponse:
    _staff_only(request)
    project = get_object_or_404(Project, pk=project_id)
    form = MergeForm(request.POST, project=project)
    if form.is_valid():
        source = form.cleaned_data["source"]
        name = str(source)
        try:
            do_merge_projects(source, project, request.user)
        except IdentityError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Merged {name} into {project}: it is now an alias.")
            return redirect("project_members", project_id=project.pk)
    return _project_page(request, project, merge=form)


@login_required
@require_POST
def member_remove(request: HttpRequest, project_id: int, user_id: int) -> HttpResponse:
    _staff_only(request)
    project = get_object_or_404(Project, pk=project_id)
    member = get_object_or_404(project.members, pk=user_id)
    if request.POST.get("sure") != "yes":
        return render(request, "memapp/member_remove.html", {"project": project, "member": member})
    do_remove_member(project, member, request.user)
    messages.success(
        request,
        f"{member} is no longer a member of {project}: they keep their own memory but no "
        "longer see the team's. Add them again to undo.",
    )
    return redirect("project_members", project_id=project.pk)
