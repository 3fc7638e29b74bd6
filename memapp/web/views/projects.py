"""Staff manage who belongs to each project."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

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
    context = {
        "project": project,
        "members": project.members.order_by("username"),
        "form": form,
    }
    return render(request, "memapp/project_members.html", context)


@login_required
@require_POST
def member_remove(request: HttpRequest, project_id: int, user_id: int) -> HttpResponse:
    _staff_only(request)
    project = get_object_or_404(Project, pk=project_id)
    member = get_object_or_404(project.members, pk=user_id)
    do_remove_member(project, member, request.user)
    messages.success(
        request,
        f"{member} is no longer a member of {project}: they keep their own memory but no "
        "longer see the team's. Add them again to undo.",
    )
    return redirect("project_members", project_id=project.pk)
